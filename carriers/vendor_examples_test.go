package carriers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/internal/vendortest"
)

// The vendors' published examples (../shared/vendors/carriers) checked
// against the adapters: each published response decodes to the domain
// values it holds, and each request an adapter builds carries the fields
// the vendor marks required (those of the published request).

func vendorFile(t *testing.T, carrier, name string) []byte {
	t.Helper()
	return vendortest.Example(t, "carriers", carrier, name)
}

// vendorStub answers each path with a published example and keeps the
// requests it got.
type vendorStub struct {
	t       *testing.T
	carrier string
	srv     *httptest.Server

	mu      sync.Mutex
	answers map[string]stubAnswer // by part of the path
	got     map[string][]byte     // last body by path
	headers map[string]http.Header
}

type stubAnswer struct {
	status int
	file   string
	header http.Header
}

func newVendorStub(t *testing.T, carrier string) *vendorStub {
	s := &vendorStub{t: t, carrier: carrier, answers: map[string]stubAnswer{}, got: map[string][]byte{}, headers: map[string]http.Header{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got[r.URL.Path] = body
		s.headers[r.URL.Path] = r.Header.Clone()
		// The longest registered part of the path wins.
		var ans stubAnswer
		found, best := false, -1
		for part, a := range s.answers {
			if strings.Contains(r.URL.Path, part) && len(part) > best {
				ans, found, best = a, true, len(part)
			}
		}
		s.mu.Unlock()
		if !found {
			http.NotFound(w, r)
			return
		}
		for k, vs := range ans.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ans.status)
		_, _ = w.Write(vendorFile(t, carrier, ans.file))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *vendorStub) answer(pathPart string, status int, file string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[pathPart] = stubAnswer{status: status, file: file}
}

func (s *vendorStub) answerWith(pathPart string, status int, file string, h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[pathPart] = stubAnswer{status: status, file: file, header: h}
}

func (s *vendorStub) request(path string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[path]
}

func (s *vendorStub) registry() *carriers.Registry {
	return carriers.NewRegistry(carriers.Config{
		CarrierA: carriers.CarrierAConfig{ClientID: "Your_client_ID", ClientSecret: "Your_secret", TestClientID: "t-id", TestClientSecret: "t-secret"},
		BaseURLs: map[string]carriers.Endpoints{s.carrier: {Production: s.srv.URL}},
	})
}

// keyPaths lists the key paths of a JSON document (arrays transparent).
func keyPaths(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	out := map[string]bool{}
	var walk func(string, any)
	walk = func(p string, x any) {
		switch tv := x.(type) {
		case map[string]any:
			for k, val := range tv {
				q := k
				if p != "" {
					q = p + "." + k
				}
				out[q] = true
				walk(q, val)
			}
		case []any:
			for _, e := range tv {
				walk(p, e)
			}
		}
	}
	walk("", v)
	return out
}

// requireRequestFields asserts that the adapter's request has every listed
// field, and that the published request has them too (so the list is the
// vendor's, not the adapter's).
func requireRequestFields(t *testing.T, published, sent []byte, fields ...string) {
	t.Helper()
	require.NotEmpty(t, sent, "the adapter sent no request")
	want, have := keyPaths(t, published), keyPaths(t, sent)
	var missing, notPublished []string
	for _, f := range fields {
		if !want[f] {
			notPublished = append(notPublished, f)
		}
		if !have[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, notPublished, "required fields absent from the published request")
	assert.Empty(t, missing, "required fields missing from the adapter's request:\n%s", sent)
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCarrierAVendorResponses(t *testing.T) {
	ctx := t.Context()
	stub := newVendorStub(t, "carrier_a")
	stub.answer("/oauth/token", 200, "oauth-token-response.json")
	c := get(t, stub.registry(), "carrier_a")
	rate := carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5)}

	// Rates: the FedEx sample (two international services, CAD) and the
	// captured response (one service, with a tax line).
	stub.answer("/rate/v1/rates/quotes", 200, "rate-response.json")
	qs, err := c.Rate(ctx, acctA(), rate)
	require.NoError(t, err)
	require.Len(t, qs, 2)
	assert.Equal(t, []string{"INTERNATIONAL_PRIORITY", "INTERNATIONAL_FIRST"}, []string{qs[0].ServiceType, qs[1].ServiceType}, "cheapest first")
	assert.Equal(t, "FedEx International Priority", qs[0].ServiceName)
	assert.Equal(t, 345.15, qs[0].TotalPrice)
	assert.Equal(t, "CAD", qs[0].Currency)
	assert.Equal(t, 3, *qs[0].TransitDays)
	assert.Equal(t, ts("2020-07-16T10:30:00Z"), *qs[0].EstimatedDelivery)
	assert.Equal(t, "CA003O", qs[0].Zone)
	assert.Equal(t, &carriers.Weight{Value: 22, Unit: "lb"}, qs[0].BillingWeight)
	assert.Equal(t, []carriers.Charge{{Name: "Base charge", Amount: 312.35}, {Name: "Fuel Surcharge", Amount: 32.8}}, qs[0].Breakdown)
	assert.Equal(t, 445.54, qs[1].TotalPrice)

	stub.answer("/rate/v1/rates/quotes", 200, "rate-response.captured.json")
	qs, err = c.Rate(ctx, acctA(), rate)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	assert.Equal(t, "FEDEX_EXPRESS_SAVER", qs[0].ServiceType)
	assert.Equal(t, 38.54, qs[0].TotalPrice)
	assert.Equal(t, "USD", qs[0].Currency)
	assert.Equal(t, "2", qs[0].Zone)
	assert.Contains(t, qs[0].Breakdown, carriers.Charge{Name: "Canada HST", Amount: 5.03})
	assert.Equal(t, &carriers.Weight{Value: 3.4, Unit: "kg"}, qs[0].BillingWeight)

	// Labels: the captured response carries the label; FedEx's schema
	// sample only a commercial invoice with a placeholder, which is no label.
	label := carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "FEDEX_GROUND", Reference: "order-1"}
	stub.answer("/ship/v1/shipments", 200, "ship-response.captured.json")
	l, err := c.CreateLabel(ctx, acctA(), label)
	require.NoError(t, err)
	assert.Equal(t, "794791341818", l.TrackingNumber)
	assert.Equal(t, "FEDEX_INTERNATIONAL_PRIORITY_EXPRESS", l.ServiceType)
	assert.Equal(t, 4448.19, l.TotalPrice)
	assert.Equal(t, "USD", l.Currency)
	assert.Equal(t, "A", l.Zone)
	assert.Equal(t, ts("2024-07-19T00:00:00Z"), l.ShipDate)
	assert.True(t, strings.HasPrefix(string(l.Document), "%PDF-1.4"))
	require.Len(t, l.Pieces, 2)
	assert.NotContains(t, string(l.Raw), "JVBERi0", "label images are kept out of Raw")
	stub.answer("/ship/v1/shipments", 200, "ship-response.json")
	_, err = c.CreateLabel(ctx, acctA(), label)
	ce, ok := carriers.AsError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, carriers.ErrCodeBadResponse, ce.Code)

	stub.answer("/ship/v1/shipments/cancel", 200, "cancel-shipment-response.json")
	require.NoError(t, c.VoidLabel(ctx, acctA(), "794953535000"))

	// Tracking: the FedEx sample and an unknown number.
	stub.answer("/track/v1/trackingnumbers", 200, "track-response.json")
	tr, err := c.Track(ctx, acctA(), []string{"123456789012"})
	require.NoError(t, err)
	require.Len(t, tr, 1)
	r := tr[0]
	assert.False(t, r.NotFound)
	assert.Equal(t, carriers.StatusInTransit, r.Status, "latest status PU: picked up")
	assert.Equal(t, "FEDEX_FREIGHT_ECONOMY", r.ServiceType)
	require.NotNil(t, r.Origin)
	assert.Equal(t, "SEATTLE", r.Origin.City)
	assert.Equal(t, &carriers.Weight{Value: 22222, Unit: "lb"}, r.Weight)
	assert.Equal(t, ts("2007-09-27T00:00:00Z"), *r.DeliveredAt)
	require.Len(t, r.Events, 1)
	assert.Equal(t, ts("2018-02-02T19:01:00Z"), r.Events[0].Time)
	assert.True(t, r.Events[0].IsException)
	assert.Equal(t, "A25", r.Events[0].ExceptionType)
	stub.answer("/track/v1/trackingnumbers", 200, "track-response.not-found.json")
	tr, err = c.Track(ctx, acctA(), []string{"123456789012"})
	require.NoError(t, err)
	assert.True(t, tr[0].NotFound)

	// Pickups.
	stub.answer("/pickup/v1/pickups", 200, "pickup-create-response.json")
	p, err := c.CreatePickup(ctx, acctA(), pickupReq(2))
	require.NoError(t, err)
	assert.Equal(t, "3001", p.ConfirmationNumber)
	assert.Equal(t, "COSA", p.Location)
	assert.Equal(t, "Courier on the way", p.Messages[0])
	stub.answer("/pickup/v1/pickups/cancel", 200, "pickup-cancel-response.json")
	cp, err := c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: "3001", PickupDate: day(2).Format("2006-01-02"), Location: "COSA"})
	require.NoError(t, err)
	assert.Equal(t, "Requested pickup has been cancelled Successfully.", cp.Messages[0])
}

func TestCarrierAVendorRegistrationResponses(t *testing.T) {
	ctx := t.Context()
	stub := newVendorStub(t, "carrier_a")
	stub.answer("/oauth/token", 200, "oauth-token-response.json")
	reg, err := stub.registry().Registrar("carrier_a")
	require.NoError(t, err)
	req := carriers.RegistrationRequest{AccountNumber: "451134221", CustomerName: "George", Address: carriers.RegistrationAddress{
		StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE", StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US", Residential: true}}

	stub.answer("/registration/v2/address/keysgeneration", 200, "registration-address-keysgeneration-response.mfa.json")
	res, err := reg.RegisterAddress(ctx, req)
	require.NoError(t, err)
	assert.True(t, res.MFARequired)
	assert.Nil(t, res.Credentials)
	assert.Equal(t, carriers.MFAOptions{Invoice: true, SecureCode: []string{"SMS"}, Email: "PU***@S***.COM", Phone: "***-***-4222"}, res.Options)
	assert.True(t, strings.HasPrefix(res.State.AccountAuthToken, "eyJ"))
	st := res.State

	stub.answer("/registration/v2/address/keysgeneration", 200, "registration-address-keysgeneration-response.keys.json")
	res, err = reg.RegisterAddress(ctx, req)
	require.NoError(t, err)
	assert.False(t, res.MFARequired)
	assert.Equal(t, &carriers.ChildCredentials{ChildKey: "d63a0af2-efbf-4086-8333-a0f1a2f69dfa", ChildSecret: "6jJvpNAY7NQTrDM56un9qCwtI"}, res.Credentials)

	stub.answer("/registration/v2/customerkeys/pingeneration", 200, "registration-pingeneration-response.json")
	msg, err := reg.RequestPIN(ctx, st, "SMS")
	require.NoError(t, err)
	assert.Equal(t, "sent secured Pin", msg)
	assert.Equal(t, st.AccountAuthToken, stub.headers["/registration/v2/customerkeys/pingeneration"].Get("accountAuthToken"))
	stub.answer("/registration/v2/pin/keysgeneration", 200, "registration-pin-keysgeneration-response.json")
	cc, err := reg.VerifyPIN(ctx, st, "234567")
	require.NoError(t, err)
	assert.Equal(t, "e366a577-3708-47e5-9af8-98004a01c134", cc.ChildKey)
	stub.answer("/registration/v2/invoice/keysgeneration", 200, "registration-invoice-keysgeneration-response.json")
	cc, err = reg.VerifyInvoice(ctx, st, carriers.Invoice{Number: "56789", Date: "2026-01-05", Amount: 2323.2, Currency: "USD"})
	require.NoError(t, err)
	assert.NotEmpty(t, cc.ChildKey)
}

// Every published error body maps to the carrier's code and the sentinel
// callers act on.
func TestCarrierAVendorErrors(t *testing.T) {
	ctx := t.Context()
	pin := carriers.RegistrationState{AccountNumber: "451134221", AccountAuthToken: "eyJ.x.y"}
	regReq := carriers.RegistrationRequest{AccountNumber: "451134221", CustomerName: "George", Address: carriers.RegistrationAddress{
		StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE", StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US"}}
	for _, tc := range []struct {
		path, file string
		status     int
		code       string
		kind       error
		retryable  bool
		call       func(carriers.Carrier, carriers.Registrar) error
	}{
		{"/rate/v1/rates/quotes", "rate-error-400.json", 400, "ACCOUNT.NUMBER.MISMATCH", carriers.ErrInvalidRequest, false, nil},
		{"/rate/v1/rates/quotes", "error-401.json", 401, "NOT.AUTHORIZED.ERROR", carriers.ErrUnauthorized, false, nil},
		{"/rate/v1/rates/quotes", "error-503.json", 503, "SERVICE.UNAVAILABLE.ERROR", nil, true, nil},
		{"/ship/v1/shipments", "ship-error-400.json", 400, "ACCOUNTNUMBER.REGISTRATION.REQUIRED", carriers.ErrInvalidRequest, false, func(c carriers.Carrier, _ carriers.Registrar) error {
			_, err := c.CreateLabel(ctx, acctA(), carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "FEDEX_GROUND"})
			return err
		}},
		{"/ship/v1/shipments/cancel", "cancel-shipment-error-400.json", 400, "SHIPMENT.USER.UNAUTHORIZED", carriers.ErrInvalidRequest, false, func(c carriers.Carrier, _ carriers.Registrar) error {
			return c.VoidLabel(ctx, acctA(), "794953535000")
		}},
		{"/track/v1/trackingnumbers", "track-error-400.json", 400, "TRACKING.TRACKINGNUMBER.EMPTY", carriers.ErrInvalidRequest, false, func(c carriers.Carrier, _ carriers.Registrar) error {
			_, err := c.Track(ctx, acctA(), []string{"1"})
			return err
		}},
		{"/pickup/v1/pickups", "pickup-create-error-400.json", 400, "PICKUP.REQUESTED.PREVIOUS.DAY", carriers.ErrInvalidRequest, false, func(c carriers.Carrier, _ carriers.Registrar) error {
			_, err := c.CreatePickup(ctx, acctA(), pickupReq(2))
			return err
		}},
		{"/pickup/v1/pickups/cancel", "pickup-cancel-error-400.json", 400, "PICKUP.NUMBER.EXPIRED", carriers.ErrInvalidRequest, false, func(c carriers.Carrier, _ carriers.Registrar) error {
			_, err := c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: "3001", PickupDate: "2026-01-05"})
			return err
		}},
		{"/registration/v2/address/keysgeneration", "registration-address-keysgeneration-error-400.account-not-found.json", 400, "ACCOUNT.NUMBER.NOTFOUND", carriers.ErrAccountNotFound, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.RegisterAddress(ctx, regReq)
			return err
		}},
		{"/registration/v2/address/keysgeneration", "registration-address-keysgeneration-error-400.address-invalid.json", 400, "ADDRESS.DETAIL.INVALID", carriers.ErrAddressInvalid, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.RegisterAddress(ctx, regReq)
			return err
		}},
		{"/registration/v2/customerkeys/pingeneration", "registration-pingeneration-error-400.json", 400, "PIN.OPTION.REQUIRED", carriers.ErrInvalidRequest, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.RequestPIN(ctx, pin, "SMS")
			return err
		}},
		{"/registration/v2/pin/keysgeneration", "registration-pin-keysgeneration-error-400.json", 400, "PIN.OPTION.INVALIDEXPIRED", carriers.ErrVerificationFailed, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.VerifyPIN(ctx, pin, "000000")
			return err
		}},
		{"/registration/v2/invoice/keysgeneration", "registration-invoice-keysgeneration-error-404.json", 404, "INVOICEDETAILS.NUMBER.NOTEXIST", carriers.ErrVerificationFailed, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.VerifyInvoice(ctx, pin, carriers.Invoice{Number: "0", Date: "2026-01-05", Amount: 1})
			return err
		}},
		{"/registration/v2/invoice/keysgeneration", "registration-invoice-keysgeneration-error-400.json", 400, "INVOICE.UNKNOWN.ERROR", carriers.ErrInvalidRequest, false, func(_ carriers.Carrier, r carriers.Registrar) error {
			_, err := r.VerifyInvoice(ctx, pin, carriers.Invoice{Number: "1", Date: "2026-01-05", Amount: 1})
			return err
		}},
		{"/oauth/token", "oauth-token-error-401.json", 401, "NOT.AUTHORIZED.ERROR", carriers.ErrUnauthorized, false, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			stub := newVendorStub(t, "carrier_a")
			stub.answer("/oauth/token", 200, "oauth-token-response.json")
			stub.answer(tc.path, tc.status, tc.file)
			reg := stub.registry()
			c := get(t, reg, "carrier_a")
			r, _ := reg.Registrar("carrier_a")
			var err error
			if tc.call != nil {
				err = tc.call(c, r)
			} else {
				_, err = c.Rate(ctx, acctA(), carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5)})
			}
			ce, ok := carriers.AsError(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.code, ce.Code)
			assert.Equal(t, tc.status, ce.StatusCode)
			assert.Equal(t, tc.retryable, ce.Retryable)
			if tc.kind != nil {
				assert.ErrorIs(t, err, tc.kind)
			}
			assert.NotEmpty(t, ce.Message)
		})
	}
}

func TestCarrierBVendorResponses(t *testing.T) {
	ctx := t.Context()
	stub := newVendorStub(t, "carrier_b")
	stub.answer("/security/v1/oauth/token", 200, "oauth-token-response.json")
	c := get(t, stub.registry(), "carrier_b")
	rate := carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5)}

	stub.answer("/api/rating/", 200, "rate-response.shop.json")
	qs, err := c.Rate(ctx, acctB(), rate)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(qs), 2)
	byCode := map[string]carriers.Quote{}
	for _, q := range qs {
		byCode[q.ServiceType] = q
	}
	q := byCode["12"]
	assert.Equal(t, 20.25, q.TotalPrice)
	assert.Equal(t, "USD", q.Currency)
	assert.Equal(t, 3, *q.TransitDays)
	assert.True(t, q.TransitDaysGuaranteed)
	assert.Equal(t, "08:30", byCode["14"].DeliveryByTime)
	assert.Equal(t, 1, *byCode["14"].TransitDays)
	stub.answer("/api/rating/", 200, "rate-response.json")
	rate.ServiceType = "03"
	qs, err = c.Rate(ctx, acctB(), rate)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	assert.Equal(t, "03", qs[0].ServiceType)
	assert.Equal(t, 12.49, qs[0].TotalPrice)
	assert.Equal(t, &carriers.Weight{Value: 1, Unit: "lb"}, qs[0].BillingWeight)

	stub.answer("/api/shipments/v2409/ship", 200, "ship-response.json")
	l, err := c.CreateLabel(ctx, acctB(), carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "03", Format: carriers.FormatZPL})
	require.NoError(t, err)
	assert.Equal(t, "1ZWA82900123277535", l.TrackingNumber)
	assert.Equal(t, 198.42, l.TotalPrice, "the negotiated total")
	assert.Equal(t, "USD", l.Currency)
	require.Len(t, l.Pieces, 1)
	assert.NotEmpty(t, l.Document)
	assert.NotContains(t, string(l.Raw), `"GraphicImage":"R0lG`, "label images are kept out of Raw")

	stub.answer("/void/cancel/", 200, "void-response.json")
	require.NoError(t, c.VoidLabel(ctx, acctB(), "1ZISDE016691676846"))

	stub.answer("/api/track/v1/details/", 200, "track-response.json")
	tr, err := c.Track(ctx, acctB(), []string{"1Z1442YY7229014688"})
	require.NoError(t, err)
	r := tr[0]
	assert.Equal(t, carriers.StatusDelivered, r.Status)
	assert.Equal(t, ts("2022-01-26T16:30:00Z"), *r.DeliveredAt)
	require.Len(t, r.Events, 2)
	assert.Equal(t, carriers.StatusLabelCreated, r.Events[0].Status)
	assert.Equal(t, "PARAMUS", r.Events[1].City)
	assert.Equal(t, "07652", r.Events[1].Zip)
	stub.answer("/api/track/v1/details/", 200, "track-response.not-found.json")
	tr, err = c.Track(ctx, acctB(), []string{"1Z1442YY7229014688"})
	require.NoError(t, err)
	assert.True(t, tr[0].NotFound)

	for _, tc := range []struct {
		file, code string
		status     int
	}{{"error-400.json", "250003", 400}, {"error-401.json", "250002", 401}} {
		stub.answer("/api/rating/", tc.status, tc.file)
		_, err := c.Rate(ctx, acctB(), rate)
		ce, ok := carriers.AsError(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, tc.code, ce.Code)
		assert.ErrorIs(t, err, carriers.ErrUnauthorized, "UPS authentication codes")
	}
}

// formJSON turns a form body into JSON (token requests are form-encoded).
func formJSON(t *testing.T, body []byte) []byte {
	t.Helper()
	v, err := url.ParseQuery(string(body))
	require.NoError(t, err)
	m := map[string]string{}
	for k := range v {
		m[k] = v.Get(k)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// Each request the adapters build carries the fields the vendor marks
// required, as its published request does.
func TestCarrierAVendorRequests(t *testing.T) {
	ctx := t.Context()
	stub := newVendorStub(t, "carrier_a")
	stub.answer("/oauth/token", 200, "oauth-token-response.json")
	stub.answer("/rate/v1/rates/quotes", 200, "rate-response.json")
	stub.answer("/ship/v1/shipments", 200, "ship-response.captured.json")
	stub.answer("/ship/v1/shipments/cancel", 200, "cancel-shipment-response.json")
	stub.answer("/track/v1/trackingnumbers", 200, "track-response.json")
	stub.answer("/pickup/v1/pickups", 200, "pickup-create-response.json")
	stub.answer("/pickup/v1/pickups/cancel", 200, "pickup-cancel-response.json")
	stub.answer("/registration/v2/address/keysgeneration", 200, "registration-address-keysgeneration-response.mfa.json")
	stub.answer("/registration/v2/customerkeys/pingeneration", 200, "registration-pingeneration-response.json")
	stub.answer("/registration/v2/pin/keysgeneration", 200, "registration-pin-keysgeneration-response.json")
	stub.answer("/registration/v2/invoice/keysgeneration", 200, "registration-invoice-keysgeneration-response.json")
	reg := stub.registry()
	c := get(t, reg, "carrier_a")
	r, err := reg.Registrar("carrier_a")
	require.NoError(t, err)
	pub := func(name string) []byte { return vendorFile(t, "carrier_a", name) }
	address := func(prefix string) []string {
		var out []string
		for _, f := range []string{"streetLines", "city", "stateOrProvinceCode", "postalCode", "countryCode"} {
			out = append(out, prefix+f)
		}
		return out
	}

	_, err = c.Rate(ctx, acctA(), carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5)})
	require.NoError(t, err)
	requireRequestFields(t, pub("rate-request.json"), stub.request("/rate/v1/rates/quotes"),
		"accountNumber.value", "requestedShipment.shipper.address.postalCode", "requestedShipment.shipper.address.countryCode",
		"requestedShipment.recipient.address.postalCode", "requestedShipment.recipient.address.countryCode",
		"requestedShipment.pickupType", "requestedShipment.rateRequestType",
		"requestedShipment.requestedPackageLineItems.weight.units", "requestedShipment.requestedPackageLineItems.weight.value")
	requireRequestFields(t, pub("oauth-token-request.csp-credentials.json"), formJSON(t, stub.request("/oauth/token")),
		"grant_type", "client_id", "client_secret", "child_Key", "child_secret")

	_, err = c.CreateLabel(ctx, acctA(), carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "FEDEX_GROUND"})
	require.NoError(t, err)
	requireRequestFields(t, pub("ship-request.json"), stub.request("/ship/v1/shipments"), append(append([]string{
		"accountNumber.value", "labelResponseOptions", "requestedShipment.shipDatestamp", "requestedShipment.serviceType",
		"requestedShipment.packagingType", "requestedShipment.pickupType", "requestedShipment.shippingChargesPayment.paymentType",
		"requestedShipment.labelSpecification.imageType", "requestedShipment.labelSpecification.labelStockType",
		"requestedShipment.shipper.contact.personName", "requestedShipment.shipper.contact.phoneNumber",
		"requestedShipment.recipients.contact.personName", "requestedShipment.recipients.contact.phoneNumber",
		"requestedShipment.requestedPackageLineItems.weight.units", "requestedShipment.requestedPackageLineItems.weight.value"},
		address("requestedShipment.shipper.address.")...), address("requestedShipment.recipients.address.")...)...)

	require.NoError(t, c.VoidLabel(ctx, acctA(), "794842623031"))
	requireRequestFields(t, pub("cancel-shipment-request.json"), stub.request("/ship/v1/shipments/cancel"), "accountNumber.value", "trackingNumber")

	_, err = c.Track(ctx, acctA(), []string{"794843185271"})
	require.NoError(t, err)
	requireRequestFields(t, pub("track-request.json"), stub.request("/track/v1/trackingnumbers"),
		"includeDetailedScans", "trackingInfo.trackingNumberInfo.trackingNumber")

	_, err = c.CreatePickup(ctx, acctA(), pickupReq(2))
	require.NoError(t, err)
	requireRequestFields(t, pub("pickup-create-request.ground.json"), stub.request("/pickup/v1/pickups"), append([]string{
		"associatedAccountNumber.value", "carrierCode", "originDetail.readyDateTimestamp", "originDetail.customerCloseTime",
		"originDetail.packageLocation", "originDetail.pickupLocation.contact.personName", "originDetail.pickupLocation.contact.phoneNumber"},
		address("originDetail.pickupLocation.address.")...)...)
	_, err = c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: "CPU16200910", PickupDate: day(2).Format("2006-01-02")})
	require.NoError(t, err)
	requireRequestFields(t, pub("pickup-cancel-request.ground.json"), stub.request("/pickup/v1/pickups/cancel"),
		"associatedAccountNumber.value", "pickupConfirmationCode", "scheduledDate", "carrierCode")

	// Registration: accountNumber.key and all six address fields are required.
	res, err := r.RegisterAddress(ctx, carriers.RegistrationRequest{AccountNumber: "451134221", CustomerName: "George",
		Address: carriers.RegistrationAddress{StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE", PostalCode: "38017", CountryCode: "US"}})
	require.NoError(t, err)
	requireRequestFields(t, pub("registration-address-keysgeneration-request.json"), stub.request("/registration/v2/address/keysgeneration"),
		append(address("address."), "accountNumber.value", "accountNumber.key", "customerName", "address.residential")...)
	_, err = r.RequestPIN(ctx, res.State, "SMS")
	require.NoError(t, err)
	requireRequestFields(t, pub("registration-pingeneration-request.json"), stub.request("/registration/v2/customerkeys/pingeneration"), "option", "locale")
	_, err = r.VerifyPIN(ctx, res.State, "234567")
	require.NoError(t, err)
	requireRequestFields(t, pub("registration-pin-keysgeneration-request.json"), stub.request("/registration/v2/pin/keysgeneration"), "secureCodePin", "locale")
	_, err = r.VerifyInvoice(ctx, res.State, carriers.Invoice{Number: "293235673", Date: "2022-10-09", Amount: 2323.22})
	require.NoError(t, err)
	requireRequestFields(t, pub("registration-invoice-keysgeneration-request.json"), stub.request("/registration/v2/invoice/keysgeneration"),
		"invoiceDetail.number", "invoiceDetail.currency", "invoiceDetail.date", "invoiceDetail.amount")
}

func TestCarrierBVendorRequests(t *testing.T) {
	ctx := t.Context()
	stub := newVendorStub(t, "carrier_b")
	stub.answer("/security/v1/oauth/token", 200, "oauth-token-response.json")
	stub.answer("/api/rating/", 200, "rate-response.json")
	stub.answer("/api/shipments/v2409/ship", 200, "ship-response.json")
	c := get(t, stub.registry(), "carrier_b")
	pub := func(name string) []byte { return vendorFile(t, "carrier_b", name) }
	party := func(prefix string, withNumber bool) []string {
		out := []string{prefix + "Name"}
		if withNumber {
			out = append(out, prefix+"ShipperNumber")
		}
		for _, f := range []string{"AddressLine", "City", "StateProvinceCode", "PostalCode", "CountryCode"} {
			out = append(out, prefix+"Address."+f)
		}
		return out
	}

	_, err := c.Rate(ctx, acctB(), carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "03"})
	require.NoError(t, err)
	var rateFields []string
	rateFields = append(rateFields, party("RateRequest.Shipment.Shipper.", true)...)
	rateFields = append(rateFields, party("RateRequest.Shipment.ShipTo.", false)...)
	rateFields = append(rateFields, party("RateRequest.Shipment.ShipFrom.", false)...)
	rateFields = append(rateFields, "RateRequest.Request.TransactionReference.CustomerContext", "RateRequest.Shipment.Service.Code",
		"RateRequest.Shipment.PaymentDetails.ShipmentCharge.Type", "RateRequest.Shipment.PaymentDetails.ShipmentCharge.BillShipper.AccountNumber",
		"RateRequest.Shipment.Package.PackagingType.Code", "RateRequest.Shipment.Package.PackageWeight.UnitOfMeasurement.Code",
		"RateRequest.Shipment.Package.PackageWeight.Weight", "RateRequest.Shipment.Package.Dimensions.Length")
	requireRequestFields(t, pub("rate-request.json"), stub.request("/api/rating/v2409/Ratetimeintransit"), rateFields...)
	requireRequestFields(t, pub("oauth-token-request.json"), formJSON(t, stub.request("/security/v1/oauth/token")), "grant_type")

	_, err = c.CreateLabel(ctx, acctB(), carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: "03", Format: carriers.FormatZPL})
	require.NoError(t, err)
	var shipFields []string
	shipFields = append(shipFields, party("ShipmentRequest.Shipment.Shipper.", true)...)
	shipFields = append(shipFields, party("ShipmentRequest.Shipment.ShipTo.", false)...)
	shipFields = append(shipFields, party("ShipmentRequest.Shipment.ShipFrom.", false)...)
	shipFields = append(shipFields, "ShipmentRequest.Request.RequestOption", "ShipmentRequest.Shipment.Description",
		"ShipmentRequest.Shipment.Service.Code", "ShipmentRequest.Shipment.PaymentInformation.ShipmentCharge.Type",
		"ShipmentRequest.Shipment.PaymentInformation.ShipmentCharge.BillShipper.AccountNumber",
		"ShipmentRequest.Shipment.Package.Packaging.Code", "ShipmentRequest.Shipment.Package.PackageWeight.UnitOfMeasurement.Code",
		"ShipmentRequest.Shipment.Package.PackageWeight.Weight", "ShipmentRequest.LabelSpecification.LabelImageFormat.Code")
	requireRequestFields(t, pub("ship-request.json"), stub.request("/api/shipments/v2409/ship"), shipFields...)
	h := stub.headers["/api/shipments/v2409/ship"]
	assert.Equal(t, "Bearer ", h.Get("Authorization")[:7])
}
