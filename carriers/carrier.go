package carriers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"time"
)

// Carrier codes.
const (
	CarrierA = "carrier_a"
	CarrierB = "carrier_b"
	CarrierC = "carrier_c"
)

// Codes lists every carrier code the package has an adapter for, sorted.
func Codes() []string { return []string{CarrierA, CarrierB, CarrierC} }

// Normalized tracking / shipment statuses (TrackResult.Status,
// TrackEvent.Status).
const (
	StatusLabelCreated   = "label_created"
	StatusInTransit      = "in_transit"
	StatusOutForDelivery = "out_for_delivery"
	StatusDelivered      = "delivered"
	StatusException      = "exception"
)

// Shipment action types (ShipmentAction.Type).
const (
	ActionHold         = "hold"
	ActionRedirect     = "redirect"
	ActionRedeliver    = "redeliver"
	ActionInstructions = "instructions"
)

// Label document formats (LabelRequest.Format, Label.Format).
const (
	FormatPDF = "PDF"
	FormatZPL = "ZPL"
)

// Units.
const (
	UnitLB = "lb"
	UnitKG = "kg"
	UnitIN = "in"
	UnitCM = "cm"
)

// carrier_a MFA channels (MFAOptions.SecureCode, Registrar.RequestPIN).
const (
	MFASMS   = "SMS"
	MFACall  = "CALL"
	MFAEmail = "EMAIL"
)

// Carrier is one carrier's adapter. Every method is safe for concurrent use.
// Methods a carrier does not support (see Capabilities) fail with an error
// matching ErrNotSupported. Every other failure is an *Error.
//
// Account.Credentials are decrypted secrets: adapters never log them, and
// neither should callers (Account's String/LogValue redact them).
type Carrier interface {
	// Code is the carrier code (carrier_a, carrier_b, carrier_c).
	Code() string
	// Capabilities tells which operations the carrier supports.
	Capabilities() Capabilities
	// ValidateCredentials checks credentials against the carrier's schema
	// without any network call; nil means valid. Field names are the
	// credential keys (e.g. "accountNumber").
	ValidateCredentials(creds map[string]any) []FieldError
	// TestCredentials makes a live call proving the account works: nil when
	// the carrier accepts the credentials.
	TestCredentials(ctx context.Context, acct Account) error
	// Rate quotes every service the carrier offers for the shipment (only
	// req.ServiceType when it is set), cheapest first.
	Rate(ctx context.Context, acct Account, req RateRequest) ([]Quote, error)
	// CreateLabel buys a label: tracking number, document and price.
	CreateLabel(ctx context.Context, acct Account, req LabelRequest) (*Label, error)
	// VoidLabel cancels a label that was not yet handed to the carrier.
	VoidLabel(ctx context.Context, acct Account, trackingNumber string) error
	// Track returns one result per distinct tracking number, in the order
	// given. A number the carrier does not know has NotFound set (not an
	// error). Batching (carrier_a: 30 per call) and bounded parallelism
	// (carrier_b: one number per call) are handled inside.
	Track(ctx context.Context, acct Account, trackingNumbers []string) ([]TrackResult, error)
	// CreatePickup schedules a courier pickup.
	CreatePickup(ctx context.Context, acct Account, req PickupRequest) (*PickupResult, error)
	// CancelPickup cancels a scheduled pickup.
	CancelPickup(ctx context.Context, acct Account, req CancelPickupRequest) (*CancelPickupResult, error)
	// SendAction asks the carrier to hold, redirect, redeliver or add
	// delivery instructions to a shipment in flight.
	SendAction(ctx context.Context, acct Account, action ShipmentAction) (*ActionResult, error)
}

// Capabilities are the operations a carrier supports. Rating, Labels and
// Pickups are the carrier account's supportsRating / supportsLabels /
// supportsPickup flags.
type Capabilities struct {
	Rating   bool `json:"rating"`
	Labels   bool `json:"labels"`
	Pickups  bool `json:"pickups"`
	Tracking bool `json:"tracking"`
	// Actions: SendAction (hold, redirect, redeliver, instructions). No
	// built-in adapter has it: no carrier publishes a delivery-change API
	// (see the package documentation, "Delivery changes").
	Actions bool `json:"actions"`
}

// FieldError is one credential validation problem, shaped like an API
// error detail ({field, message}).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Account is a carrier account as an adapter needs it.
type Account struct {
	ID      string
	Carrier string
	// IsTest selects the carrier's test environment (and, for carrier_a
	// registration, the test-mode bypass of MFA).
	IsTest bool
	// Credentials are the decrypted credentials (camelCase keys). Never log.
	Credentials map[string]any
}

// String redacts the credentials.
func (a Account) String() string {
	return fmt.Sprintf("carriers.Account{ID:%q Carrier:%q IsTest:%t Credentials:%s}", a.ID, a.Carrier, a.IsTest, redactedKeys(a.Credentials))
}

// GoString redacts the credentials (%#v).
func (a Account) GoString() string { return a.String() }

// LogValue redacts the credentials for log/slog.
func (a Account) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", a.ID), slog.String("carrier", a.Carrier), slog.Bool("isTest", a.IsTest))
}

func redactedKeys(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := "{"
	for i, k := range keys {
		if i > 0 {
			s += " "
		}
		s += k + ":********"
	}
	return s + "}"
}

// cred returns a credential as a trimmed string ("" when missing or not a string).
func (a Account) cred(key string) string {
	s, _ := a.Credentials[key].(string)
	return trimSpace(s)
}

// Address is a postal address. Latitude/Longitude are only filled in on
// tracking results, when known.
type Address struct {
	Name         string   `json:"name"`
	Company      string   `json:"company"`
	Phone        string   `json:"phone"`
	Address1     string   `json:"address1"`
	Address2     string   `json:"address2"`
	City         string   `json:"city"`
	Province     string   `json:"province"`
	ProvinceCode string   `json:"provinceCode"`
	Country      string   `json:"country"`
	CountryCode  string   `json:"countryCode"`
	Zip          string   `json:"zip"`
	Residential  bool     `json:"residential"`
	Latitude     *float64 `json:"latitude,omitempty"`
	Longitude    *float64 `json:"longitude,omitempty"`
}

// Weight is a weight with its unit (lb or kg).
type Weight struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Package is one parcel. Dimensions are optional (0 = unknown);
// DimensionUnit defaults to in.
type Package struct {
	Weight        Weight  `json:"weight"`
	Length        float64 `json:"length"`
	Width         float64 `json:"width"`
	Height        float64 `json:"height"`
	DimensionUnit string  `json:"dimensionUnit"`
}

// RateRequest asks for quotes. ShipTo.Residential marks a residential
// delivery (carriers may add a surcharge).
type RateRequest struct {
	ShipFrom Address
	ShipTo   Address
	Packages []Package
	// ShipDate defaults to today (UTC).
	ShipDate time.Time
	// ServiceType limits the answer to one carrier service code (optional).
	ServiceType string
}

// Charge is one line of a price breakdown.
type Charge struct {
	Name   string  `json:"name"`
	Amount float64 `json:"amount"`
}

// Quote is one priced service.
type Quote struct {
	Carrier     string  `json:"carrier"`
	ServiceType string  `json:"serviceType"`
	ServiceName string  `json:"serviceName"`
	TotalPrice  float64 `json:"totalPrice"`
	Currency    string  `json:"currency"`
	// TransitDays is nil when the carrier gives no transit time.
	TransitDays           *int       `json:"transitDays"`
	EstimatedDelivery     *time.Time `json:"estimatedDelivery"`
	Breakdown             []Charge   `json:"breakdown"`
	TransitDaysGuaranteed bool       `json:"transitDaysGuaranteed"`
	// DeliveryByTime is the committed time of day ("10:30"), "" if none.
	DeliveryByTime string `json:"deliveryByTime"`
	// Zone is the carrier's rate zone ("2"…"9"), "" if not reported.
	Zone string `json:"zone"`
	// BillingWeight is the weight the carrier charged for, if reported.
	BillingWeight *Weight `json:"billingWeight"`
	// Raw is this service's element of the carrier response (carrier_c,
	// several packages: the array of the packages' elements).
	Raw json.RawMessage `json:"raw"`
}

// LabelRequest asks for a label.
type LabelRequest struct {
	ShipFrom Address
	ShipTo   Address
	Packages []Package
	// ServiceType is the carrier service code (required).
	ServiceType string
	// ShipDate defaults to today (UTC).
	ShipDate time.Time
	// Format is FormatPDF (default) or FormatZPL.
	Format string
	// Reference (optional) is printed on the label and sent as the
	// customer reference / transaction id (e.g. the order number).
	Reference string
}

// LabelPiece is the label of one package.
type LabelPiece struct {
	TrackingNumber string `json:"trackingNumber"`
	Document       []byte `json:"document"`
}

// Label is a bought label.
type Label struct {
	// TrackingNumber is the shipment's (master) tracking number; VoidLabel
	// and Track take it.
	TrackingNumber string `json:"trackingNumber"`
	ServiceType    string `json:"serviceType"`
	ServiceName    string `json:"serviceName"`
	// Format is FormatPDF or FormatZPL; ContentType the matching MIME type.
	Format      string `json:"format"`
	ContentType string `json:"contentType"`
	// Document is the first package's label (the only one for a
	// single-package shipment); Pieces has one entry per package.
	Document          []byte       `json:"document"`
	Pieces            []LabelPiece `json:"pieces"`
	TotalPrice        float64      `json:"totalPrice"`
	Currency          string       `json:"currency"`
	Breakdown         []Charge     `json:"breakdown"`
	ShipDate          time.Time    `json:"shipDate"`
	EstimatedDelivery *time.Time   `json:"estimatedDelivery"`
	Zone              string       `json:"zone"`
	// Raw is the carrier response with the label images left out.
	Raw json.RawMessage `json:"raw"`
}

// TrackEvent is one tracking checkpoint.
type TrackEvent struct {
	// EventID is stable for the same scan across calls (the carrier's id,
	// else a digest of number, time, code and place): a checkpoint's
	// sourceEventId.
	EventID       string    `json:"eventId"`
	Status        string    `json:"status"`
	StatusDetail  string    `json:"statusDetail"`
	Description   string    `json:"description"`
	City          string    `json:"city"`
	State         string    `json:"state"`
	Country       string    `json:"country"`
	CountryCode   string    `json:"countryCode"`
	Zip           string    `json:"zip"`
	Latitude      *float64  `json:"latitude"`
	Longitude     *float64  `json:"longitude"`
	Time          time.Time `json:"time"`
	IsException   bool      `json:"isException"`
	ExceptionType string    `json:"exceptionType"`
}

// TrackResult is the tracking state of one number.
type TrackResult struct {
	TrackingNumber string `json:"trackingNumber"`
	// NotFound: the carrier does not know the number; nothing else is set.
	NotFound bool `json:"notFound"`
	// Error is a per-number problem the carrier reported (other than not
	// found), "" otherwise.
	Error             string     `json:"error"`
	Status            string     `json:"status"`
	StatusDetail      string     `json:"statusDetail"`
	ServiceType       string     `json:"serviceType"`
	ServiceName       string     `json:"serviceName"`
	Origin            *Address   `json:"origin"`
	Destination       *Address   `json:"destination"`
	Weight            *Weight    `json:"weight"`
	ShipDate          *time.Time `json:"shipDate"`
	EstimatedDelivery *time.Time `json:"estimatedDelivery"`
	DeliveredAt       *time.Time `json:"deliveredAt"`
	// Events are ordered oldest first.
	Events []TrackEvent    `json:"events"`
	Raw    json.RawMessage `json:"raw"`
}

// PickupRequest schedules a pickup. Dates are YYYY-MM-DD, times HH:MM,
// both the pickup address's local calendar and clock (carrier_a sends the
// ready time with the address's UTC offset and judges "same day" there).
type PickupRequest struct {
	Address      Address
	PickupDate   string
	ReadyTime    string
	CloseTime    string
	PackageCount int     // default 1
	TotalWeight  *Weight // optional
	// ContactName / ContactPhone default to Address.Name / Address.Phone
	// (the carrier requires both; placeholders are sent when both are empty).
	ContactName  string
	ContactPhone string
	// CarrierCode is carrier_a's operating company: "FDXG" (ground, the
	// default) or "FDXE" (express).
	CarrierCode string
	Remarks     string
}

// PickupResult is a scheduled pickup.
type PickupResult struct {
	ConfirmationNumber string `json:"confirmationNumber"`
	// Location is the carrier's dispatch location; keep it (e.g. in the
	// pickup's carrierResponse): cancelling an express pickup needs it.
	Location string          `json:"location"`
	Messages []string        `json:"messages"`
	Raw      json.RawMessage `json:"raw"`
}

// CancelPickupRequest cancels a pickup.
type CancelPickupRequest struct {
	ConfirmationNumber string
	PickupDate         string // YYYY-MM-DD, the scheduled date
	Location           string // from PickupResult.Location
	CarrierCode        string // as in PickupRequest
	Reason             string
}

// CancelPickupResult is the carrier's answer to a cancellation.
type CancelPickupResult struct {
	Messages []string        `json:"messages"`
	Raw      json.RawMessage `json:"raw"`
}

// ShipmentAction is a delivery change for a shipment in flight.
type ShipmentAction struct {
	// Type is ActionHold, ActionRedirect, ActionRedeliver or ActionInstructions.
	Type           string
	TrackingNumber string
	// Reason (hold): customer_request, address_issue, payment_issue,
	// inventory_issue, other.
	Reason string
	Notes  string
	// Address (redirect): the new destination (Address1, City,
	// ProvinceCode, Zip; CountryCode defaults to US).
	Address *Address
	// PreferredDate (redeliver), YYYY-MM-DD.
	PreferredDate string
	// Instructions (redeliver, instructions).
	Instructions string
	// Reference is the caller's id of the action (sent to the carrier as
	// its transaction id, so a retried call is recognisable).
	Reference string
}

// ActionResult is the carrier's acceptance of an action.
type ActionResult struct {
	ConfirmationNumber string          `json:"confirmationNumber"`
	Status             string          `json:"status"` // "accepted"
	Message            string          `json:"message"`
	Raw                json.RawMessage `json:"raw"`
}
