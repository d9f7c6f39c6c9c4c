package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// mountShipments registers the shipment, label and shipment action endpoints.
//
// Creating a shipment buys its label synchronously through the
// ShipmentLabel workflow (CONTRACT 8b): the shipment row is inserted as
// pending first (with its addresses' coarse coordinates, for the tracking
// map), then the workflow shipment-label/<shipmentId> is started with
// update-with-start and the request waits for its outcome. The workflow
// buys the label with the shipment id as the carrier reference and moves
// the row to label_created with the label stored. A request the carrier
// refuses as invalid (an unknown service, …) is 400 validation_error naming
// the field (service, else body) and the pending row is deleted;
// credentials refused, carrier errors and network failures are 502
// carrier_error. A purchase whose outcome is unknown (the carrier's answer
// was lost) is 502 too, and the shipment stays, as exception, with the
// reason in metadata.label_purchase_error. A request with an Idempotency-Key always names the same shipment
// (see purchaseID), so a client's retry joins the same purchase and never
// buys twice.
//
// Extensions: GET /shipments/{id}/label serves the label document (label_url),
// GET /shipments/{id}/actions and /actions/{actionId} read action records.
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

// Bounds the specification leaves open.
const (
	shipmentMaxParcels       = 50
	shipmentMaxDimension     = 1000   // in or cm
	shipmentMaxWeight        = 10_000 // lb or kg
	shipmentMaxServiceLen    = 100
	shipmentMaxTrackingLen   = 100
	shipmentMaxAddressField  = 255
	shipmentActionMaxTextLen = 500
	// shipmentMaxShipAhead is how many days after today a ship_date may be
	// (the window of /rates).
	shipmentMaxShipAhead = 365
	// shipmentCarrierTimeout bounds one carrier call (a void);
	// shipmentWorkTimeout the wait for a purchase workflow's outcome.
	shipmentCarrierTimeout = 30 * time.Second
	shipmentWorkTimeout    = 100 * time.Second
)

// --- JSON shapes (snake_case) ---

// shipmentRateJSON is the price the carrier charged for the label.
type shipmentRateJSON struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// shipmentListItemJSON is the list item: exactly the specification's
// fields, plus the included bridge and order.
type shipmentListItemJSON struct {
	ID             uuid.UUID         `json:"id"`
	OrderID        *uuid.UUID        `json:"order_id"`
	Status         string            `json:"status"`
	Carrier        string            `json:"carrier"`
	Service        string            `json:"service"`
	TrackingNumber *string           `json:"tracking_number"`
	LabelURL       *string           `json:"label_url"`
	Rate           *shipmentRateJSON `json:"rate"`
	ShipDate       *string           `json:"ship_date"`
	CreatedAt      time.Time         `json:"created_at"`
	// Present only when included; null when the bridge or order is gone.
	Bridge json.RawMessage `json:"bridge,omitempty"`
	Order  json.RawMessage `json:"order,omitempty"`
}

// shipmentLabelJSON describes the stored label document.
type shipmentLabelJSON struct {
	Format      string `json:"format"`
	ContentType string `json:"content_type"`
}

// shipmentJSON is the full shipment (get-one, create, update).
type shipmentJSON struct {
	ID               uuid.UUID          `json:"id"`
	OrderID          *uuid.UUID         `json:"order_id"`
	BridgeID         *uuid.UUID         `json:"bridge_id"`
	CarrierAccountID *uuid.UUID         `json:"carrier_account_id"`
	Status           string             `json:"status"`
	Carrier          string             `json:"carrier"`
	Service          string             `json:"service"`
	TrackingNumber   *string            `json:"tracking_number"`
	LabelURL         *string            `json:"label_url"`
	Rate             *shipmentRateJSON  `json:"rate"`
	ShipDate         *string            `json:"ship_date"`
	ShipFrom         json.RawMessage    `json:"ship_from"`
	ShipTo           json.RawMessage    `json:"ship_to"`
	Parcels          json.RawMessage    `json:"parcels"`
	Metadata         json.RawMessage    `json:"metadata"`
	Label            *shipmentLabelJSON `json:"label"`
	CreatedAt        time.Time          `json:"created_at"`
	UpdatedAt        time.Time          `json:"updated_at"`
	Bridge           json.RawMessage    `json:"bridge,omitempty"`
	Order            json.RawMessage    `json:"order,omitempty"`
}

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

func (s *Server) shipmentLabelURL(sh store.Shipment) *string {
	if !sh.HasLabel() {
		return nil
	}
	u := strings.TrimRight(s.baseURL, "/") + "/api/v1/shipments/" + sh.ID.String() + "/label"
	return &u
}

func shipmentRate(sh store.Shipment) *shipmentRateJSON {
	if sh.RateAmount == nil {
		return nil
	}
	cur := "USD"
	if sh.RateCurrency != nil && *sh.RateCurrency != "" {
		cur = *sh.RateCurrency
	}
	return &shipmentRateJSON{Amount: *sh.RateAmount, Currency: cur}
}

func shipmentDate(t *time.Time) *string {
	if t == nil {
		return nil
	}
	d := t.Format("2006-01-02")
	return &d
}

func shipmentRaw(raw json.RawMessage, empty string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(empty)
	}
	return raw
}

func (s *Server) toShipmentListItemJSON(sh store.Shipment) shipmentListItemJSON {
	return shipmentListItemJSON{
		ID: sh.ID, OrderID: sh.OrderID, Status: sh.Status, Carrier: sh.Carrier, Service: sh.Service,
		TrackingNumber: sh.TrackingNumber, LabelURL: s.shipmentLabelURL(sh), Rate: shipmentRate(sh),
		ShipDate: shipmentDate(sh.ShipDate), CreatedAt: sh.CreatedAt,
	}
}

func (s *Server) toShipmentJSON(sh store.Shipment) shipmentJSON {
	out := shipmentJSON{
		ID: sh.ID, OrderID: sh.OrderID, BridgeID: sh.BridgeID, CarrierAccountID: sh.CarrierAccountID,
		Status: sh.Status, Carrier: sh.Carrier, Service: sh.Service, TrackingNumber: sh.TrackingNumber,
		LabelURL: s.shipmentLabelURL(sh), Rate: shipmentRate(sh), ShipDate: shipmentDate(sh.ShipDate),
		ShipFrom: shipmentRaw(sh.ShipFrom, "null"), ShipTo: shipmentRaw(sh.ShipTo, "null"),
		Parcels: shipmentRaw(sh.Parcels, "[]"), Metadata: shipmentRaw(sh.Metadata, "{}"),
		CreatedAt: sh.CreatedAt, UpdatedAt: sh.UpdatedAt,
	}
	if sh.HasLabel() {
		out.Label = &shipmentLabelJSON{Format: *sh.LabelFormat, ContentType: deref(sh.LabelContentType)}
	}
	return out
}

// --- include ---

type shipmentInclude struct{ bridge, order bool }

// parseShipmentInclude reads include=bridge,order; anything else is 400.
func parseShipmentInclude(r *http.Request) (shipmentInclude, error) {
	var inc shipmentInclude
	for _, part := range strings.Split(r.URL.Query().Get("include"), ",") {
		switch strings.TrimSpace(part) {
		case "":
		case "bridge":
			inc.bridge = true
		case "order":
			inc.order = true
		default:
			return inc, errValidation(FieldError{Field: "include", Message: "must be a comma-separated list of bridge, order"})
		}
	}
	return inc, nil
}

// shipmentIncludes loads the bridges and orders of shipments, each kind in
// one query.
type shipmentIncludes struct {
	bridges map[uuid.UUID]store.OrderBridge
	orders  map[uuid.UUID]store.ShipmentOrder
}

func (s *Server) loadShipmentIncludes(ctx context.Context, orgID uuid.UUID, inc shipmentInclude, list []store.Shipment) (shipmentIncludes, error) {
	var out shipmentIncludes
	var err error
	if inc.bridge {
		if out.bridges, err = store.OrderBridges(ctx, s.store.Pool, orgID, shipmentUniqueIDs(list, func(sh store.Shipment) *uuid.UUID { return sh.BridgeID })); err != nil {
			return out, err
		}
	}
	if inc.order {
		if out.orders, err = store.ShipmentOrders(ctx, s.store.Pool, orgID, shipmentUniqueIDs(list, func(sh store.Shipment) *uuid.UUID { return sh.OrderID })); err != nil {
			return out, err
		}
	}
	return out, nil
}

func shipmentUniqueIDs(list []store.Shipment, id func(store.Shipment) *uuid.UUID) []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	out := make([]uuid.UUID, 0, len(list))
	for _, sh := range list {
		if v := id(sh); v != nil && !seen[*v] {
			seen[*v] = true
			out = append(out, *v)
		}
	}
	return out
}

func (inc shipmentIncludes) bridge(id *uuid.UUID) json.RawMessage {
	return orderBridgeOf(inc.bridges, id)
}

func (inc shipmentIncludes) order(id *uuid.UUID) json.RawMessage {
	if id == nil {
		return json.RawMessage(`null`)
	}
	o, ok := inc.orders[*id]
	if !ok {
		return json.RawMessage(`null`)
	}
	return orderJSONOf(shipmentOrderJSON{
		ID: o.ID, OrderNumber: o.OrderNumber, ExternalID: o.ExternalID, Status: o.Status,
		Customer: orderListCustomerJSON{Name: orderNullable(o.CustomerName), Email: o.CustomerEmail},
		Total:    o.Total, Currency: o.Currency, BridgeID: o.BridgeID, CreatedAt: o.CreatedAt,
	})
}

// --- list and get ---

func (s *Server) listShipments(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", store.ShipmentStatuses...)
	details.collect(err)
	orderID, err := queryUUID(r, "order_id")
	details.collect(err)
	carrier, err := queryEnum(r, "carrier", carriers.Codes()...)
	details.collect(err)
	sort, err := parseSort(r, store.ShipmentSortColumns, "created_at", true)
	details.collect(err)
	inc, err := parseShipmentInclude(r)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	sortField := r.URL.Query().Get("sort")
	if sortField == "" {
		sortField = "created_at"
	}
	orgID := mustPrincipal(r).OrganizationID
	list, total, err := store.ListShipments(r.Context(), s.store.Pool, orgID, store.ShipmentListParams{
		Filter: store.ShipmentFilter{Status: status, OrderID: orderID, Carrier: carrier},
		Sort:   sortField, Desc: sort.Desc, Limit: page.Limit, Offset: page.Offset(),
	})
	if err != nil {
		return err
	}
	incs, err := s.loadShipmentIncludes(r.Context(), orgID, inc, list)
	if err != nil {
		return err
	}
	out := make([]shipmentListItemJSON, 0, len(list))
	for _, sh := range list {
		j := s.toShipmentListItemJSON(sh)
		if inc.bridge {
			j.Bridge = incs.bridge(sh.BridgeID)
		}
		if inc.order {
			j.Order = incs.order(sh.OrderID)
		}
		out = append(out, j)
	}
	writeList(w, out, page, total)
	return nil
}

func (s *Server) getShipment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	inc, err := parseShipmentInclude(r)
	if err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	sh, err := store.ShipmentByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	out := s.toShipmentJSON(sh)
	if inc.bridge || inc.order {
		incs, err := s.loadShipmentIncludes(r.Context(), orgID, inc, []store.Shipment{sh})
		if err != nil {
			return err
		}
		if inc.bridge {
			out.Bridge = incs.bridge(sh.BridgeID)
		}
		if inc.order {
			out.Order = incs.order(sh.OrderID)
		}
	}
	writeData(w, http.StatusOK, out)
	return nil
}

// getShipmentLabel serves the label document (label_url) with its content
// type: application/pdf or application/x-zpl. A label of several packages
// serves one package's label with ?piece=N (1-based; the default is the
// first package's PDF, or every package's ZPL one after the other).
func (s *Server) getShipmentLabel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	l, err := store.ShipmentLabel(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "shipment label")
	}
	doc := l.Document
	suffix := ""
	if v := r.URL.Query().Get("piece"); v != "" {
		n, err := strconv.Atoi(v)
		pieces := max(len(l.PieceDocuments), 1)
		if err != nil || n < 1 || n > pieces {
			return errValidation(FieldError{Field: "piece", Message: fmt.Sprintf("must be an integer from 1 to %d", pieces)})
		}
		if len(l.PieceDocuments) > 0 {
			doc = l.PieceDocuments[n-1]
			suffix = "-" + strconv.Itoa(n)
		}
	}
	ext := ".pdf"
	if l.Format == carriers.FormatZPL {
		ext = ".zpl"
	}
	w.Header().Set("Content-Type", l.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	w.Header().Set("Content-Disposition", `inline; filename="label-`+id.String()+suffix+ext+`"`)
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
	return nil
}

// --- create ---

// shipmentAddress is a ship-from or ship-to address as a shipment stores
// and shows it: street, city, state (province code), zip and country (ISO
// 3166 alpha-2), with optional name, company, phone and street2. Empty
// fields are null.
type shipmentAddress struct {
	Name    string
	Company string
	Phone   string
	Street  string
	Street2 string
	City    string
	State   string
	Zip     string
	Country string
}

func (a shipmentAddress) MarshalJSON() ([]byte, error) {
	n := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return json.Marshal(struct {
		Name    *string `json:"name"`
		Company *string `json:"company"`
		Phone   *string `json:"phone"`
		Street  *string `json:"street"`
		Street2 *string `json:"street2"`
		City    *string `json:"city"`
		State   *string `json:"state"`
		Zip     *string `json:"zip"`
		Country *string `json:"country"`
	}{n(a.Name), n(a.Company), n(a.Phone), n(a.Street), n(a.Street2), n(a.City), n(a.State), n(a.Zip), n(a.Country)})
}

// coordinates are the address's coarse coordinates from the carriers'
// gazetteer (carriers.Geocode), nils when the place is unknown.
func (a shipmentAddress) coordinates() (lat, lng *float64) {
	la, ln, ok := carriers.Geocode(a.City, a.State, a.Country)
	if !ok {
		return nil, nil
	}
	return &la, &ln
}

func (a shipmentAddress) carrier() carriers.Address {
	return carriers.Address{Name: a.Name, Company: a.Company, Phone: a.Phone, Address1: a.Street, Address2: a.Street2,
		City: a.City, ProvinceCode: a.State, CountryCode: a.Country, Zip: a.Zip}
}

// shipmentAddressOf reads an address object whatever naming its source
// used (street/address1/line1, state/provinceCode/province,
// zip/postalCode, country/countryCode, …). The country defaults to US.
func shipmentAddressOf(m map[string]any) shipmentAddress {
	pick := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		return ""
	}
	a := shipmentAddress{
		Name:    pick("name", "full_name", "fullName"),
		Company: pick("company", "company_name", "companyName"),
		Phone:   pick("phone", "phone_number", "phoneNumber"),
		Street:  pick("street", "address1", "address_1", "street1", "line1", "addressLine1", "address_line1", "address"),
		Street2: pick("street2", "address2", "address_2", "line2", "addressLine2", "address_line2"),
		City:    pick("city", "town", "locality"),
		State:   pick("state", "provinceCode", "province_code", "stateCode", "state_code", "province", "region"),
		Zip:     pick("zip", "postalCode", "postal_code", "zipCode", "zip_code", "postcode"),
	}
	if a.Name == "" {
		a.Name = strings.TrimSpace(pick("first_name", "firstName") + " " + pick("last_name", "lastName"))
	}
	country := pick("country_code", "countryCode", "country")
	a.Country = "US"
	if country != "" {
		a.Country = shipmentCountryCode(country)
		if a.Country == "" {
			a.Country = country // reported as invalid by check
		}
	}
	if len(a.State) == 2 {
		a.State = strings.ToUpper(a.State)
	}
	return a
}

// check adds a field error under prefix for every missing or invalid part.
func (a shipmentAddress) check(v *validator, prefix string) {
	for _, f := range []struct{ name, val string }{{"street", a.Street}, {"city", a.City}, {"zip", a.Zip}} {
		if f.val == "" {
			v.add(prefix+"."+f.name, "is required")
		}
	}
	if shipmentCountryCode(a.Country) != a.Country {
		v.add(prefix+".country", "must be a two-letter country code")
	}
	if (a.Country == "US" || a.Country == "CA") && a.State == "" {
		v.add(prefix+".state", "is required for "+a.Country+" addresses")
	}
	for _, f := range []struct{ name, val string }{{"name", a.Name}, {"company", a.Company}, {"phone", a.Phone},
		{"street", a.Street}, {"street2", a.Street2}, {"city", a.City}, {"state", a.State}, {"zip", a.Zip}} {
		v.maxLen(prefix+"."+f.name, f.val, shipmentMaxAddressField)
	}
}

// shipmentCountryCode is the ISO 3166 alpha-2 code of a code or a few
// common country names; "" when unknown.
func shipmentCountryCode(s string) string {
	s = strings.TrimSpace(s)
	if len(s) == 2 && strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) < 0 {
		return strings.ToUpper(s)
	}
	switch strings.ToLower(s) {
	case "usa", "united states", "united states of america":
		return "US"
	case "can", "canada":
		return "CA"
	case "mex", "mexico":
		return "MX"
	case "gbr", "united kingdom", "great britain":
		return "GB"
	}
	return ""
}

// shipmentParcel is one parcel. Unit lb means pounds and inches, kg
// kilograms and centimetres (imperial and metric are accepted as aliases).
type shipmentParcel struct {
	Length float64 `json:"length"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Weight float64 `json:"weight"`
	Unit   string  `json:"unit"`
}

func (p shipmentParcel) carrier() carriers.Package {
	dim := carriers.UnitIN
	if p.Unit == carriers.UnitKG {
		dim = carriers.UnitCM
	}
	return carriers.Package{Weight: carriers.Weight{Value: p.Weight, Unit: p.Unit}, Length: p.Length, Width: p.Width,
		Height: p.Height, DimensionUnit: dim}
}

// shipmentCreate is a validated create body.
type shipmentCreate struct {
	orderID, accountID uuid.UUID
	service            string
	parcels            []shipmentParcel
	shipFrom           *shipmentAddress
	shipDate           time.Time
	metadata           json.RawMessage
	format             string
}

// parseCreateShipment validates a create body, naming every problem at once.
func parseCreateShipment(body jsonBody) (shipmentCreate, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	var c shipmentCreate
	c.orderID = shipmentUUIDField(f, "order_id")
	c.accountID = shipmentUUIDField(f, "carrier_account_id")
	if svc := f.str("service", true, shipmentMaxServiceLen); svc != nil {
		c.service = *svc
	}
	c.parcels = shipmentParcels(f, "parcels")
	if from, ok := f.object("ship_from", false); ok {
		a := shipmentAddressOf(from.m)
		a.check(&v, "ship_from")
		c.shipFrom = &a
	}
	today := shipmentToday()
	c.shipDate = today
	if d := f.str("ship_date", false, 64); d != nil {
		// The window of /rates: from yesterday (UTC, for clients a few
		// hours behind) to shipmentMaxShipAhead days ahead.
		t, ok := shipmentParseDate(*d)
		switch {
		case !ok:
			v.add("ship_date", "must be an ISO 8601 date (YYYY-MM-DD)")
		case t.Before(today.AddDate(0, 0, -1)):
			v.add("ship_date", "must not be in the past")
		case t.After(today.AddDate(0, 0, shipmentMaxShipAhead)):
			v.add("ship_date", fmt.Sprintf("must be at most %d days ahead", shipmentMaxShipAhead))
		}
		c.shipDate = t
	}
	c.metadata = f.rawObject("metadata", false)
	c.format = carriers.FormatPDF
	if lf := f.str("label_format", false, 10); lf != nil {
		c.format = strings.ToUpper(*lf)
		v.oneOf("label_format", c.format, carriers.FormatPDF, carriers.FormatZPL)
	}
	return c, v.err()
}

func shipmentUUIDField(f bodyFields, key string) uuid.UUID {
	s := f.str(key, true, 100)
	if s == nil {
		return uuid.Nil
	}
	id, err := uuid.Parse(*s)
	if err != nil {
		f.v.add(f.name(key), "must be a UUID")
		return uuid.Nil
	}
	return id
}

// shipmentToday is the current UTC date.
func shipmentToday() time.Time {
	t := time.Now().UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// shipmentParseDate reads a date (YYYY-MM-DD) or a timestamp (its date as
// written).
func shipmentParseDate(s string) (time.Time, bool) {
	t, ok := parseOrderTime(s)
	if !ok {
		return time.Time{}, false
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
}

// shipmentParcels is the required array of 1-50 parcels.
func shipmentParcels(f bodyFields, key string) []shipmentParcel {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	switch {
	case !isArr:
		f.v.add(key, "must be an array")
		return nil
	case len(arr) == 0:
		f.v.add(key, "must contain at least one parcel")
		return nil
	case len(arr) > shipmentMaxParcels:
		f.v.add(key, fmt.Sprintf("must contain at most %d parcels", shipmentMaxParcels))
		return nil
	}
	out := make([]shipmentParcel, 0, len(arr))
	for i, it := range arr {
		path := fmt.Sprintf("%s[%d]", key, i)
		m, isObj := it.(map[string]any)
		if !isObj {
			f.v.add(path, "must be an object")
			continue
		}
		pf := bodyFields{v: f.v, path: path, m: m}
		var p shipmentParcel
		p.Length = shipmentPositive(pf, "length", shipmentMaxDimension)
		p.Width = shipmentPositive(pf, "width", shipmentMaxDimension)
		p.Height = shipmentPositive(pf, "height", shipmentMaxDimension)
		p.Weight = shipmentPositive(pf, "weight", shipmentMaxWeight)
		switch u := strings.ToLower(deref(pf.str("unit", true, 20))); u {
		case "":
		case "lb", "imperial":
			p.Unit = carriers.UnitLB
		case "kg", "metric":
			p.Unit = carriers.UnitKG
		default:
			f.v.add(path+".unit", "must be lb (pounds and inches) or kg (kilograms and centimetres)")
		}
		out = append(out, p)
	}
	return out
}

// shipmentPositive is a required number above 0 and at most hi.
func shipmentPositive(f bodyFields, key string, hi float64) float64 {
	raw, ok := f.get(key, true)
	if !ok {
		return 0
	}
	n, isNum := orderNumber(raw)
	if !isNum || n <= 0 || n > hi || math.IsNaN(n) {
		f.v.add(f.name(key), fmt.Sprintf("must be a number above 0 and at most %g", hi))
		return 0
	}
	return n
}

// shipmentShipTo is the order's shipping address as a ship-to address:
// 400 when the order has none or it lacks what a carrier needs.
func shipmentShipTo(o store.Order) (shipmentAddress, error) {
	var m map[string]any
	if len(o.ShippingAddress) > 0 {
		_ = json.Unmarshal(o.ShippingAddress, &m)
	}
	if len(m) == 0 {
		return shipmentAddress{}, errBadRequest("missing_shipping_address", "the order has no shipping address to ship to")
	}
	a := shipmentAddressOf(m)
	if a.Name == "" {
		a.Name = strings.TrimSpace(o.CustomerName)
	}
	if a.Phone == "" {
		var c map[string]any
		if json.Unmarshal(o.Customer, &c) == nil {
			if p, ok := c["phone"].(string); ok {
				a.Phone = strings.TrimSpace(p)
			}
		}
	}
	var v validator
	a.check(&v, "order.shipping_address")
	if !v.ok() {
		e := errValidation(v.details...)
		e.Code = "invalid_shipping_address"
		e.Message = "the order's shipping address cannot be shipped to: " + e.Message
		return a, e
	}
	return a, nil
}

// defaultShipFrom is the ship-from address of a shipment that names none:
// the order's bridge location, else the organization's default location
// (settings.default_location_id), else its oldest manual location.
func (s *Server) defaultShipFrom(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID) (shipmentAddress, error) {
	l, _, err := store.OriginLocation(ctx, s.store.Pool, orgID, bridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return shipmentAddress{}, errValidation(FieldError{Field: "ship_from", Message: "is required: the organization has no location to ship from"})
	}
	if err != nil {
		return shipmentAddress{}, err
	}
	a := shipmentAddress{Company: l.Name, Street: deref(l.Street), City: deref(l.City), State: deref(l.Province),
		Zip: deref(l.Zip), Country: "US"}
	if c := strings.TrimSpace(deref(l.Country)); c != "" {
		a.Country = shipmentCountryCode(c)
		if a.Country == "" {
			a.Country = c
		}
	}
	if len(a.State) == 2 {
		a.State = strings.ToUpper(a.State)
	}
	var v validator
	a.check(&v, "ship_from")
	if !v.ok() {
		return a, errValidation(FieldError{Field: "ship_from", Message: "is required: location " + l.ID.String() + " (" + l.Name + ") lacks a complete address"})
	}
	return a, nil
}

// shipmentCarrierError is the answer to a failed carrier call: 400 when the
// carrier does not offer the operation, else 502 carrier_error with what a
// client may read of the failure (activities.CarrierErrorMessage: the
// carrier's code and message, never credentials, internal addresses or Go
// error text). The full error is logged with the request id.
func (s *Server) shipmentCarrierError(r *http.Request, what string, err error) error {
	if errors.Is(err, carriers.ErrNotSupported) {
		return errBadRequest("not_supported", activities.CarrierErrorMessage(err))
	}
	s.log.WarnContext(r.Context(), "carrier call failed", append(logAttrs(r), "what", what, "error", err.Error())...)
	return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: what + ": " + activities.CarrierErrorMessage(err)}
}

// purchaseFailure is the answer to a purchase (label, pickup) that did
// not end recorded: a carrier refusal of the request as invalid is 400
// validation_error naming field(code, message) ("body" when it names none);
// a refusal before any carrier call is 400 with its code; other carrier
// failures and unknown outcomes are 502 carrier_error with what the client
// may read (what: "carrier_a could not create the label"); a record gone
// meanwhile is 409. The workflow's messages may carry the text of a
// failed record step (Go, database errors): each goes through
// activities.TenantText; the full text is logged.
func (s *Server) purchaseFailure(r *http.Request, what string, res workflows.PurchaseResult, field func(code, msg string) string) error {
	f := res.Failure
	s.log.WarnContext(r.Context(), "purchase failed", append(logAttrs(r), "what", what, "id", res.ID, "outcome", res.Outcome, "message", res.Message)...)
	message := activities.TenantText(res.Message)
	switch {
	case res.Outcome == workflows.PurchaseUnknown:
		return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: what + ": " + message}
	case f == nil:
		return errConflict(message)
	case f.APICode != "":
		return errBadRequest(f.APICode, activities.TenantText(f.Message))
	case f.NotSupported:
		return errBadRequest("not_supported", activities.TenantText(f.Message))
	case f.Invalid && res.Outcome == workflows.PurchaseRefused:
		msg := f.CarrierMessage
		if msg == "" {
			msg = f.Message
		}
		name := "body"
		if n := field(f.Code, msg); n != "" {
			name = n
		}
		return errValidation(FieldError{Field: name, Message: "refused by the carrier: " + activities.TenantText(msg)})
	}
	return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: what + ": " + message}
}

// purchaseNamespace is the UUIDv5 namespace of purchaseID.
var purchaseNamespace = uuid.MustParse("6f3c8a52-0d4e-4f0b-9a51-2c7e1b9d4a10")

// purchaseID is the id of a shipment or pickup about to be bought (kind
// "shipment", "pickup"): with an Idempotency-Key it is derived from the
// organization and the key (UUIDv5), so a client's retry of the request
// names the same record and the same workflow and cannot buy twice, even
// after the key's stored answer was released or lost; without one it is
// random (the workflow id then guards the purchase).
func purchaseID(r *http.Request, orgID uuid.UUID, kind string) uuid.UUID {
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		return uuid.NewSHA1(purchaseNamespace, []byte(orgID.String()+"\x00"+kind+"\x00"+key))
	}
	return uuid.New()
}

// runPurchase starts a purchase workflow (ShipmentLabel, PickupBooking)
// with update-with-start, or joins the run already going under the same
// id, and waits for its PurchaseUpdateResult. A closed run (a client's
// retry after the outcome) answers with its recorded outcome instead of
// buying again (the id is never reused). A request whose answer is lost
// (startMayHaveRun: a deadline, an outage) is sent again, which the stable
// id makes safe, up to startAttempts times; if the outcome stays unknown
// the error is a *startUnknownError and the caller leaves the pending row
// to the run or to the reconciler.
func (s *Server) runPurchase(ctx context.Context, r *http.Request, opts client.StartWorkflowOptions, wf, in any) (workflows.PurchaseResult, error) {
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	var res workflows.PurchaseResult
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var h client.WorkflowUpdateHandle
		h, err = s.temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: s.temporal.NewWithStartWorkflowOperation(opts, wf, in),
			UpdateOptions: client.UpdateWorkflowOptions{
				WorkflowID: opts.ID, UpdateName: workflows.PurchaseUpdateResult, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, &res)
		}
		if err == nil {
			return res, nil
		}
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		var notFound *serviceerror.NotFound
		if errors.As(err, &started) || errors.As(err, &notFound) {
			// The run is closed: its outcome is the answer.
			return s.closedPurchase(ctx, opts.ID)
		}
		if !startMayHaveRun(err) || ctx.Err() != nil {
			break
		}
		s.log.WarnContext(ctx, "purchase start or update outcome unknown; sending it again", append(logAttrs(r), "workflow_id", opts.ID, "attempt", attempt, "error", err.Error())...)
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	if startMayHaveRun(err) {
		return res, &startUnknownError{err: err}
	}
	return res, err
}

// purchaseRequest is a purchase the API waits for.
type purchaseRequest struct {
	opts            client.StartWorkflowOptions
	workflow, input any
	// created: this request inserted the pending row; removePending
	// deletes it while still pending.
	created       bool
	removePending func(context.Context) (bool, error)
	// what and field word the failure (see purchaseFailure).
	what  string
	field func(code, msg string) string
}

// awaitPurchase runs the purchase (runPurchase) and maps what did not end
// bought and recorded to the API's errors. An ambiguous Temporal error is
// 503 and leaves the pending row (the run may exist; else the reconciler
// removes it); any other failure removes the pending row this request
// inserted (a refused start runs nothing; a retry answered by a closed run
// re-inserted it).
func (s *Server) awaitPurchase(ctx context.Context, r *http.Request, p purchaseRequest) (workflows.PurchaseResult, error) {
	res, err := s.runPurchase(ctx, r, p.opts, p.workflow, p.input)
	if isStartUnknown(err) || err != nil && isTemporalUnavailable(r.Context(), err) {
		s.log.WarnContext(ctx, "purchase workflow unreachable", append(logAttrs(r), "workflow_id", p.opts.ID, "error", err.Error())...)
		return res, errTemporalUnavailable()
	}
	if (err != nil || res.Outcome != workflows.PurchaseDone) && p.created {
		if _, derr := p.removePending(ctx); derr != nil {
			s.log.ErrorContext(ctx, "remove pending row", append(logAttrs(r), "workflow_id", p.opts.ID, "error", derr.Error())...)
		}
	}
	if err != nil {
		return res, err
	}
	if res.Outcome != workflows.PurchaseDone {
		return res, s.purchaseFailure(r, p.what, res, p.field)
	}
	return res, nil
}

// closedPurchase is the outcome of a closed purchase run.
func (s *Server) closedPurchase(ctx context.Context, wfID string) (workflows.PurchaseResult, error) {
	var res workflows.PurchaseResult
	err := s.temporal.GetWorkflow(ctx, wfID, "").Get(ctx, &res)
	var appErr *temporal.ApplicationError
	if err != nil && errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypePurchaseFailed && appErr.Details(&res) == nil {
		return res, nil
	}
	return res, err
}

// shipmentServiceRefusal names the service field for the carriers' refusals
// of a service code (carrier_a SERVICE.TYPE.*, carrier_b 111100 and 120100,
// carrier_c invalid service codes, and the adapters' own serviceType checks).
func shipmentServiceRefusal(code, msg string) string {
	switch {
	case strings.HasPrefix(code, "SERVICE.TYPE."), code == "111100", code == "120100":
		return "service"
	case strings.Contains(strings.ToLower(msg), "servicetype"), strings.Contains(strings.ToLower(msg), "service_code"):
		return "service"
	}
	return ""
}

// shipmentAccount loads a carrier account of the organization for a body
// field: 400 when it is not the organization's or not active.
func (s *Server) shipmentAccount(ctx context.Context, orgID, id uuid.UUID, field string) (store.CarrierAccount, error) {
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return acct, errValidation(FieldError{Field: field, Message: "must be a carrier account of this organization"})
	}
	if err != nil {
		return acct, err
	}
	if acct.Status != store.CarrierAccountActive {
		return acct, errBadRequest("carrier_account_not_active", fmt.Sprintf("carrier account %q is %s; only an active account can be used", acct.Name, acct.Status))
	}
	return acct, nil
}

// shipmentAdapter returns the account's carrier adapter and its decrypted account.
func (s *Server) shipmentAdapter(acct store.CarrierAccount) (carriers.Carrier, carriers.Account, error) {
	if s.carriers == nil {
		return nil, carriers.Account{}, errors.New("no carrier registry configured")
	}
	c, err := s.carriers.Get(acct.Carrier)
	if err != nil {
		return nil, carriers.Account{}, err
	}
	if s.secrets == nil {
		return nil, carriers.Account{}, errors.New("no encryption key configured")
	}
	a, err := store.AdapterAccount(s.secrets, acct)
	if err != nil {
		return nil, carriers.Account{}, fmt.Errorf("open the credentials of carrier account %s: %w", acct.ID, err)
	}
	return c, a, nil
}

func (s *Server) createShipment(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in, err := parseCreateShipment(body)
	if err != nil {
		return err
	}
	ctx := r.Context()
	orgID := mustPrincipal(r).OrganizationID
	order, err := store.OrderByID(ctx, s.store.Pool, orgID, in.orderID)
	if errors.Is(err, store.ErrNotFound) {
		return errValidation(FieldError{Field: "order_id", Message: "must be an order of this organization"})
	}
	if err != nil {
		return err
	}
	acct, err := s.shipmentAccount(ctx, orgID, in.accountID, "carrier_account_id")
	if err != nil {
		return err
	}
	if !acct.SupportsLabels {
		return errBadRequest("labels_not_supported", fmt.Sprintf("carrier account %q (%s) does not support labels", acct.Name, acct.Carrier))
	}
	shipTo, err := shipmentShipTo(order)
	if err != nil {
		return err
	}
	var shipFrom shipmentAddress
	if in.shipFrom != nil {
		shipFrom = *in.shipFrom
	} else if shipFrom, err = s.defaultShipFrom(ctx, orgID, order.BridgeID); err != nil {
		return err
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}

	pkgs := make([]carriers.Package, 0, len(in.parcels))
	for _, p := range in.parcels {
		pkgs = append(pkgs, p.carrier())
	}
	shipDate := in.shipDate
	sh := store.Shipment{
		ID: purchaseID(r, orgID, "shipment"), OrganizationID: orgID, OrderID: &order.ID, CarrierAccountID: &acct.ID,
		Carrier: acct.Carrier, Service: in.service, ShipDate: &shipDate,
		ShipFrom: orderJSONOf(shipFrom), ShipTo: orderJSONOf(shipTo), Parcels: orderJSONOf(in.parcels), Metadata: in.metadata,
	}
	// The tracking map shows the shipment from its label on; the poller
	// keeps these (it fills in only missing coordinates).
	sh.ShipFromLat, sh.ShipFromLng = shipFrom.coordinates()
	sh.ShipToLat, sh.ShipToLng = shipTo.coordinates()
	// From here on the purchase runs to its end even when the client hangs
	// up (the workflow records or voids the label in any case).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shipmentWorkTimeout)
	defer cancel()
	cur, created, err := store.InsertPendingShipment(wctx, s.store.Pool, sh)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errValidation(FieldError{Field: "order_id", Message: "must be an order of this organization"})
		}
		return err
	}
	if cur.HasLabel() {
		// A client's retry of a purchase that is done.
		writeData(w, http.StatusCreated, s.toShipmentJSON(cur))
		return nil
	}
	wfIn := workflows.ShipmentLabelInput{
		OrganizationID: orgID.String(), ShipmentID: sh.ID.String(), CarrierAccountID: acct.ID.String(),
		Request: carriers.LabelRequest{
			ShipFrom: shipFrom.carrier(), ShipTo: shipTo.carrier(), Packages: pkgs, ServiceType: in.service,
			ShipDate: shipDate, Format: in.format, Reference: sh.ID.String(),
		},
	}
	opts := worker.StartOptions(workflows.ShipmentLabelWorkflowID(wfIn.ShipmentID), s.taskQueue, wfIn.OrganizationID, map[string]any{"shipmentId": wfIn.ShipmentID})
	res, err := s.awaitPurchase(wctx, r, purchaseRequest{
		opts: opts, workflow: workflows.ShipmentLabel, input: wfIn, created: created,
		removePending: func(ctx context.Context) (bool, error) {
			return store.DeletePendingShipment(ctx, s.store.Pool, orgID, sh.ID)
		},
		what: acct.Carrier + " could not create the label", field: shipmentServiceRefusal,
	})
	if err != nil {
		return err
	}
	done, err := store.ShipmentByID(wctx, s.store.Pool, orgID, sh.ID)
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "label created", append(logAttrs(r), "shipment_id", sh.ID, "carrier", acct.Carrier, "tracking_number", res.Reference)...)
	rules.OrderEvent(ctx, s.orderHooks, orgID, order.ID, rules.TriggerShipmentCreated)
	writeData(w, http.StatusCreated, s.toShipmentJSON(done))
	return nil
}

// --- update ---

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
	orgID := mustPrincipal(r).OrganizationID
	cur, err := store.ShipmentByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var p store.ShipmentPatch
	if _, ok := body["status"]; ok {
		st := f.enum("status", true, "", store.ShipmentStatuses)
		p.Status = &st
	}
	if _, ok := body["tracking_number"]; ok {
		tn := f.str("tracking_number", false, shipmentMaxTrackingLen)
		p.TrackingNumber = &tn
	}
	if _, ok := body["metadata"]; ok {
		if m, ok := f.object("metadata", true); ok {
			p.Metadata = m.m
		}
	}
	for _, fixed := range []struct{ key, cur string }{{"carrier", cur.Carrier}, {"service", cur.Service}} {
		if _, ok := body[fixed.key]; !ok {
			continue
		}
		if sv, isStr := body[fixed.key].(string); !isStr || strings.TrimSpace(sv) != fixed.cur {
			v.add(fixed.key, "cannot be changed: the shipment's label was generated for "+fixed.cur)
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	sh, err := store.PatchShipment(r.Context(), s.store, orgID, id, p)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	writeData(w, http.StatusOK, s.toShipmentJSON(sh))
	return nil
}

// --- delete ---

// deleteShipment deletes a shipment for good. A label that is bought but
// not yet moving (label_created) is voided with the carrier first; a
// carrier refusal is 502 and the shipment stays. A shipment whose carrier
// account was deleted cannot be voided and is deleted as it is; one already
// moving (or delivered) has nothing left to void.
func (s *Server) deleteShipment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	ctx := r.Context()
	orgID := mustPrincipal(r).OrganizationID
	sh, err := store.ShipmentByID(ctx, s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	if sh.Status == store.ShipmentLabelCreated && sh.TrackingNumber != nil && *sh.TrackingNumber != "" && sh.CarrierAccountID != nil {
		acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sh.CarrierAccountID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			carrier, adapterAcct, err := s.shipmentAdapter(acct)
			if err != nil {
				return err
			}
			vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shipmentCarrierTimeout)
			defer cancel()
			// A number the carrier does not know has nothing to void.
			if err := carrier.VoidLabel(vctx, adapterAcct, *sh.TrackingNumber); err != nil && !errors.Is(err, carriers.ErrNotFound) {
				return s.shipmentCarrierError(r, acct.Carrier+" refused to void the label", err)
			}
		}
	}
	err = store.DeleteShipment(ctx, s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	writeSuccess(w)
	return nil
}

// --- actions ---

// shipmentActionTypes are the action types, and the reasons of a hold.
var (
	shipmentActionTypes = []string{carriers.ActionHold, carriers.ActionRedirect, carriers.ActionRedeliver, carriers.ActionInstructions}
	shipmentHoldReasons = []string{"customer_request", "address_issue", "payment_issue", "inventory_issue", "other"}
)

// shipmentActionStatus is the status of an accepted action request: the
// carrier is told asynchronously.
const shipmentActionStatus = http.StatusAccepted

// shipmentActionCreatedJSON is the answer to an action request.
type shipmentActionCreatedJSON struct {
	ActionID uuid.UUID `json:"actionId"`
	Status   string    `json:"status"`
}

// shipmentActionJSON is an action record (extension: GET .../actions).
type shipmentActionJSON struct {
	ActionID           uuid.UUID       `json:"actionId"`
	ShipmentID         uuid.UUID       `json:"shipmentId"`
	ActionType         string          `json:"actionType"`
	Status             string          `json:"status"`
	Config             json.RawMessage `json:"config"`
	ShipmentStatus     string          `json:"shipmentStatus"`
	ConfirmationNumber *string         `json:"confirmationNumber"`
	Messages           []string        `json:"messages"`
	Error              *string         `json:"error"`
	CreatedAt          time.Time       `json:"createdAt"`
	UpdatedAt          time.Time       `json:"updatedAt"`
	CompletedAt        *time.Time      `json:"completedAt"`
}

func toShipmentActionJSON(a store.ShipmentAction) shipmentActionJSON {
	msgs := a.Messages
	if msgs == nil {
		msgs = []string{}
	}
	return shipmentActionJSON{
		ActionID: a.ID, ShipmentID: a.ShipmentID, ActionType: a.ActionType, Status: a.Status,
		Config: shipmentRaw(a.Config, "{}"), ShipmentStatus: a.ShipmentStatus, ConfirmationNumber: a.ConfirmationNumber,
		Messages: msgs, Error: a.Error, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, CompletedAt: a.CompletedAt,
	}
}

// parseShipmentAction validates an action body: actionType and its fields,
// given inside a config object or at the top level of the body.
func parseShipmentAction(body jsonBody) (string, store.ShipmentActionConfig, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	typ := f.enum("actionType", true, "", shipmentActionTypes)
	cfgF := f
	if raw, ok := body["config"]; ok && raw != nil {
		if c, ok := f.object("config", true); ok {
			cfgF = c
		}
	}
	var cfg store.ShipmentActionConfig
	switch typ {
	case carriers.ActionHold:
		cfg.Reason = cfgF.enum("reason", true, "", shipmentHoldReasons)
		cfg.Notes = deref(cfgF.str("notes", false, shipmentActionMaxTextLen))
	case carriers.ActionRedirect:
		if a, ok := cfgF.object("address", true); ok {
			addr := store.ShipmentActionAddress{
				Street: deref(a.str("street", true, shipmentMaxAddressField)),
				City:   deref(a.str("city", true, shipmentMaxAddressField)),
				State:  deref(a.str("state", true, shipmentMaxAddressField)),
				Zip:    deref(a.str("zip", true, shipmentMaxAddressField)),
			}
			addr.Country = "US"
			if c := a.str("country", false, 64); c != nil {
				addr.Country = shipmentCountryCode(*c)
				if addr.Country == "" {
					v.add(a.name("country"), "must be a two-letter country code")
				}
			}
			if len(addr.State) == 2 {
				addr.State = strings.ToUpper(addr.State)
			}
			cfg.Address = &addr
		}
		cfg.Notes = deref(cfgF.str("notes", false, shipmentActionMaxTextLen))
	case carriers.ActionRedeliver:
		if d := cfgF.str("preferredDate", false, 64); d != nil {
			t, ok := shipmentParseDate(*d)
			if !ok {
				v.add(cfgF.name("preferredDate"), "must be a date (YYYY-MM-DD)")
			}
			cfg.PreferredDate = t.Format("2006-01-02")
		}
		cfg.Instructions = deref(cfgF.str("instructions", false, shipmentActionMaxTextLen))
	case carriers.ActionInstructions:
		cfg.Instructions = deref(cfgF.str("instructions", true, shipmentActionMaxTextLen))
	}
	return typ, cfg, v.err()
}

// createShipmentAction records a pending action and starts its
// ShipmentAction workflow, which sends it to the carrier and records the
// outcome; the shipment's status does not change. It answers 202
// {actionId, status: pending}. An action the shipment's status does not
// allow (the specification's table) is 409 conflict.
func (s *Server) createShipmentAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	typ, cfg, err := parseShipmentAction(body)
	if err != nil {
		return err
	}
	ctx := r.Context()
	p := mustPrincipal(r)
	sh, err := store.ShipmentByID(ctx, s.store.Pool, p.OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "shipment")
	}
	if allowed := store.ShipmentActionAllowed[typ]; !slices.Contains(allowed, sh.Status) {
		return errConflict(fmt.Sprintf("a %s action is allowed only while the shipment is %s; it is %s", typ, strings.Join(allowed, " or "), sh.Status))
	}
	if sh.TrackingNumber == nil || *sh.TrackingNumber == "" {
		return errBadRequest("missing_tracking_number", "the shipment has no tracking number to send the action for")
	}
	if sh.CarrierAccountID == nil {
		return errBadRequest("carrier_account_not_active", "the shipment's carrier account was deleted")
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, p.OrganizationID, *sh.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return errBadRequest("carrier_account_not_active", "the shipment's carrier account was deleted")
	}
	if err != nil {
		return err
	}
	if acct.Status != store.CarrierAccountActive {
		return errBadRequest("carrier_account_not_active", fmt.Sprintf("carrier account %q is %s; only an active account can be used", acct.Name, acct.Status))
	}
	// A carrier without a delivery-change API (none of the built-in
	// adapters has one) is not refused here: the specification records the
	// action pending and notifies the carrier asynchronously, so the
	// ShipmentAction run ends the record failed with the carrier's reason
	// ("does not support shipment actions"), readable on the action.
	if s.temporal == nil {
		return errTemporalUnavailable()
	}

	// A delivery change may carry a fee: with an Idempotency-Key, a
	// client's retry names the same record and workflow.
	actionID := purchaseID(r, p.OrganizationID, "shipment-action")
	wfID := workflows.ShipmentActionWorkflowID(actionID.String())
	actor := activities.Actor{Type: p.Kind, ID: p.ActorID().String(), Name: p.Name}
	act, err := store.InsertShipmentAction(ctx, s.store.Pool, store.ShipmentAction{
		ID: actionID, OrganizationID: p.OrganizationID, ShipmentID: sh.ID, ActionType: typ,
		Config: orderJSONOf(cfg), ShipmentStatus: sh.Status, WorkflowID: &wfID, RequestedBy: orderJSONOf(actor),
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("shipment")
		}
		return err
	}
	if act.Status != store.ShipmentActionPending {
		// A retry of an action already sent.
		writeJSON(w, shipmentActionStatus, shipmentActionCreatedJSON{ActionID: actionID, Status: act.Status})
		return nil
	}
	in := workflows.ShipmentActionInput{OrganizationID: p.OrganizationID.String(), ShipmentID: sh.ID.String(), ActionID: actionID.String()}
	opts := worker.StartOptions(wfID, s.taskQueue, in.OrganizationID, map[string]any{"shipmentId": in.ShipmentID, "actionId": in.ActionID})
	// The id is never reused: a run that closed without recording its
	// outcome (failed, terminated) may have sent the change, so a retry
	// must not send it again.
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	if _, err := s.startStableWorkflow(r, opts, act.CreatedAt, workflows.ShipmentAction, in); err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			// A closed run: the record's status is the answer; a record
			// still pending is the reconciler's (Maintenance) to settle.
			s.log.WarnContext(ctx, "shipment action run already closed", append(logAttrs(r), "workflow_id", wfID, "status", act.Status)...)
			cur, cerr := store.ShipmentActionByID(ctx, s.store.Pool, p.OrganizationID, actionID)
			if cerr != nil {
				return cerr
			}
			writeJSON(w, shipmentActionStatus, shipmentActionCreatedJSON{ActionID: actionID, Status: cur.Status})
			return nil
		}
		if isStartUnknown(err) {
			// The run may exist: the pending record stays, for it or for
			// the reconciler (Maintenance), which fails it if no run does.
			s.log.WarnContext(ctx, "start workflow", append(logAttrs(r), "workflow_id", wfID, "error", err.Error())...)
			return errTemporalUnavailable()
		}
		// Refused, or no run after all: nothing will send it, the record goes.
		if delErr := store.DeleteShipmentAction(context.WithoutCancel(ctx), s.store.Pool, p.OrganizationID, actionID); delErr != nil {
			s.log.ErrorContext(ctx, "delete unsent shipment action", append(logAttrs(r), "action_id", actionID, "error", delErr)...)
		}
		if isTemporalUnavailable(ctx, err) {
			return errTemporalUnavailable()
		}
		return err
	}
	writeJSON(w, shipmentActionStatus, shipmentActionCreatedJSON{ActionID: actionID, Status: store.ShipmentActionPending})
	return nil
}

func (s *Server) listShipmentActions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	if _, err := store.ShipmentByID(r.Context(), s.store.Pool, orgID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("shipment")
		}
		return err
	}
	list, err := store.ShipmentActions(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return err
	}
	out := make([]shipmentActionJSON, 0, len(list))
	for _, a := range list {
		out = append(out, toShipmentActionJSON(a))
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) getShipmentAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	actionID, err := pathID(r, "actionId", "shipment action")
	if err != nil {
		return err
	}
	a, err := store.ShipmentActionByID(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, actionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.ShipmentID != id) {
		return errNotFound("shipment action")
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toShipmentActionJSON(a))
	return nil
}
