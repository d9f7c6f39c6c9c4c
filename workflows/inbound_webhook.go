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
	// webhookHooksOptions: the order hooks of the created orders.
	webhookHooksOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
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

// InboundWebhook processes one stored inbound platform event: it re-fetches
// the resource the event points at, upserts the orders, runs the order
// hooks for the orders it created and records the outcome on the event
// (processed, or failed with the error, in which case the run fails too).
func InboundWebhook(ctx workflow.Context, in InboundWebhookInput) (InboundWebhookResult, error) {
	var a *activities.WebhookActivities
	log := workflow.GetLogger(ctx)
	ev := activities.WebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID}

	var res activities.ProcessWebhookEventResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, processWebhookOptions), a.ProcessWebhookEvent, ev).Get(ctx, &res)
	if err == nil && res.AlreadyProcessed {
		return res, nil
	}
	if err == nil && len(res.CreatedOrderIDs) > 0 {
		if herr := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, webhookHooksOptions), a.RunWebhookOrderHooks,
			activities.RunWebhookOrderHooksInput{OrganizationID: in.OrganizationID, OrderIDs: res.CreatedOrderIDs}).Get(ctx, nil); herr != nil {
			// The orders are stored; a hook failure is the hooks' to report.
			log.Warn("order hooks failed for orders created by a webhook", "EventId", in.EventID, "Error", herr)
		}
	}

	finish := activities.FinishWebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID, Result: res}
	if err != nil {
		finish.Failed = true
		finish.Error, _ = failureOf(err)
	}
	// Record the outcome even when the run is being cancelled.
	fctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if ferr := workflow.ExecuteActivity(workflow.WithActivityOptions(fctx, finishWebhookOptions), a.FinishWebhookEvent, finish).Get(fctx, nil); ferr != nil {
		log.Warn("could not record the outcome on the webhook event", "EventId", in.EventID, "Error", ferr)
		if err == nil {
			err = ferr
		}
	}
	return res, err
}
