package carriers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

// 429 answers are their own class: retryable, ErrRateLimited, and the wait
// the carrier asked for in RetryAfter.
func TestRateLimitedAnswers(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 10, 22, 30, 0, 0, time.UTC)
	rate := carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5)}
	for _, tc := range []struct {
		name, carrier, path string
		header              http.Header
		body                string
		want                time.Duration
	}{
		{"carrier_a burst window", "carrier_a", "/rate/v1/rates/quotes", nil,
			`{"transactionId":"x","errors":[{"code":"TOO.MANY.REQUESTS","message":"We have received too many requests in a short duration. Please wait a while to try again."}]}`, 10 * time.Second},
		{"carrier_a daily quota", "carrier_a", "/rate/v1/rates/quotes", nil,
			`{"transactionId":"x","errors":[{"code":"TOO.MANY.REQUESTS","message":"Daily transaction quota exceeded. Retry after 12:00AM GMT"}]}`, 90 * time.Minute},
		{"carrier_a Retry-After", "carrier_a", "/rate/v1/rates/quotes", http.Header{"Retry-After": {"7"}},
			`{"transactionId":"x","errors":[{"code":"TOO.MANY.REQUESTS","message":"Daily transaction quota exceeded."}]}`, 7 * time.Second},
		{"carrier_b Retry-After date", "carrier_b", "/api/rating/", http.Header{"Retry-After": {now.Add(2 * time.Minute).Format(http.TimeFormat)}},
			`{"response":{"errors":[{"code":"429","message":"Rate Limit Exceeded"}]}}`, 2 * time.Minute},
		{"carrier_b silent", "carrier_b", "/api/rating/", nil,
			`{"response":{"errors":[{"code":"429","message":"Rate Limit Exceeded"}]}}`, 0},
		{"carrier_c Retry-After", "carrier_c", "/v1/rates/estimate", http.Header{"Retry-After": {"30"}},
			`{"request_id":"x","errors":[{"error_source":"shipengine","error_type":"system","error_code":"rate_limit_exceeded","message":"You have exceeded the rate limit."}]}`, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeCarrier(t, tc.carrier, tc.path, http.StatusTooManyRequests, tc.header, tc.body)
			reg := carriers.NewRegistry(carriers.Config{
				Now:      func() time.Time { return now },
				CarrierA: carriers.CarrierAConfig{ClientID: "id", ClientSecret: "secret"},
				BaseURLs: map[string]carriers.Endpoints{tc.carrier: {Production: srv}},
			})
			_, err := get(t, reg, tc.carrier).Rate(ctx, acctOf(tc.carrier), rate)
			require.Error(t, err)
			assert.ErrorIs(t, err, carriers.ErrRateLimited)
			assert.NotErrorIs(t, err, carriers.ErrInvalidRequest)
			ce, ok := carriers.AsError(err)
			require.True(t, ok)
			assert.Equal(t, http.StatusTooManyRequests, ce.StatusCode)
			assert.True(t, ce.Retryable)
			assert.Equal(t, tc.want, ce.RetryAfter)
		})
	}
}

// fakeCarrier answers tokens and carrier_c's carrier list, and status/body
// on paths containing path.
func fakeCarrier(t *testing.T, carrier, path string, status int, h http.Header, body string) string {
	t.Helper()
	stub := newVendorStub(t, carrier)
	stub.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/token"):
			_, _ = w.Write([]byte(`{"access_token":"tok","token_type":"bearer","expires_in":3600}`))
		case strings.HasSuffix(r.URL.Path, "/v1/carriers"):
			_, _ = w.Write([]byte(`{"carriers":[{"carrier_id":"se-1"}]}`))
		case strings.Contains(r.URL.Path, path):
			for k, vs := range h {
				w.Header()[k] = vs
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	})
	return stub.srv.URL
}

// A re-login answer on an MFA step is the registration session expiring,
// not the service's credentials being refused.
func TestRegistrationSessionExpiry(t *testing.T) {
	ctx := context.Background()
	srv := fakeCarrier(t, "carrier_a", "/registration/v2/", http.StatusUnauthorized, nil,
		`{"transactionId":"x","errors":[{"code":"LOGIN.REAUTHENTICATE.ERROR","message":"Please login again."}]}`)
	reg := carriers.NewRegistry(carriers.Config{CarrierA: carriers.CarrierAConfig{ClientID: "id", ClientSecret: "secret"},
		BaseURLs: map[string]carriers.Endpoints{"carrier_a": {Production: srv}}})
	r, err := reg.Registrar("carrier_a")
	require.NoError(t, err)
	st := carriers.RegistrationState{AccountNumber: "451134221", AccountAuthToken: "eyJ.expired.jwt"}
	_, err = r.RequestPIN(ctx, st, "SMS")
	assert.ErrorIs(t, err, carriers.ErrSessionExpired)
	assert.NotErrorIs(t, err, carriers.ErrUnauthorized)
	_, err = r.VerifyPIN(ctx, st, "123456")
	assert.ErrorIs(t, err, carriers.ErrSessionExpired)

	// Against the sandbox: a session it cannot use.
	sreg := newSandbox(t).registry()
	res, err := mustRegistrar(t, sreg).RegisterAddress(ctx, carriers.RegistrationRequest{AccountNumber: "451134221", CustomerName: "George",
		Address: carriers.RegistrationAddress{StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE", StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US"}})
	require.NoError(t, err)
	forged := res.State
	forged.AccountAuthToken += "x"
	_, err = mustRegistrar(t, sreg).VerifyPIN(ctx, forged, "123456")
	assert.ErrorIs(t, err, carriers.ErrSessionExpired, "an unusable session")
	assert.NotErrorIs(t, err, carriers.ErrUnauthorized)
}

func mustRegistrar(t *testing.T, reg *carriers.Registry) carriers.Registrar {
	t.Helper()
	r, err := reg.Registrar("carrier_a")
	require.NoError(t, err)
	return r
}

// Pickup ready times are the pickup location's wall-clock time with its
// offset (never a "Z"), and same-day is that location's calendar day.
func TestPickupLocalTime(t *testing.T) {
	ctx := context.Background()
	stub := newVendorStub(t, "carrier_a")
	stub.answer("/oauth/token", 200, "oauth-token-response.json")
	stub.answer("/pickup/v1/pickups", 200, "pickup-create-response.json")
	// 02:30 UTC on 11 March 2026 is still 10 March (20:30) in Memphis.
	now := time.Date(2026, 3, 11, 2, 30, 0, 0, time.UTC)
	reg := carriers.NewRegistry(carriers.Config{Now: func() time.Time { return now },
		CarrierA: carriers.CarrierAConfig{ClientID: "id", ClientSecret: "secret"},
		BaseURLs: map[string]carriers.Endpoints{"carrier_a": {Production: stub.srv.URL}}})
	c := get(t, reg, "carrier_a")
	sent := func() (string, string) {
		var body struct {
			OriginDetail struct {
				ReadyDateTimestamp string `json:"readyDateTimestamp"`
				PickupDateType     string `json:"pickupDateType"`
			} `json:"originDetail"`
		}
		require.NoError(t, json.Unmarshal(stub.request("/pickup/v1/pickups"), &body))
		return body.OriginDetail.ReadyDateTimestamp, body.OriginDetail.PickupDateType
	}
	req := carriers.PickupRequest{Address: memphis, PickupDate: "2026-03-10", ReadyTime: "21:00", CloseTime: "22:00"}
	_, err := c.CreatePickup(ctx, acctA(), req)
	require.NoError(t, err)
	ready, typ := sent()
	assert.Equal(t, "2026-03-10T21:00:00-05:00", ready, "Central daylight time")
	assert.Equal(t, "SAME_DAY", typ, "it is still 10 March in Memphis")

	req.PickupDate, req.ReadyTime, req.CloseTime = "2026-03-11", "09:00", "17:00"
	_, err = c.CreatePickup(ctx, acctA(), req)
	require.NoError(t, err)
	ready, typ = sent()
	assert.Equal(t, "2026-03-11T09:00:00-05:00", ready)
	assert.Equal(t, "FUTURE_DAY", typ, "11 March is tomorrow in Memphis though it is today in UTC")

	req.Address = seattle
	req.PickupDate = "2026-01-15"
	_, err = c.CreatePickup(ctx, acctA(), req)
	require.NoError(t, err)
	ready, _ = sent()
	assert.Equal(t, "2026-01-15T09:00:00-08:00", ready, "Pacific standard time")

	// Unknown zone: the wall-clock time without any offset.
	req.Address = carriers.Address{Address1: "1 Rue", City: "Paris", Zip: "75001", CountryCode: "FR"}
	_, err = c.CreatePickup(ctx, acctA(), req)
	require.NoError(t, err)
	ready, _ = sent()
	assert.Equal(t, "2026-01-15T09:00:00", ready)
	assert.NotContains(t, ready, "Z")
}

func TestLocalToday(t *testing.T) {
	now := time.Date(2026, 3, 11, 2, 30, 0, 0, time.UTC)
	assert.Equal(t, "2026-03-10", carriers.LocalToday(memphis, now))
	assert.Equal(t, "2026-03-10", carriers.LocalToday(seattle, now))
	assert.Equal(t, "2026-03-10", carriers.LocalToday(toronto, now))
	assert.Equal(t, "2026-03-11", carriers.LocalToday(carriers.Address{CountryCode: "FR", Zip: "75001"}, now), "unknown zone: UTC")
	assert.Equal(t, "2026-03-11", carriers.LocalToday(memphis, now.Add(4*time.Hour)))
}

var reCM = regexp.MustCompile(`q ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) cm /Im1 Do Q`)

// carrier_b's GIF labels are landscape images of the 4x6 label: the PDF
// turns them upright so they fill the page.
func TestCarrierBLabelFillsThePage(t *testing.T) {
	reg := newSandbox(t).registry()
	l, err := get(t, reg, "carrier_b").CreateLabel(context.Background(), acctB(), labelReq("carrier_b", 1))
	require.NoError(t, err)
	requireValidPDF(t, l.Document)
	assert.Contains(t, string(l.Document), "/MediaBox [0 0 288 432]", "a 4x6 inch page")
	assert.Contains(t, string(l.Document), "/Width 600 /Height 400", "the carrier's image is landscape")
	m := reCM.FindStringSubmatch(string(l.Document))
	require.NotNil(t, m, "image placement")
	var v [6]float64
	for i := range v {
		v[i], err = strconv.ParseFloat(m[i+1], 64)
		require.NoError(t, err)
	}
	// The image's unit square on the page.
	xs, ys := []float64{}, []float64{}
	for _, uv := range [][2]float64{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
		xs = append(xs, v[0]*uv[0]+v[2]*uv[1]+v[4])
		ys = append(ys, v[1]*uv[0]+v[3]*uv[1]+v[5])
	}
	w, h := spread(xs), spread(ys)
	assert.Greater(t, h, w, "upright: taller than wide")
	assert.InDelta(t, 418, h, 0.5, "fills the page height above the caption band (5.8 in)")
	assert.InDelta(t, 278.7, w, 0.5, "3.9 in wide, not 4 x 2.3 in")
	for i := range xs {
		assert.True(t, xs[i] >= -0.01 && xs[i] <= 288.01 && ys[i] >= 13.99 && ys[i] <= 432.01, "inside the page")
	}
	assert.Equal(t, 0.0, v[0], "turned a quarter")
	assert.Less(t, v[1], 0.0, "clockwise: the image's left edge is the top")
}

func spread(v []float64) float64 {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

// carrier_c requires city and state of both addresses, and reports the
// tax of cross-border estimates.
func TestCarrierCCityStateAndTax(t *testing.T) {
	sb := newSandbox(t)
	c := get(t, sb.registry(), "carrier_c")
	ctx := context.Background()
	noCity := seattle
	noCity.City = ""
	before := sb.count("/v1/rates/estimate")
	_, err := c.Rate(ctx, acctC(), carriers.RateRequest{ShipFrom: memphis, ShipTo: noCity, Packages: box(2)})
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "shipTo.city")
	noState := memphis
	noState.ProvinceCode = ""
	_, err = c.Rate(ctx, acctC(), carriers.RateRequest{ShipFrom: noState, ShipTo: seattle, Packages: box(2)})
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	assert.Equal(t, before, sb.count("/v1/rates/estimate"), "refused before any call")

	qs, err := c.Rate(ctx, acctC(), carriers.RateRequest{ShipFrom: memphis, ShipTo: toronto, Packages: box(2)})
	require.NoError(t, err)
	require.NotEmpty(t, qs)
	for _, q := range qs {
		var tax, sum float64
		for _, ch := range q.Breakdown {
			sum += ch.Amount
			if ch.Name == "Tax" {
				tax = ch.Amount
			}
		}
		assert.Positive(t, tax, "%s: tax_amount kept", q.ServiceType)
		assert.InDelta(t, q.TotalPrice, sum, 0.011, "the total includes the tax")
	}
	qs, err = c.Rate(ctx, acctC(), carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(2)})
	require.NoError(t, err)
	for _, ch := range qs[0].Breakdown {
		assert.NotEqual(t, "Tax", ch.Name, "no tax at home")
	}
}
