package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// InboundWebhookWorkflowType is the registered name of InboundWebhook.
const InboundWebhookWorkflowType = "InboundWebhook"

// InboundWebhookWorkflowID is the stable workflow ID of a stored inbound
// event's processing (CONTRACT 5).
func InboundWebhookWorkflowID(eventID string) string { return "inbound-webhook/" + eventID }

// InboundWebhookInput is the input of InboundWebhook.
type InboundWebhookInput struct {
	OrganizationID string `json:"organizationId"`
	EventID        string `json:"eventId"`
}

// InboundWebhookResult is the result of InboundWebhook.
type InboundWebhookResult = activities.ProcessWebhookEventResult

var (
	// processWebhookOptions: platform reads plus one transaction per
	// order. Transient platform failures are retried with backoff;
	// permanent ones (order unknown, credentials refused, bridge not
	// active) fail at once.
	processWebhookOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        8,
			NonRetryableErrorTypes: activities.PermanentOrderErrorTypes,
		},
	}
	// finishWebhookOptions: one update; retried longer, it is the event's
	// only record of the outcome.
	finishWebhookOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        20,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

// InboundWebhook processes one stored inbound platform event: one
// activity re-fetches the resource the event points at, upserts the
// orders, runs the order hooks for the orders it created and records the
// event processed. When it fails for good the event is recorded failed
// with the error, and the run fails too.
func InboundWebhook(ctx workflow.Context, in InboundWebhookInput) (InboundWebhookResult, error) {
	var a *activities.WebhookActivities
	var res activities.ProcessWebhookEventResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, processWebhookOptions), a.ProcessWebhookEvent,
		activities.WebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID}).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	finish := activities.FinishWebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID, Failed: true}
	finish.Error, _ = failureOf(err)
	// Record the failure even when the run is being cancelled.
	fctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if ferr := workflow.ExecuteActivity(workflow.WithActivityOptions(fctx, finishWebhookOptions), a.FinishWebhookEvent, finish).Get(fctx, nil); ferr != nil {
		workflow.GetLogger(ctx).Warn("could not record the failure on the webhook event", "EventId", in.EventID, "Error", ferr)
	}
	return res, err
}
