package embed

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// Deliveries (CONTRACT 7, 12). An event is written to the outbox in the
// transaction of the change; DispatchOutbox (an activity of the
// EmbedOutbox workflow, on the webhook task queue) turns each event into
// one delivery per subscribed webhook (deterministic ids, so a repeated
// fan-out finds the same rows), makes each first attempt concurrently
// within FirstAttemptBudget, and starts a WebhookDelivery workflow
// (webhook-delivery/<deliveryId>) for each that failed (it retries on
// RetrySchedule through AttemptDelivery) or did not answer in time (it
// makes attempt 1 at once, with the full timeout, then retries). Every attempt of
// a delivery carries the same webhook-id, so a receiver can drop the
// duplicates that at-least-once delivery implies.

// RetrySchedule are the waits before attempts 2 to 7 (CONTRACT 12).
var RetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour}

// MaxAttempts is the number of attempts of a delivery.
var MaxAttempts = 1 + len(RetrySchedule)

// FirstAttemptBudget bounds the fan-out's first attempt, so a receiver
// that hangs holds up its batch for at most this long: a first attempt not
// answered by then is abandoned unrecorded and made again, with the full
// DeliveryTimeout, as attempt 1 of the delivery's own WebhookDelivery
// workflow (the receiver may see it twice, with one webhook-id).
const FirstAttemptBudget = time.Second

// fanOutConcurrency is how many first attempts run at once.
const fanOutConcurrency = 64

// Payload is the body of a delivery.
type Payload struct {
	Event          string    `json:"event"`
	OrganizationID uuid.UUID `json:"organizationId"`
	EndUserID      uuid.UUID `json:"endUserId"`
	Timestamp      time.Time `json:"timestamp"`
	Data           any       `json:"data"`
}

// Signature headers.
const (
	HeaderSignature          = "X-Service-Signature"
	HeaderWebhookID          = "webhook-id"
	HeaderWebhookTimestamp   = "webhook-timestamp"
	HeaderWebhookSignature   = "webhook-signature"
	standardWebhooksSecretPx = "whsec_"
)

// Sign sets the signature headers of a delivery with secret: the
// service's own X-Service-Signature (base64 HMAC-SHA256 of the body) and
// the Standard Webhooks headers (v1, base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>"; a whsec_ secret's key is its base64 part, as
// Standard Webhooks libraries read it, any other secret's key its bytes).
func Sign(h http.Header, secret, msgID string, ts time.Time, body []byte) {
	h.Set(HeaderWebhookID, msgID)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	if secret == "" {
		return
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	h.Set(HeaderSignature, base64.StdEncoding.EncodeToString(m.Sum(nil)))
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, standardWebhooksSecretPx); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil {
			key = k
		}
	}
	m = hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", msgID, ts.Unix())
	m.Write(body)
	h.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
}

// sendResult is one HTTP attempt.
type sendResult struct {
	status   *int
	err      *string
	duration time.Duration
	// timedOut: no answer within the timeout.
	timedOut bool
}

func (r sendResult) success() bool { return r.status != nil && *r.status >= 200 && *r.status < 300 }
func (r sendResult) gone() bool    { return r.status != nil && *r.status == http.StatusGone }

// send posts the body once; the URL is checked again (netguard) and every
// connection goes through the guarded dialer.
func (s *Service) send(ctx context.Context, w store.EndUserWebhook, d store.WebhookDelivery, timeout time.Duration) sendResult {
	start := time.Now()
	fail := func(msg string) sendResult { return sendResult{err: &msg, duration: time.Since(start)} }
	if err := s.CheckTargetURL(w.URL); err != nil {
		return fail("the target URL is not allowed: " + err.Error())
	}
	secret, err := s.openSecret(w)
	if err != nil {
		return fail("the webhook secret cannot be opened")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(d.Body))
	if err != nil {
		return fail("the target URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fos-webhooks/1")
	Sign(req.Header, secret, d.MessageID, s.now(), d.Body)
	resp, err := s.webhookClient.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, netguard.ErrForbiddenAddress):
			return fail("the target resolves to an address that is not allowed")
		case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout"):
			r := fail(fmt.Sprintf("no answer within %s", timeout))
			r.timedOut = true
			return r
		default:
			return fail("connection failed")
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	out := sendResult{status: &code, duration: time.Since(start)}
	if code < 200 || code >= 300 {
		msg := fmt.Sprintf("the receiver answered %d", code)
		out.err = &msg
	}
	return out
}

// attempt sends one attempt of a delivery and records it.
func (s *Service) attempt(ctx context.Context, w store.EndUserWebhook, d store.WebhookDelivery, n int, final bool, timeout time.Duration) (store.DeliveryOutcome, error) {
	return s.record(ctx, d, s.send(ctx, w, d, timeout), n, final)
}

func (s *Service) record(ctx context.Context, d store.WebhookDelivery, r sendResult, n int, final bool) (store.DeliveryOutcome, error) {
	return store.RecordDeliveryAttempt(ctx, s.store.Pool, store.DeliveryAttempt{
		DeliveryID: d.ID, Attempt: n, StatusCode: r.status, Success: r.success(), Error: r.err,
		DurationMS: int(r.duration.Milliseconds()), Gone: r.gone(), Final: final,
	})
}

// AttemptInput is one retry of a delivery.
type AttemptInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	DeliveryID     uuid.UUID `json:"deliveryId"`
	Attempt        int       `json:"attempt"`
	// Final: the last attempt of the schedule.
	Final bool `json:"final"`
}

// AttemptResult says whether to go on.
type AttemptResult struct {
	Success bool `json:"success"`
	// Stop: no further attempt (success, 410, webhook disabled or gone,
	// last attempt).
	Stop       bool `json:"stop"`
	StatusCode *int `json:"statusCode"`
}

// AttemptDelivery is the retry workflow's activity: attempt n of a
// delivery, recorded once (a repeated run of the same attempt does not
// count twice).
func (s *Service) AttemptDelivery(ctx context.Context, in AttemptInput) (AttemptResult, error) {
	d, err := store.WebhookDeliveryByID(ctx, s.store.Pool, in.OrganizationID, in.DeliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return AttemptResult{Stop: true}, nil // the webhook was deleted
	}
	if err != nil {
		return AttemptResult{}, err
	}
	if d.Success || d.Status == store.DeliveryFailed {
		return AttemptResult{Success: d.Success, Stop: true, StatusCode: d.StatusCode}, nil
	}
	if d.Attempt >= in.Attempt {
		// Recorded by an earlier run of this activity.
		return AttemptResult{Success: d.Success, Stop: d.Status != store.DeliveryRetrying, StatusCode: d.StatusCode}, nil
	}
	w, err := store.EndUserWebhookAnyUser(ctx, s.store.Pool, in.OrganizationID, d.WebhookID)
	if errors.Is(err, store.ErrNotFound) {
		return AttemptResult{Stop: true}, nil
	}
	if err != nil {
		return AttemptResult{}, err
	}
	if !w.IsActive {
		msg := "the webhook is disabled"
		_, err := store.RecordDeliveryAttempt(ctx, s.store.Pool, store.DeliveryAttempt{DeliveryID: d.ID, Attempt: in.Attempt, Error: &msg, Final: true})
		if err != nil {
			return AttemptResult{}, err
		}
		return AttemptResult{Stop: true}, nil
	}
	final := in.Final || in.Attempt >= MaxAttempts
	out, err := s.attempt(ctx, w, d, in.Attempt, final, DeliveryTimeout)
	if err != nil {
		return AttemptResult{}, err
	}
	res := AttemptResult{Success: out.Delivery.Success, StatusCode: out.Delivery.StatusCode}
	res.Stop = res.Success || final || !out.WebhookActive || out.Delivery.Status == store.DeliveryFailed
	return res, nil
}

// deliveryNamespace derives a delivery's id from its webhook and outbox
// event, so a fan-out run again finds its rows.
var deliveryNamespace = uuid.MustParse("6b0f2f43-8f0e-4f7e-9a57-0d6c1c1e0b21")

// DispatchResult is one fan-out batch.
type DispatchResult struct {
	Events     int `json:"events"`
	Deliveries int `json:"deliveries"`
	Succeeded  int `json:"succeeded"`
	Retrying   int `json:"retrying"`
}

// eventData is the payload data of each outbox event: the resource as the
// API shows it (CONTRACT 12), rendered from the snapshot the event holds
// with the API's own serializers: an order as GET /orders/:id
// (rules.OrderDetailJSONOf), a shipment as GET /shipments/:id
// (shipping.ShipmentJSONOf), a bridge as the embed bridge (config
// masked). An event without a snapshot (written before them, or by the
// service with its data rendered already) keeps its data.
func (s *Service) eventData(ctx context.Context, events []store.OutboxEvent) (map[int64]any, error) {
	out := make(map[int64]any, len(events))
	var ids []int64
	for _, e := range events {
		out[e.ID] = e.Data
		if e.Resource != nil {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	snaps, err := store.LoadOutboxSnapshots(ctx, s.store.Pool, ids)
	if err != nil {
		return nil, fmt.Errorf("read outbox snapshots: %w", err)
	}
	for _, e := range events {
		if e.Resource == nil {
			continue
		}
		if o, ok := snaps.Orders[e.ID]; ok {
			out[e.ID] = rules.OrderDetailJSONOf(o)
		} else if sh, ok := snaps.Shipments[e.ID]; ok {
			out[e.ID] = s.shipments.ShipmentJSONOf(sh)
		} else if b, ok := snaps.Bridges[e.ID]; ok {
			eu := e.EndUserID
			out[e.ID] = s.ToBridge(b, &eu, false)
		} else {
			// Cannot happen for rows the triggers wrote: never send a raw
			// snapshot (it holds columns the API does not show).
			out[e.ID] = map[string]any{"id": e.Data["id"]}
		}
	}
	return out, nil
}

// DispatchOutbox fans out up to limit outbox events (the EmbedOutbox
// workflow's activity; run by one workflow at a time). Events are marked
// dispatched only after every delivery made its first attempt or has its
// retry workflow, so a crash repeats the fan-out (at-least-once) and never
// loses a delivery.
func (s *Service) DispatchOutbox(ctx context.Context, limit int, heartbeat func()) (DispatchResult, error) {
	events, err := store.PendingOutbox(ctx, s.store.Pool, limit)
	if err != nil || len(events) == 0 {
		return DispatchResult{}, err
	}
	subs, err := store.OutboxSubscribers(ctx, s.store.Pool, events)
	if err != nil {
		return DispatchResult{}, err
	}
	data, err := s.eventData(ctx, events)
	if err != nil {
		return DispatchResult{}, err
	}
	var rows []store.WebhookDelivery
	hooks := map[uuid.UUID]store.EndUserWebhook{}
	for _, e := range events {
		if len(subs[e.ID]) == 0 {
			continue
		}
		body, err := json.Marshal(Payload{Event: e.Event, OrganizationID: e.OrganizationID, EndUserID: e.EndUserID,
			Timestamp: e.CreatedAt.UTC(), Data: data[e.ID]})
		if err != nil {
			return DispatchResult{}, err
		}
		for _, w := range subs[e.ID] {
			hooks[w.ID] = w
			oid := e.ID
			id := uuid.NewSHA1(deliveryNamespace, []byte(fmt.Sprintf("%s/%d", w.ID, e.ID)))
			rows = append(rows, store.WebhookDelivery{ID: id, OrganizationID: e.OrganizationID, WebhookID: w.ID,
				EndUserID: e.EndUserID, MessageID: "msg_" + strings.ReplaceAll(id.String(), "-", ""), OutboxID: &oid,
				Event: e.Event, Body: body})
		}
	}
	stored, err := store.InsertWebhookDeliveries(ctx, s.store.Pool, rows)
	if err != nil {
		return DispatchResult{}, err
	}
	res := DispatchResult{Events: len(events), Deliveries: len(stored)}
	var mu sync.Mutex
	var firstErr error
	var accepted []store.FirstAttemptSuccess
	sem := make(chan struct{}, fanOutConcurrency)
	var wg sync.WaitGroup
	for _, d := range stored {
		if d.Status == store.DeliverySucceeded || d.Status == store.DeliveryFailed {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(d store.WebhookDelivery) {
			defer wg.Done()
			defer func() { <-sem }()
			retry, from := d.Status == store.DeliveryRetrying, 2
			if d.Status == store.DeliveryPending {
				r := s.send(ctx, hooks[d.WebhookID], d, FirstAttemptBudget)
				if r.timedOut {
					// A slow receiver: its workflow makes attempt 1.
					retry, from = true, 1
				} else if r.success() {
					// Recorded together after the batch.
					mu.Lock()
					accepted = append(accepted, store.FirstAttemptSuccess{DeliveryID: d.ID, StatusCode: *r.status, DurationMS: int(r.duration.Milliseconds())})
					mu.Unlock()
				} else {
					out, err := s.record(ctx, d, r, 1, false)
					if err != nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, err)
						mu.Unlock()
						return
					}
					retry = out.WebhookActive && out.Delivery.Status == store.DeliveryRetrying
				}
			}
			if retry && s.retries != nil {
				if err := s.retries.StartDeliveryRetries(ctx, d.OrganizationID, d.ID, from); err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				res.Retrying++
				mu.Unlock()
			}
			if heartbeat != nil {
				heartbeat()
			}
		}(d)
	}
	wg.Wait()
	if err := store.RecordFirstSuccesses(ctx, s.store.Pool, accepted); err != nil {
		firstErr = errors.Join(firstErr, err)
	}
	res.Succeeded = len(accepted)
	if firstErr != nil {
		return res, firstErr
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	return res, store.MarkOutboxDispatched(ctx, s.store.Pool, ids)
}
