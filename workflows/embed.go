package workflows

import (
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/embed"
)

// The embed workflows (CONTRACT 5, 7 and 12), on the webhook task queue so
// a slow receiver never delays label purchases.

// Workflow types.
const (
	WebhookDeliveryWorkflowType  = "WebhookDelivery"
	EmbedOutboxWorkflowType      = "EmbedOutbox"
	StorefrontAOAuthWorkflowType = "StorefrontAOAuth"
)

// WebhookDeliveryWorkflowID is a delivery's retry run (CONTRACT 5).
func WebhookDeliveryWorkflowID(deliveryID string) string { return "webhook-delivery/" + deliveryID }

// EmbedOutboxWorkflowID is the one outbox dispatcher.
const EmbedOutboxWorkflowID = "embed-outbox"

// StorefrontAOAuthWorkflowID is the code exchange of a bridge.
func StorefrontAOAuthWorkflowID(bridgeID string) string { return "embed-oauth/" + bridgeID }

// WebhookDeliveryInput is a delivery whose first attempt failed.
type WebhookDeliveryInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	DeliveryID     uuid.UUID `json:"deliveryId"`
	// Schedule are the waits before attempts 2, 3, ... (nil:
	// embed.RetrySchedule); fixed at the start, so a run keeps its own.
	Schedule []time.Duration `json:"schedule,omitempty"`
	// FirstAttempt is the first attempt this run makes: 2 (default) after
	// a failed first attempt, 1 (at once) when the first attempt was
	// abandoned unanswered.
	FirstAttempt int `json:"firstAttempt,omitempty"`
}

// WebhookDeliveryResult is how the delivery ended.
type WebhookDeliveryResult struct {
	Success  bool `json:"success"`
	Attempts int  `json:"attempts"`
}

// deliveryAttemptOptions: one HTTP attempt (15 s) plus its record; an
// activity failure (the database) is retried a few times, a receiver's
// failure is an answer, not an error.
var deliveryAttemptOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		MaximumAttempts: 10, NonRetryableErrorTypes: []string{activities.ErrTypeEmbedRefused}},
}

// WebhookDelivery makes the attempts of a delivery from FirstAttempt on,
// attempt n ≥ 2 after embed.RetrySchedule[n-2] (attempts 2 to 7), until it succeeds, the receiver answers 410, the webhook is
// disabled or deleted, or the schedule ends.
func WebhookDelivery(ctx workflow.Context, in WebhookDeliveryInput) (WebhookDeliveryResult, error) {
	var a *activities.EmbedActivities
	actx := workflow.WithActivityOptions(ctx, deliveryAttemptOptions)
	schedule := in.Schedule
	if len(schedule) == 0 {
		schedule = embed.RetrySchedule
	}
	first := in.FirstAttempt
	if first < 1 {
		first = 2
	}
	last := len(schedule) + 1
	for attempt := first; attempt <= last; attempt++ {
		if attempt >= 2 {
			if err := workflow.Sleep(ctx, schedule[attempt-2]); err != nil {
				return WebhookDeliveryResult{Attempts: attempt - 1}, err
			}
		}
		var res embed.AttemptResult
		err := workflow.ExecuteActivity(actx, a.AttemptDelivery, embed.AttemptInput{
			OrganizationID: in.OrganizationID, DeliveryID: in.DeliveryID, Attempt: attempt, Final: attempt == last}).Get(ctx, &res)
		if err != nil {
			return WebhookDeliveryResult{Attempts: attempt}, err
		}
		if res.Stop {
			return WebhookDeliveryResult{Success: res.Success, Attempts: attempt}, nil
		}
	}
	return WebhookDeliveryResult{Attempts: len(schedule) + 1}, nil
}

// EmbedOutboxInput carries nothing yet (room to grow).
type EmbedOutboxInput struct {
	// Idle is how long to wait when the outbox is empty (0: one second).
	Idle time.Duration `json:"idle"`
}

// outboxRounds is how many batches one run handles before it continues as
// new, keeping its history short.
const outboxRounds = 500

var dispatchOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
}

// EmbedOutbox is the one dispatcher of the embed outbox: it fans out a
// batch, and when the outbox is empty waits Idle before looking again.
func EmbedOutbox(ctx workflow.Context, in EmbedOutboxInput) error {
	idle := in.Idle
	if idle <= 0 {
		idle = time.Second
	}
	var a *activities.EmbedActivities
	actx := workflow.WithActivityOptions(ctx, dispatchOptions)
	for range outboxRounds {
		var res embed.DispatchResult
		if err := workflow.ExecuteActivity(actx, a.DispatchOutbox).Get(ctx, &res); err != nil {
			workflow.GetLogger(ctx).Warn("outbox dispatch failed", "Error", err)
		}
		if res.Events == 0 {
			if err := workflow.Sleep(ctx, idle); err != nil {
				return err
			}
		}
	}
	return workflow.NewContinueAsNewError(ctx, EmbedOutbox, in)
}

var oauthExchangeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3,
		NonRetryableErrorTypes: []string{activities.ErrTypeEmbedRefused}},
}

// StorefrontAOAuth exchanges an authorization code in an activity.
func StorefrontAOAuth(ctx workflow.Context, in embed.ExchangeInput) (embed.ExchangeResult, error) {
	var a *activities.EmbedActivities
	var res embed.ExchangeResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, oauthExchangeOptions), a.ExchangeOAuthCode, in).Get(ctx, &res)
	return res, err
}
