package sandboxapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCarrierZones(t *testing.T) {
	cases := []struct {
		from, fromCC, to, toCC string
		zone                   int
	}{
		{"38103", "US", "38117", "US", 2},
		{"65247", "US", "75063", "US", 2},
		{"38103", "US", "98101", "US", 6},
		{"10001", "US", "98101", "US", 8},
		{"02108", "US", "94103", "US", 8},
		{"38103", "US", "M5V 2T6", "CA", 9},
		{"38103", "", "38117", "us", 2},
	}
	for _, c := range cases {
		assert.Equal(t, c.zone, sbZone(c.from, c.fromCC, c.to, c.toCC), "%+v", c)
	}
	// Postal codes without three digits still get a stable zone.
	z := sbZone("M5V 2T6", "CA", "V6B 1A1", "CA")
	assert.Equal(t, z, sbZone("m5v2t6", "CA", "V6B1A1", "CA"))
	assert.True(t, z >= 2 && z <= 8)
}

func TestCarrierPricing(t *testing.T) {
	a := sbCarriers["carrier_a"]
	ground, _ := a.service("FEDEX_GROUND")
	ship := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) // a Friday
	in := sbRateInput{fromZip: "38103", toZip: "98101", pkgs: []sbPkg{{lb: 5, l: 12, w: 10, h: 8}}}
	p := a.price(ground, in, ship)
	assert.Equal(t, 6, p.zone)
	assert.Equal(t, 7.0, p.billable, "5 lb actual, 12*10*8/139 = 6.9 dimensional → 7")
	again := a.price(ground, in, ship)
	assert.Equal(t, []float64{p.base, p.fuel, p.discount, p.list, p.net}, []float64{again.base, again.fuel, again.discount, again.list, again.net}, "deterministic")
	assert.InDelta(t, p.list, p.base+p.fuel+p.resi, 0.001)
	assert.InDelta(t, p.net, p.list-p.discount, 0.001)
	assert.Equal(t, 4, p.transit)
	assert.Equal(t, time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC), p.delivery, "4 business days from a Friday")

	in.residential = true
	assert.Greater(t, a.price(ground, in, ship).list, p.list)

	// Billable weight is the larger of actual and dimensional weight.
	light := sbRateInput{fromZip: "38103", toZip: "98101", pkgs: []sbPkg{{lb: 1, l: 30, w: 30, h: 30}}}
	lp := a.price(ground, light, ship)
	assert.True(t, lp.dimWeighted)
	assert.Equal(t, 195.0, lp.billable)

	prices, ok := a.quote(in, ship, "")
	require.True(t, ok)
	assert.Len(t, prices, 6)
	_, ok = a.quote(in, ship, "INTERNATIONAL_PRIORITY")
	assert.False(t, ok, "no international service on a domestic route")
}

func TestCarrierDerivedShipments(t *testing.T) {
	for _, carrier := range []string{"carrier_a", "carrier_b"} {
		seen := map[string]bool{}
		for i := 0; i < 200; i++ {
			n := fmt.Sprintf("7940%08d", i)
			sh := derivedShipment(carrier, n)
			assert.Equal(t, sh, derivedShipment(carrier, n), "deterministic")
			assert.NotEqual(t, sh.from, sh.to)
			assert.True(t, sh.weightLb >= 1 && sh.weightLb < 50)
			assert.Equal(t, 2025, sh.shipDate.Year())
			assert.NotContains(t, []time.Weekday{time.Saturday, time.Sunday}, sh.shipDate.Weekday())
			seen[sh.service] = true
			evs := sh.timeline(time.Now(), sbCarriers[carrier].hub)
			for j := 1; j < len(evs); j++ {
				assert.True(t, evs[j].at.After(evs[j-1].at), "%s %s: events in order", carrier, n)
			}
			switch sh.exception {
			case 0, 1:
				assert.Equal(t, evDelivered, lastKind(evs))
			}
		}
		assert.Greater(t, len(seen), 3, "several services")
		x := derivedShipment(carrier, "794000000099")
		assert.Equal(t, evException, lastKind(x.timeline(time.Now(), sbCarriers[carrier].hub)))
	}
	assert.True(t, unknownNumber("1Z999AA10000"))
	assert.False(t, unknownNumber("1Z999AA10001"))
	assert.Equal(t, "1230007", avoidUnknown("1230000"))
}

func TestCarrierIssuedTimeline(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC) // a Tuesday
	sh := sbShipment{carrier: "carrier_a", number: "771234567890", from: sbPlace{"ATLANTA", "GA", "30303", "US"},
		to: sbPlace{"SEATTLE", "WA", "98101", "US"}, shipDate: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC),
		created: now.Add(-time.Hour), transit: 2, issued: true}
	hub := sbCarriers["carrier_a"].hub
	at := func(d time.Duration) string { return lastKind(sh.timeline(now.Add(d), hub)) }
	assert.Equal(t, evLabel, at(0))
	assert.Equal(t, evPickup, at(6*time.Hour+time.Minute))
	assert.Equal(t, evArriveHub, at(24*time.Hour))
	assert.Equal(t, evOut, at(44*time.Hour+time.Minute), "08:00 on Thursday")
	assert.Equal(t, evDelivered, at(72*time.Hour))
}

// A label bought after its ship date's 18:00 pickup is collected on the next
// business day's run: it can still be voided, and its timeline starts then.
func TestCarrierLateLabelIsCollectedNextBusinessDay(t *testing.T) {
	now := time.Date(2026, 3, 13, 18, 30, 0, 0, time.UTC) // a Friday, after the pickup
	s := newCarrierSandbox(func() time.Time { return now })
	sh := &sbShipment{carrier: "carrier_a", number: "771234567891", from: sbPlace{"ATLANTA", "GA", "30303", "US"},
		to: sbPlace{"SEATTLE", "WA", "98101", "US"}, shipDate: time.Date(2026, 3, 13, 0, 0, 0, 0, time.UTC),
		created: now, transit: 2, issued: true}
	assert.Equal(t, time.Date(2026, 3, 16, 18, 0, 0, 0, time.UTC), sh.pickupAt(), "Monday's pickup")
	assert.Equal(t, time.Date(2026, 3, 18, 0, 0, 0, 0, time.UTC), sh.deliveryDate())
	assert.Equal(t, evLabel, lastKind(sh.timeline(now.Add(time.Hour), sbCarriers["carrier_a"].hub)))
	s.labels["carrier_a|"+sh.number] = sh
	assert.Equal(t, "ok", s.voidLabel("carrier_a", sh.number))
	// Bought in the morning, it goes the same day.
	early := *sh
	early.created = time.Date(2026, 3, 13, 9, 0, 0, 0, time.UTC)
	assert.Equal(t, time.Date(2026, 3, 13, 18, 0, 0, 0, time.UTC), early.pickupAt())
}

func TestCarrierUPSTrackingNumbers(t *testing.T) {
	for i := 0; i < 50; i++ {
		n := ubTrackingNumber("A1B2C3", "03", strconv.Itoa(i))
		require.Len(t, n, 18)
		assert.True(t, strings.HasPrefix(n, "1ZA1B2C303"))
		// The check digit.
		sum := 0
		for j, c := range n[2:17] {
			v := int(c - '0')
			if c >= 'A' && c <= 'Z' {
				v = (int(c) - 63) % 10
			}
			if j%2 == 1 {
				v *= 2
			}
			sum += v
		}
		assert.Equal(t, strconv.Itoa((10-sum%10)%10), n[17:])
		assert.False(t, unknownNumber(n))
	}
	assert.True(t, strings.HasPrefix(ubTrackingNumber("12", "01", "x"), "1Z12"), "short accounts are padded")
}

func TestCarrierTokenLifetime(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv := httptest.NewServer(newCarrierSandbox(clock).routes())
	t.Cleanup(srv.Close)

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"id"}, "client_secret": {"secret"}}
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carrier_a/oauth/token", form: form,
		header: map[string]string{HeaderTokenTTL: "30"}})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, 30.0, jsonPath(t, body, "expires_in"))
	tok := jsonPath(t, body, "access_token").(string)

	track := func() int {
		s, _ := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carrier_a/track/v1/trackingnumbers",
			header: map[string]string{"Authorization": "Bearer " + tok},
			body:   []byte(`{"includeDetailedScans":true,"trackingInfo":[{"trackingNumberInfo":{"trackingNumber":"794843185271"}}]}`)})
		return s
	}
	assert.Equal(t, http.StatusOK, track())
	mu.Lock()
	now = now.Add(29 * time.Second)
	mu.Unlock()
	assert.Equal(t, http.StatusOK, track())
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	assert.Equal(t, http.StatusUnauthorized, track(), "expired")

	// A carrier_a token is no carrier_b token.
	s, _ := carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carrier_b/api/track/v1/details/1Z1442YY7229014688",
		header: map[string]string{"Authorization": "Bearer " + tok, "transId": "x", "transactionSrc": "y"}})
	assert.Equal(t, http.StatusUnauthorized, s)
}

func TestCarrierStoresAreBounded(t *testing.T) {
	s := newCarrierSandbox(time.Now)
	for i := 0; i < MaxCarrierLabels+50; i++ {
		n := fmt.Sprintf("77%010d", i)
		s.putLabel(&sbShipment{carrier: "carrier_a", number: n, pieces: []string{n}, issued: true})
	}
	assert.Len(t, s.labels, MaxCarrierLabels)
	_, remembered := s.labels["carrier_a|770000000000"]
	assert.False(t, remembered, "the oldest label is forgotten")
	for i := 0; i < MaxCarrierPickups+5; i++ {
		s.putPickup(&sbPickup{code: strconv.Itoa(i)})
	}
	assert.Len(t, s.pickups, MaxCarrierPickups)
}

func TestCarrierSandboxConcurrentUse(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ship := fmt.Sprintf(`{"labelResponseOptions":"LABEL","accountNumber":{"value":"123456789"},"requestedShipment":{
				"shipDatestamp":"2026-01-05","serviceType":"FEDEX_GROUND","pickupType":"USE_SCHEDULED_PICKUP","packagingType":"YOUR_PACKAGING",
				"shippingChargesPayment":{"paymentType":"SENDER"},
				"shipper":{"contact":{"personName":"A","phoneNumber":"9015550100"},"address":{"streetLines":["10 Main St"],"city":"Memphis","postalCode":"38103","countryCode":"US"}},
				"recipients":[{"contact":{"personName":"B","phoneNumber":"2065550199"},"address":{"city":"Seattle","postalCode":"98101","countryCode":"US","streetLines":["%d Pike St"]}}],
				"labelSpecification":{"imageType":"ZPLII","labelStockType":"STOCK_4X6"},"requestedPackageLineItems":[{"weight":{"units":"LB","value":%d}}]}}`, i, i+1)
			status, body := faPost(t, srv, tok, http.MethodPost, "/ship/v1/shipments", []byte(ship), nil)
			if !assert.Equal(t, http.StatusOK, status, string(body)) {
				return
			}
			tn := jsonPath(t, body, "output", "transactionShipments", 0, "masterTrackingNumber").(string)
			status, body = faPost(t, srv, tok, http.MethodPost, "/track/v1/trackingnumbers",
				[]byte(`{"includeDetailedScans":true,"trackingInfo":[{"trackingNumberInfo":{"trackingNumber":"`+tn+`"}}]}`), nil)
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "SHIP", jsonPath(t, body, "output", "completeTrackResults", 0, "trackResults", 0, "dateAndTimes", 0, "type"))
		}(i)
	}
	wg.Wait()
}

func TestCarrierUnknownRoutes(t *testing.T) {
	srv := newCarrierServer(t)
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_x/anything"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "not_found", jsonPath(t, body, "code"))
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_a/nope"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "NOT.FOUND.ERROR", jsonPath(t, body, "errors", 0, "code"))
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_a/oauth/token"})
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.NotEmpty(t, jsonPath(t, body, "errors"))
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_b/nope"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.NotEmpty(t, jsonPath(t, body, "response", "errors"))
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_c/v2/nope"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.NotEmpty(t, jsonPath(t, body, "errors"))
}
