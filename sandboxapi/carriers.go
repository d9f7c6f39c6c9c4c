package sandboxapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// Carrier sandbox request headers (see the package comment, "Carriers").
const (
	// HeaderSandboxEnv "test" marks a call for the carrier's test
	// environment (production and test share one sandbox base URL).
	HeaderSandboxEnv = "X-Sandbox-Environment"
	// HeaderTokenTTL on a token request sets the issued token's lifetime
	// in seconds (1-86400), so tests can watch tokens expire.
	HeaderTokenTTL = "X-Sandbox-Token-Ttl"
)

// Carrier sandbox bounds: the oldest entries are forgotten past these.
const (
	MaxCarrierLabels  = 10000
	MaxCarrierPickups = 10000
	maxCarrierTokens  = 50000
)

// InvalidAPIKey is the carrier_c apiKey the sandbox refuses (CONTRACT 8).
const InvalidAPIKey = "invalid"

// carrierSandbox is the in-memory state of the sandbox carriers of one
// handler: issued tokens, labels and pickups. Safe for concurrent use.
type carrierSandbox struct {
	now func() time.Time

	mu          sync.Mutex
	tokens      map[string]sbToken
	labels      map[string]*sbShipment // carrier|trackingNumber
	labelOrder  []string
	pickups     map[string]*sbPickup // confirmation code
	pickupOrder []string
}

type sbToken struct {
	carrier string
	expires time.Time
	test    bool
	// fail: the token was issued for an account whose non-secret
	// credential (UPS merchant id) is sandbox-fail: every call fails 503.
	fail bool
}

type sbPickup struct {
	code, location, carrierCode string
	date                        string
	cancelled                   bool
}

func newCarrierSandbox(now func() time.Time) *carrierSandbox {
	return &carrierSandbox{
		now:     now,
		tokens:  map[string]sbToken{},
		labels:  map[string]*sbShipment{},
		pickups: map[string]*sbPickup{},
	}
}

// carrierRoutes serves the sandbox carriers (CONTRACT 8) under
// /carriers/{code}, each in its real wire format, so the carriers package's
// adapters work unchanged against it.
//
// # Routes
//
//	/carriers/carrier_a  (FedEx REST)
//	  POST /oauth/token                          form: client_credentials | csp_credentials
//	  POST /rate/v1/rates/quotes
//	  POST /ship/v1/shipments                    labelResponseOptions LABEL (base64) or URL_ONLY
//	  GET  /document/v1/labels/{number}          the URL_ONLY document (?imageType=PDF|ZPLII|PNG)
//	  PUT  /ship/v1/shipments/cancel
//	  POST /track/v1/trackingnumbers             at most 30 numbers
//	  POST /pickup/v1/pickups
//	  PUT  /pickup/v1/pickups/cancel
//	  POST /registration/v2/address/keysgeneration
//	  POST /registration/v2/customerkeys/pingeneration
//	  POST /registration/v2/pin/keysgeneration
//	  POST /registration/v2/invoice/keysgeneration
//	/carriers/carrier_b  (UPS REST)
//	  POST   /security/v1/oauth/token            Basic clientId:clientSecret, x-merchant-id
//	  POST   /api/rating/{version}/{Rate|Shop|Ratetimeintransit|Shoptimeintransit}
//	  POST   /api/shipments/{version}/ship       LabelImageFormat GIF | PNG | ZPL
//	  DELETE /api/shipments/{version}/void/cancel/{number}
//	  GET    /api/track/v1/details/{number}      transId and transactionSrc headers required
//	  GET    /api/track/v1/reference/details/{reference}  the issued label bought with a shipper reference
//	/carriers/carrier_c  (single-key rate estimates; api-key header)
//	  GET  /v1/carriers
//	  POST /v1/rates/estimate
//
// Only the vendors' real endpoints are served: neither carrier publishes
// a delivery-change API, so there is none here (the carriers package's
// adapters report that capability as unsupported).
//
// Requests lacking a field the vendor documents as required are answered
// with the carrier's 400 body (carrier_required.go).
//
// Error bodies are the carrier's: FedEx {transactionId, errors[{code,
// message}]}, UPS {response: {errors[{code, message}]}}, carrier_c
// {request_id, errors[{error_source, error_type, error_code, message}]}.
//
// # Tokens
//
// OAuth tokens are random, kept in memory and checked on every call; an
// unknown or expired token is the carrier's 401 body. Lifetimes are the
// carriers' (3600 s, 14399 s); a token request may set another with the
// X-Sandbox-Token-Ttl header (seconds). X-Sandbox-Environment: test marks a
// test-environment call (the adapters send it for IsTest accounts).
//
// # Rates (deterministic)
//
// Zone: 9 when the countries differ, else 2 + min(6, |zip3(from) -
// zip3(to)| * 7 / 1000) from the first three digits of the postal codes (a
// hash for codes without three digits). Billable weight per package: the
// larger of the actual weight and L*W*H/139 (carrier_c: /166), rounded up
// to a pound. Each package costs (base + perLb * (pounds - 1)) * (1 + 0.12
// * (zone - 2)) by service; then a fuel surcharge (carrier_a 14.75 %,
// carrier_b 15.25 %), a residential fee (5.55 / 5.85) and the account
// discount (12 % / 10 % of the base; carrier_a's ACCOUNT rate, carrier_b's
// negotiated rate). Services (domestic; zone 9 gets the international ones):
//
//	carrier_a  FEDEX_GROUND, FEDEX_EXPRESS_SAVER, FEDEX_2_DAY, STANDARD_OVERNIGHT,
//	           PRIORITY_OVERNIGHT, FIRST_OVERNIGHT; INTERNATIONAL_ECONOMY, INTERNATIONAL_PRIORITY
//	carrier_b  03 Ground, 12 3 Day Select, 02 2nd Day Air, 59 2nd Day Air A.M.,
//	           13 Next Day Air Saver, 01 Next Day Air, 14 Next Day Air Early; 08, 07
//	carrier_c  usps_ground_advantage, usps_priority_mail, usps_priority_mail_express;
//	           usps_priority_mail_international, usps_priority_mail_express_international
//
// Ground transit days grow with the zone (1-5); delivery dates skip
// weekends. The same request always gets the same answer; a label costs
// what the ACCOUNT / negotiated quote said.
//
// # Labels and tracking
//
// Labels are real documents, base64 in the response: a one-page 4x6 PDF
// with the addresses and tracking number (carrier_a PDF), ZPL II (ZPLII /
// ZPL), or a GIF/PNG image (carrier_b's formats; landscape, the 4x6 label
// on its side, as the carrier sends them). Tracking numbers are
// derived from a hash of the request (carrier_a 12 digits starting with 7,
// carrier_b 1Z numbers with a check digit); the last MaxCarrierLabels
// labels are remembered. A remembered label's tracking follows the clock:
// label created until 18:00 UTC on the ship date (and voidable until
// then), then in transit (origin scans, the carrier's hub — Memphis /
// Louisville — and the destination facility), out for delivery at 08:00 on
// the delivery date, delivered that afternoon. A voided label is unknown.
//
// Any other number gets a history derived from the number alone: origin
// and destination among 32 US cities, a domestic service, 1-50 lb, shipped
// on a weekday of 2025, delivered (about one number in ten has a failed
// delivery attempt first). Magic numbers: ending in 0000 → unknown to the
// carrier (FedEx: a result with error TRACKING.TRACKINGNUMBER.NOTFOUND;
// UPS: a warning TW0001 and no package); ending in 99 → a delivery
// exception, not delivered.
//
// # Pickups (carrier_a)
//
// Confirmation codes derive from the request (FDXG "CPU" + 8 digits, FDXE 4
// digits with a location). A ready date before today (at the ready time's
// own UTC offset, UTC without one) is PICKUP.REQUESTED.PREVIOUS.DAY;
// cancelling a date past everywhere PICKUP.NUMBER.EXPIRED,
// a cancelled pickup PICKUP.ALREADY.CANCELLED; an unknown code is accepted.
//
// # Registration (carrier_a)
//
// A 9-digit account number starting with 0 (or not 9 digits) is
// ACCOUNT.NUMBER.NOTFOUND. Test-environment calls return child_Key /
// child_secret at once (the adapter reports testModeBypass). Otherwise
// mfaOptions offer INVOICE and SMS/CALL/EMAIL with a masked e-mail and
// phone (***-***-<last 4 digits of the account>) and a signed
// accountAuthToken valid 30 minutes. PIN WrongPIN ("000000") is
// PIN.OPTION.INVALIDEXPIRED, invoice number WrongInvoiceNumber ("0") is 404
// INVOICEDETAILS.NUMBER.NOTEXIST; any other PIN or invoice yields the child
// keys, derived from the account number.
//
// # Failure rules
//
//   - A credential equal to FailValue ("sandbox-fail") that authenticates
//     (carrier_a client_id/client_secret/child_Key/child_secret, carrier_b
//     clientId/clientSecret, carrier_c apiKey) is refused with 401 — the
//     credentials are bad, retrying will not help.
//   - A non-secret account value equal to FailValue (carrier_a
//     accountNumber in a body; carrier_b accountNumber as x-merchant-id or
//     ShipperNumber) makes every call of that account 503 — the carrier is
//     unavailable for it, retrying may help. (carrier_a tracking carries no
//     account number and is unaffected.)
//   - carrier_c apiKey InvalidAPIKey ("invalid") is 401 on every call.
func carrierRoutes() http.Handler {
	return newCarrierSandbox(time.Now).routes()
}

func (s *carrierSandbox) routes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "Not Found")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
	})
	r.Route("/carrier_a", s.carrierARoutes)
	r.Route("/carrier_b", s.carrierBRoutes)
	r.Route("/carrier_c", s.carrierCRoutes)
	return r
}

// ---- tokens ----

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenTTL reads HeaderTokenTTL, else def.
func tokenTTL(r *http.Request, def time.Duration) time.Duration {
	if v := strings.TrimSpace(r.Header.Get(HeaderTokenTTL)); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 86400 {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

func isTestEnv(r *http.Request) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(HeaderSandboxEnv)), "test")
}

func (s *carrierSandbox) issueToken(carrier string, ttl time.Duration, test, fail bool) string {
	tok := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tokens) >= maxCarrierTokens {
		for k, t := range s.tokens {
			if !now.Before(t.expires) {
				delete(s.tokens, k)
			}
		}
		if len(s.tokens) >= maxCarrierTokens { // still full: forget everything
			s.tokens = map[string]sbToken{}
		}
	}
	s.tokens[tok] = sbToken{carrier: carrier, expires: now.Add(ttl), test: test, fail: fail}
	return tok
}

// bearer validates the request's bearer token for carrier.
func (s *carrierSandbox) bearer(r *http.Request, carrier string) (sbToken, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return sbToken{}, false
	}
	tok := strings.TrimSpace(h[7:])
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok || t.carrier != carrier {
		return sbToken{}, false
	}
	if !s.now().Before(t.expires) {
		delete(s.tokens, tok)
		return sbToken{}, false
	}
	return t, true
}

// ---- labels and pickups ----

// putLabel remembers an issued label under each of its package numbers.
func (s *carrierSandbox) putLabel(sh *sbShipment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range append([]string{sh.number}, sh.pieces...) {
		key := sh.carrier + "|" + n
		if _, ok := s.labels[key]; !ok {
			s.labelOrder = append(s.labelOrder, key)
		}
		s.labels[key] = sh
	}
	for len(s.labelOrder) > MaxCarrierLabels {
		delete(s.labels, s.labelOrder[0])
		s.labelOrder = s.labelOrder[1:]
	}
}

// shipment returns the issued label of a number (a copy), else the
// number's derived shipment; ok is false when the carrier does not know
// the number (ending in 0000, or a voided label).
func (s *carrierSandbox) shipment(carrier, number string) (sbShipment, bool) {
	s.mu.Lock()
	sh, issued := s.labels[carrier+"|"+number]
	var cp sbShipment
	if issued {
		cp = *sh
	}
	s.mu.Unlock()
	if issued {
		return cp, !cp.voided
	}
	if unknownNumber(number) {
		return sbShipment{}, false
	}
	return derivedShipment(carrier, number), true
}

// labelByReference finds an issued, not voided label of carrier by the
// shipper's reference it was bought with.
func (s *carrierSandbox) labelByReference(carrier, ref string) (sbShipment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range s.labelOrder {
		if sh, ok := s.labels[key]; ok && sh.carrier == carrier && sh.reference != "" && sh.reference == ref && !sh.voided {
			return *sh, true
		}
	}
	return sbShipment{}, false
}

// unknownNumber: numbers ending in 0000 are unknown to every carrier.
func unknownNumber(n string) bool { return strings.HasSuffix(strings.TrimSpace(n), "0000") }

// voidLabel marks an issued label voided. status: "ok", "already",
// "tendered" (picked up already), "unknown".
func (s *carrierSandbox) voidLabel(carrier, number string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.labels[carrier+"|"+number]
	if !ok {
		if unknownNumber(number) {
			return "unknown"
		}
		return "tendered" // a derived shipment was delivered long ago
	}
	if sh.voided {
		return "already"
	}
	if !s.now().Before(sh.pickupAt()) {
		return "tendered"
	}
	sh.voided = true
	return "ok"
}

func (s *carrierSandbox) putPickup(p *sbPickup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pickups[p.code]; !ok {
		s.pickupOrder = append(s.pickupOrder, p.code)
		for len(s.pickupOrder) > MaxCarrierPickups {
			delete(s.pickups, s.pickupOrder[0])
			s.pickupOrder = s.pickupOrder[1:]
		}
	}
	s.pickups[p.code] = p
}

// cancelPickup: "ok", "already".
func (s *carrierSandbox) cancelPickup(code string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pickups[code]
	if !ok {
		return "ok" // not remembered (e.g. after a restart): accepted
	}
	if p.cancelled {
		return "already"
	}
	p.cancelled = true
	return "ok"
}

// ---- flexible JSON (carrier examples mix strings and numbers) ----

// flexStr decodes a JSON string or number as a string.
type flexStr string

func (f *flexStr) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*f = ""
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*f = flexStr(v)
		return nil
	}
	*f = flexStr(s)
	return nil
}

func (f flexStr) String() string { return strings.TrimSpace(string(f)) }

// flexNum decodes a JSON number or numeric string (anything else is 0).
type flexNum float64

func (f *flexNum) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		*f = 0
		return nil
	}
	*f = flexNum(v)
	return nil
}

// oneOrMany decodes an array or a single object.
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*o = nil
		return nil
	}
	if strings.HasPrefix(s, "[") {
		var v []T
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*o = v
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = []T{v}
	return nil
}

// ---- pricing ----

// sbPkg is a package in pounds and inches.
type sbPkg struct{ lb, l, w, h float64 }

func toLB(v float64, unit string) float64 {
	switch strings.ToUpper(strings.TrimSpace(unit)) {
	case "KG", "KGS", "KILOGRAM", "KILOGRAMS":
		return v * 2.20462
	case "OZ", "OUNCE", "OUNCES":
		return v / 16
	case "G", "GRAM", "GRAMS":
		return v / 453.592
	}
	return v
}

func toIN(v float64, unit string) float64 {
	switch strings.ToUpper(strings.TrimSpace(unit)) {
	case "CM", "CENTIMETER", "CENTIMETERS":
		return v / 2.54
	}
	return v
}

type sbRateInput struct {
	fromZip, fromCountry, toZip, toCountry string
	residential                            bool
	pkgs                                   []sbPkg
}

// sbService is one service level of a sandbox carrier.
type sbService struct {
	code, name  string
	base, perLb float64
	days        func(zone int) int
	guaranteed  bool
	by          string // committed delivery time in the carrier's format
	intl        bool
}

func fixedDays(n int) func(int) int { return func(int) int { return n } }

func groundDays(zone int) int {
	return [...]int{1, 1, 1, 2, 3, 3, 4, 5, 5, 6}[min(max(zone, 0), 9)]
}

// sbCarrier holds a sandbox carrier's pricing constants.
type sbCarrier struct {
	code                string
	services            []sbService
	fuelPct, resi, disc float64 // fuel surcharge share, residential fee, account discount share
	dimDivisor          float64
	hub                 sbPlace
}

var sbCarriers = map[string]sbCarrier{
	"carrier_a": {
		code: "carrier_a", fuelPct: 0.1475, resi: 5.55, disc: 0.12, dimDivisor: 139,
		hub: sbPlace{"MEMPHIS", "TN", "38118", "US"},
		services: []sbService{
			{code: "FEDEX_GROUND", name: "Carrier A Ground", base: 9.50, perLb: 0.95, days: groundDays},
			{code: "FEDEX_EXPRESS_SAVER", name: "Carrier A Express Saver", base: 22.40, perLb: 2.10, days: fixedDays(3), guaranteed: true, by: "16:30:00"},
			{code: "FEDEX_2_DAY", name: "Carrier A 2Day", base: 27.80, perLb: 2.60, days: fixedDays(2), guaranteed: true, by: "16:30:00"},
			{code: "STANDARD_OVERNIGHT", name: "Carrier A Standard Overnight", base: 48.90, perLb: 4.30, days: fixedDays(1), guaranteed: true, by: "15:00:00"},
			{code: "PRIORITY_OVERNIGHT", name: "Carrier A Priority Overnight", base: 58.20, perLb: 4.90, days: fixedDays(1), guaranteed: true, by: "10:30:00"},
			{code: "FIRST_OVERNIGHT", name: "Carrier A First Overnight", base: 89.50, perLb: 5.60, days: fixedDays(1), guaranteed: true, by: "08:00:00"},
			{code: "INTERNATIONAL_ECONOMY", name: "Carrier A International Economy", base: 52.00, perLb: 4.80, days: fixedDays(5), guaranteed: true, intl: true},
			{code: "INTERNATIONAL_PRIORITY", name: "Carrier A International Priority", base: 68.00, perLb: 6.40, days: fixedDays(3), guaranteed: true, by: "10:30:00", intl: true},
		},
	},
	"carrier_b": {
		code: "carrier_b", fuelPct: 0.1525, resi: 5.85, disc: 0.10, dimDivisor: 139,
		hub: sbPlace{"LOUISVILLE", "KY", "40209", "US"},
		services: []sbService{
			{code: "03", name: "Carrier B Ground", base: 9.80, perLb: 0.98, days: groundDays},
			{code: "12", name: "Carrier B 3 Day Select", base: 20.25, perLb: 1.95, days: fixedDays(3), guaranteed: true},
			{code: "02", name: "Carrier B 2nd Day Air", base: 26.90, perLb: 2.55, days: fixedDays(2), guaranteed: true},
			{code: "59", name: "Carrier B 2nd Day Air A.M.", base: 31.40, perLb: 2.80, days: fixedDays(2), guaranteed: true, by: "10:30 A.M."},
			{code: "13", name: "Carrier B Next Day Air Saver", base: 52.10, perLb: 4.40, days: fixedDays(1), guaranteed: true, by: "3:00 P.M."},
			{code: "01", name: "Carrier B Next Day Air", base: 58.60, perLb: 4.95, days: fixedDays(1), guaranteed: true, by: "10:30 A.M."},
			{code: "14", name: "Carrier B Next Day Air Early", base: 92.75, perLb: 5.70, days: fixedDays(1), guaranteed: true, by: "8:00 A.M."},
			{code: "08", name: "Carrier B Worldwide Expedited", base: 55.00, perLb: 5.10, days: fixedDays(4), guaranteed: true, intl: true},
			{code: "07", name: "Carrier B Worldwide Express", base: 70.00, perLb: 6.60, days: fixedDays(2), guaranteed: true, by: "10:30 A.M.", intl: true},
		},
	},
	"carrier_c": {
		code: "carrier_c", dimDivisor: 166,
		services: []sbService{
			{code: "usps_ground_advantage", name: "Carrier C Ground Advantage", base: 5.40, perLb: 0.62, days: func(z int) int { return [...]int{2, 2, 2, 2, 3, 3, 4, 5, 5, 5}[min(max(z, 0), 9)] }},
			{code: "usps_priority_mail", name: "Carrier C Priority Mail", base: 8.70, perLb: 1.05, days: func(z int) int { return [...]int{1, 1, 1, 1, 2, 2, 3, 3, 3, 3}[min(max(z, 0), 9)] }},
			{code: "usps_priority_mail_express", name: "Carrier C Priority Mail Express", base: 28.75, perLb: 3.10, days: func(z int) int { return map[bool]int{true: 1, false: 2}[z <= 5] }, guaranteed: true},
			{code: "usps_priority_mail_international", name: "Carrier C Priority Mail International", base: 42.00, perLb: 3.90, days: fixedDays(8), intl: true},
			{code: "usps_priority_mail_express_international", name: "Carrier C Priority Mail Express International", base: 60.00, perLb: 5.20, days: fixedDays(4), guaranteed: true, intl: true},
		},
	},
}

// service returns a carrier's service by code.
func (c sbCarrier) service(code string) (sbService, bool) {
	for _, s := range c.services {
		if s.code == code {
			return s, true
		}
	}
	return sbService{}, false
}

// zip3 is the first three digits of a postal code, or a hash of it.
func zip3(zip string) int {
	digits := make([]byte, 0, 3)
	for i := 0; i < len(zip) && len(digits) < 3; i++ {
		if zip[i] >= '0' && zip[i] <= '9' {
			digits = append(digits, zip[i])
		}
	}
	if len(digits) == 3 {
		n, _ := strconv.Atoi(string(digits))
		return n
	}
	sum := sha256.Sum256([]byte(strings.ToUpper(strings.ReplaceAll(zip, " ", ""))))
	return int(binary.BigEndian.Uint16(sum[:2]) % 1000)
}

func normCountry(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if c == "" {
		return "US"
	}
	return c
}

// sbZone: 9 across borders, else 2-8 by the distance between the 3-digit
// postal prefixes.
func sbZone(fromZip, fromCountry, toZip, toCountry string) int {
	if normCountry(fromCountry) != normCountry(toCountry) {
		return 9
	}
	d := zip3(fromZip) - zip3(toZip)
	if d < 0 {
		d = -d
	}
	return 2 + min(6, d*7/1000)
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// sbPrice is a priced service.
type sbPrice struct {
	svc                        sbService
	zone                       int
	billable, totalActual      float64 // pounds
	base, fuel, resi, discount float64
	list, net                  float64 // list price; account (negotiated) price
	transit                    int
	delivery                   time.Time // estimated delivery date (00:00 UTC)
	dimWeighted                bool
	fuelPct                    float64
	fromCC, currency           string
}

// price prices one service: billable weight per package is the larger of
// the actual and the dimensional weight (L*W*H / divisor), rounded up to a
// pound; each package costs base + perLb*(pounds-1), times 1 + 0.12 per
// zone above 2; then fuel surcharge, residential fee, account discount.
func (c sbCarrier) price(svc sbService, in sbRateInput, shipDate time.Time) sbPrice {
	p := sbPrice{svc: svc, zone: sbZone(in.fromZip, in.fromCountry, in.toZip, in.toCountry), fuelPct: c.fuelPct, currency: "USD",
		fromCC: normCountry(in.fromCountry)}
	factor := 1 + 0.12*float64(p.zone-2)
	for _, pk := range in.pkgs {
		actual := math.Ceil(math.Max(pk.lb, 0.1))
		billable := actual
		if pk.l > 0 && pk.w > 0 && pk.h > 0 {
			if dim := math.Ceil(pk.l * pk.w * pk.h / c.dimDivisor); dim > billable {
				billable, p.dimWeighted = dim, true
			}
		}
		p.billable += billable
		p.totalActual += pk.lb
		p.base += (svc.base + svc.perLb*(billable-1)) * factor
	}
	p.base = round2(p.base)
	p.fuel = round2(p.base * c.fuelPct)
	if in.residential {
		p.resi = c.resi
	}
	p.discount = round2(p.base * c.disc)
	p.list = round2(p.base + p.fuel + p.resi)
	p.net = round2(p.list - p.discount)
	p.transit = svc.days(p.zone)
	p.delivery = addBusinessDays(shipDate, p.transit)
	return p
}

// quote prices every service that fits the route (or only code).
func (c sbCarrier) quote(in sbRateInput, shipDate time.Time, code string) ([]sbPrice, bool) {
	intl := sbZone(in.fromZip, in.fromCountry, in.toZip, in.toCountry) == 9
	var out []sbPrice
	for _, svc := range c.services {
		if svc.intl != intl || (code != "" && svc.code != code) {
			continue
		}
		out = append(out, c.price(svc, in, shipDate))
	}
	return out, len(out) > 0
}

func dateOnly(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func addBusinessDays(d time.Time, n int) time.Time {
	d = dateOnly(d)
	for n > 0 {
		d = d.AddDate(0, 0, 1)
		if d.Weekday() != time.Saturday && d.Weekday() != time.Sunday {
			n--
		}
	}
	return d
}

// parseShipDate reads YYYY-MM-DD / YYYYMMDD / RFC 3339, default today.
func (s *carrierSandbox) parseShipDate(v string) time.Time {
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006-01-02", "20060102", time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			return dateOnly(t)
		}
	}
	return dateOnly(s.now())
}

// ---- shipments and their tracking timeline ----

type sbPlace struct{ city, state, zip, country string }

// sbCities are the places derived tracking histories use.
var sbCities = []sbPlace{
	{"NEW YORK", "NY", "10001", "US"}, {"LOS ANGELES", "CA", "90012", "US"}, {"CHICAGO", "IL", "60601", "US"},
	{"HOUSTON", "TX", "77002", "US"}, {"PHOENIX", "AZ", "85004", "US"}, {"PHILADELPHIA", "PA", "19103", "US"},
	{"SAN ANTONIO", "TX", "78205", "US"}, {"SAN DIEGO", "CA", "92101", "US"}, {"DALLAS", "TX", "75201", "US"},
	{"SAN JOSE", "CA", "95113", "US"}, {"AUSTIN", "TX", "78701", "US"}, {"JACKSONVILLE", "FL", "32202", "US"},
	{"COLUMBUS", "OH", "43215", "US"}, {"CHARLOTTE", "NC", "28202", "US"}, {"INDIANAPOLIS", "IN", "46204", "US"},
	{"SAN FRANCISCO", "CA", "94103", "US"}, {"SEATTLE", "WA", "98101", "US"}, {"DENVER", "CO", "80202", "US"},
	{"NASHVILLE", "TN", "37203", "US"}, {"BOSTON", "MA", "02108", "US"}, {"PORTLAND", "OR", "97204", "US"},
	{"LAS VEGAS", "NV", "89101", "US"}, {"MEMPHIS", "TN", "38103", "US"}, {"LOUISVILLE", "KY", "40202", "US"},
	{"BALTIMORE", "MD", "21202", "US"}, {"MILWAUKEE", "WI", "53202", "US"}, {"ATLANTA", "GA", "30303", "US"},
	{"MIAMI", "FL", "33130", "US"}, {"MINNEAPOLIS", "MN", "55401", "US"}, {"SALT LAKE CITY", "UT", "84101", "US"},
	{"KANSAS CITY", "MO", "64105", "US"}, {"PITTSBURGH", "PA", "15222", "US"},
}

// sbShipment is a shipment the sandbox can track: an issued label or a
// history derived from the tracking number.
type sbShipment struct {
	carrier, number, service, serviceName string
	from, to                              sbPlace
	weightLb                              float64
	shipDate                              time.Time // 00:00 UTC
	created                               time.Time // label creation (issued labels)
	transit                               int       // business days
	exception                             int       // 0 none, 1 one failed attempt then delivered, 2 undelivered
	issued, voided                        bool
	price                                 float64
	pieces                                []string // package tracking numbers (issued)
	reference                             string   // the shipper's reference (issued carrier_b labels)
}

const (
	evLabel      = "label"
	evPickup     = "pickup"
	evDepart     = "depart"
	evArriveHub  = "arrive_hub"
	evDepartHub  = "depart_hub"
	evArriveDest = "arrive_dest"
	evOut        = "out"
	evDelivered  = "delivered"
	evException  = "exception"
)

type sbEvent struct {
	at    time.Time
	kind  string
	place sbPlace
}

// dispatchDate is the day the carrier collects the shipment: its ship date,
// or, for a label issued on its ship date within an hour of (or after) that
// day's 18:00 UTC pickup, the next business day's, as a real carrier takes
// a late label on its next run: a label is never "tendered" the moment it
// is bought. A back-dated label (ship date before its creation day) keeps
// its date: it was picked up then.
func (sh sbShipment) dispatchDate() time.Time {
	if sh.issued {
		if late := sh.created.Sub(sh.shipDate); late >= 17*time.Hour && late < 24*time.Hour {
			return addBusinessDays(sh.shipDate, 1)
		}
	}
	return sh.shipDate
}

func (sh sbShipment) pickupAt() time.Time { return sh.dispatchDate().Add(18 * time.Hour) }

func (sh sbShipment) deliveryDate() time.Time { return addBusinessDays(sh.dispatchDate(), sh.transit) }

func (sh sbShipment) seed() []byte {
	sum := sha256.Sum256([]byte(sh.carrier + "|" + sh.number))
	return sum[:]
}

// timeline returns the shipment's events, oldest first: for issued labels
// only those that happened by now (label created until the 18:00 UTC pickup
// on the ship date, in transit, out for delivery at 08:00 on the delivery
// date, delivered in the afternoon), all of them for derived histories.
func (sh sbShipment) timeline(now time.Time, hub sbPlace) []sbEvent {
	pickup := sh.pickupAt()
	del := sh.deliveryDate()
	out := del.Add(8 * time.Hour)
	span := out.Sub(pickup)
	seed := sh.seed()
	labelAt := sh.shipDate.Add(9 * time.Hour)
	if sh.issued {
		labelAt = sh.created
	}
	if latest := pickup.Add(-time.Hour); labelAt.After(latest) {
		labelAt = latest
	}
	evs := []sbEvent{
		{labelAt, evLabel, sh.from},
		{pickup, evPickup, sh.from},
		{pickup.Add(3 * time.Hour), evDepart, sh.from},
	}
	if hub.city != "" && hub.city != sh.from.city && hub.city != sh.to.city {
		evs = append(evs,
			sbEvent{pickup.Add(span * 40 / 100).Truncate(time.Minute), evArriveHub, hub},
			sbEvent{pickup.Add(span * 55 / 100).Truncate(time.Minute), evDepartHub, hub})
	}
	evs = append(evs, sbEvent{pickup.Add(span * 85 / 100).Truncate(time.Minute), evArriveDest, sh.to},
		sbEvent{out, evOut, sh.to})
	deliveredAt := del.Add(13*time.Hour + time.Duration(seed[9]%120)*time.Minute)
	switch sh.exception {
	case 0:
		evs = append(evs, sbEvent{deliveredAt, evDelivered, sh.to})
	case 1:
		next := addBusinessDays(del, 1)
		evs = append(evs, sbEvent{del.Add(14*time.Hour + 30*time.Minute), evException, sh.to},
			sbEvent{next.Add(8 * time.Hour), evOut, sh.to},
			sbEvent{next.Add(12*time.Hour + time.Duration(seed[10]%90)*time.Minute), evDelivered, sh.to})
	default:
		evs = append(evs, sbEvent{del.Add(14*time.Hour + 30*time.Minute), evException, sh.to})
	}
	if !sh.issued {
		return evs
	}
	var past []sbEvent
	for _, e := range evs {
		if !e.at.After(now) {
			past = append(past, e)
		}
	}
	return past
}

// derivedShipment is the deterministic history of a number the sandbox did
// not issue: two of sbCities, a domestic service, 1-50 lb, shipped on a
// weekday of 2025, delivered (a number ending in 99 ends in a delivery
// exception; about one in ten others has a failed attempt first).
func derivedShipment(carrier, number string) sbShipment {
	sh := sbShipment{carrier: carrier, number: number}
	seed := sh.seed()
	n := len(sbCities)
	sh.from = sbCities[int(seed[0])%n]
	sh.to = sbCities[int(seed[1])%n]
	if sh.to == sh.from {
		sh.to = sbCities[(int(seed[1])+1)%n]
	}
	c := sbCarriers[carrier]
	var domestic []sbService
	for _, s := range c.services {
		if !s.intl {
			domestic = append(domestic, s)
		}
	}
	// Ground is the most common service: half of the numbers use it.
	svc := domestic[0]
	if seed[2]%2 == 1 {
		svc = domestic[int(seed[3])%len(domestic)]
	}
	sh.service, sh.serviceName = svc.code, svc.name
	sh.weightLb = 1 + float64(binary.BigEndian.Uint16(seed[4:6])%490)/10
	d := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(binary.BigEndian.Uint16(seed[6:8])%300))
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, 1)
	}
	sh.shipDate = d
	sh.transit = svc.days(sbZone(sh.from.zip, "US", sh.to.zip, "US"))
	switch {
	case strings.HasSuffix(number, "99"):
		sh.exception = 2
	case seed[8]%10 == 0:
		sh.exception = 1
	}
	return sh
}

// status of the last event.
func lastKind(evs []sbEvent) string {
	if len(evs) == 0 {
		return evLabel
	}
	return evs[len(evs)-1].kind
}

// digits returns n decimal digits derived from a hash of parts.
func hashDigits(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i == len(h) {
			h = sha256.Sum256(h[:])
			i = 0
		}
		b.WriteByte('0' + h[i]%10)
	}
	return b.String()
}

// avoidUnknown changes a generated number that would read as unknown
// (ending in 0000).
func avoidUnknown(n string) string {
	if unknownNumber(n) {
		return n[:len(n)-1] + "7"
	}
	return n
}

func upper(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }
