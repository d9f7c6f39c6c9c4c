package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// WebhookRelay starts an InboundWebhook workflow for every stored inbound
// event (the transactional outbox of CONTRACT 6): the API answers a
// platform once the event row is written, and the relay hands the row to
// Temporal. An event accepted while Temporal is down waits in the table
// and is started once Temporal answers again.
//
// It wakes on LISTEN fos_webhook_events (one NOTIFY per insert) and polls
// every Poll as a fallback (a lost connection, a missed notification).
// Rows are claimed in batches with FOR UPDATE SKIP LOCKED under a lease, so
// relays in several worker processes share the queue; a claimed row whose
// start failed is retried after RetryWait.
type WebhookRelay struct {
	Store     *store.Store
	Temporal  client.Client
	TaskQueue string
	Logger    *slog.Logger
	// Batch is how many rows one claim takes (default 100); Starters how
	// many starts run at once (default 16).
	Batch    int
	Starters int
	// Poll is the fallback polling interval (default 2s).
	Poll time.Duration
	// RetryWait delays a row whose start failed (default 5s).
	RetryWait time.Duration
}

// Relay timing.
const (
	// relayLease: a claimed row is not claimed again for this long.
	relayLease = time.Minute
	// relayRecheck: a started row still "received" after this long is
	// started again (a no-op while its run exists), so an event whose run
	// was lost is not forgotten.
	relayRecheck = 10 * time.Minute
)

func (r *WebhookRelay) defaults() {
	if r.Batch <= 0 {
		r.Batch = 100
	}
	if r.Starters <= 0 {
		r.Starters = 16
	}
	if r.Poll <= 0 {
		r.Poll = 2 * time.Second
	}
	if r.RetryWait <= 0 {
		r.RetryWait = 5 * time.Second
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Run relays until ctx ends.
func (r *WebhookRelay) Run(ctx context.Context) error {
	r.defaults()
	wake := make(chan struct{}, 1)
	go r.listen(ctx, wake)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-timer.C:
		}
		for ctx.Err() == nil {
			n, err := r.RelayOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.Logger.Warn("webhook relay: claim failed", "error", err)
				}
				break
			}
			if n < r.Batch {
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(r.Poll)
	}
}

// listen holds a connection on LISTEN and signals wake on each notification.
func (r *WebhookRelay) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := func() error {
			conn, err := r.Store.Pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, "LISTEN "+store.WebhookEventsChannel); err != nil {
				return err
			}
			for {
				if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
					// The connection is in an unknown state: do not reuse it.
					_ = conn.Conn().Close(context.Background())
					return err
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
		if ctx.Err() != nil {
			return
		}
		r.Logger.Warn("webhook relay: LISTEN connection lost; polling meanwhile", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(r.Poll):
		}
	}
}

// RelayOnce claims one batch and starts its workflows. It returns how many
// rows it claimed.
func (r *WebhookRelay) RelayOnce(ctx context.Context) (int, error) {
	r.defaults()
	refs, err := store.ClaimWebhookEvents(ctx, r.Store.Pool, r.Batch, relayLease)
	if err != nil || len(refs) == 0 {
		return 0, err
	}
	var (
		mu            sync.Mutex
		started, fail []uuid.UUID
		wg            sync.WaitGroup
		sem           = make(chan struct{}, r.Starters)
	)
	for _, ref := range refs {
		wg.Add(1)
		sem <- struct{}{}
		go func(ref store.WebhookEventRef) {
			defer wg.Done()
			defer func() { <-sem }()
			err := r.start(ctx, ref)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fail = append(fail, ref.ID)
				r.Logger.Warn("webhook relay: workflow start failed; retrying later", "event_id", ref.ID, "error", err)
				return
			}
			started = append(started, ref.ID)
		}(ref)
	}
	wg.Wait()
	// Written even when ctx ended: a start that happened is recorded.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if len(started) > 0 {
		if err := store.MarkWebhookEventsRelayed(wctx, r.Store.Pool, started, relayRecheck); err != nil {
			return len(refs), err
		}
	}
	if len(fail) > 0 {
		if err := store.DelayWebhookEvents(wctx, r.Store.Pool, fail, r.RetryWait); err != nil {
			return len(refs), err
		}
	}
	return len(refs), nil
}

// start starts (or finds) the event's workflow. A run that is open or
// completed counts as started: the event is never processed twice by the
// relay (the workflow itself also skips a processed event). A run that
// closed without completing (terminated in the Temporal UI, timed out) is
// followed by a new one: the reconciler re-queues such an event
// (activities webhookEventKind, bounded attempts).
func (r *WebhookRelay) start(ctx context.Context, ref store.WebhookEventRef) error {
	id := ref.ID.String()
	opts := Start{ID: workflows.InboundWebhookWorkflowID(id), TaskQueue: r.TaskQueue, OrganizationID: ref.OrganizationID.String(),
		Summary:  fmt.Sprintf("Inbound webhook %s from bridge %s", ref.Topic, ref.BridgeID),
		BridgeID: ref.BridgeID.String(),
		Memo:     map[string]any{"eventId": id, "bridgeId": ref.BridgeID.String(), "topic": ref.Topic}}.Options()
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	opts.WorkflowExecutionTimeout = time.Hour
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := r.Temporal.ExecuteWorkflow(sctx, opts, workflows.InboundWebhookWorkflowType, workflows.InboundWebhookInput{
		OrganizationID: ref.OrganizationID.String(), EventID: id,
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}
