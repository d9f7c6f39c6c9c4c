package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/config"
)

// The settings' defaults are the gate's (config cannot import activities),
// and SetDispatchYield sets the process's gate.
func TestDispatchYield(t *testing.T) {
	require.Equal(t, config.DispatchYield{Interactive: activities.DefaultInteractiveYieldRate, Import: activities.DefaultImportYieldRate},
		config.DefaultDispatchYield)
	g := activities.ProcessPriority
	prev := config.DispatchYield{Interactive: g.YieldRate(activities.PriorityInteractive), Import: g.YieldRate(activities.PriorityImport)}
	t.Cleanup(func() { SetDispatchYield(prev.Interactive, prev.Import) })
	SetDispatchYield(120, 0)
	require.Equal(t, 120.0, g.YieldRate(activities.PriorityInteractive))
	require.Zero(t, g.YieldRate(activities.PriorityImport))
}
