package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/store"
)

// WebhookEventTypes are the events an end-user webhook may subscribe to
// (CONTRACT 12); webhook.test is only sent by the test endpoint.
var WebhookEventTypes = []string{
	"order.created", "order.updated", "shipment.created", "shipment.shipped", "shipment.delivered",
	"bridge.connected", "bridge.sync_failed", "webhook.test",
}

// Webhook limits.
const (
	MaxWebhooksPerUser = 5
	MinSecretLength    = 16
	maxSecretLength    = 256
	maxURLLength       = 2048
	// RecentDeliveries is how many deliveries the log shows.
	RecentDeliveries = 50
)

// Webhook is the end-user webhook resource; the secret is masked.
type Webhook struct {
	ID                  uuid.UUID `json:"id"`
	URL                 string    `json:"url"`
	Secret              *string   `json:"secret"`
	Description         *string   `json:"description"`
	Events              []string  `json:"events"`
	IsActive            bool      `json:"is_active"`
	DisabledReason      *string   `json:"disabled_reason"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	CreatedAt           time.Time `json:"created_at"`
	UpdatedAt           time.Time `json:"updated_at"`
}

// maskedSecret shows that a secret is set and its last four characters.
func (s *Service) maskedSecret(w store.EndUserWebhook) *string {
	if len(w.Secret) == 0 {
		return nil
	}
	sec, err := s.openSecret(w)
	if err != nil || len(sec) < 4 {
		return ptr("********")
	}
	return ptr("********" + sec[len(sec)-4:])
}

func (s *Service) openSecret(w store.EndUserWebhook) (string, error) {
	if len(w.Secret) == 0 {
		return "", nil
	}
	if s.secrets == nil {
		return "", fmt.Errorf("no encryption key configured")
	}
	raw, err := s.secrets.Open(w.Secret, store.EndUserWebhookSecretAD(w.OrganizationID, w.ID))
	return string(raw), err
}

func (s *Service) toWebhook(w store.EndUserWebhook) Webhook {
	return Webhook{ID: w.ID, URL: w.URL, Secret: s.maskedSecret(w), Description: w.Description, Events: w.Events,
		IsActive: w.IsActive, DisabledReason: w.DisabledReason, ConsecutiveFailures: w.ConsecutiveFailures,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

// WebhookInput is POST /embed/webhooks.
type WebhookInput struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Secret      *string   `json:"secret"`
	Description *string   `json:"description"`
}

// WebhookPatch is PATCH /embed/webhooks/:id.
type WebhookPatch struct {
	Events   *[]string `json:"events"`
	IsActive *bool     `json:"is_active"`
}

func (s *Service) webhookScope(ctx context.Context, a domain.Actor) (sessionScope, error) {
	sc, err := s.scopeOf(ctx, a, "")
	if err != nil {
		return sc, err
	}
	if !sc.feature("end_user_webhooks") {
		return sc, domain.Forbidden("the end_user_webhooks feature is not enabled for this embed configuration")
	}
	return sc, nil
}

func checkEvents(fe *domain.FieldErrors, events []string) []string {
	if len(events) == 0 {
		fe.Add("events", "must name at least one event type")
		return nil
	}
	out := make([]string, 0, len(events))
	for i, e := range events {
		if !slices.Contains(WebhookEventTypes, e) {
			fe.Add(fmt.Sprintf("events[%d]", i), "must be one of "+strings.Join(WebhookEventTypes, ", "))
		} else if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// CheckTargetURL is the rule of a delivery target: an http(s) URL and,
// unless private URLs are allowed (fos dev), no loopback, private,
// link-local or metadata address (names resolving to one are refused when
// dialed).
func (s *Service) CheckTargetURL(u string) error {
	if len(u) > maxURLLength {
		return fmt.Errorf("must be at most %d characters", maxURLLength)
	}
	return netguard.CheckURL(u, s.allowPrivate)
}

// CreateWebhook adds a webhook of the session's end user (at most five).
func (s *Service) CreateWebhook(ctx context.Context, a domain.Actor, in WebhookInput) (Webhook, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return Webhook{}, err
	}
	var fe domain.FieldErrors
	if in.URL == nil || strings.TrimSpace(*in.URL) == "" {
		fe.Add("url", "is required")
	} else if err := s.CheckTargetURL(strings.TrimSpace(*in.URL)); err != nil {
		fe.Add("url", err.Error())
	}
	var events []string
	if in.Events == nil {
		fe.Add("events", "is required")
	} else {
		events = checkEvents(&fe, *in.Events)
	}
	if in.Secret != nil && (len(*in.Secret) < MinSecretLength || len(*in.Secret) > maxSecretLength) {
		fe.Add("secret", fmt.Sprintf("must be %d to %d characters", MinSecretLength, maxSecretLength))
	}
	if in.Description != nil {
		fe.MaxLen("description", *in.Description, 500)
	}
	if err := fe.Err(); err != nil {
		return Webhook{}, err
	}
	orgID, eu := a.OrganizationID, sc.endUser()
	w := store.EndUserWebhook{ID: uuid.New(), OrganizationID: orgID, EndUserID: eu, URL: strings.TrimSpace(*in.URL),
		Description: in.Description, Events: events}
	if in.Secret != nil {
		if s.secrets == nil {
			return Webhook{}, domain.Unavailable("secrets cannot be stored: no encryption key configured", nil)
		}
		w.Secret = s.secrets.Seal([]byte(*in.Secret), store.EndUserWebhookSecretAD(orgID, w.ID))
	}
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := store.LockEndUser(ctx, tx, orgID, eu); err != nil {
			return notFoundAs(err, "end user")
		}
		n, err := store.CountEndUserWebhooks(ctx, tx, orgID, eu)
		if err != nil {
			return err
		}
		if n >= MaxWebhooksPerUser {
			return domain.Conflict(fmt.Sprintf("this user already has the maximum of %d webhooks", MaxWebhooksPerUser))
		}
		if w, err = store.CreateEndUserWebhook(ctx, tx, w); err != nil {
			return err
		}
		return s.logEvent(ctx, tx, orgID, &eu, &sc.session.ID, "webhook.created", "webhook", w.ID.String(), map[string]any{"events": events})
	})
	if err != nil {
		return Webhook{}, err
	}
	return s.toWebhook(w), nil
}

// ListWebhooks are the session's end user's webhooks.
func (s *Service) ListWebhooks(ctx context.Context, a domain.Actor) ([]Webhook, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return nil, err
	}
	list, err := store.EndUserWebhooks(ctx, s.store.Pool, a.OrganizationID, sc.endUser())
	out := make([]Webhook, 0, len(list))
	for _, w := range list {
		out = append(out, s.toWebhook(w))
	}
	return out, err
}

// UpdateWebhook changes a webhook's events or turns it on or off (on
// clears disabled_reason and the failure count).
func (s *Service) UpdateWebhook(ctx context.Context, a domain.Actor, id uuid.UUID, in WebhookPatch) (Webhook, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return Webhook{}, err
	}
	var fe domain.FieldErrors
	var p store.EndUserWebhookPatch
	if in.Events != nil {
		p.Events = checkEvents(&fe, *in.Events)
	}
	p.IsActive = in.IsActive
	if err := fe.Err(); err != nil {
		return Webhook{}, err
	}
	eu := sc.endUser()
	var w store.EndUserWebhook
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		if w, err = store.UpdateEndUserWebhook(ctx, tx, a.OrganizationID, eu, id, p); err != nil {
			return notFoundAs(err, "webhook")
		}
		return s.logEvent(ctx, tx, a.OrganizationID, &eu, &sc.session.ID, "webhook.updated", "webhook", id.String(), nil)
	})
	if err != nil {
		return Webhook{}, err
	}
	return s.toWebhook(w), nil
}

// DeleteWebhook deletes a webhook of the session's end user.
func (s *Service) DeleteWebhook(ctx context.Context, a domain.Actor, id uuid.UUID) error {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return err
	}
	eu := sc.endUser()
	return s.store.InTx(ctx, func(tx pgx.Tx) error {
		if err := store.DeleteEndUserWebhook(ctx, tx, a.OrganizationID, eu, id); err != nil {
			return notFoundAs(err, "webhook")
		}
		return s.logEvent(ctx, tx, a.OrganizationID, &eu, &sc.session.ID, "webhook.deleted", "webhook", id.String(), nil)
	})
}

// ListWebhookEventTypes are the subscribable event types.
func (s *Service) ListWebhookEventTypes(ctx context.Context, a domain.Actor) ([]string, error) {
	if _, err := s.scopeOf(ctx, a, ""); err != nil {
		return nil, err
	}
	return WebhookEventTypes, nil
}

// TestOutcome is POST /embed/webhooks/:id/test.
type TestOutcome struct {
	Success    bool `json:"success"`
	StatusCode *int `json:"statusCode"`
}

// TestWebhook sends webhook.test to a webhook of the session's end user
// now, logs the delivery and answers how the receiver took it.
func (s *Service) TestWebhook(ctx context.Context, a domain.Actor, id uuid.UUID) (TestOutcome, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return TestOutcome{}, err
	}
	w, err := store.EndUserWebhookByID(ctx, s.store.Pool, a.OrganizationID, sc.endUser(), id)
	if err != nil {
		return TestOutcome{}, notFoundAs(err, "webhook")
	}
	body, _ := json.Marshal(Payload{Event: "webhook.test", OrganizationID: w.OrganizationID, EndUserID: w.EndUserID,
		Timestamp: s.now().UTC(), Data: map[string]any{"message": "This is a test delivery from the fulfillment service."}})
	d := store.WebhookDelivery{ID: uuid.New(), OrganizationID: w.OrganizationID, WebhookID: w.ID, EndUserID: w.EndUserID,
		MessageID: "msg_" + strings.ReplaceAll(uuid.NewString(), "-", ""), Event: "webhook.test", Body: body}
	ds, err := store.InsertWebhookDeliveries(ctx, s.store.Pool, []store.WebhookDelivery{d})
	if err != nil || len(ds) != 1 {
		return TestOutcome{}, err
	}
	out, err := s.attempt(ctx, w, ds[0], 1, true, DeliveryTimeout)
	if err != nil {
		return TestOutcome{}, err
	}
	return TestOutcome{Success: out.Delivery.Success, StatusCode: out.Delivery.StatusCode}, nil
}

// DeliveryEntry is an entry of the delivery log.
type DeliveryEntry struct {
	ID         uuid.UUID `json:"id"`
	Event      string    `json:"event"`
	StatusCode *int      `json:"status_code"`
	Success    bool      `json:"success"`
	Error      *string   `json:"error"`
	Attempt    int       `json:"attempt"`
	DurationMS *int      `json:"duration_ms"`
	CreatedAt  time.Time `json:"created_at"`
}

// ToDeliveryEntry renders a delivery.
func ToDeliveryEntry(d store.WebhookDelivery) DeliveryEntry {
	return DeliveryEntry{ID: d.ID, Event: d.Event, StatusCode: d.StatusCode, Success: d.Success, Error: d.Error,
		Attempt: d.Attempt, DurationMS: d.DurationMS, CreatedAt: d.CreatedAt}
}

// ListDeliveries are the webhook's last 50 deliveries.
func (s *Service) ListDeliveries(ctx context.Context, a domain.Actor, id uuid.UUID) ([]DeliveryEntry, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return nil, err
	}
	if _, err := store.EndUserWebhookByID(ctx, s.store.Pool, a.OrganizationID, sc.endUser(), id); err != nil {
		return nil, notFoundAs(err, "webhook")
	}
	list, err := store.RecentWebhookDeliveries(ctx, s.store.Pool, a.OrganizationID, id, RecentDeliveries)
	out := make([]DeliveryEntry, 0, len(list))
	for _, d := range list {
		out = append(out, ToDeliveryEntry(d))
	}
	return out, err
}

// Redeliver sends a logged delivery of the webhook again, as a new
// delivery with the same body and webhook-id (receivers may dedupe it).
func (s *Service) Redeliver(ctx context.Context, a domain.Actor, webhookID, deliveryID uuid.UUID) (DeliveryEntry, error) {
	sc, err := s.webhookScope(ctx, a)
	if err != nil {
		return DeliveryEntry{}, err
	}
	w, err := store.EndUserWebhookByID(ctx, s.store.Pool, a.OrganizationID, sc.endUser(), webhookID)
	if err != nil {
		return DeliveryEntry{}, notFoundAs(err, "webhook")
	}
	old, err := store.WebhookDeliveryByID(ctx, s.store.Pool, a.OrganizationID, deliveryID)
	if err != nil || old.WebhookID != w.ID {
		return DeliveryEntry{}, domain.NotFound("delivery")
	}
	if !w.IsActive {
		return DeliveryEntry{}, domain.Conflict("the webhook is disabled; turn it on first")
	}
	d := store.WebhookDelivery{ID: uuid.New(), OrganizationID: w.OrganizationID, WebhookID: w.ID, EndUserID: w.EndUserID,
		MessageID: old.MessageID, Event: old.Event, Body: old.Body}
	ds, err := store.InsertWebhookDeliveries(ctx, s.store.Pool, []store.WebhookDelivery{d})
	if err != nil || len(ds) != 1 {
		return DeliveryEntry{}, err
	}
	out, err := s.attempt(ctx, w, ds[0], 1, true, DeliveryTimeout)
	if err != nil {
		return DeliveryEntry{}, err
	}
	return ToDeliveryEntry(out.Delivery), nil
}
