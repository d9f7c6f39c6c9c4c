package bridgetasks

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Inbound webhooks: a platform's delivery is stored as a webhook_events
// row (deduplicated on its key) once its proof was checked; the worker's
// relay starts InboundWebhook for stored events. The receipt never waits
// for Temporal.

// WebhookEvent is an inbound delivery to store (store row).
type WebhookEvent = store.WebhookEvent

// InboundBridge is one bridge of any organization, named by the id in a
// delivery's URL (the caller proves itself with the bridge's secret, not a
// credential of an organization). Not found: no such bridge.
func (s *Service) InboundBridge(ctx context.Context, id uuid.UUID) (Bridge, error) {
	b, err := store.BridgeByIDAnyOrganization(ctx, s.store.Pool, id)
	return b, notFound(err, "bridge")
}

// WebhookSecret opens the bridge's webhook secret ("" when it has none).
func (s *Service) WebhookSecret(b Bridge) (string, error) {
	if len(b.Credentials) == 0 {
		return "", nil
	}
	full, err := store.BridgeFullConfig(s.secrets, b)
	if err != nil {
		return "", err
	}
	sec, _ := full[platforms.ConfigWebhookSecret].(string)
	return sec, nil
}

// RecordWebhookEvent stores a verified delivery for an active bridge and
// answers the event's id (an earlier one with the same dedupe key: that
// event's id, inserted false). A bridge no longer active or gone is not
// found; a payload PostgreSQL cannot store is invalid_payload. A new event
// wakes the worker's relay.
func (s *Service) RecordWebhookEvent(ctx context.Context, ev WebhookEvent) (id uuid.UUID, inserted bool, err error) {
	id, inserted, err = store.InsertActiveBridgeWebhookEvent(ctx, s.store.Pool, ev)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return uuid.Nil, false, domain.NotFound("bridge")
	case errors.Is(err, store.ErrInvalidInput):
		return uuid.Nil, false, domain.InvalidCode("invalid_payload", "the payload cannot be stored: "+err.Error())
	case err != nil:
		return uuid.Nil, false, err
	}
	if inserted {
		s.relay.poke()
	}
	return id, inserted, nil
}

// relayWaker wakes the worker's relay (NOTIFY fos_webhook_events) after
// events were stored: outside the insert's transaction, at most once per
// relayWakeEvery whatever the rate. A NOTIFY inside each insert would
// serialize their commits (PostgreSQL takes a global lock to queue a
// notification at commit); the relay polls anyway, so a lost wake-up only
// delays an event by one poll.
type relayWaker struct {
	store   *store.Store
	pending atomic.Bool
	running atomic.Bool
}

const relayWakeEvery = 10 * time.Millisecond

func (n *relayWaker) poke() {
	n.pending.Store(true)
	if n.running.CompareAndSwap(false, true) {
		go n.loop()
	}
}

func (n *relayWaker) loop() {
	for {
		for n.pending.Swap(false) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = n.store.Pool.Exec(ctx, `SELECT pg_notify($1, '')`, store.WebhookEventsChannel)
			cancel()
			time.Sleep(relayWakeEvery)
		}
		n.running.Store(false)
		// A poke between the last Swap and the Store above finds running
		// still true and starts nothing: look again.
		if !n.pending.Load() || !n.running.CompareAndSwap(false, true) {
			return
		}
	}
}
