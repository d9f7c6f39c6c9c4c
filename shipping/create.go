package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Bounds the specification leaves open.
const (
	MaxParcels     = 50
	MaxDimension   = 1000   // in or cm
	MaxWeight      = 10_000 // lb or kg
	MaxServiceLen  = 100
	MaxTrackingLen = 100
	// MaxShipAhead is how many days after today a ship date may be (the
	// window of rates).
	MaxShipAhead = 365
	// workTimeout bounds the wait for a purchase's outcome; carrierTimeout
	// one carrier call made while a caller waits (a void).
	workTimeout    = 100 * time.Second
	carrierTimeout = 30 * time.Second
)

// Shipment is a shipment as stored, with the format of its label when it
// has one.
type Shipment = store.Shipment

// Parcel is one parcel. Unit lb means pounds and inches, kg kilograms and
// centimetres (imperial and metric are accepted as aliases, in any case).
type Parcel struct {
	Length float64 `json:"length"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Weight float64 `json:"weight"`
	Unit   string  `json:"unit"`
}

func (p Parcel) carrier() carriers.Package {
	dim := carriers.UnitIN
	if p.Unit == carriers.UnitKG {
		dim = carriers.UnitCM
	}
	return carriers.Package{Weight: carriers.Weight{Value: p.Weight, Unit: p.Unit}, Length: p.Length, Width: p.Width,
		Height: p.Height, DimensionUnit: dim}
}

// CreateShipmentInput is a shipment to create and buy the label of.
type CreateShipmentInput struct {
	// ID names the shipment; the same ID is the same purchase, never a
	// second label (an Idempotency-Key's id, an operation item's). Zero: a
	// new one.
	ID               uuid.UUID
	OrderID          uuid.UUID
	CarrierAccountID uuid.UUID
	Service          string
	Parcels          []Parcel
	// ShipFrom nil: the order's bridge location, else the organization's
	// default location, else its oldest manual location.
	ShipFrom *Address
	// ShipDate nil: today (UTC). From yesterday (for clients a few hours
	// behind UTC) to MaxShipAhead days ahead.
	ShipDate *time.Time
	// Metadata is a JSON object, or empty.
	Metadata json.RawMessage
	// LabelFormat is PDF (the default) or ZPL.
	LabelFormat string
}

// Today is the current UTC date.
func Today() time.Time {
	t := time.Now().UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Validate names every problem of the input, in the order of its fields
// (order_id, carrier_account_id, service, parcels, ship_from, ship_date,
// metadata, label_format), and normalizes it (trimmed service, parcel
// units lb or kg, upper-case label format).
func (in *CreateShipmentInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	if in.OrderID == uuid.Nil {
		v.Add("order_id", "is required")
	}
	if in.CarrierAccountID == uuid.Nil {
		v.Add("carrier_account_id", "is required")
	}
	in.Service = strings.TrimSpace(in.Service)
	switch {
	case in.Service == "":
		v.Add("service", "is required")
	case len([]rune(in.Service)) > MaxServiceLen:
		v.Add("service", fmt.Sprintf("must be at most %d characters", MaxServiceLen))
	}
	switch {
	case in.Parcels == nil:
		v.Add("parcels", "is required")
	case len(in.Parcels) == 0:
		v.Add("parcels", "must contain at least one parcel")
	case len(in.Parcels) > MaxParcels:
		v.Add("parcels", fmt.Sprintf("must contain at most %d parcels", MaxParcels))
	default:
		for i := range in.Parcels {
			in.Parcels[i].check(&v, fmt.Sprintf("parcels[%d]", i))
		}
	}
	if in.ShipFrom != nil {
		in.ShipFrom.Check(&v, "ship_from")
	}
	if in.ShipDate != nil {
		today := Today()
		d := *in.ShipDate
		switch {
		case d.Before(today.AddDate(0, 0, -1)):
			v.Add("ship_date", "must not be in the past")
		case d.After(today.AddDate(0, 0, MaxShipAhead)):
			v.Add("ship_date", fmt.Sprintf("must be at most %d days ahead", MaxShipAhead))
		}
	}
	if len(in.Metadata) > 0 {
		var m map[string]any
		if json.Unmarshal(in.Metadata, &m) != nil || m == nil {
			v.Add("metadata", "must be an object")
		}
	}
	in.LabelFormat = strings.ToUpper(strings.TrimSpace(in.LabelFormat))
	if in.LabelFormat == "" {
		in.LabelFormat = carriers.FormatPDF
	}
	if in.LabelFormat != carriers.FormatPDF && in.LabelFormat != carriers.FormatZPL {
		v.Add("label_format", "must be one of "+carriers.FormatPDF+", "+carriers.FormatZPL)
	}
	return v
}

// check names the parcel's problems under path and normalizes its unit.
func (p *Parcel) check(v *domain.FieldErrors, path string) {
	for _, d := range []struct {
		name string
		val  float64
		hi   float64
	}{{"length", p.Length, MaxDimension}, {"width", p.Width, MaxDimension}, {"height", p.Height, MaxDimension}, {"weight", p.Weight, MaxWeight}} {
		if !(d.val > 0 && d.val <= d.hi) || math.IsNaN(d.val) {
			v.Add(path+"."+d.name, fmt.Sprintf("must be a number above 0 and at most %g", d.hi))
		}
	}
	switch strings.ToLower(strings.TrimSpace(p.Unit)) {
	case "":
		v.Add(path+".unit", "is required")
	case "lb", "imperial":
		p.Unit = carriers.UnitLB
	case "kg", "metric":
		p.Unit = carriers.UnitKG
	default:
		v.Add(path+".unit", "must be lb (pounds and inches) or kg (kilograms and centimetres)")
	}
}

// plannedShipment is a validated shipment with everything its purchase
// needs: the pending row to insert and the label request.
type plannedShipment struct {
	row     store.Shipment
	account store.CarrierAccount
	request carriers.LabelRequest
	orderID uuid.UUID
}

// plan checks the input against the organization's data: the order and an
// active carrier account that sells labels, the order's shipping address
// and a ship-from address.
func (s *Service) plan(ctx context.Context, orgID uuid.UUID, in CreateShipmentInput) (plannedShipment, error) {
	return s.planIn(ctx, orgID, in, nil)
}

// planIn is plan with the accounts and origins of a batch (nil: none).
func (s *Service) planIn(ctx context.Context, orgID uuid.UUID, in CreateShipmentInput, b *PurchaseBatch) (plannedShipment, error) {
	if v := in.Validate(); len(v) > 0 {
		return plannedShipment{}, v.Err()
	}
	order, err := store.OrderByID(ctx, s.store.Pool, orgID, in.OrderID)
	if errors.Is(err, store.ErrNotFound) {
		return plannedShipment{}, domain.InvalidField("order_id", "must be an order of this organization")
	}
	if err != nil {
		return plannedShipment{}, err
	}
	acct, err := b.account(ctx, s, orgID, in.CarrierAccountID, "carrier_account_id")
	if err != nil {
		return plannedShipment{}, err
	}
	if !acct.SupportsLabels {
		return plannedShipment{}, domain.InvalidCode("labels_not_supported", fmt.Sprintf("carrier account %q (%s) does not support labels", acct.Name, acct.Carrier))
	}
	shipTo, err := shipToOf(order)
	if err != nil {
		return plannedShipment{}, err
	}
	var shipFrom Address
	if in.ShipFrom != nil {
		shipFrom = *in.ShipFrom
	} else if shipFrom, err = b.origin(ctx, s, orgID, order.BridgeID); err != nil {
		return plannedShipment{}, err
	}
	shipDate := Today()
	if in.ShipDate != nil {
		shipDate = *in.ShipDate
	}
	id := in.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	pkgs := make([]carriers.Package, 0, len(in.Parcels))
	for _, p := range in.Parcels {
		pkgs = append(pkgs, p.carrier())
	}
	row := store.Shipment{
		ID: id, OrganizationID: orgID, OrderID: &order.ID, CarrierAccountID: &acct.ID,
		Carrier: acct.Carrier, Service: in.Service, ShipDate: &shipDate,
		ShipFrom: jsonOf(shipFrom), ShipTo: jsonOf(shipTo), Parcels: jsonOf(in.Parcels), Metadata: in.Metadata,
	}
	// The tracking map shows the shipment from its label on; the poller
	// keeps these (it fills in only missing coordinates).
	row.ShipFromLat, row.ShipFromLng = shipFrom.Coordinates()
	row.ShipToLat, row.ShipToLng = shipTo.Coordinates()
	return plannedShipment{
		row: row, account: acct, orderID: order.ID,
		request: carriers.LabelRequest{
			ShipFrom: shipFrom.Carrier(), ShipTo: shipTo.Carrier(), Packages: pkgs, ServiceType: in.Service,
			ShipDate: shipDate, Format: in.LabelFormat, Reference: id.String(),
		},
	}, nil
}

// insertPending inserts the planned shipment as pending (or finds the one
// already inserted under its id).
func (s *Service) insertPending(ctx context.Context, p plannedShipment) (store.Shipment, bool, error) {
	cur, created, err := store.InsertPendingShipment(ctx, s.store.Pool, p.row)
	if errors.Is(err, store.ErrNotFound) {
		return cur, false, domain.InvalidField("order_id", "must be an order of this organization")
	}
	return cur, created, err
}

// activeAccount loads a carrier account of the organization named by a
// field of the input: Invalid when it is not the organization's, 400
// carrier_account_not_active when it is not active.
func (s *Service) activeAccount(ctx context.Context, orgID, id uuid.UUID, field string) (store.CarrierAccount, error) {
	acct, err := s.activeAccountRow(ctx, orgID, id, field)
	if err != nil {
		return acct, err
	}
	if acct.Status != store.CarrierAccountActive {
		return acct, accountNotActive(acct)
	}
	return acct, nil
}

// activeAccountRow is activeAccount without the status check.
func (s *Service) activeAccountRow(ctx context.Context, orgID, id uuid.UUID, field string) (store.CarrierAccount, error) {
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return acct, domain.InvalidField(field, "must be a carrier account of this organization")
	}
	return acct, err
}

func accountNotActive(acct store.CarrierAccount) *domain.Error {
	return domain.InvalidCode("carrier_account_not_active", fmt.Sprintf("carrier account %q is %s; only an active account can be used", acct.Name, acct.Status))
}

// shipToOf is the order's shipping address as a ship-to address: refused
// when the order has none or it lacks what a carrier needs.
func shipToOf(o store.Order) (Address, error) {
	var m map[string]any
	if len(o.ShippingAddress) > 0 {
		_ = json.Unmarshal(o.ShippingAddress, &m)
	}
	if len(m) == 0 {
		return Address{}, domain.InvalidCode("missing_shipping_address", "the order has no shipping address to ship to")
	}
	a := AddressOf(m).DefaultCountry()
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
	var v domain.FieldErrors
	a.Check(&v, "order.shipping_address")
	if len(v) > 0 {
		e := domain.Invalid(v...)
		e.Code = "invalid_shipping_address"
		e.Message = "the order's shipping address cannot be shipped to: " + e.Message
		return a, e
	}
	return a, nil
}

// defaultShipFrom is the ship-from address of a shipment that names none:
// the order's bridge location, else the organization's default location
// (settings.default_location_id), else its oldest manual location.
func (s *Service) defaultShipFrom(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID) (Address, error) {
	l, _, err := store.OriginLocation(ctx, s.store.Pool, orgID, bridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return Address{}, domain.InvalidField("ship_from", "is required: the organization has no location to ship from")
	}
	if err != nil {
		return Address{}, err
	}
	a := Address{Company: l.Name, Street: deref(l.Street), City: deref(l.City), State: deref(l.Province),
		Zip: deref(l.Zip), Country: "US"}
	if c := strings.TrimSpace(deref(l.Country)); c != "" {
		a.Country = CountryCode(c)
		if a.Country == "" {
			a.Country = c
		}
	}
	if len(a.State) == 2 {
		a.State = strings.ToUpper(a.State)
	}
	var v domain.FieldErrors
	a.Check(&v, "ship_from")
	if len(v) > 0 {
		return a, domain.InvalidField("ship_from", "is required: location "+l.ID.String()+" ("+l.Name+") lacks a complete address")
	}
	return a, nil
}

// serviceRefusalField names the service field for the carriers' refusals
// of a service code (carrier_a SERVICE.TYPE.*, carrier_b 111100 and 120100,
// carrier_c invalid service codes, and the adapters' own serviceType
// checks).
func serviceRefusalField(code, msg string) string {
	switch {
	case strings.HasPrefix(code, "SERVICE.TYPE."), code == "111100", code == "120100":
		return "service"
	case strings.Contains(strings.ToLower(msg), "servicetype"), strings.Contains(strings.ToLower(msg), "service_code"):
		return "service"
	}
	return ""
}

// PurchaseFailure is the refusal of a purchase (label, pickup) that did
// not end recorded: a carrier refusal of the request as invalid is
// Invalid naming field(code, message) ("body" when it names none); a
// refusal before any carrier call is Invalid with its code; other carrier
// failures and unknown outcomes are Upstream carrier_error with what the
// client may read (what: "carrier_a could not create the label"); a record
// gone meanwhile is a Conflict. Every message goes through
// domain.TenantText.
func PurchaseFailure(what string, res PurchaseResult, field func(code, msg string) string) *domain.Error {
	f := res.Failure
	message := domain.TenantText(res.Message)
	switch {
	case res.Outcome == PurchaseUnknown:
		return domain.Upstream("carrier_error", what+": "+message, nil)
	case f == nil:
		return domain.Conflict(message)
	case f.APICode != "":
		return domain.InvalidCode(f.APICode, domain.TenantText(f.Message))
	case f.NotSupported:
		return domain.InvalidCode("not_supported", domain.TenantText(f.Message))
	case f.Invalid && res.Outcome == PurchaseRefused:
		msg := f.CarrierMessage
		if msg == "" {
			msg = f.Message
		}
		name := "body"
		if field != nil {
			if n := field(f.Code, msg); n != "" {
				name = n
			}
		}
		return domain.InvalidField(name, "refused by the carrier: "+domain.TenantText(msg))
	}
	return domain.Upstream("carrier_error", what+": "+message, nil)
}

// carrierCallFailure is the refusal of a carrier call made while the
// caller waits (a void): Invalid not_supported when the carrier does not
// offer it, else Upstream carrier_error with what the client may read.
func (s *Service) carrierCallFailure(ctx context.Context, what string, err error) *domain.Error {
	if errors.Is(err, carriers.ErrNotSupported) {
		return domain.InvalidCode("not_supported", CarrierErrorMessage(err))
	}
	s.log.WarnContext(ctx, "carrier call failed", "what", what, "error", err.Error())
	return domain.Upstream("carrier_error", what+": "+CarrierErrorMessage(err), err)
}

func jsonOf(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}

// containsStatus reports whether status is one of list.
func containsStatus(list []string, status string) bool { return slices.Contains(list, status) }
