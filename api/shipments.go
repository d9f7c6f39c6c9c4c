package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
)

// mountShipments registers the shipment, label and shipment action
// endpoints: HTTP over the shipping domain (shipping.Service).
//
// Creating a shipment buys its label synchronously (CONTRACT 8b): the
// service inserts the shipment pending and its ShipmentLabel workflow
// (shipment-label/<shipmentId>, update-with-start) buys and records the
// label while the request waits. A request with an Idempotency-Key always
// names the same shipment (see purchaseID), so a client's retry joins the
// same purchase and never buys twice.
//
// Extensions: GET /shipments/{id}/label serves the label document;
// label_url is a signed link to it that opens without credentials and
// expires (GET /labels/{id}, mountSignedLabels); GET
// /shipments/{id}/actions and /actions/{actionId} read action records.
func (s *Server) mountShipments(r chi.Router) {
	read := r.With(s.scope("shipments:read"))
	write := r.With(s.scope("shipments:write"))
	read.Get("/shipments", s.h(s.listShipments))
	write.Post("/shipments", s.h(s.createShipment))
	read.Get("/shipments/{id}", s.h(s.getShipment))
	write.Patch("/shipments/{id}", s.h(s.updateShipment))
	write.Delete("/shipments/{id}", s.h(s.deleteShipment))
	read.Get("/shipments/{id}/label", s.h(s.getShipmentLabel))
	write.Post("/shipments/{id}/actions", s.h(s.createShipmentAction))
	read.Get("/shipments/{id}/actions", s.h(s.listShipmentActions))
	read.Get("/shipments/{id}/actions/{actionId}", s.h(s.getShipmentAction))
}

// mountSignedLabels registers GET /labels/{shipmentId}: a label_url, whose
// signature is its credential.
func (s *Server) mountSignedLabels(r chi.Router) {
	r.Get("/labels/{id}", s.h(s.getSignedLabel))
}

// --- JSON shapes (snake_case) ---

// shipmentListItemJSON is the list item: exactly the specification's
// fields, plus the included bridge and order.
type shipmentListItemJSON struct {
	ID             uuid.UUID                  `json:"id"`
	OrderID        *uuid.UUID                 `json:"order_id"`
	Status         string                     `json:"status"`
	Carrier        string                     `json:"carrier"`
	Service        string                     `json:"service"`
	TrackingNumber *string                    `json:"tracking_number"`
	LabelURL       *string                    `json:"label_url"`
	Rate           *shipping.ShipmentRateJSON `json:"rate"`
	ShipDate       *string                    `json:"ship_date"`
	CreatedAt      time.Time                  `json:"created_at"`
	// Present only when included; null when the bridge or order is gone.
	Bridge json.RawMessage `json:"bridge,omitempty"`
	Order  json.RawMessage `json:"order,omitempty"`
}

// shipmentJSON is the full shipment (get-one, create, update): the
// shipping domain's rendering, shared with the end-user webhook payloads.
type shipmentJSON = shipping.ShipmentJSON

// shipmentOrderJSON is the order of include=order.
type shipmentOrderJSON struct {
	ID          uuid.UUID             `json:"id"`
	OrderNumber *string               `json:"order_number"`
	ExternalID  string                `json:"external_id"`
	Status      string                `json:"status"`
	Customer    orderListCustomerJSON `json:"customer"`
	Total       float64               `json:"total"`
	Currency    string                `json:"currency"`
	BridgeID    *uuid.UUID            `json:"bridge_id"`
	CreatedAt   time.Time             `json:"created_at"`
}

func shipmentRaw(raw json.RawMessage, empty string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(empty)
	}
	return raw
}

func (s *Server) toShipmentListItemJSON(sh shipping.Shipment) shipmentListItemJSON {
	return shipmentListItemJSON{
		ID: sh.ID, OrderID: sh.OrderID, Status: sh.Status, Carrier: sh.Carrier, Service: sh.Service,
		TrackingNumber: sh.TrackingNumber, LabelURL: s.Shipping.LabelURL(sh), Rate: shipping.ShipmentRateOf(sh),
		ShipDate: shipping.ShipDateOf(sh.ShipDate), CreatedAt: sh.CreatedAt,
	}
}

func (s *Server) toShipmentJSON(sh shipping.Shipment) shipmentJSON {
	return s.Shipping.ShipmentJSONOf(sh)
}

// withIncludes sets the included bridge and order of one shipment.
func withIncludes[J any](j *J, bridge, order *json.RawMessage, page shipping.ShipmentPage, sh shipping.Shipment) {
	if page.Bridges != nil {
		*bridge = orderBridgeOf(page.Bridges, sh.BridgeID)
	}
	if page.Orders != nil {
		*order = shipmentOrderOf(page.Orders, sh.OrderID)
	}
}

func shipmentOrderOf(orders map[uuid.UUID]shipping.ShipmentOrder, id *uuid.UUID) json.RawMessage {
	if id == nil {
		return json.RawMessage(`null`)
	}
	o, ok := orders[*id]
	if !ok {
		return json.RawMessage(`null`)
	}
	return orderJSONOf(shipmentOrderJSON{
		ID: o.ID, OrderNumber: o.OrderNumber, ExternalID: o.ExternalID, Status: o.Status,
		Customer: orderListCustomerJSON{Name: orderNullable(o.CustomerName), Email: o.CustomerEmail},
		Total:    o.Total, Currency: o.Currency, BridgeID: o.BridgeID, CreatedAt: o.CreatedAt,
	})
}

// parseShipmentInclude reads include=bridge,order; anything else is 400.
func parseShipmentInclude(r *http.Request) (bridge, order bool, err error) {
	for _, part := range strings.Split(r.URL.Query().Get("include"), ",") {
		switch strings.TrimSpace(part) {
		case "":
		case "bridge":
			bridge = true
		case "order":
			order = true
		default:
			return false, false, errValidation(FieldError{Field: "include", Message: "must be a comma-separated list of bridge, order"})
		}
	}
	return bridge, order, nil
}

// --- list and get ---

func (s *Server) listShipments(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", shipping.ShipmentStatuses...)
	details.collect(err)
	orderID, err := queryUUID(r, "order_id")
	details.collect(err)
	carrier, err := queryEnum(r, "carrier", carriers.Codes()...)
	details.collect(err)
	sort, err := parseSort(r, shipping.ShipmentSortFields, "created_at", true)
	details.collect(err)
	incBridge, incOrder, err := parseShipmentInclude(r)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	res, err := s.Shipping.ListShipments(r.Context(), actorOf(r), shipping.ListShipmentsInput{
		Status: status, OrderID: orderID, Carrier: carrier, Sort: r.URL.Query().Get("sort"), Desc: sort.Desc,
		Limit: page.Limit, Offset: page.Offset(), IncludeBridge: incBridge, IncludeOrder: incOrder,
	})
	if err != nil {
		return err
	}
	out := make([]shipmentListItemJSON, 0, len(res.Items))
	for _, sh := range res.Items {
		j := s.toShipmentListItemJSON(sh)
		withIncludes(&j, &j.Bridge, &j.Order, res, sh)
		out = append(out, j)
	}
	writeList(w, out, page, res.Total)
	return nil
}

func (s *Server) getShipment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	incBridge, incOrder, err := parseShipmentInclude(r)
	if err != nil {
		return err
	}
	res, err := s.Shipping.GetShipment(r.Context(), actorOf(r), id, incBridge, incOrder)
	if err != nil {
		return err
	}
	sh := res.Items[0]
	out := s.toShipmentJSON(sh)
	withIncludes(&out, &out.Bridge, &out.Order, res, sh)
	writeData(w, http.StatusOK, out)
	return nil
}

// getShipmentLabel serves the label document with its content type:
// application/pdf or application/x-zpl. A label of several packages
// serves one package's label with ?piece=N (1-based; the default is the
// first package's PDF, or every package's ZPL one after the other).
func (s *Server) getShipmentLabel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	l, err := s.Shipping.ShipmentLabel(r.Context(), actorOf(r), id, r.URL.Query().Get("piece"))
	if err != nil {
		return err
	}
	writeLabel(w, l)
	return nil
}

// getSignedLabel serves the label of a label_url: the signature is the
// credential (shipping.SignedLabel).
func (s *Server) getSignedLabel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment label")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l, err := s.Shipping.SignedLabel(r.Context(), shipping.SignedLabelInput{
		ShipmentID: id, OrganizationID: q.Get("organization"), Expires: q.Get("expires"), Signature: q.Get("signature"), Piece: q.Get("piece"),
	})
	if err != nil {
		return err
	}
	writeLabel(w, l)
	return nil
}

func writeLabel(w http.ResponseWriter, l shipping.LabelFile) {
	w.Header().Set("Content-Type", l.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(l.Document)))
	w.Header().Set("Content-Disposition", `inline; filename="`+l.Filename+`"`)
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(l.Document)
}

// --- create, update, delete ---

func (s *Server) createShipment(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return err
	}
	in, err := decodeCreateShipment(v, body)
	if err != nil {
		return err
	}
	actor := actorOf(r)
	in.ID = purchaseID(r, actor.OrganizationID, "shipment")
	sh, err := s.Shipping.CreateShipment(r.Context(), actor, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.toShipmentJSON(sh))
	return nil
}

// updateShipment applies status, tracking_number and metadata. The
// specification leaves shipment status moves open: any status may be set
// (tracking moves it too). metadata is merged one level deep (keys
// overwrite, null removes a key); tracking_number null clears it. carrier
// and service are fixed once the label is bought: sending another value is
// 400 validation_error (the same value is accepted).
func (s *Server) updateShipment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	sh, err := s.Shipping.UpdateShipment(r.Context(), actorOf(r), id, decodeUpdateShipment(body))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toShipmentJSON(sh))
	return nil
}

// deleteShipment deletes a shipment for good, voiding a label not yet
// moving (shipping.DeleteShipment).
func (s *Server) deleteShipment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	if err := s.Shipping.DeleteShipment(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// purchaseNamespace is the UUIDv5 namespace of purchaseID.
var purchaseNamespace = uuid.MustParse("6f3c8a52-0d4e-4f0b-9a51-2c7e1b9d4a10")

// purchaseID is the id of a shipment, pickup or action about to be bought
// (kind "shipment", "pickup", "shipment-action"): with an Idempotency-Key
// it is derived from the organization and the key (UUIDv5), so a client's
// retry of the request names the same record and the same workflow and
// cannot buy twice, even after the key's stored answer was released or
// lost; without one it is random (the workflow id then guards the
// purchase).
func purchaseID(r *http.Request, orgID uuid.UUID, kind string) uuid.UUID {
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		return uuid.NewSHA1(purchaseNamespace, []byte(orgID.String()+"\x00"+kind+"\x00"+key))
	}
	return uuid.New()
}
