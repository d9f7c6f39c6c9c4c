package rules

import (
	"context"

	"github.com/google/uuid"
)

// Event triggers: what happened to orders and shipments, as the agent's
// standing orders name it (CONTRACT 11 trigger types).
const (
	EventOrderCreated      = "on_order_created"
	EventOrderUpdated      = "on_order_updated"
	EventShipmentCreated   = "on_shipment_created"
	EventTrackingException = "on_tracking_exception"
)

// Events hears order and shipment events once they are committed (the
// agent's standing orders run on them). ids are orders (order events) or
// shipments (shipment events) of one organization, a batch at a time:
// an import tells its whole page at once. An implementation costs one
// query per batch when nothing listens, starts what it starts without
// waiting for it, and never fails its caller: the event already happened
// (failures are logged). Telling the same event again is safe.
type Events interface {
	Happened(ctx context.Context, orgID uuid.UUID, trigger string, ids []uuid.UUID)
}

// Notify tells events (nil: nobody listens) of a batch.
func Notify(ctx context.Context, events Events, orgID uuid.UUID, trigger string, ids []uuid.UUID) {
	if events == nil || len(ids) == 0 {
		return
	}
	events.Happened(context.WithoutCancel(ctx), orgID, trigger, ids)
}

type standingKnownKey struct{}

type standingKnownValue struct {
	event     string
	listening bool
}

// WithStandingKnown tells the Events implementation that the caller
// already asked, in its own statement, whether the organization has any
// active standing order of event (store.CreateOrderProbeEvents): with
// none, telling that event costs nothing. Other events are asked as ever.
func WithStandingKnown(ctx context.Context, event string, listening bool) context.Context {
	return context.WithValue(ctx, standingKnownKey{}, standingKnownValue{event, listening})
}

// StandingKnown is what WithStandingKnown said of event (known false:
// nobody asked).
func StandingKnown(ctx context.Context, event string) (listening, known bool) {
	v, ok := ctx.Value(standingKnownKey{}).(standingKnownValue)
	if !ok || v.event != event {
		return false, false
	}
	return v.listening, true
}
