package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/ratecomparisons"
	"github.com/fos-dev/fos/workflows"
)

// TemporalRateComparisons is the Temporal adapter of the rate comparisons
// domain's Runs port: each comparison is the RateComparison run
// rate-comparison/<id> on TaskQueue (the bulk queue: never in front of
// interactive work).
type TemporalRateComparisons struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
}

var _ ratecomparisons.Runs = TemporalRateComparisons{}

// WorkflowID implements ratecomparisons.Runs.
func (t TemporalRateComparisons) WorkflowID(id uuid.UUID) string {
	return workflows.RateComparisonWorkflowID(id.String())
}

// Start implements ratecomparisons.Runs. The comparison was draft or
// failed, so a run with its id that is still open can only be a finished
// one closing down: it is replaced (a start sent again after a lost answer
// joins instead).
func (t TemporalRateComparisons) Start(ctx context.Context, in ratecomparisons.Run) error {
	wfIn := workflows.NewRateComparisonInput(in.OrganizationID.String(), in.ComparisonID.String(),
		workflows.Actor{Type: string(in.RequestedBy.Kind), ID: in.RequestedBy.ID.String(), Name: in.RequestedBy.Name})
	opts := StartOptions(in.WorkflowID, t.TaskQueue, wfIn.OrganizationID, map[string]any{"comparisonId": wfIn.ComparisonID})
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	st := Starter{Client: t.Client, Log: t.Log}
	_, err := st.StartStable(ctx, opts, time.Now(), workflows.RateComparison, wfIn)
	switch {
	case err == nil:
		return nil
	case IsStartUnknown(err):
		return domain.WorkflowsUnavailable(fmt.Errorf("%w: %w", domain.ErrRunMayExist, err))
	case IsTemporalUnavailable(ctx, err):
		st.log().WarnContext(ctx, "start workflow", "workflow_id", opts.ID, "error", err.Error())
		return domain.WorkflowsUnavailable(err)
	}
	return err
}

// Cancel implements ratecomparisons.Runs.
func (t TemporalRateComparisons) Cancel(ctx context.Context, id uuid.UUID) error {
	err := t.Client.CancelWorkflow(ctx, t.WorkflowID(id), "")
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return err
	}
	return nil
}
