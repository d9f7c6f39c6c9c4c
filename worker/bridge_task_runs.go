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
	// Names names the organization in the run's summary and memo (nil:
	// ids only).
	Names *OrganizationNames
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
	summary := fmt.Sprintf("%s of bridge %s", e.TaskName, wfIn.BridgeID)
	if in.BridgeName != "" {
		summary = fmt.Sprintf("%s of bridge %q (%s)", e.TaskName, in.BridgeName, in.BridgeType)
		memo["bridge"], memo["bridgeType"] = in.BridgeName, in.BridgeType
	}
	if in.ScheduleID != nil {
		memo["scheduleId"] = in.ScheduleID.String()
		summary += ", triggered from schedule " + in.ScheduleID.String()
	}
	opts := Start{ID: e.WorkflowID, TaskQueue: t.TaskQueue, OrganizationID: wfIn.OrganizationID, Summary: summary,
		BridgeID: wfIn.BridgeID, TaskName: e.TaskName, Memo: memo}.Options()
	opts = WithOrganizationName(opts, t.Names.Name(ctx, wfIn.OrganizationID))
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
