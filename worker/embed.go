package worker

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/workflows"
)

// WebhookTaskQueue is the task queue of the end-user webhook deliveries
// and the embed OAuth exchange for a main task queue, so a slow receiver
// never delays the interactive work.
func WebhookTaskQueue(main string) string { return main + "-webhooks" }

// EmbedDeps are what the embed activities need besides Deps.
type EmbedDeps struct {
	StorefrontA      embed.StorefrontAApp
	AllowPrivateURLs bool
	BaseURL          string
	// RetrySchedule replaces embed.RetrySchedule (tests).
	RetrySchedule []time.Duration
}

// registerEmbed registers the embed workflows (WebhookDelivery,
// EmbedOutbox, StorefrontAOAuth) and their activities over embed.Service.
func registerEmbed(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.WebhookDelivery, workflow.RegisterOptions{Name: workflows.WebhookDeliveryWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.EmbedOutbox, workflow.RegisterOptions{Name: workflows.EmbedOutboxWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.StorefrontAOAuth, workflow.RegisterOptions{Name: workflows.StorefrontAOAuthWorkflowType})
	queue := deps.EmbedTaskQueue
	if queue == "" {
		queue = WebhookTaskQueue(deps.TaskQueue)
	}
	ed := embed.Deps{Store: deps.Store, Secrets: deps.Secrets, Logger: deps.Logger.With("component", "activities", "domain", "embed"),
		Platforms: deps.Platforms, StorefrontA: deps.Embed.StorefrontA, BaseURL: deps.Embed.BaseURL,
		AllowPrivateURLs: deps.Embed.AllowPrivateURLs,
		// Payloads show shipments as the API does (label URLs signed for
		// the service's public URL).
		Shipments: shipping.New(shipping.Deps{Store: deps.Store, Secrets: deps.Secrets, Logger: deps.Logger, BaseURL: deps.Embed.BaseURL})}
	if deps.Temporal != nil {
		ed.Retries = TemporalEmbed{Client: deps.Temporal, TaskQueue: queue, Schedule: deps.Embed.RetrySchedule}
	}
	r.RegisterActivity(&activities.EmbedActivities{Embed: embed.New(ed)})
}

// TemporalEmbed is the Temporal adapter of the embed domain's ports.
type TemporalEmbed struct {
	Client    client.Client
	TaskQueue string
	// Schedule replaces embed.RetrySchedule (tests; nil: the contract's).
	Schedule []time.Duration
}

// ExchangeOAuthCode implements embed.OAuthRuns: the StorefrontAOAuth run
// embed-oauth/<bridgeId>, awaited. A refusal of the platform comes back as
// an Upstream domain error.
func (t TemporalEmbed) ExchangeOAuthCode(ctx context.Context, in embed.ExchangeInput) (embed.ExchangeResult, error) {
	opts := Start{ID: workflows.StorefrontAOAuthWorkflowID(in.BridgeID.String()), TaskQueue: t.TaskQueue, OrganizationID: in.OrganizationID.String(),
		Summary:  "storefront_a OAuth code exchange for bridge " + in.BridgeID.String(),
		BridgeID: in.BridgeID.String(),
		Memo:     map[string]any{"bridgeId": in.BridgeID.String()}}.Options()
	run, err := t.Client.ExecuteWorkflow(ctx, opts, workflows.StorefrontAOAuth, in)
	if err != nil {
		return embed.ExchangeResult{}, Unavailable(ctx, err)
	}
	var res embed.ExchangeResult
	if err := run.Get(ctx, &res); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeEmbedRefused {
			return res, domain.Upstream("platform_error", appErr.Message(), nil)
		}
		return res, Unavailable(ctx, err)
	}
	return res, nil
}

// StartDeliveryRetries implements embed.RedeliveryRuns: the
// WebhookDelivery run webhook-delivery/<deliveryId> (a running one is
// joined).
func (t TemporalEmbed) StartDeliveryRetries(ctx context.Context, orgID, deliveryID uuid.UUID, firstAttempt int) error {
	opts := StartOptions(workflows.WebhookDeliveryWorkflowID(deliveryID.String()), t.TaskQueue, orgID.String(),
		map[string]any{"deliveryId": deliveryID.String()})
	_, err := t.Client.ExecuteWorkflow(ctx, opts, workflows.WebhookDelivery, workflows.WebhookDeliveryInput{OrganizationID: orgID, DeliveryID: deliveryID, Schedule: t.Schedule, FirstAttempt: firstAttempt})
	return Unavailable(ctx, err)
}

// EnsureEmbedOutbox starts the one outbox dispatcher (embed-outbox) on
// queue unless it runs.
func EnsureEmbedOutbox(ctx context.Context, c client.Client, queue string) error {
	opts := StartOptions(workflows.EmbedOutboxWorkflowID, queue, "system", map[string]any{"purpose": "embed outbox dispatcher"})
	_, err := c.ExecuteWorkflow(ctx, opts, workflows.EmbedOutbox, workflows.EmbedOutboxInput{})
	return err
}
