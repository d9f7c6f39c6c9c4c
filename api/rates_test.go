package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/shipping"
)

// rateTestEnv is the router with a carrier registry pointed at a sandbox
// server; wrap (optional) wraps the sandbox handler (delays, counters).
func rateTestEnv(t testing.TB, wrap func(http.Handler) http.Handler, opts ...func(*Deps)) *testEnv {
	t.Helper()
	var h http.Handler = sandboxapi.NewHandler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: srv.URL})
	return newEnv(t, append([]func(*Deps){func(d *Deps) { d.Carriers = reg }}, opts...)...)
}

// rateTestCreds are valid sandbox credentials per carrier.
func rateTestCreds(carrier string) map[string]any {
	switch carrier {
	case carriers.CarrierA:
		return map[string]any{"accountNumber": "123456789", "childKey": "child-key-1", "childSecret": "child-secret-1"}
	case carriers.CarrierB:
		return map[string]any{"clientId": "client-1", "clientSecret": "secret-1", "accountNumber": "A1B2C3"}
	}
	return map[string]any{"apiKey": "TEST_key_1"}
}

// rateTestAccount inserts a carrier account with sealed credentials
// directly (the carrier accounts API is not needed to test rates).
// overrides replace credential values.
func rateTestAccount(t testing.TB, e *testEnv, orgID, carrier, status string, overrides ...string) string {
	t.Helper()
	creds := rateTestCreds(carrier)
	for i := 0; i+1 < len(overrides); i += 2 {
		creds[overrides[i]] = overrides[i+1]
	}
	id := uuid.NewString()
	sealed := sealAccountCreds(t, e, orgID, id, creds)
	_, err := e.deps.Store.Pool.Exec(context.Background(), `
INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels, status)
VALUES ($1, $2, $3, $4, $5, true, $6, $7, $8)`, id, orgID, carrier+" account", carrier, sealed,
		carrier == carriers.CarrierA, carrier != carriers.CarrierC, status)
	require.NoError(t, err)
	// Distinct created_at, so "oldest first" is well defined.
	time.Sleep(2 * time.Millisecond)
	return id
}

func rateTestAddress(zip string) map[string]any {
	return map[string]any{"address1": "1 Main St", "city": "Somewhere", "countryCode": "US", "zip": zip, "provinceCode": "NY"}
}

// rateTestBody is a valid POST /rates body.
func rateTestBody() map[string]any {
	return map[string]any{
		"shipFrom": rateTestAddress("10001"),
		"shipTo":   rateTestAddress("94105"),
		"packages": []any{map[string]any{"weight": map[string]any{"value": 3.5, "unit": "lb"}, "length": 10, "width": 8, "height": 4}},
	}
}

// rateTestFields are the field names of a validation error.
func rateTestFields(t testing.TB, res *response) []string {
	t.Helper()
	requireError(t, res, 400, "validation_error")
	var out []string
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		out = append(out, d.(map[string]any)["field"].(string))
	}
	return out
}

// rateTestGroups is the results of a multi-account response, by account id.
func rateTestGroups(t testing.TB, res *response) map[string]map[string]any {
	t.Helper()
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	out := map[string]map[string]any{}
	for _, g := range res.Body["results"].([]any) {
		m := g.(map[string]any)
		out[m["carrierAccountId"].(string)] = m
	}
	return out
}

func TestRatesValidation(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/rates", body) }

	require.ElementsMatch(t, []string{"shipFrom", "shipTo", "packages"}, rateTestFields(t, post(map[string]any{})))
	require.ElementsMatch(t, []string{"shipFrom", "shipTo", "packages"}, rateTestFields(t, post("null")))
	requireError(t, post("[1]"), 400, "invalid_json")
	requireError(t, post("{"), 400, "invalid_json")

	body := rateTestBody()
	body["shipFrom"] = map[string]any{"address2": 5}
	body["shipTo"] = map[string]any{"address1": "x", "city": "y", "zip": "1", "countryCode": "USA"}
	body["packages"] = []any{
		map[string]any{"weight": map[string]any{"value": 0, "unit": "oz"}, "length": -1, "width": "3", "dimensionUnit": "mm"},
		"not an object",
		map[string]any{},
		map[string]any{"weight": map[string]any{"value": "2"}},
	}
	body["shipDate"] = "2024-02-30"
	body["carrier"] = "carrier_z"
	body["carrierAccountId"] = "nope"
	body["residential"] = "yes"
	body["serviceType"] = 3
	require.ElementsMatch(t, []string{
		"shipFrom.address1", "shipFrom.address2", "shipFrom.city", "shipFrom.countryCode", "shipFrom.zip",
		"shipTo.countryCode",
		"packages[0].weight.value", "packages[0].weight.unit", "packages[0].length", "packages[0].width", "packages[0].dimensionUnit",
		"packages[1]",
		"packages[2].weight",
		"packages[3].weight.value", "packages[3].weight.unit",
		"shipDate", "carrier", "carrierAccountId", "residential", "serviceType",
	}, rateTestFields(t, post(body)))

	body = rateTestBody()
	body["packages"] = []any{}
	require.Equal(t, []string{"packages"}, rateTestFields(t, post(body)))
	body["packages"] = map[string]any{}
	require.Equal(t, []string{"packages"}, rateTestFields(t, post(body)))
	pkgs := make([]any, shipping.MaxRatePackages+1)
	for i := range pkgs {
		pkgs[i] = map[string]any{"weight": map[string]any{"value": 1, "unit": "lb"}}
	}
	body["packages"] = pkgs
	require.Equal(t, []string{"packages"}, rateTestFields(t, post(body)))
	body = rateTestBody()
	body["shipTo"] = "94105"
	require.Equal(t, []string{"shipTo"}, rateTestFields(t, post(body)))
	body = rateTestBody()
	body["shipDate"] = time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02")
	require.Equal(t, []string{"shipDate"}, rateTestFields(t, post(body)))

	// Valid optional values pass: lower-case country code, kg/cm, a ship date.
	body = rateTestBody()
	body["shipTo"].(map[string]any)["countryCode"] = "us"
	body["packages"] = []any{map[string]any{"weight": map[string]any{"value": 2, "unit": "kg"}, "length": 30, "width": 20, "height": 10, "dimensionUnit": "cm"}}
	body["shipDate"] = time.Now().UTC().AddDate(0, 0, 2).Format("2006-01-02")
	body["residential"] = true
	res := post(body)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
}

func TestRatesNoActiveCarrierAccount(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	other := e.signup()
	post := func(mod func(map[string]any)) *response {
		body := rateTestBody()
		if mod != nil {
			mod(body)
		}
		return e.do(owner.caller, "POST", "/api/v1/rates", body)
	}

	requireError(t, post(nil), 400, "no_active_carrier_account")

	inactive := rateTestAccount(t, e, owner.org, carriers.CarrierA, "inactive")
	errored := rateTestAccount(t, e, owner.org, carriers.CarrierA, "error")
	pending := rateTestAccount(t, e, owner.org, carriers.CarrierA, "pending")
	requireError(t, post(nil), 400, "no_active_carrier_account")
	for _, id := range []string{inactive, errored, pending} {
		requireError(t, post(func(b map[string]any) { b["carrierAccountId"] = id }), 400, "no_active_carrier_account")
	}

	b := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	// No active account of the requested carrier.
	res := post(func(b map[string]any) { b["carrier"] = carriers.CarrierC })
	requireError(t, res, 400, "no_active_carrier_account")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "carrier_c")

	// An account that is not the organization's: 400 naming the field.
	foreign := rateTestAccount(t, e, other.org, carriers.CarrierB, "active")
	for _, id := range []string{foreign, uuid.NewString()} {
		require.Equal(t, []string{"carrierAccountId"}, rateTestFields(t, post(func(b map[string]any) { b["carrierAccountId"] = id })))
	}
	// carrier and carrierAccountId disagree.
	require.Equal(t, []string{"carrier"}, rateTestFields(t, post(func(x map[string]any) {
		x["carrierAccountId"] = b
		x["carrier"] = carriers.CarrierA
	})))
	// An account that does not support rating is not selected.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET supports_rating = false WHERE id = $1`, b)
	require.NoError(t, err)
	requireError(t, post(nil), 400, "no_active_carrier_account")
	requireError(t, post(func(x map[string]any) { x["carrierAccountId"] = b }), 400, "no_active_carrier_account")
}

func TestRatesSingleAccount(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	b := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")

	res := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.ElementsMatch(t, []string{"rates", "carrier", "carrierAccountId"}, orderTestKeys(res.Body), "the single shape, not wrapped in data")
	require.Equal(t, carriers.CarrierB, res.Body["carrier"])
	require.Equal(t, b, res.Body["carrierAccountId"])
	rates := res.Body["rates"].([]any)
	require.Greater(t, len(rates), 2, "several service levels")
	prev := 0.0
	for _, q := range rates {
		m := q.(map[string]any)
		for _, k := range []string{"serviceType", "serviceName", "totalPrice", "currency", "transitDays", "estimatedDelivery",
			"breakdown", "transitDaysGuaranteed", "deliveryByTime", "zone", "billingWeight"} {
			require.Contains(t, m, k)
		}
		require.NotEmpty(t, m["serviceType"])
		require.NotEmpty(t, m["serviceName"])
		require.Equal(t, "USD", m["currency"])
		price := m["totalPrice"].(float64)
		require.Greater(t, price, 0.0)
		require.GreaterOrEqual(t, price, prev, "cheapest first")
		prev = price
	}

	// Deterministic: the same request gets the same answer.
	again := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.Equal(t, 200, again.Code)
	require.JSONEq(t, string(res.Raw), string(again.Raw))

	// A farther destination costs more for the same service.
	far := rateTestBody()
	far["shipTo"] = rateTestAddress("10002")
	near := e.do(owner.caller, "POST", "/api/v1/rates", far)
	require.Equal(t, 200, near.Code)
	require.NotEqual(t, string(res.Raw), string(near.Raw))

	// serviceType: only that service.
	body := rateTestBody()
	body["serviceType"] = "03"
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	rates = res.Body["rates"].([]any)
	require.Len(t, rates, 1)
	require.Equal(t, "03", rates[0].(map[string]any)["serviceType"])

	// An API key with rates:read.
	key := e.apiKey(owner, "rates:read")
	require.Equal(t, 200, e.do(key, "POST", "/api/v1/rates", rateTestBody()).Code)
}

func TestRatesMultiAccount(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	a := rateTestAccount(t, e, owner.org, carriers.CarrierA, "active")
	b := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	c := rateTestAccount(t, e, owner.org, carriers.CarrierC, "active")
	rateTestAccount(t, e, owner.org, carriers.CarrierB, "inactive")

	res := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.ElementsMatch(t, []string{"results", "errors"}, orderTestKeys(res.Body), "the multi shape, not wrapped in data")
	require.Equal(t, []any{}, res.Body["errors"])
	groups := rateTestGroups(t, res)
	require.Len(t, groups, 3)
	for id, code := range map[string]string{a: carriers.CarrierA, b: carriers.CarrierB, c: carriers.CarrierC} {
		g := groups[id]
		require.NotNil(t, g, code)
		require.Equal(t, code, g["carrier"])
		require.NotEmpty(t, g["rates"])
	}
	// Results keep the accounts' order (oldest first).
	order := []string{}
	for _, g := range res.Body["results"].([]any) {
		order = append(order, g.(map[string]any)["carrierAccountId"].(string))
	}
	require.Equal(t, []string{a, b, c}, order)
	again := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.JSONEq(t, string(res.Raw), string(again.Raw), "deterministic")

	// Narrowed to one carrier or one account: the single shape.
	body := rateTestBody()
	body["carrier"] = carriers.CarrierA
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, a, res.Body["carrierAccountId"])
	body = rateTestBody()
	body["carrierAccountId"] = c
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, carriers.CarrierC, res.Body["carrier"])
	require.Equal(t, groups[c]["rates"], res.Body["rates"], "the same quotes alone or in a fan-out")

	// Two accounts of one carrier: the multi shape.
	b2 := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	body = rateTestBody()
	body["carrier"] = carriers.CarrierB
	groups = rateTestGroups(t, e.do(owner.caller, "POST", "/api/v1/rates", body))
	require.Len(t, groups, 2)
	require.Contains(t, groups, b)
	require.Contains(t, groups, b2)

	// serviceType across carriers: kept where the carrier has it, no error
	// where it has not.
	body = rateTestBody()
	body["serviceType"] = "FEDEX_GROUND"
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	groups = rateTestGroups(t, res)
	require.Equal(t, []any{}, res.Body["errors"])
	require.Len(t, groups[a]["rates"], 1)
	require.Equal(t, []any{}, groups[b]["rates"])
}

func TestRatesCarrierFailures(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	a := rateTestAccount(t, e, owner.org, carriers.CarrierA, "active")
	failB := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active", "accountNumber", "sandbox-fail")
	badC := rateTestAccount(t, e, owner.org, carriers.CarrierC, "active", "apiKey", "sandbox-fail")

	// Partial failure: 200 with the failures listed.
	res := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	groups := rateTestGroups(t, res)
	require.Len(t, groups, 1)
	require.Contains(t, groups, a)
	errs := res.Body["errors"].([]any)
	require.Len(t, errs, 2)
	byID := map[string]map[string]any{}
	for _, x := range errs {
		m := x.(map[string]any)
		byID[m["carrierAccountId"].(string)] = m
		require.ElementsMatch(t, []string{"carrier", "carrierAccountId", "error", "code"}, orderTestKeys(m))
		require.NotEmpty(t, m["error"])
	}
	require.Equal(t, carriers.CarrierB, byID[failB]["carrier"])
	require.Equal(t, "190001", byID[failB]["code"], "the carrier's own code")
	require.Equal(t, carriers.CarrierC, byID[badC]["carrier"])
	require.Contains(t, byID[badC]["error"], "401")
	require.NotContains(t, string(res.Raw), "sandbox-fail", "no credential in the answer")

	// Every carrier failed: 502 carrier_error listing each.
	body := rateTestBody()
	body["carrier"] = carriers.CarrierB
	rateTestAccount(t, e, owner.org, carriers.CarrierB, "active", "clientSecret", "sandbox-fail")
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	requireError(t, res, 502, "carrier_error")
	details := res.Body["error"].(map[string]any)["details"].([]any)
	require.Len(t, details, 2)
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "every carrier failed")

	// One account asked, and it fails: 502.
	body = rateTestBody()
	body["carrierAccountId"] = failB
	res = e.do(owner.caller, "POST", "/api/v1/rates", body)
	requireError(t, res, 502, "carrier_error")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "190001")

	// A carrier refusing the request (unknown service) is a carrier error too.
	body = rateTestBody()
	body["carrierAccountId"] = a
	body["serviceType"] = "NO_SUCH_SERVICE"
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rates", body), 502, "carrier_error")

	// Unreadable stored credentials fail that account only.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET credentials = '\x00' WHERE id = $1`, badC)
	require.NoError(t, err)
	res = e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	found := 0
	for _, x := range res.Body["errors"].([]any) {
		if m := x.(map[string]any); m["carrierAccountId"] == badC {
			found++
			require.Equal(t, "credentials_unreadable", m["code"])
		}
	}
	require.Equal(t, 1, found, "the account whose credentials cannot be opened is listed as failed, not dropped: %s", res.Raw)
}

// rateDelay delays the sandbox's answers for one carrier's paths.
func rateDelay(delays map[string]time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for code, d := range delays {
				if strings.HasPrefix(r.URL.Path, "/carriers/"+code+"/") && !strings.Contains(r.URL.Path, "oauth") {
					select {
					case <-time.After(d):
					case <-r.Context().Done():
						return
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRatesPerCarrierDeadline(t *testing.T) {
	e := rateTestEnv(t, rateDelay(map[string]time.Duration{carriers.CarrierC: 5 * time.Second}),
		func(d *Deps) { d.RateTimeout = 300 * time.Millisecond })
	owner := e.signup()
	rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	c := rateTestAccount(t, e, owner.org, carriers.CarrierC, "active")

	start := time.Now()
	res := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	elapsed := time.Since(start)
	require.Len(t, rateTestGroups(t, res), 1)
	errs := res.Body["errors"].([]any)
	require.Len(t, errs, 1)
	m := errs[0].(map[string]any)
	require.Equal(t, c, m["carrierAccountId"])
	require.Equal(t, "timeout", m["code"])
	require.Contains(t, m["error"], "did not answer within")
	require.Less(t, elapsed, 2*time.Second, "the slow carrier costs the deadline, not its delay")
}

// rateBarrier holds each carrier's rate call, once armed, until n calls
// are in flight at once (or wait passes: then met stays false). It proves
// a fan-out is concurrent without a wall-clock bound.
type rateBarrier struct {
	armed   atomic.Bool
	n       int
	wait    time.Duration
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	timeout atomic.Bool
}

func (b *rateBarrier) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.armed.Load() && strings.HasPrefix(r.URL.Path, "/carriers/") && !strings.Contains(r.URL.Path, "oauth") {
			b.mu.Lock()
			b.arrived++
			if b.arrived == b.n { // later calls find it closed
				close(b.all)
			}
			b.mu.Unlock()
			select {
			case <-b.all:
			case <-time.After(b.wait):
				b.timeout.Store(true)
			case <-r.Context().Done():
				b.timeout.Store(true)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// The carriers of a rate request are asked at once: each carrier's call is
// held until all three are in flight, which a one-by-one fan-out never
// reaches.
func TestRatesConcurrentFanOut(t *testing.T) {
	b := &rateBarrier{n: 3, wait: 5 * time.Second, all: make(chan struct{})}
	e := rateTestEnv(t, b.middleware, func(d *Deps) { d.RateTimeout = 20 * time.Second })
	owner := e.signup()
	for _, code := range carriers.Codes() {
		rateTestAccount(t, e, owner.org, code, "active")
	}
	// Warm the token caches.
	require.Len(t, rateTestGroups(t, e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())), 3)
	b.armed.Store(true)
	require.Len(t, rateTestGroups(t, e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())), 3)
	require.False(t, b.timeout.Load(), "a carrier's call waited for the others in vain: the fan-out is not concurrent")
	b.mu.Lock()
	defer b.mu.Unlock()
	require.GreaterOrEqual(t, b.arrived, 3)
}

func TestRatesScopes(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	key := e.apiKey(owner, "orders:read", "locations:read")
	id := uuid.NewString()
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/rates"},
		{"POST", "/api/v1/rates/from-order/" + id},
		{"POST", "/api/v1/rates/snapshots"},
		{"GET", "/api/v1/rates/snapshots/" + id},
	} {
		res := e.do(key, c.method, c.path, rateTestBody())
		requireError(t, res, 403, "insufficient_scope")
		require.Equal(t, "rates:read", res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["message"])
	}
	requireError(t, e.do(caller{}, "POST", "/api/v1/rates", rateTestBody()), 401, "unauthorized")
}

// ---- from-order ----

// rateTestOrder creates an order through the API with the given shipping
// address (nil for none) and line items.
func rateTestOrder(t testing.TB, e *testEnv, owner account, bridgeID string, ship map[string]any, items []any, metadata map[string]any) string {
	t.Helper()
	body := orderTestBody(bridgeID, uuid.NewString()[:8])
	if ship != nil {
		body["shipping_address"] = ship
	}
	if items != nil {
		body["line_items"] = items
	}
	if metadata != nil {
		body["metadata"] = metadata
	}
	return orderTestCreate(t, e, owner.caller, body)["id"].(string)
}

func rateTestItem(qty int, requiresShipping bool, extra map[string]any) map[string]any {
	m := map[string]any{"sku": "S", "name": "N", "quantity": qty, "unitPrice": 1, "totalPrice": qty, "requiresShipping": requiresShipping, "taxable": false}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func rateTestLocation(t testing.TB, e *testEnv, c caller, body map[string]any) string {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/locations", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()["id"].(string)
}

func TestRatesFromOrder(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	bAcct := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	ship := map[string]any{"address1": "500 Market St", "city": "San Francisco", "provinceCode": "CA", "countryCode": "US", "zip": "94105"}
	orderID := rateTestOrder(t, e, owner, bridge, ship, []any{
		rateTestItem(2, true, map[string]any{"weight": 1.5}),
		rateTestItem(1, true, map[string]any{"weight": map[string]any{"value": 1, "unit": "kg"}}),
		rateTestItem(3, true, nil),
		rateTestItem(5, false, map[string]any{"weight": 100}),
	}, nil)
	post := func(id string, body any) *response {
		return e.do(owner.caller, "POST", "/api/v1/rates/from-order/"+id, body)
	}

	// No location anywhere: 400.
	requireError(t, post(orderID, nil), 400, "no_origin_location")

	manual := rateTestLocation(t, e, owner.caller, map[string]any{"name": "Main", "street": "1 Dock Rd", "city": "New York", "province": "NY", "zip": "10001", "country": "US"})
	res := post(orderID, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, bAcct, res.Body["carrierAccountId"])
	require.NotEmpty(t, res.Body["rates"])
	require.Equal(t, "10001", res.Body["shipFrom"].(map[string]any)["zip"])
	require.Equal(t, "NY", res.Body["shipFrom"].(map[string]any)["provinceCode"])
	require.Equal(t, "94105", res.Body["shipTo"].(map[string]any)["zip"])
	pkgs := res.Body["packages"].([]any)
	require.Len(t, pkgs, 1)
	// 2 × 1.5 lb + 1 kg + 3 × 1 lb (default), the non-shipping item left out.
	require.Equal(t, map[string]any{"value": 8.21, "unit": "lb"}, pkgs[0].(map[string]any)["weight"])

	// The same quote through POST /rates with what from-order echoed.
	direct := e.do(owner.caller, "POST", "/api/v1/rates", map[string]any{"shipFrom": res.Body["shipFrom"], "shipTo": res.Body["shipTo"], "packages": pkgs})
	require.Equal(t, 200, direct.Code, "%s", direct.Raw)
	require.Equal(t, res.Body["rates"], direct.Body["rates"])

	// A location of the order's bridge wins over the manual one.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO locations (id, organization_id, name, street, city, province, zip, country, bridge_id, external_id)
VALUES ($1, $2, 'Shop WH', '9 Wharf', 'Seattle', 'WA', '98101', 'United States', $3, 'wh-1')`, uuid.New(), owner.org, bridge)
	require.NoError(t, err)
	res = post(orderID, map[string]any{})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "98101", res.Body["shipFrom"].(map[string]any)["zip"])
	require.Equal(t, "US", res.Body["shipFrom"].(map[string]any)["countryCode"])

	// The organization's default location (for an order of another bridge).
	other := orderTestBridge(t, e, owner.org, "Other shop")
	def := rateTestLocation(t, e, owner.caller, map[string]any{"name": "Default", "street": "2 Elm", "city": "Chicago", "province": "IL", "zip": "60601", "country": "US"})
	res2 := e.do(owner.caller, "PATCH", "/api/v1/organizations", map[string]any{"settings": map[string]any{"default_location_id": def}})
	require.Equal(t, 200, res2.Code, "%s", res2.Raw)
	order2 := rateTestOrder(t, e, owner, other,
		// Another address naming: line1 / postalCode / country name.
		map[string]any{"line1": "1 Main St", "city": "Austin", "state": "TX", "postalCode": "73301", "country": "United States"},
		nil, map[string]any{"weight": map[string]any{"value": 2, "unit": "kg"}})
	res = post(order2, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "60601", res.Body["shipFrom"].(map[string]any)["zip"])
	require.Equal(t, map[string]any{
		"address1": "1 Main St", "address2": nil, "city": "Austin", "province": "TX", "provinceCode": "TX",
		"country": "United States", "countryCode": "US", "zip": "73301",
	}, res.Body["shipTo"])
	require.Equal(t, 4.41, res.Body["packages"].([]any)[0].(map[string]any)["weight"].(map[string]any)["value"], "metadata weight")
	_ = manual

	// Several accounts: the multi shape, with the echoed input.
	rateTestAccount(t, e, owner.org, carriers.CarrierC, "active")
	res = post(orderID, nil)
	require.Len(t, rateTestGroups(t, res), 2)
	require.Contains(t, res.Body, "errors")
	require.Contains(t, res.Body, "shipFrom")
	res = post(orderID, map[string]any{"carrier": carriers.CarrierC})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, carriers.CarrierC, res.Body["carrier"])
	res = post(orderID, map[string]any{"carrierAccountId": bAcct})
	require.Equal(t, bAcct, res.Body["carrierAccountId"])
	require.ElementsMatch(t, []string{"carrier", "carrierAccountId"}, rateTestFields(t, post(orderID, map[string]any{"carrier": "x", "carrierAccountId": 5})))
	requireError(t, post(orderID, "{"), 400, "invalid_json")

	// Missing or incomplete shipping address: 400 naming it.
	noShip := rateTestOrder(t, e, owner, bridge, nil, nil, nil)
	require.Equal(t, []string{"order.shipping_address"}, rateTestFields(t, post(noShip, nil)))
	partial := rateTestOrder(t, e, owner, bridge, map[string]any{"address1": "x", "country": "Narnia"}, nil, nil)
	require.ElementsMatch(t, []string{"order.shipping_address.city", "order.shipping_address.zip", "order.shipping_address.countryCode"}, rateTestFields(t, post(partial, nil)))
	// Nothing to ship.
	digital := rateTestOrder(t, e, owner, bridge, ship, []any{rateTestItem(1, false, nil)}, nil)
	require.Equal(t, []string{"order.line_items"}, rateTestFields(t, post(digital, nil)))

	// An origin location lacking what a carrier needs.
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE locations SET zip = NULL, country = 'Atlantis' WHERE bridge_id = $1`, bridge)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"location.zip", "location.country"}, rateTestFields(t, post(orderID, nil)))

	// Unknown, malformed and other organizations' orders: 404.
	requireError(t, post(uuid.NewString(), nil), 404, "not_found")
	requireError(t, post("nope", nil), 404, "not_found")
	stranger := e.signup()
	rateTestAccount(t, e, stranger.org, carriers.CarrierB, "active")
	requireError(t, e.do(stranger.caller, "POST", "/api/v1/rates/from-order/"+orderID, nil), 404, "not_found")

	// No active account: 400.
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'inactive' WHERE organization_id = $1`, owner.org)
	require.NoError(t, err)
	requireError(t, post(order2, nil), 400, "no_active_carrier_account")
}

// ---- snapshots ----

func rateTestSnapshotBody(accountID, carrier string) map[string]any {
	return map[string]any{
		"carrierAccountId": accountID, "carrier": carrier, "serviceType": "03", "serviceName": "Ground",
		"totalPrice": 12.5, "currency": "USD",
		"shipFrom": rateTestAddress("10001"), "shipTo": rateTestAddress("94105"),
		"packages": []any{map[string]any{"weight": map[string]any{"value": 3.5, "unit": "lb"}}},
	}
}

var rateSnapshotFields = []string{"id", "organizationId", "carrierAccountId", "carrier", "serviceType", "serviceName", "totalPrice",
	"currency", "breakdown", "transitDays", "transitDaysGuaranteed", "estimatedDelivery", "deliveryByTime", "shipFrom", "shipTo",
	"packages", "quotedAt", "expiresAt", "createdAt", "rawResponse"}

func TestRateSnapshots(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	b := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	key := e.apiKey(owner, "rates:read")

	// Minimal body: defaults.
	res := e.do(key, "POST", "/api/v1/rates/snapshots", rateTestSnapshotBody(b, carriers.CarrierB))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	snap := res.data()
	require.ElementsMatch(t, rateSnapshotFields, orderTestKeys(snap))
	require.Equal(t, owner.org, snap["organizationId"])
	require.Equal(t, b, snap["carrierAccountId"])
	require.Equal(t, 12.5, snap["totalPrice"])
	require.Equal(t, false, snap["transitDaysGuaranteed"])
	for _, k := range []string{"breakdown", "transitDays", "estimatedDelivery", "deliveryByTime", "rawResponse"} {
		require.Nil(t, snap[k], k)
	}
	quoted, _ := time.Parse(time.RFC3339Nano, snap["quotedAt"].(string))
	expires, _ := time.Parse(time.RFC3339Nano, snap["expiresAt"].(string))
	require.Equal(t, 24*time.Hour, expires.Sub(quoted), "expiresAt defaults to quotedAt + 24h")
	require.Equal(t, map[string]any{"address1": "1 Main St", "address2": nil, "city": "Somewhere", "province": nil, "provinceCode": "NY",
		"country": nil, "countryCode": "US", "zip": "94105"}, snap["shipTo"])
	require.Equal(t, []any{map[string]any{"weight": map[string]any{"value": 3.5, "unit": "lb"}, "length": nil, "width": nil, "height": nil, "dimensionUnit": "in"}}, snap["packages"])

	got := e.do(key, "GET", "/api/v1/rates/snapshots/"+snap["id"].(string), nil)
	require.Equal(t, 200, got.Code, "%s", got.Raw)
	require.Equal(t, snap, got.data())

	// Every optional field, from a real quote.
	quote := e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	require.Equal(t, 200, quote.Code)
	q := quote.Body["rates"].([]any)[0].(map[string]any)
	expiresAt := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	body := rateTestBody()
	for k, v := range map[string]any{
		"carrierAccountId": b, "carrier": carriers.CarrierB, "serviceType": q["serviceType"], "serviceName": q["serviceName"],
		"totalPrice": q["totalPrice"], "currency": q["currency"], "breakdown": q["breakdown"], "transitDays": q["transitDays"],
		"transitDaysGuaranteed": true, "estimatedDelivery": q["estimatedDelivery"], "deliveryByTime": "10:30",
		"expiresAt": expiresAt, "rawResponse": map[string]any{"id": json.Number("123456789012345678901"), "nested": []any{1, "x"}},
	} {
		body[k] = v
	}
	res = e.do(owner.caller, "POST", "/api/v1/rates/snapshots", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	full := res.data()
	require.Equal(t, q["breakdown"], full["breakdown"])
	require.Equal(t, q["transitDays"], full["transitDays"])
	require.Equal(t, q["estimatedDelivery"], full["estimatedDelivery"])
	require.Equal(t, true, full["transitDaysGuaranteed"])
	require.Equal(t, "10:30", full["deliveryByTime"])
	require.Equal(t, expiresAt, full["expiresAt"])
	require.Contains(t, string(res.Raw), `"id":123456789012345678901`, "raw numbers kept exactly")
	require.Equal(t, []any{float64(1), "x"}, full["rawResponse"].(map[string]any)["nested"])

	// Immutable: no update or delete route, and the table refuses both.
	id := full["id"].(string)
	for _, m := range []string{"PATCH", "PUT", "DELETE"} {
		requireError(t, e.do(owner.caller, m, "/api/v1/rates/snapshots/"+id, map[string]any{"totalPrice": 0}), 405, "method_not_allowed")
	}
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE rate_snapshots SET total_price = 0 WHERE id = $1`, id)
	require.ErrorContains(t, err, "immutable")
	_, err = e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM rate_snapshots WHERE id = $1`, id)
	require.ErrorContains(t, err, "immutable")
	require.Equal(t, full, e.do(owner.caller, "GET", "/api/v1/rates/snapshots/"+id, nil).data())

	// 404: unknown, malformed, another organization's.
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rates/snapshots/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rates/snapshots/nope", nil), 404, "not_found")
	stranger := e.signup()
	requireError(t, e.do(stranger.caller, "GET", "/api/v1/rates/snapshots/"+id, nil), 404, "not_found")

	// The snapshot survives its account.
	_, err = e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM carrier_accounts WHERE id = $1`, b)
	require.NoError(t, err)
	require.Equal(t, 200, e.do(owner.caller, "GET", "/api/v1/rates/snapshots/"+id, nil).Code)
}

func TestRateSnapshotValidation(t *testing.T) {
	e := rateTestEnv(t, nil)
	owner := e.signup()
	stranger := e.signup()
	b := rateTestAccount(t, e, owner.org, carriers.CarrierB, "active")
	foreign := rateTestAccount(t, e, stranger.org, carriers.CarrierB, "active")
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/rates/snapshots", body) }

	require.ElementsMatch(t, []string{"carrierAccountId", "carrier", "serviceType", "serviceName", "totalPrice", "currency", "shipFrom", "shipTo", "packages"},
		rateTestFields(t, post(map[string]any{})))

	body := rateTestSnapshotBody("nope", "carrier_z")
	body["totalPrice"] = -1
	body["currency"] = "usd"
	body["shipFrom"] = map[string]any{}
	body["packages"] = []any{map[string]any{"weight": map[string]any{"value": 1, "unit": "st"}}}
	body["breakdown"] = "cheap"
	body["transitDays"] = 1.5
	body["transitDaysGuaranteed"] = "no"
	body["estimatedDelivery"] = "tomorrow"
	body["expiresAt"] = time.Now().Add(-time.Hour).Format(time.RFC3339)
	require.ElementsMatch(t, []string{"carrierAccountId", "carrier", "totalPrice", "currency",
		"shipFrom.address1", "shipFrom.city", "shipFrom.countryCode", "shipFrom.zip", "packages[0].weight.unit",
		"breakdown", "transitDays", "transitDaysGuaranteed", "estimatedDelivery", "expiresAt"}, rateTestFields(t, post(body)))

	// The account must be the organization's, and of that carrier.
	for _, id := range []string{foreign, uuid.NewString()} {
		require.Equal(t, []string{"carrierAccountId"}, rateTestFields(t, post(rateTestSnapshotBody(id, carriers.CarrierB))))
	}
	require.Equal(t, []string{"carrier"}, rateTestFields(t, post(rateTestSnapshotBody(b, carriers.CarrierA))))
	// An account in any state may be snapshotted (the quote is history).
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'inactive' WHERE id = $1`, b)
	require.NoError(t, err)
	require.Equal(t, 201, post(rateTestSnapshotBody(b, carriers.CarrierB)).Code)
}
