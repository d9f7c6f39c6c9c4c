package rules

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/store"
)

// OrderJSON is the full order as the API shows it (camelCase): the answer
// of POST /orders. OrderDetailJSON adds the sync timestamps.
type OrderJSON struct {
	ID                uuid.UUID       `json:"id"`
	OrganizationID    uuid.UUID       `json:"organizationId"`
	BridgeID          *uuid.UUID      `json:"bridgeId"`
	ExternalID        string          `json:"externalId"`
	OrderNumber       *string         `json:"orderNumber"`
	Status            string          `json:"status"`
	PaymentStatus     string          `json:"paymentStatus"`
	FulfillmentStatus string          `json:"fulfillmentStatus"`
	Customer          json.RawMessage `json:"customer"`
	ShippingAddress   json.RawMessage `json:"shippingAddress"`
	BillingAddress    json.RawMessage `json:"billingAddress"`
	LineItems         json.RawMessage `json:"lineItems"`
	Totals            json.RawMessage `json:"totals"`
	Currency          string          `json:"currency"`
	Tags              []string        `json:"tags"`
	Note              *string         `json:"note"`
	Metadata          json.RawMessage `json:"metadata"`
	SourceData        json.RawMessage `json:"sourceData"`
	OrderedAt         time.Time       `json:"orderedAt"`
	CreatedAt         time.Time       `json:"createdAt"`
	UpdatedAt         time.Time       `json:"updatedAt"`
}

// OrderDetailJSON is the order as GET /orders/{id} and PATCH answer it
// (without the includes), and as after_sync transformations see it.
type OrderDetailJSON struct {
	OrderJSON
	SentToFulfillment *time.Time `json:"sentToFulfillment"`
	SentToCart        *time.Time `json:"sentToCart"`
}

// OrderJSONOf is the order's OrderJSON (tags [] and metadata {} when none).
func OrderJSONOf(o store.Order) OrderJSON {
	tags := o.Tags
	if tags == nil {
		tags = []string{}
	}
	meta := o.Metadata
	if meta == nil {
		meta = json.RawMessage(`{}`)
	}
	return OrderJSON{
		ID: o.ID, OrganizationID: o.OrganizationID, BridgeID: o.BridgeID, ExternalID: o.ExternalID,
		OrderNumber: o.OrderNumber, Status: o.Status, PaymentStatus: o.PaymentStatus, FulfillmentStatus: o.FulfillmentStatus,
		Customer: o.Customer, ShippingAddress: o.ShippingAddress, BillingAddress: o.BillingAddress,
		LineItems: o.LineItems, Totals: o.Totals, Currency: o.Currency, Tags: tags, Note: o.Note,
		Metadata: meta, SourceData: o.SourceData, OrderedAt: o.OrderedAt, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
	}
}

// OrderDetailJSONOf is the order's OrderDetailJSON.
func OrderDetailJSONOf(o store.Order) OrderDetailJSON {
	return OrderDetailJSON{OrderJSON: OrderJSONOf(o), SentToFulfillment: o.SentToFulfillment, SentToCart: o.SentToCart}
}
