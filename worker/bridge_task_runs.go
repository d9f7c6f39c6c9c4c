package worker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/workflows"
)

// TemporalBridgeTasks is the Temporal adapter of the bridge tasks domain's
// Runs port: each execution is the BridgeTask run bridge-task/<id> on
// TaskQueue (the bulk queue: syncs page through thousands of orders, and
// interactive work must not wait behind them).
type TemporalBridgeTasks struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
}

var _ bridgetasks.Runs = TemporalBridgeTasks{}

// WorkflowID implements bridgetasks.Runs.
func (t TemporalBridgeTasks) WorkflowID(id uuid.UUID) string {
	return workflows.BridgeTaskWorkflowID(id.String())
}

// Start implements bridgetasks.Runs.
func (t TemporalBridgeTasks) Start(ctx context.Context, in bridgetasks.Run) (func(context.Context) error, error) {
	e := in.Execution
	wfIn := workflows.BridgeTaskInput{OrganizationID: e.OrganizationID.String(), TaskExecutionID: e.ID.String(), BridgeID: e.BridgeID.String(), TaskName: e.TaskName}
	memo := map[string]any{"taskExecutionId": wfIn.TaskExecutionID, "bridgeId": wfIn.BridgeID, "taskName": e.TaskName}
	if in.ScheduleID != nil {
		memo["scheduleId"] = in.ScheduleID.String()
	}
	opts := StartOptions(e.WorkflowID, t.TaskQueue, wfIn.OrganizationID, memo)
	run, err := Starter{Client: t.Client, Log: t.Log}.StartStable(ctx, opts, e.CreatedAt, workflows.BridgeTask, wfIn)
	switch {
	case err == nil:
		return func(ctx context.Context) error { return run.Get(ctx, nil) }, nil
	case IsStartUnknown(err):
		return nil, domain.WorkflowsUnavailable(fmt.Errorf("%w: %w", domain.ErrRunMayExist, err))
	case IsTemporalUnavailable(ctx, err):
		return nil, domain.WorkflowsUnavailable(err)
	}
	return nil, err
}
