package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/embed"
)

// ErrTypeEmbedRefused is the non-retryable error type of an embed activity
// whose failure a retry cannot change (a refused OAuth code, a bridge that
// is gone).
const ErrTypeEmbedRefused = "EmbedRefused"

// EmbedActivities are the embed domain's activities: thin wrappers of
// embed.Service (delivery fan-out and retries, the OAuth code exchange).
type EmbedActivities struct {
	Embed *embed.Service
}

// OutboxBatch is how many outbox events one DispatchOutbox run fans out.
const OutboxBatch = 500

// DispatchOutbox fans out one batch of outbox events.
func (a *EmbedActivities) DispatchOutbox(ctx context.Context) (embed.DispatchResult, error) {
	beat := func() {}
	if activity.IsActivity(ctx) {
		beat = func() { activity.RecordHeartbeat(ctx) }
	}
	res, err := a.Embed.DispatchOutbox(ctx, OutboxBatch, beat)
	return res, embedError(err)
}

// AttemptDelivery makes one retry attempt of a delivery.
func (a *EmbedActivities) AttemptDelivery(ctx context.Context, in embed.AttemptInput) (embed.AttemptResult, error) {
	res, err := a.Embed.AttemptDelivery(ctx, in)
	return res, embedError(err)
}

// ExchangeOAuthCode exchanges a storefront_a authorization code (once: a
// code is single-use, so only a call that never reached the platform is
// retried).
func (a *EmbedActivities) ExchangeOAuthCode(ctx context.Context, in embed.ExchangeInput) (embed.ExchangeResult, error) {
	res, err := a.Embed.ExchangeOAuthCode(ctx, in)
	return res, embedError(err)
}

// embedError makes a domain refusal that a retry cannot change
// non-retryable; everything else (the database, an unreachable platform)
// is retried.
func embedError(err error) error {
	var de *domain.Error
	if err == nil || !errors.As(err, &de) || de.Kind.Retryable() {
		return err
	}
	return temporal.NewNonRetryableApplicationError(de.Message, ErrTypeEmbedRefused, nil, de.Code)
}
