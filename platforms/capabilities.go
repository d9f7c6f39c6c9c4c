package platforms

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Optional connector capabilities. A bridge task asserts the connector it
// got from the Registry to one of these interfaces (c.(FulfillmentPusher));
// a connector that lacks one does not support the task.

// FulfillmentPusher sends a shipment of the service back to the platform.
type FulfillmentPusher interface {
	// PushFulfillment tells the platform that (part of) an order shipped with
	// a tracking number. It first checks whether the platform already has
	// that tracking number for the order and then creates nothing
	// (Created false), so a retried push never duplicates.
	PushFulfillment(ctx context.Context, b Bridge, f Fulfillment) (FulfillmentResult, error)
}

// FulfillmentTrackingUpdater is a FulfillmentPusher whose platform can
// change the tracking of a fulfillment it already has (storefront_a's
// update_tracking): given ReplacesTrackingNumber and FulfillmentExternalID,
// PushFulfillment moves that fulfillment to the new number (Updated)
// instead of creating a second one. A push run sends a shipment whose
// tracking number changed after its push again only to these; the others
// keep what they were first told.
type FulfillmentTrackingUpdater interface {
	FulfillmentPusher
	// UpdatesFulfillmentTracking marks the capability.
	UpdatesFulfillmentTracking()
}

// LocationLister reads the platform's locations (warehouses).
type LocationLister interface {
	ListLocations(ctx context.Context, b Bridge) ([]Location, error)
}

// ShipmentLister pages through the shipments (labels) a platform made,
// created since a time (zero: all). Pass the returned next cursor back for
// the following page; next is "" on the last page.
type ShipmentLister interface {
	ListShipments(ctx context.Context, b Bridge, since time.Time, cursor string) (shipments []Shipment, next string, err error)
}

// WebhookRegistrar registers the service's webhook endpoints with the
// platform. Ids are the platform's, as strings.
type WebhookRegistrar interface {
	RegisterWebhook(ctx context.Context, b Bridge, topic, address string) (Webhook, error)
	ListWebhooks(ctx context.Context, b Bridge) ([]Webhook, error)
	DeleteWebhook(ctx context.Context, b Bridge, id string) error
}

// Fulfillment is one shipment of an order, as pushed to a platform.
type Fulfillment struct {
	// OrderExternalID is the platform's id of the order.
	OrderExternalID string
	TrackingNumber  string
	// Carrier is the service's carrier code (carrier_a, ...) or a name the
	// platform knows; Service is the shipment's service (may be ""). The
	// connector names them the way its platform expects (CarrierName: the
	// bridge's carrierNames, else the default table).
	Carrier     string
	Service     string
	TrackingURL string
	// ShipDate is the day it shipped (zero: today, the platform's choice).
	ShipDate time.Time
	// NotifyCustomer asks the platform to tell the buyer; the bridge's
	// notifyCustomer config sets it too (NotifyCustomer).
	NotifyCustomer bool
	// LineItems restricts the fulfillment to some lines (the order lines'
	// ExternalID); empty means everything still unfulfilled.
	LineItems []FulfillmentLine
	// ReplacesTrackingNumber is the tracking number an earlier push sent
	// for the same shipment (its label was bought again): a connector
	// whose platform can change a fulfillment's tracking (storefront_a's
	// update_tracking) moves the fulfillment that carries it to
	// TrackingNumber instead of creating a second one.
	ReplacesTrackingNumber string
	// FulfillmentExternalID is the platform's id of the fulfillment that
	// earlier push created or found (FulfillmentResult.ExternalID), when
	// known: the fulfillment to move, whatever number it carries now.
	FulfillmentExternalID string
}

// FulfillmentLine is a quantity of one order line.
type FulfillmentLine struct {
	ExternalID string
	Quantity   int
}

// FulfillmentResult is the outcome of PushFulfillment.
type FulfillmentResult struct {
	// ExternalID is the platform's id of the fulfillment ("" when the
	// platform has no such id).
	ExternalID string
	// Created is false when the platform already had the tracking number
	// or when an existing fulfillment was moved to it (Updated).
	Created bool
	// Updated: an existing fulfillment's tracking was changed to the
	// number (FulfillmentTrackingUpdater).
	Updated bool
}

// Location is a platform location or warehouse.
type Location struct {
	ExternalID string   `json:"externalId"`
	Name       string   `json:"name"`
	Address    *Address `json:"address"`
	Active     bool     `json:"active"`
	IsDefault  bool     `json:"isDefault"`
}

// Shipment is a label made on the platform (shipping_hub_a).
type Shipment struct {
	ExternalID      string         `json:"externalId"`
	OrderExternalID string         `json:"orderExternalId"`
	OrderNumber     string         `json:"orderNumber"`
	TrackingNumber  string         `json:"trackingNumber"`
	CarrierCode     string         `json:"carrierCode"`
	ServiceCode     string         `json:"serviceCode"`
	ShipDate        time.Time      `json:"shipDate"`
	CreatedAt       time.Time      `json:"createdAt"`
	Cost            float64        `json:"cost"`
	Voided          bool           `json:"voided"`
	ShipTo          *Address       `json:"shipTo"`
	Items           []LineItem     `json:"items"`
	SourceData      map[string]any `json:"sourceData"`
}

// Webhook is a webhook registration on a platform.
type Webhook struct {
	ID      string `json:"id"`
	Topic   string `json:"topic"`
	Address string `json:"address"`
}

// CodeNothingToFulfill: the order has no open quantity left on the platform.
const CodeNothingToFulfill = "nothing_to_fulfill"

// ErrRateLimited matches (errors.Is) a *RateLimitError.
var ErrRateLimited = errors.New("platforms: rate limited")

// RateLimitError is a call the platform throttled (HTTP 429). It unwraps to
// the retryable *Error with code rate_limited, so IsRetryable and
// errors.As(err, **Error) work as for any platform error.
type RateLimitError struct {
	Err *Error
	// RetryAfter is the wait the platform asked for (Retry-After,
	// X-Rate-Limit-Reset); 0 when it named none.
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%s (retry after %s)", e.Err.Error(), e.RetryAfter)
}

// Unwrap returns the underlying *Error.
func (e *RateLimitError) Unwrap() error { return e.Err }

// Is lets errors.Is match ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// RetryAfter returns the wait a rate-limited platform asked for, and
// whether err is a rate-limit error at all.
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}
