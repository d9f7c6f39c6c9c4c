package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// Inbound webhook processing (CONTRACT 6): an event stored by the API is
// processed by the InboundWebhook workflow through these activities. The
// payload is a hint, never the data: the resource is re-fetched from the
// platform with the bridge's credentials.

// WebhookActorName is the actor name of the order activities an inbound
// webhook records.
const WebhookActorName = "inbound webhook"

// hubLookback is how far before an event's receipt the shipping hub's
// lists are read (its payload names only a batch, not an order).
const hubLookback = 15 * time.Minute

// hubMaxPages bounds the pages one hub event reads.
const hubMaxPages = 10

// WebhookActivities are the activities of the InboundWebhook workflow.
type WebhookActivities struct {
	Store   *store.Store
	Secrets *secrets.Box
	// Platforms are the connectors that speak the platforms' own APIs.
	Platforms *platforms.Registry
	// Hooks run for the orders an event created (nil: rules.Noop).
	Hooks rules.OrderHooks
	// Events hears the orders an event created or changed (the agent's
	// standing orders; nil: nobody listens).
	Events rules.Events
	// Transforms loads the organization's before_sync and after_sync
	// transformations (nil: none), applied as a grab-orders run does.
	Transforms transforms.Loader
	Logger     *slog.Logger
}

// WebhookEventInput names one stored event.
type WebhookEventInput struct {
	OrganizationID string `json:"organizationId"`
	EventID        string `json:"eventId"`
}

// ProcessWebhookEventResult is what processing an event did.
type ProcessWebhookEventResult struct {
	// AlreadyProcessed is true when the event had been processed before
	// (a repeated run); nothing was done.
	AlreadyProcessed bool     `json:"alreadyProcessed"`
	Topic            string   `json:"topic"`
	OrderIDs         []string `json:"orderIds"`
	// CreatedOrderIDs are the orders the event created (their hooks run).
	CreatedOrderIDs []string `json:"createdOrderIds"`
	// Shipments counts the platform shipments a shipping hub's
	// SHIP_NOTIFY / ITEM_SHIP_NOTIFY stored (as grab-shipments does,
	// attached to their orders).
	Shipments *store.UpsertCounts `json:"shipments,omitempty"`
	// Ignored explains an event whose topic needs no work.
	Ignored string `json:"ignored,omitempty"`
	// HookErrors are order hooks that failed ("<orderId>: <error>").
	HookErrors []string `json:"hookErrors,omitempty"`
	// Transforms counts the before_sync/after_sync transformation outcomes.
	Transforms *SyncCounts `json:"transforms,omitempty"`
}

// webhookOrderNamespace is the UUID v5 namespace of the ids of orders an
// event creates.
var webhookOrderNamespace = uuid.MustParse("6a0f3c52-9b7e-5d41-8e2a-1c3b5d7f9e04")

// ProcessWebhookEvent marks the event processing, re-fetches the resource
// it points at through the bridge type's connector, upserts the orders,
// runs the order hooks for the orders it created and records the event
// processed, all in one activity (one Temporal round trip per event). It
// is idempotent: a processed event is left alone, and the orders and their
// "sync" activities are keyed by the event, so a retried attempt reports
// the orders the first one created.
func (a *WebhookActivities) ProcessWebhookEvent(ctx context.Context, in WebhookEventInput) (ProcessWebhookEventResult, error) {
	orgID, eventID, err := parseEventIDs(in)
	if err != nil {
		return ProcessWebhookEventResult{}, err
	}
	ev, err := store.BeginWebhookEventProcessing(ctx, a.Store.Pool, orgID, eventID)
	if errors.Is(err, store.ErrNotFound) {
		return ProcessWebhookEventResult{}, temporal.NewNonRetryableApplicationError("webhook event "+in.EventID+" not found", ErrTypeInvalidInput, nil)
	}
	if err != nil {
		return ProcessWebhookEventResult{}, fmt.Errorf("read webhook event %s: %w", in.EventID, err)
	}
	res := ProcessWebhookEventResult{Topic: ev.Topic, OrderIDs: []string{}, CreatedOrderIDs: []string{}}
	if ev.Status == store.WebhookEventProcessed {
		res.AlreadyProcessed = true
		return res, nil
	}

	b, err := store.BridgeByID(ctx, a.Store.Pool, orgID, ev.BridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return res, temporal.NewNonRetryableApplicationError("the event's bridge was deleted", ErrTypeBridgeUnavailable, nil)
	}
	if err != nil {
		return res, fmt.Errorf("read bridge %s: %w", ev.BridgeID, err)
	}
	if b.Status != store.BridgeActive {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("bridge %q is %s; only an active bridge syncs", b.Name, b.Status), ErrTypeBridgeUnavailable, nil)
	}
	pb, err := store.PlatformBridge(a.Secrets, b)
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError("bridge credentials cannot be opened", ErrTypeBridgeUnavailable, err)
	}
	src := store.OrderSyncSource{BridgeName: &b.Name}
	conn, err := a.connector(b.Type)
	if err != nil {
		return res, platformError(err, src)
	}

	orders, ships, ignored, err := a.fetch(ctx, conn, pb, ev)
	if err != nil {
		return res, platformError(err, src)
	}
	res.Ignored = ignored
	wfID := "inbound-webhook/" + ev.ID.String()
	var tf SyncCounts
	if len(orders) > 0 {
		before, err := loadChain(ctx, a.Transforms, orgID, b.ID, transforms.BeforeSync)
		if err != nil {
			return res, err
		}
		if orders, tf, err = beforeSync(ctx, before, orders); err != nil {
			return res, err
		}
	}
	externalIDs := make([]string, 0, len(orders))
	var updated []uuid.UUID // orders the event changed
	for _, o := range orders {
		out, err := store.UpsertPlatformOrder(ctx, a.Store, store.OrderUpsert{
			OrganizationID: orgID,
			BridgeID:       b.ID,
			NewOrderID:     uuid.NewSHA1(webhookOrderNamespace, []byte(ev.ID.String()+"\x00"+o.ExternalID)),
			Order:          o,
			Activity: store.OrderSyncActivity{
				ID:          OrderActivityID(wfID, o.ExternalID, store.OrderSyncActivityType),
				Description: fmt.Sprintf("Synced from %s (webhook %s)", b.Name, ev.Topic),
				ActorType:   "system",
				ActorName:   WebhookActorName,
				Metadata: map[string]any{
					"bridgeId": b.ID.String(), "externalId": o.ExternalID, "webhookEventId": ev.ID.String(),
					"topic": ev.Topic, "workflowId": wfID,
				},
			},
		})
		if errors.Is(err, store.ErrInvalidInput) {
			return res, temporal.NewNonRetryableApplicationError("the platform's order "+o.ExternalID+" cannot be stored: "+TenantMessage(err), ErrTypePlatformPermanent, err)
		}
		if err != nil {
			return res, fmt.Errorf("upsert order %s: %w", o.ExternalID, err)
		}
		res.OrderIDs = append(res.OrderIDs, out.OrderID.String())
		externalIDs = append(externalIDs, o.ExternalID)
		if out.Created {
			// A webhook storm grows the tables as a sync does.
			a.Store.NoteBulkWrite(ctx, "orders", 1)
			res.CreatedOrderIDs = append(res.CreatedOrderIDs, out.OrderID.String())
		} else if len(out.ChangedFields) > 0 {
			updated = append(updated, out.OrderID)
		}
	}
	// The hub's shipments, once their orders are stored (each is attached
	// to its order by the order's external id).
	if len(ships) > 0 {
		counts, err := store.UpsertPlatformShipments(ctx, a.Store, orgID, b.ID, ships, nil)
		if errors.Is(err, store.ErrNotFound) {
			return res, temporal.NewNonRetryableApplicationError("the event's bridge was deleted", ErrTypeBridgeUnavailable, nil)
		}
		if err != nil {
			return res, fmt.Errorf("upsert shipments: %w", err)
		}
		res.Shipments = &counts
		rules.Notify(ctx, a.Events, orgID, rules.EventShipmentCreated, counts.CreatedIDs)
		counts.CreatedIDs = nil // told; the result keeps the counts
	}
	if len(externalIDs) > 0 {
		after, err := loadChain(ctx, a.Transforms, orgID, b.ID, transforms.AfterSync)
		if err != nil {
			return res, err
		}
		ac, err := afterSyncOrders(ctx, a.Store, orgID, after,
			func(ext, typ string) uuid.UUID { return OrderActivityID(wfID, ext, typ) },
			externalIDs, WebhookActorName, map[string]any{"bridgeId": b.ID.String(), "webhookEventId": ev.ID.String(), "workflowId": wfID})
		if err != nil {
			return res, err
		}
		tf.AfterSyncWritten += ac.AfterSyncWritten
		tf.TransformFailed += ac.TransformFailed
		tf.TransformErrors = append(tf.TransformErrors, ac.TransformErrors...)
	}
	if tf.AfterSyncWritten > 0 || tf.TransformFailed > 0 {
		res.Transforms = &tf
	}

	// The order hooks of the created orders: their failure is logged and
	// kept with the event, never undoes the orders.
	hooks := a.Hooks
	if hooks == nil {
		hooks = rules.Noop{}
	}
	for _, id := range res.CreatedOrderIDs {
		if err := hooks.OrderCreated(ctx, orgID, uuid.MustParse(id)); err != nil {
			a.log().WarnContext(ctx, "order hooks failed for an order created by a webhook", "organization_id", orgID, "order_id", id, "error", err)
			res.HookErrors = append(res.HookErrors, id+": "+TenantMessage(err))
		}
	}
	// Orders the event changed trigger the order_updated dispatchers (Part
	// 2, Events step 5); an order already assigned to a destination is not
	// assigned there again, so a redelivery adds nothing.
	for _, id := range updated {
		rules.OrderEvent(ctx, hooks, orgID, id, rules.TriggerOrderUpdated)
	}
	// The standing orders of the event's orders, a batch each.
	if a.Events != nil {
		created := make([]uuid.UUID, 0, len(res.CreatedOrderIDs))
		for _, id := range res.CreatedOrderIDs {
			created = append(created, uuid.MustParse(id))
		}
		rules.Notify(ctx, a.Events, orgID, rules.EventOrderCreated, created)
		rules.Notify(ctx, a.Events, orgID, rules.EventOrderUpdated, updated)
	}
	if err := store.FinishWebhookEvent(ctx, a.Store.Pool, orgID, ev.ID, store.WebhookEventProcessed, "", res); err != nil {
		return res, fmt.Errorf("record webhook event %s processed: %w", ev.ID, err)
	}
	a.log().InfoContext(ctx, "webhook event processed", "organization_id", orgID, "event_id", ev.ID,
		"bridge_id", b.ID, "topic", ev.Topic, "orders", len(res.OrderIDs), "created", len(res.CreatedOrderIDs))
	return res, nil
}

func (a *WebhookActivities) connector(bridgeType string) (platforms.Connector, error) {
	if a.Platforms == nil {
		return nil, &platforms.Error{Code: platforms.CodeUnsupportedType, Message: "no platform connector is configured"}
	}
	return a.Platforms.Get(bridgeType)
}

// fetch reads the orders (and a hub's shipments) an event points at, from
// the platform.
func (a *WebhookActivities) fetch(ctx context.Context, conn platforms.Connector, b platforms.Bridge, ev store.WebhookEvent) ([]platforms.Order, []platforms.Shipment, string, error) {
	var payload map[string]any
	dec := json.NewDecoder(strings.NewReader(string(ev.Payload)))
	dec.UseNumber()
	_ = dec.Decode(&payload)
	if b.Type == platforms.TypeShippingHubA {
		return a.fetchHub(ctx, conn, b, ev, jsonScalar(payload["resource_url"]))
	}
	id, ignored, err := WebhookOrderRef(b.Type, ev.Topic, payload)
	if err != nil || id == "" {
		return nil, nil, ignored, err
	}
	o, err := conn.FetchOrder(ctx, b, id)
	if err != nil {
		return nil, nil, "", err
	}
	return []platforms.Order{*o}, nil, "", nil
}

// WebhookOrderRef is the platform's id of the order a storefront's event
// points at (the payload is only a hint: the order is fetched), or why the
// event needs no processing:
//   - storefront_a: topics orders/*, the payload is the order (id);
//   - storefront_b: topics order.*, the payload is the order (id);
//   - storefront_c: scopes store/order/* ({data: {type: "order", id}}) and
//     store/shipment/* ({data: {type: "shipment", id, orderId}}): its
//     light payloads carry the ids only.
func WebhookOrderRef(bridgeType, topic string, payload map[string]any) (id, ignored string, err error) {
	noID := &platforms.Error{Code: platforms.CodeInvalidRequest, Message: "the payload names no order id"}
	switch bridgeType {
	case platforms.TypeStorefrontA, platforms.TypeStorefrontB:
		prefix := "orders/"
		if bridgeType == platforms.TypeStorefrontB {
			prefix = "order."
		}
		if !strings.HasPrefix(topic, prefix) && !(bridgeType == platforms.TypeStorefrontB && topic == "unknown") {
			return "", "topic " + topic + " needs no processing", nil
		}
		if id = jsonScalar(payload["id"]); id == "" {
			return "", "", noID
		}
		return id, "", nil
	case platforms.TypeStorefrontC:
		data, _ := payload["data"].(map[string]any)
		switch {
		case strings.HasPrefix(topic, "store/order/"):
			id = jsonScalar(data["id"])
		case strings.HasPrefix(topic, "store/shipment/"):
			id = jsonScalar(data["orderId"])
		default:
			return "", "topic " + topic + " needs no processing", nil
		}
		if id == "" {
			return "", "", noID
		}
		return id, "", nil
	}
	return "", "bridge type " + bridgeType + " has no webhook processing", nil
}

// fetchHub reads what a hub event points at. Its payload is only
// {resource_url, resource_type}, and its resource_url is never dialed (it
// is the sender's text): the orders (ORDER_NOTIFY) or the shipments'
// orders (SHIP_NOTIFY, ITEM_SHIP_NOTIFY) changed shortly before the event
// are listed through the connector instead; the shipments are returned
// too, to be stored as grab-shipments stores them. A resource_url naming
// an order (orderId) narrows that to one order.
func (a *WebhookActivities) fetchHub(ctx context.Context, conn platforms.Connector, b platforms.Bridge, ev store.WebhookEvent, resourceURL string) ([]platforms.Order, []platforms.Shipment, string, error) {
	if u, err := url.Parse(resourceURL); err == nil {
		if id := u.Query().Get("orderId"); id != "" {
			o, err := conn.FetchOrder(ctx, b, id)
			if err != nil {
				return nil, nil, "", err
			}
			return []platforms.Order{*o}, nil, "", nil
		}
	}
	since := ev.CreatedAt.Add(-hubLookback)
	switch ev.Topic {
	case "ORDER_NOTIFY", "ITEM_ORDER_NOTIFY":
		var out []platforms.Order
		cursor := ""
		for page := 0; page < hubMaxPages; page++ {
			orders, next, err := conn.ListOrders(ctx, b, since, cursor)
			if err != nil {
				return nil, nil, "", err
			}
			out = append(out, orders...)
			if next == "" {
				break
			}
			cursor = next
		}
		return out, nil, "", nil
	case "SHIP_NOTIFY", "ITEM_SHIP_NOTIFY":
		lister, ok := conn.(platforms.ShipmentLister)
		if !ok {
			return nil, nil, "the connector lists no shipments", nil
		}
		seen := map[string]bool{}
		var out []platforms.Order
		var shipments []platforms.Shipment
		cursor := ""
		for page := 0; page < hubMaxPages; page++ {
			ships, next, err := lister.ListShipments(ctx, b, since, cursor)
			if err != nil {
				return nil, nil, "", err
			}
			shipments = append(shipments, ships...)
			for _, s := range ships {
				if s.OrderExternalID == "" || seen[s.OrderExternalID] {
					continue
				}
				seen[s.OrderExternalID] = true
				o, err := conn.FetchOrder(ctx, b, s.OrderExternalID)
				if errors.Is(err, platforms.ErrOrderNotFound) {
					continue
				}
				if err != nil {
					return nil, nil, "", err
				}
				out = append(out, *o)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		return out, shipments, "", nil
	}
	return nil, nil, "topic " + ev.Topic + " needs no processing", nil
}

// FinishWebhookEventInput is the outcome of an event's processing.
type FinishWebhookEventInput struct {
	OrganizationID string                    `json:"organizationId"`
	EventID        string                    `json:"eventId"`
	Failed         bool                      `json:"failed"`
	Error          string                    `json:"error"`
	Result         ProcessWebhookEventResult `json:"result"`
}

// FinishWebhookEvent records the outcome on the event (processed or
// failed). A processed event keeps its first outcome.
func (a *WebhookActivities) FinishWebhookEvent(ctx context.Context, in FinishWebhookEventInput) error {
	orgID, eventID, err := parseEventIDs(WebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID})
	if err != nil {
		return err
	}
	status := store.WebhookEventProcessed
	if in.Failed {
		status = store.WebhookEventFailed
	}
	err = store.FinishWebhookEvent(ctx, a.Store.Pool, orgID, eventID, status, TenantText(in.Error), in.Result)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func parseEventIDs(in WebhookEventInput) (uuid.UUID, uuid.UUID, error) {
	org, err := uuid.Parse(in.OrganizationID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	ev, err := uuid.Parse(in.EventID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("eventId is not a UUID", ErrTypeInvalidInput, nil)
	}
	return org, ev, nil
}

func jsonScalar(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case json.Number:
		return x.String()
	}
	return ""
}

func (a *WebhookActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(nopWriter{}, nil))
	}
	return a.Logger
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
