package shipping

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ShipmentJSON is a shipment as the API shows it (GET /shipments/:id,
// create, update; snake_case), shared by the API and the end-user webhook
// payloads (CONTRACT 12: data is the resource as the API shows it). Bridge
// and Order are set only when included.
type ShipmentJSON struct {
	ID               uuid.UUID          `json:"id"`
	OrderID          *uuid.UUID         `json:"order_id"`
	BridgeID         *uuid.UUID         `json:"bridge_id"`
	CarrierAccountID *uuid.UUID         `json:"carrier_account_id"`
	Status           string             `json:"status"`
	Carrier          string             `json:"carrier"`
	Service          string             `json:"service"`
	TrackingNumber   *string            `json:"tracking_number"`
	LabelURL         *string            `json:"label_url"`
	Rate             *ShipmentRateJSON  `json:"rate"`
	ShipDate         *string            `json:"ship_date"`
	ShipFrom         json.RawMessage    `json:"ship_from"`
	ShipTo           json.RawMessage    `json:"ship_to"`
	Parcels          json.RawMessage    `json:"parcels"`
	Metadata         json.RawMessage    `json:"metadata"`
	Label            *ShipmentLabelJSON `json:"label"`
	CreatedAt        time.Time          `json:"created_at"`
	UpdatedAt        time.Time          `json:"updated_at"`
	Bridge           json.RawMessage    `json:"bridge,omitempty"`
	Order            json.RawMessage    `json:"order,omitempty"`
}

// ShipmentRateJSON is the rate paid for a shipment's label.
type ShipmentRateJSON struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// ShipmentLabelJSON describes the stored label document.
type ShipmentLabelJSON struct {
	Format      string `json:"format"`
	ContentType string `json:"content_type"`
}

// ShipmentRateOf is the shipment's rate (nil before a label is bought).
func ShipmentRateOf(sh Shipment) *ShipmentRateJSON {
	if sh.RateAmount == nil {
		return nil
	}
	cur := "USD"
	if sh.RateCurrency != nil && *sh.RateCurrency != "" {
		cur = *sh.RateCurrency
	}
	return &ShipmentRateJSON{Amount: *sh.RateAmount, Currency: cur}
}

// ShipDateOf is a ship date as the API shows it (YYYY-MM-DD).
func ShipDateOf(t *time.Time) *string {
	if t == nil {
		return nil
	}
	d := t.Format("2006-01-02")
	return &d
}

func rawOr(raw json.RawMessage, empty string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(empty)
	}
	return raw
}

// ShipmentJSONOf renders a shipment as the API shows it, with its signed
// label URL.
func (s *Service) ShipmentJSONOf(sh Shipment) ShipmentJSON {
	out := ShipmentJSON{
		ID: sh.ID, OrderID: sh.OrderID, BridgeID: sh.BridgeID, CarrierAccountID: sh.CarrierAccountID,
		Status: sh.Status, Carrier: sh.Carrier, Service: sh.Service, TrackingNumber: sh.TrackingNumber,
		LabelURL: s.LabelURL(sh), Rate: ShipmentRateOf(sh), ShipDate: ShipDateOf(sh.ShipDate),
		ShipFrom: rawOr(sh.ShipFrom, "null"), ShipTo: rawOr(sh.ShipTo, "null"),
		Parcels: rawOr(sh.Parcels, "[]"), Metadata: rawOr(sh.Metadata, "{}"),
		CreatedAt: sh.CreatedAt, UpdatedAt: sh.UpdatedAt,
	}
	if sh.HasLabel() {
		ct := ""
		if sh.LabelContentType != nil {
			ct = *sh.LabelContentType
		}
		out.Label = &ShipmentLabelJSON{Format: *sh.LabelFormat, ContentType: ct}
	}
	return out
}
