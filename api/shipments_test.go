package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/server/temporaltest"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/carriers/carrierstest"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// shpCarrierA are carrier_a credentials the sandbox accepts.
func shpCarrierA() map[string]any {
	return map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}
}

// shpSandbox is the sandbox carriers behind a hook that may answer a
// request itself (return true) and a count of label purchases.
type shpSandbox struct {
	srv   *httptest.Server
	inner http.Handler
	ships atomic.Int32
	hook  atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
}

// shpEnv is an API over a real database with the sandbox carriers.
func shpEnv(t *testing.T, opts ...func(*Deps)) (*testEnv, *shpSandbox) {
	t.Helper()
	h := sandboxapi.NewHandler()
	sb := &shpSandbox{inner: h}
	sb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/ship/v1/shipments") {
			sb.ships.Add(1)
		}
		if hk := sb.hook.Load(); hk != nil && (*hk)(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(sb.srv.Close)
	// carrier_a offers delivery changes through the test double: no real
	// carrier has an API for them (TestShipmentActionUnsupportedCarrier).
	reg := carrierstest.WithDeliveryChanges(carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.srv.URL}), carriers.CarrierA)
	all := append([]func(*Deps){func(d *Deps) { d.Carriers = reg }, shpTemporal(t)}, opts...)
	return newEnv(t, all...), sb
}

// shpTemporal runs an in-process Temporal server and a worker with the
// environment's store and carriers (purchases run as workflows), and gives
// the API its client.
func shpTemporal(t *testing.T) func(*Deps) {
	return func(d *Deps) {
		ts := temporaltest.NewServer(temporaltest.WithT(t))
		c := ts.GetDefaultClient()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
		w := worker.New(c, d.TaskQueue, worker.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
		d.Temporal = c
	}
}

// shpAccount inserts a carrier account with sealed credentials.
func shpAccount(t *testing.T, e *testEnv, orgID, carrier, status string, creds map[string]any) string {
	t.Helper()
	caps := map[string][3]bool{"carrier_a": {true, true, true}, "carrier_b": {true, false, true}, "carrier_c": {true, false, false}}[carrier]
	id := uuid.New()
	sealed := sealAccountCreds(t, e, orgID, id.String(), creds)
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO carrier_accounts
		(id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, id, orgID, carrier+" account", carrier, sealed, caps[0], caps[1], caps[2], status)
	require.NoError(t, err)
	return id.String()
}

// shpOrder inserts an order with a bridge and, unless nil, a shipping address.
func shpOrder(t *testing.T, e *testEnv, orgID string, shipTo map[string]any) (orderID, bridgeID string) {
	t.Helper()
	ctx := context.Background()
	bid := uuid.New()
	_, err := e.deps.Store.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config)
		VALUES ($1, $2, 'storefront_a', 'Shop', '{"shopDomain": "shop.example.com"}')`, bid, orgID)
	require.NoError(t, err)
	oid := uuid.New()
	var addr any
	if shipTo != nil {
		addr = shipTo
	}
	_, err = e.deps.Store.Pool.Exec(ctx, `
		INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email, customer_name,
		                    shipping_address, line_items, totals, total, ordered_at)
		VALUES ($1, $2, $3, $4, '#1001', 'confirmed', '{"email": "c@example.com", "phone": "206-555-0199"}', 'c@example.com', 'Chloe Chen',
		        $5, '[]', '{"subtotal": 10, "shipping": 0, "tax": 0, "discount": 0, "total": 10}', 10, now())`,
		oid, orgID, bid, "ext-"+oid.String()[:8], addr)
	require.NoError(t, err)
	return oid.String(), bid.String()
}

func shpSeattle() map[string]any {
	return map[string]any{"firstName": "Chloe", "lastName": "Chen", "address1": "1 Pike St", "city": "Seattle",
		"provinceCode": "WA", "zip": "98101", "countryCode": "US"}
}

func shpMemphis() map[string]any {
	return map[string]any{"name": "Ava Adams", "company": "Adams Goods", "street": "10 Main St", "city": "Memphis",
		"state": "TN", "zip": "38103", "country": "US"}
}

// shpWeekday is the first weekday at least offset days from today (UTC).
func shpWeekday(offset int) string {
	d := time.Now().UTC().AddDate(0, 0, offset)
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, 1)
	}
	return d.Format("2006-01-02")
}

func shpBody(orderID, accountID string) map[string]any {
	return map[string]any{
		"order_id": orderID, "carrier_account_id": accountID, "service": "FEDEX_GROUND",
		"parcels":   []any{map[string]any{"length": 12, "width": 10, "height": 8, "weight": 5, "unit": "lb"}},
		"ship_from": shpMemphis(), "ship_date": shpWeekday(5), "metadata": map[string]any{"big": json.Number("12345678901234567890")},
	}
}

func shpKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func shpSorted(keys ...string) []string {
	sort.Strings(keys)
	return keys
}

var (
	shpListKeys = shpSorted("id", "order_id", "status", "carrier", "service", "tracking_number", "label_url", "rate", "ship_date", "created_at")
	shpFullKeys = shpSorted(append(append([]string{}, shpListKeys...), "bridge_id", "carrier_account_id", "ship_from", "ship_to",
		"parcels", "metadata", "updated_at", "label")...)
)

// shpCreate creates a shipment through the API and returns its data.
func shpCreate(t *testing.T, e *testEnv, c caller, body map[string]any) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/shipments", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

func shpSetStatus(t *testing.T, e *testEnv, id, status string) {
	t.Helper()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE shipments SET status = $2 WHERE id = $1`, id, status)
	require.NoError(t, err)
}

func shpCount(t *testing.T, e *testEnv, orgID string) int {
	t.Helper()
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM shipments WHERE organization_id = $1`, orgID).Scan(&n))
	return n
}

func TestShipmentCreateBuysLabel(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, bridgeID := shpOrder(t, e, owner.org, shpSeattle())

	key := e.apiKey(owner, "shipments:write", "shipments:read")
	d := shpCreate(t, e, key, shpBody(orderID, acct))
	require.Equal(t, shpFullKeys, shpKeys(d))
	id := d["id"].(string)
	require.Equal(t, "label_created", d["status"])
	require.Equal(t, "carrier_a", d["carrier"])
	require.Equal(t, "FEDEX_GROUND", d["service"])
	require.Equal(t, orderID, d["order_id"])
	require.Equal(t, bridgeID, d["bridge_id"])
	require.Equal(t, acct, d["carrier_account_id"])
	require.Regexp(t, `^7\d{11}$`, d["tracking_number"])
	require.True(t, strings.HasPrefix(d["label_url"].(string), "http://fos.test/api/v1/labels/"+id+"?"), d["label_url"])
	rate := d["rate"].(map[string]any)
	require.Greater(t, rate["amount"].(float64), 0.0)
	require.Equal(t, "USD", rate["currency"])
	require.Equal(t, shpWeekday(5), d["ship_date"])
	require.Equal(t, map[string]any{"format": "PDF", "content_type": "application/pdf"}, d["label"])
	require.Equal(t, map[string]any{"name": "Chloe Chen", "company": nil, "phone": "206-555-0199", "street": "1 Pike St", "street2": nil,
		"city": "Seattle", "state": "WA", "zip": "98101", "country": "US"}, d["ship_to"])
	require.Equal(t, "Memphis", d["ship_from"].(map[string]any)["city"])
	require.Equal(t, []any{map[string]any{"length": 12.0, "width": 10.0, "height": 8.0, "weight": 5.0, "unit": "lb"}}, d["parcels"])
	require.Contains(t, string(e.do(key, "GET", "/api/v1/shipments/"+id, nil).Raw), `"big":12345678901234567890`, "metadata numbers kept exactly")
	require.EqualValues(t, 1, sb.ships.Load())

	// The label document.
	res := e.do(key, "GET", "/api/v1/shipments/"+id+"/label", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "application/pdf", res.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(res.Raw, []byte("%PDF-")), "label is a PDF")
	require.Contains(t, string(res.Raw), "REF: "+id)

	// label_url opens without credentials (a browser), as the same
	// document; a link altered in any part is refused.
	link := strings.TrimPrefix(d["label_url"].(string), "http://fos.test")
	res = e.do(caller{}, "GET", link, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "application/pdf", res.Header.Get("Content-Type"))
	require.Contains(t, string(res.Raw), "REF: "+id)
	u, err := url.Parse(link)
	require.NoError(t, err)
	for _, alter := range []func(q url.Values, path *string){
		func(q url.Values, _ *string) { q.Set("signature", "x"+q.Get("signature")[1:]) },
		func(q url.Values, _ *string) { q.Set("expires", "9"+q.Get("expires")) },
		func(q url.Values, _ *string) { q.Set("organization", e.signup().org) },
		func(q url.Values, _ *string) { q.Del("signature") },
		func(_ url.Values, path *string) { *path = "/api/v1/labels/" + uuid.NewString() },
	} {
		q, path := u.Query(), u.Path
		alter(q, &path)
		requireError(t, e.do(caller{}, "GET", path+"?"+q.Encode(), nil), 403, "forbidden")
	}

	// Get one, with and without include.
	res = e.do(key, "GET", "/api/v1/shipments/"+id, nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, shpFullKeys, shpKeys(res.data()))
	res = e.do(key, "GET", "/api/v1/shipments/"+id+"?include=bridge,order", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	got := res.data()
	require.Equal(t, map[string]any{"id": bridgeID, "name": "Shop", "type": "storefront_a", "status": "active"}, got["bridge"])
	ord := got["order"].(map[string]any)
	require.Equal(t, orderID, ord["id"])
	require.Equal(t, "#1001", ord["order_number"])
	require.Equal(t, map[string]any{"name": "Chloe Chen", "email": "c@example.com"}, ord["customer"])
	requireError(t, e.do(key, "GET", "/api/v1/shipments/"+id+"?include=nope", nil), 400, "validation_error")

	// The list item is exactly the specification's fields.
	res = e.do(key, "GET", "/api/v1/shipments", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 1)
	require.Equal(t, shpListKeys, shpKeys(res.list()[0]))
	require.Equal(t, d["label_url"], res.list()[0]["label_url"])

	// ZPL on request, several parcels: one label per parcel.
	body := shpBody(orderID, acct)
	body["label_format"] = "zpl"
	body["parcels"] = []any{
		map[string]any{"length": 30, "width": 20, "height": 10, "weight": 2, "unit": "kg"},
		map[string]any{"length": 12, "width": 10, "height": 8, "weight": 3, "unit": "imperial"},
	}
	z := shpCreate(t, e, key, body)
	require.Equal(t, map[string]any{"format": "ZPL", "content_type": "application/x-zpl"}, z["label"])
	require.Equal(t, "kg", z["parcels"].([]any)[0].(map[string]any)["unit"])
	require.Equal(t, "lb", z["parcels"].([]any)[1].(map[string]any)["unit"])
	res = e.do(key, "GET", "/api/v1/shipments/"+z["id"].(string)+"/label", nil)
	require.Equal(t, "application/x-zpl", res.Header.Get("Content-Type"))
	require.Equal(t, 2, strings.Count(string(res.Raw), "^XA"), "both parcels' labels")
	res = e.do(key, "GET", "/api/v1/shipments/"+z["id"].(string)+"/label?piece=2", nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, 1, strings.Count(string(res.Raw), "^XA"))
	requireError(t, e.do(key, "GET", "/api/v1/shipments/"+z["id"].(string)+"/label?piece=3", nil), 400, "validation_error")

	// carrier_b buys labels too.
	acctB := shpAccount(t, e, owner.org, "carrier_b", "active", map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"})
	body = shpBody(orderID, acctB)
	body["service"] = "03"
	b := shpCreate(t, e, key, body)
	require.Regexp(t, `^1Z`, b["tracking_number"])
	res = e.do(key, "GET", "/api/v1/shipments/"+b["id"].(string)+"/label", nil)
	require.True(t, bytes.HasPrefix(res.Raw, []byte("%PDF-")))

	// Another organization sees none of it.
	other := e.signup()
	requireError(t, e.do(other.caller, "GET", "/api/v1/shipments/"+id, nil), 404, "not_found")
	requireError(t, e.do(other.caller, "GET", "/api/v1/shipments/"+id+"/label", nil), 404, "not_found")
	res = e.do(other.caller, "GET", "/api/v1/shipments", nil)
	require.Empty(t, res.list())
}

// POST /shipments takes the camelCase names too (the Part 2 resources are
// camelCase, and a new user sent them): a camelCase body buys the same
// label instead of reporting every field missing; when both casings are
// sent, snake_case wins.
func TestShipmentCreateAcceptsCamelCase(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	snake := shpBody(orderID, acct)
	camel := map[string]any{"orderId": orderID, "carrierAccountId": acct, "service": snake["service"], "parcels": snake["parcels"],
		"shipFrom": snake["ship_from"], "shipDate": snake["ship_date"], "labelFormat": "PDF"}
	d := shpCreate(t, e, owner.caller, camel)
	require.Equal(t, orderID, d["order_id"])
	require.Equal(t, acct, d["carrier_account_id"])
	require.Equal(t, "Memphis", d["ship_from"].(map[string]any)["city"])
	require.Equal(t, snake["ship_date"], d["ship_date"])

	// The camelCase label format is read (and checked) too.
	camel["labelFormat"] = "GIF"
	res := e.do(owner.caller, "POST", "/api/v1/shipments", camel)
	requireError(t, res, 400, "validation_error")
	require.Contains(t, string(res.Raw), `"field":"label_format"`)

	// Both casings: snake_case wins.
	both := shpBody(orderID, acct)
	both["orderId"], both["shipDate"] = "nope", "not a date"
	d = shpCreate(t, e, owner.caller, both)
	require.Equal(t, orderID, d["order_id"])
}

func TestShipmentCreateDefaultShipFrom(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, bridgeID := shpOrder(t, e, owner.org, shpSeattle())
	body := shpBody(orderID, acct)
	delete(body, "ship_from")

	// No location at all.
	res := e.do(owner.caller, "POST", "/api/v1/shipments", body)
	requireError(t, res, 400, "validation_error")
	require.Contains(t, string(res.Raw), "ship_from")

	// The order's bridge location.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO locations (id, organization_id, name, street, city, province, zip, country, bridge_id)
		VALUES ($1, $2, 'Main warehouse', '10 Main St', 'Memphis', 'tn', '38103', 'United States', $3)`, uuid.New(), owner.org, bridgeID)
	require.NoError(t, err)
	d := shpCreate(t, e, owner.caller, body)
	require.Equal(t, map[string]any{"name": nil, "company": "Main warehouse", "phone": nil, "street": "10 Main St", "street2": nil,
		"city": "Memphis", "state": "TN", "zip": "38103", "country": "US"}, d["ship_from"])

	// ship_date defaults to today.
	delete(body, "ship_date")
	d = shpCreate(t, e, owner.caller, body)
	require.Equal(t, time.Now().UTC().Format("2006-01-02"), d["ship_date"])
}

func TestShipmentCreateRefusals(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())

	// Validation names every problem.
	res := e.do(owner.caller, "POST", "/api/v1/shipments", map[string]any{
		"order_id": "nope", "parcels": []any{map[string]any{"length": 0, "width": "x", "height": 8, "weight": 5, "unit": "stone"}, "x"},
		"ship_from": map[string]any{"city": "Memphis", "country": "Narnia"}, "ship_date": "soon", "metadata": []any{}, "label_format": "GIF",
	})
	requireError(t, res, 400, "validation_error")
	fields := map[string]bool{}
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		fields[d.(map[string]any)["field"].(string)] = true
	}
	for _, f := range []string{"order_id", "carrier_account_id", "service", "parcels[0].length", "parcels[0].width", "parcels[0].unit",
		"parcels[1]", "ship_from.street", "ship_from.zip", "ship_from.country", "ship_date", "metadata", "label_format"} {
		require.True(t, fields[f], "%s not named in %s", f, res.Raw)
	}
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", map[string]any{"order_id": orderID, "carrier_account_id": acct, "service": "X", "parcels": []any{}}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", "{"), 400, "invalid_json")

	// References of another organization, or unknown.
	other := e.signup()
	otherAcct := shpAccount(t, e, other.org, "carrier_a", "active", shpCarrierA())
	otherOrder, _ := shpOrder(t, e, other.org, shpSeattle())
	res = e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(otherOrder, acct))
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "order_id", res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
	res = e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, otherAcct))
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "carrier_account_id", res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])

	// Account not active, or without labels.
	inactive := shpAccount(t, e, owner.org, "carrier_a", "inactive", shpCarrierA())
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, inactive)), 400, "carrier_account_not_active")
	errored := shpAccount(t, e, owner.org, "carrier_a", "error", shpCarrierA())
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, errored)), 400, "carrier_account_not_active")
	rateOnly := shpAccount(t, e, owner.org, "carrier_c", "active", map[string]any{"apiKey": "TEST_key"})
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, rateOnly)), 400, "labels_not_supported")

	// The order has no (usable) shipping address.
	bare, _ := shpOrder(t, e, owner.org, nil)
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(bare, acct)), 400, "missing_shipping_address")
	partial, _ := shpOrder(t, e, owner.org, map[string]any{"city": "Seattle"})
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(partial, acct)), 400, "invalid_shipping_address")

	// Scope.
	readOnly := e.apiKey(owner, "shipments:read")
	requireError(t, e.do(readOnly, "POST", "/api/v1/shipments", shpBody(orderID, acct)), 403, "insufficient_scope")
	requireError(t, e.do(e.apiKey(owner, "orders:read"), "GET", "/api/v1/shipments", nil), 403, "insufficient_scope")

	require.Zero(t, shpCount(t, e, owner.org))
	require.Zero(t, sb.ships.Load(), "no carrier call for a refused request")
}

func TestShipmentCreateCarrierError(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())

	// Refused credentials: 502 at once, the pending row removed.
	creds := shpCarrierA()
	creds["childSecret"] = "sandbox-fail"
	bad := shpAccount(t, e, owner.org, "carrier_a", "active", creds)
	res := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, bad))
	requireError(t, res, 502, "carrier_error")
	require.NotContains(t, string(res.Raw), "sandbox-fail")
	require.Zero(t, shpCount(t, e, owner.org))

	// An unknown service: the carrier refuses the request as invalid, which
	// is the client's to fix: 400 naming service.
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	body := shpBody(orderID, acct)
	body["service"] = "TELEPORT"
	res = e.do(owner.caller, "POST", "/api/v1/shipments", body)
	requireError(t, res, 400, "validation_error")
	details := res.Body["error"].(map[string]any)["details"].([]any)
	require.Len(t, details, 1)
	require.Equal(t, "service", details[0].(map[string]any)["field"])
	require.Contains(t, details[0].(map[string]any)["message"], "TELEPORT")
	require.Zero(t, shpCount(t, e, owner.org))
	// carrier_b the same.
	acctB := shpAccount(t, e, owner.org, "carrier_b", "active", map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"})
	body = shpBody(orderID, acctB)
	body["service"] = "99"
	res = e.do(owner.caller, "POST", "/api/v1/shipments", body)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "service", res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"], "%s", res.Raw)
	require.Zero(t, shpCount(t, e, owner.org))

	// The carrier answers 503: the outcome is unknown (it may have sold the
	// label), so the call is not repeated; 502, and the shipment stays as
	// exception with the reason.
	creds = shpCarrierA()
	creds["accountNumber"] = "sandbox-fail"
	down := shpAccount(t, e, owner.org, "carrier_a", "active", creds)
	before := sb.ships.Load()
	res = e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, down))
	requireError(t, res, 502, "carrier_error")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "may or may not have been bought")
	require.EqualValues(t, 1, sb.ships.Load()-before, "an unknown outcome is never repeated")
	list := e.do(owner.caller, "GET", "/api/v1/shipments", nil).list()
	require.Len(t, list, 1)
	require.Equal(t, "exception", list[0]["status"])
	got := e.do(owner.caller, "GET", "/api/v1/shipments/"+list[0]["id"].(string), nil).data()
	require.Nil(t, got["tracking_number"])
	require.Contains(t, got["metadata"].(map[string]any)["label_purchase_error"], "may or may not have been bought", "the reason is readable")
}

func TestShipmentLabelPurchaseIdempotentOnRetry(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())

	// The carrier sells the label but its answer is lost (502 from a
	// proxy): the outcome is unknown, so the call is not repeated; the
	// client gets 502 and the shipment stays, as exception, with the reason.
	var bodies [][]byte
	hook := func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/ship/v1/shipments") {
			return false
		}
		raw := new(bytes.Buffer)
		_, _ = raw.ReadFrom(r.Body)
		bodies = append(bodies, raw.Bytes())
		rec := httptest.NewRecorder()
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(raw.Bytes()))
		sb.inner.ServeHTTP(rec, r2)
		w.WriteHeader(http.StatusBadGateway)
		return true
	}
	sb.hook.Store(&hook)
	first := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct), "Idempotency-Key", "lost-1")
	requireError(t, first, 502, "carrier_error")
	require.Contains(t, first.Body["error"].(map[string]any)["message"], "may or may not have been bought")
	require.EqualValues(t, 1, sb.ships.Load(), "bought once, not repeated")
	require.Len(t, bodies, 1)
	list := e.do(owner.caller, "GET", "/api/v1/shipments", nil).list()
	require.Len(t, list, 1)
	require.Equal(t, "exception", list[0]["status"])
	require.Contains(t, string(bodies[0]), list[0]["id"].(string), "the shipment id is the carrier reference")

	// The client retries with the same Idempotency-Key (its stored answer
	// was released on the 502): the same shipment and purchase, the same
	// answer, and no second label.
	sb.hook.Store(nil)
	again := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct), "Idempotency-Key", "lost-1")
	requireError(t, again, 502, "carrier_error")
	require.Equal(t, first.Body["error"].(map[string]any)["message"], again.Body["error"].(map[string]any)["message"])
	require.EqualValues(t, 1, sb.ships.Load(), "a retry never buys twice")
	require.Equal(t, 1, shpCount(t, e, owner.org))

	// A successful purchase retried with its key gets the same shipment.
	ok := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct), "Idempotency-Key", "ship-1")
	require.Equal(t, 201, ok.Code, "%s", ok.Raw)
	ok2 := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct), "Idempotency-Key", "ship-1")
	require.Equal(t, 201, ok2.Code)
	require.Equal(t, ok.data()["id"], ok2.data()["id"])
	require.Equal(t, ok.data()["tracking_number"], ok2.data()["tracking_number"])
	require.EqualValues(t, 2, sb.ships.Load())
	require.Equal(t, 2, shpCount(t, e, owner.org))
	// Even when the stored answer is gone, the key names the same shipment.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	ok3 := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct), "Idempotency-Key", "ship-1")
	require.Equal(t, 201, ok3.Code, "%s", ok3.Raw)
	require.Equal(t, ok.data()["id"], ok3.data()["id"])
	require.EqualValues(t, 2, sb.ships.Load())
}

// TestShipmentCreateTemporalAmbiguous: a start whose answer is lost is sent
// again; if the outcome stays unknown the answer is 503 and the pending row
// stays for the run that may exist (or the reconciler).
func TestShipmentCreateTemporalAmbiguous(t *testing.T) {
	tc := mocks.NewClient(t)
	e, sb := shpEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	tc.On("NewWithStartWorkflowOperation", mock.Anything, mock.Anything, mock.Anything).Return(nil).Times(worker.StartAttempts)
	tc.On("UpdateWithStartWorkflow", mock.Anything, mock.Anything).Return(nil, serviceerror.NewUnavailable("down")).Times(worker.StartAttempts)
	res := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct))
	requireError(t, res, 503, "temporal_unavailable")
	list := e.do(owner.caller, "GET", "/api/v1/shipments", nil).list()
	require.Len(t, list, 1)
	require.Equal(t, "pending", list[0]["status"], "never deleted on an ambiguous error")
	require.Zero(t, sb.ships.Load())
}

func TestShipmentListFilters(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acctA := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	acctB := shpAccount(t, e, owner.org, "carrier_b", "active", map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"})
	o1, b1 := shpOrder(t, e, owner.org, shpSeattle())
	o2, _ := shpOrder(t, e, owner.org, shpSeattle())

	s1 := shpCreate(t, e, owner.caller, shpBody(o1, acctA))
	body := shpBody(o2, acctB)
	body["service"] = "03"
	body["ship_date"] = shpWeekday(1)
	s2 := shpCreate(t, e, owner.caller, body)
	body = shpBody(o2, acctA)
	body["ship_date"] = shpWeekday(9)
	s3 := shpCreate(t, e, owner.caller, body)
	shpSetStatus(t, e, s3["id"].(string), "in_transit")

	ids := func(res *response) []string {
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var out []string
		for _, it := range res.list() {
			out = append(out, it["id"].(string))
		}
		return out
	}
	id1, id2, id3 := s1["id"].(string), s2["id"].(string), s3["id"].(string)
	require.Equal(t, []string{id3, id2, id1}, ids(e.do(owner.caller, "GET", "/api/v1/shipments", nil)), "newest first")
	require.Equal(t, []string{id1, id2, id3}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?order=asc", nil)))
	require.Equal(t, []string{id2, id1, id3}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?sort=ship_date&order=asc", nil)))
	require.Equal(t, []string{id3}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?status=in_transit", nil)))
	require.Equal(t, []string{id2, id1}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?status=label_created", nil)))
	require.Equal(t, []string{id3, id2}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?order_id="+o2, nil)))
	require.Equal(t, []string{id2}, ids(e.do(owner.caller, "GET", "/api/v1/shipments?carrier=carrier_b", nil)))
	require.Empty(t, ids(e.do(owner.caller, "GET", "/api/v1/shipments?status=delivered", nil)))

	res := e.do(owner.caller, "GET", "/api/v1/shipments?limit=2&page=2", nil)
	require.Equal(t, []string{id1}, ids(res))
	require.Equal(t, map[string]any{"page": 2.0, "limit": 2.0, "total": 3.0, "totalPages": 2.0, "hasMore": false}, res.Body["pagination"])
	res = e.do(owner.caller, "GET", "/api/v1/shipments?limit=1000", nil)
	require.Equal(t, 100.0, res.Body["pagination"].(map[string]any)["limit"])

	res = e.do(owner.caller, "GET", "/api/v1/shipments?include=bridge,order&order_id="+o1, nil)
	require.Equal(t, 200, res.Code)
	it := res.list()[0]
	require.Equal(t, b1, it["bridge"].(map[string]any)["id"])
	require.Equal(t, o1, it["order"].(map[string]any)["id"])

	for _, q := range []string{"status=lost", "order_id=x", "carrier=carrier_z", "sort=rate", "order=up", "include=carrier", "page=0", "limit=-1"} {
		requireError(t, e.do(owner.caller, "GET", "/api/v1/shipments?"+q, nil), 400, "validation_error")
	}
}

func TestShipmentUpdateAndDelete(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	d := shpCreate(t, e, owner.caller, shpBody(orderID, acct))
	id := d["id"].(string)
	path := "/api/v1/shipments/" + id

	res := e.do(owner.caller, "PATCH", path, map[string]any{"status": "in_transit", "metadata": map[string]any{"gate": 4, "big": nil},
		"carrier": "carrier_a", "service": "FEDEX_GROUND"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, shpFullKeys, shpKeys(res.data()))
	require.Equal(t, "in_transit", res.data()["status"])
	require.Equal(t, map[string]any{"gate": 4.0}, res.data()["metadata"])
	require.Equal(t, d["tracking_number"], res.data()["tracking_number"])

	res = e.do(owner.caller, "PATCH", path, map[string]any{"tracking_number": "794600000001", "status": "delivered"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "794600000001", res.data()["tracking_number"])
	var delivered *time.Time
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT delivered_at FROM shipments WHERE id = $1`, id).Scan(&delivered))
	require.NotNil(t, delivered)
	res = e.do(owner.caller, "PATCH", path, map[string]any{"tracking_number": nil})
	require.Nil(t, res.data()["tracking_number"])

	// Refusals.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"service": "PRIORITY_OVERNIGHT", "carrier": "carrier_b", "status": "lost"})
	requireError(t, res, 400, "validation_error")
	require.Len(t, res.Body["error"].(map[string]any)["details"], 3)
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"metadata": "x"}), 400, "validation_error")
	other := e.signup()
	requireError(t, e.do(other.caller, "PATCH", path, map[string]any{"status": "delivered"}), 404, "not_found")
	requireError(t, e.do(other.caller, "DELETE", path, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/shipments/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(e.apiKey(owner, "shipments:read"), "DELETE", path, nil), 403, "insufficient_scope")

	// A delivered shipment has nothing to void: deleted as it is.
	res = e.do(owner.caller, "DELETE", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(owner.caller, "GET", path, nil), 404, "not_found")

	// An unused label is voided, then the shipment deleted; the carrier
	// no longer knows the number.
	d = shpCreate(t, e, owner.caller, shpBody(orderID, acct))
	res = e.do(owner.caller, "DELETE", "/api/v1/shipments/"+d["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	c, _ := e.deps.Carriers.Get("carrier_a")
	tr, err := c.Track(context.Background(), carriers.Account{Carrier: "carrier_a", Credentials: shpCarrierA()}, []string{d["tracking_number"].(string)})
	require.NoError(t, err)
	require.True(t, tr[0].NotFound, "voided")

	// A label already handed to the carrier (shipped yesterday, the
	// earliest ship_date accepted) cannot be voided: 502, kept.
	body := shpBody(orderID, acct)
	body["ship_date"] = time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	d = shpCreate(t, e, owner.caller, body)
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/shipments/"+d["id"].(string), nil), 502, "carrier_error")
	require.Equal(t, 200, e.do(owner.caller, "GET", "/api/v1/shipments/"+d["id"].(string), nil).Code)
}

// --- actions ---

// expectShipmentActionStart expects one ShipmentAction start and captures
// its action id.
func expectShipmentActionStart(t *testing.T, tc *mocks.Client, orgID, shipmentID string, got *string) {
	t.Helper()
	expectShipmentActionStartErr(t, tc, orgID, shipmentID, got, nil)
}

// expectShipmentActionStartErr expects one ShipmentAction start (its id
// never reused) answered with err.
func expectShipmentActionStartErr(t *testing.T, tc *mocks.Client, orgID, shipmentID string, got *string, err error) {
	t.Helper()
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return("x").Maybe()
	run.On("GetRunID").Return("run-1").Maybe()
	tc.On("ExecuteWorkflow", mock.Anything,
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
			org, ok := o.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
			return strings.HasPrefix(o.ID, "shipment-action/") && o.TaskQueue == "fos-test" &&
				o.WorkflowIDConflictPolicy == enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING &&
				o.WorkflowIDReusePolicy == enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE &&
				ok && org == orgID && o.Memo["shipmentId"] == shipmentID && o.ID == "shipment-action/"+o.Memo["actionId"].(string)
		}),
		mock.MatchedBy(func(fn any) bool {
			return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.ShipmentAction).Pointer()
		}),
		mock.MatchedBy(func(in workflows.ShipmentActionInput) bool {
			*got = in.ActionID
			return in.OrganizationID == orgID && in.ShipmentID == shipmentID
		}),
	).Return(func(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
		if err != nil {
			return nil, err
		}
		return run, nil
	}).Once()
}

// shpExecOnly is the real Temporal client (purchases run) whose
// ExecuteWorkflow (action starts) is a mock.
type shpExecOnly struct {
	client.Client
	exec *mocks.Client
}

func (c shpExecOnly) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	return c.exec.ExecuteWorkflow(ctx, o, wf, args...)
}

func shpMockStarts(tc *mocks.Client) func(*Deps) {
	return func(d *Deps) { d.Temporal = shpExecOnly{Client: d.Temporal, exec: tc} }
}

func TestShipmentActionStartsWorkflow(t *testing.T) {
	tc := mocks.NewClient(t)
	e, _ := shpEnv(t, shpMockStarts(tc))
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	sh := shpCreate(t, e, owner.caller, shpBody(orderID, acct))
	id := sh["id"].(string)
	path := "/api/v1/shipments/" + id + "/actions"
	shpSetStatus(t, e, id, "in_transit")

	key := e.apiKey(owner, "shipments:write")
	var actionID string
	expectShipmentActionStart(t, tc, owner.org, id, &actionID)
	res := e.do(key, "POST", path, map[string]any{"actionType": "hold", "config": map[string]any{"reason": "customer_request", "notes": "call first"}})
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"actionId": actionID, "status": "pending"}, res.Body)

	// The record is pending; the shipment's status is unchanged.
	res = e.do(owner.caller, "GET", path, nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 1)
	rec := res.list()[0]
	require.Equal(t, actionID, rec["actionId"])
	require.Equal(t, "pending", rec["status"])
	require.Equal(t, "hold", rec["actionType"])
	require.Equal(t, map[string]any{"reason": "customer_request", "notes": "call first"}, rec["config"])
	require.Equal(t, "in_transit", rec["shipmentStatus"])
	res = e.do(owner.caller, "GET", path+"/"+actionID, nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, actionID, res.data()["actionId"])
	requireError(t, e.do(owner.caller, "GET", path+"/"+uuid.NewString(), nil), 404, "not_found")
	require.Equal(t, "in_transit", e.do(owner.caller, "GET", "/api/v1/shipments/"+id, nil).data()["status"])

	// Flat fields work too; each allowed type for its statuses.
	for _, c := range []struct {
		status string
		body   map[string]any
	}{
		{"in_transit", map[string]any{"actionType": "redirect", "address": map[string]any{"street": "1 Pike St", "city": "Seattle", "state": "wa", "zip": "98101"}}},
		{"out_for_delivery", map[string]any{"actionType": "instructions", "instructions": "leave at back door"}},
		{"out_for_delivery", map[string]any{"actionType": "hold", "reason": "other"}},
		{"exception", map[string]any{"actionType": "redeliver", "config": map[string]any{"preferredDate": shpWeekday(3), "instructions": "after 5pm"}}},
		{"exception", map[string]any{"actionType": "redeliver"}},
	} {
		shpSetStatus(t, e, id, c.status)
		var got string
		expectShipmentActionStart(t, tc, owner.org, id, &got)
		res := e.do(owner.caller, "POST", path, c.body)
		require.Equal(t, 202, res.Code, "%v: %s", c.body, res.Raw)
		require.Equal(t, got, res.Body["actionId"])
	}
	res = e.do(owner.caller, "GET", path, nil)
	require.Len(t, res.list(), 6)

	// A client's retry with the same Idempotency-Key names the same action
	// (even once its stored answer is gone): the start is re-issued under
	// the same workflow id while it is pending, and nothing is started once
	// it has its outcome.
	shpSetStatus(t, e, id, "in_transit")
	hold := map[string]any{"actionType": "hold", "reason": "other"}
	var first, second string
	expectShipmentActionStart(t, tc, owner.org, id, &first)
	res = e.do(owner.caller, "POST", path, hold, "Idempotency-Key", "hold-1")
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	_, err := e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	expectShipmentActionStart(t, tc, owner.org, id, &second)
	res = e.do(owner.caller, "POST", path, hold, "Idempotency-Key", "hold-1")
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, first, second)
	require.Equal(t, first, res.Body["actionId"])
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE shipment_actions SET status = 'completed' WHERE id = $1`, first)
	require.NoError(t, err)
	_, err = e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	res = e.do(owner.caller, "POST", path, hold, "Idempotency-Key", "hold-1")
	require.Equal(t, map[string]any{"actionId": first, "status": "completed"}, res.Body)
	list := e.do(owner.caller, "GET", path, nil).list()
	require.Len(t, list, 7)

	// A run that closed without recording its outcome (it failed after
	// sending, or was terminated) leaves the action pending: a retry is
	// refused by Temporal (the id is never reused), answers pending and
	// keeps the record for the reconciler; nothing is sent again.
	var third string
	expectShipmentActionStart(t, tc, owner.org, id, &third)
	res = e.do(owner.caller, "POST", path, hold, "Idempotency-Key", "hold-2")
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	_, err = e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	var again string
	expectShipmentActionStartErr(t, tc, owner.org, id, &again,
		serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already started", "", "run-1"))
	res = e.do(owner.caller, "POST", path, hold, "Idempotency-Key", "hold-2")
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"actionId": third, "status": "pending"}, res.Body)
	require.Equal(t, third, again)
	res = e.do(owner.caller, "GET", path+"/"+third, nil)
	require.Equal(t, 200, res.Code, "the pending record stays")
	require.Equal(t, "pending", res.data()["status"])
	require.Equal(t, map[string]any{"address": map[string]any{"street": "1 Pike St", "city": "Seattle", "state": "WA", "zip": "98101", "country": "US"}},
		list[5]["config"])
}

func TestShipmentActionRefusals(t *testing.T) {
	tc := mocks.NewClient(t)
	e, _ := shpEnv(t, shpMockStarts(tc))
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	sh := shpCreate(t, e, owner.caller, shpBody(orderID, acct))
	id := sh["id"].(string)
	path := "/api/v1/shipments/" + id + "/actions"

	// Validation.
	long := strings.Repeat("x", 501)
	for _, body := range []map[string]any{
		{},
		{"actionType": "teleport"},
		{"actionType": "hold"},
		{"actionType": "hold", "reason": "bored"},
		{"actionType": "hold", "reason": "other", "notes": long},
		{"actionType": "redirect"},
		{"actionType": "redirect", "address": map[string]any{"street": "1 Pike St", "city": "Seattle", "state": "WA"}},
		{"actionType": "redirect", "address": map[string]any{"street": "1 Pike St", "city": "Seattle", "state": "WA", "zip": "98101", "country": "Narnia"}},
		{"actionType": "redeliver", "preferredDate": "someday"},
		{"actionType": "redeliver", "instructions": long},
		{"actionType": "instructions"},
		{"actionType": "instructions", "config": map[string]any{"instructions": long}},
		{"actionType": "hold", "config": "x"},
	} {
		requireError(t, e.do(owner.caller, "POST", path, body), 400, "validation_error")
	}

	// Not allowed in the shipment's status: 409.
	for _, c := range []struct{ status, typ string }{
		{"label_created", "hold"}, {"pending", "instructions"}, {"out_for_delivery", "redirect"}, {"in_transit", "redeliver"},
		{"delivered", "hold"}, {"exception", "instructions"}, {"delivered", "redeliver"},
	} {
		shpSetStatus(t, e, id, c.status)
		body := map[string]any{"actionType": c.typ, "reason": "other", "instructions": "x",
			"address": map[string]any{"street": "1 Pike St", "city": "Seattle", "state": "WA", "zip": "98101"}}
		res := e.do(owner.caller, "POST", path, body)
		requireError(t, res, 409, "conflict")
		require.Contains(t, res.Body["error"].(map[string]any)["message"], c.status)
	}

	shpSetStatus(t, e, id, "in_transit")
	hold := map[string]any{"actionType": "hold", "reason": "other"}
	// Another organization's shipment, unknown ids, scope.
	other := e.signup()
	requireError(t, e.do(other.caller, "POST", path, hold), 404, "not_found")
	requireError(t, e.do(other.caller, "GET", path, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/shipments/"+uuid.NewString()+"/actions", hold), 404, "not_found")
	requireError(t, e.do(e.apiKey(owner, "shipments:read"), "POST", path, hold), 403, "insufficient_scope")

	// The account is no longer active.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'inactive' WHERE id = $1`, acct)
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "POST", path, hold), 400, "carrier_account_not_active")
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'active' WHERE id = $1`, acct)
	require.NoError(t, err)

	// Temporal refuses the start: 503-free error path, no record is left.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewInvalidArgument("search attribute OrganizationId is not defined")).Once()
	require.Equal(t, 500, e.do(owner.caller, "POST", path, hold).Code)
	require.Empty(t, e.do(owner.caller, "GET", path, nil).list())

	// Temporal unavailable (the run may exist): the start is sent again,
	// then the workflow described; no run: the record goes, 503.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewUnavailable("connection refused")).Times(worker.StartAttempts)
	requireError(t, e.do(owner.caller, "POST", path, hold), 503, "temporal_unavailable")
	require.Empty(t, e.do(owner.caller, "GET", path, nil).list())

	// No Temporal configured at all: 503 before anything is written.
	bare, _ := shpEnv(t, func(d *Deps) { d.Temporal = nil })
	owner2 := bare.signup()
	acct2 := shpAccount(t, bare, owner2.org, "carrier_a", "active", shpCarrierA())
	order2, _ := shpOrder(t, bare, owner2.org, shpSeattle())
	requireError(t, bare.do(owner2.caller, "POST", "/api/v1/shipments", shpBody(order2, acct2)), 503, "temporal_unavailable")
	sh2 := uuid.New()
	_, err = bare.deps.Store.Pool.Exec(context.Background(), `INSERT INTO shipments (id, organization_id, order_id, carrier_account_id, carrier, service, status, tracking_number)
		VALUES ($1, $2, $3, $4, 'carrier_a', 'FEDEX_GROUND', 'in_transit', '700000000001')`, sh2, owner2.org, order2, acct2)
	require.NoError(t, err)
	requireError(t, bare.do(owner2.caller, "POST", "/api/v1/shipments/"+sh2.String()+"/actions", hold), 503, "temporal_unavailable")
}

// The built-in adapters have no delivery changes (no carrier publishes an
// API for them). The specification records an action pending and notifies
// the carrier asynchronously, so the API accepts it and starts its run,
// which ends the record failed with the reason (see e2e).
func TestShipmentActionUnsupportedCarrier(t *testing.T) {
	srv := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(srv.Close)
	tc := mocks.NewClient(t)
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return("shipment-action/x").Maybe()
	run.On("GetRunID").Return("run-1").Maybe()
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(run, nil).Once()
	e, _ := shpEnv(t, func(d *Deps) {
		d.Temporal = shpExecOnly{Client: d.Temporal, exec: tc}
		d.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: srv.URL})
	})
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	sh := shpCreate(t, e, owner.caller, shpBody(orderID, acct))
	id := sh["id"].(string)
	shpSetStatus(t, e, id, "in_transit")
	path := "/api/v1/shipments/" + id + "/actions"
	res := e.do(owner.caller, "POST", path, map[string]any{"actionType": "hold", "reason": "other"})
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	list := e.do(owner.caller, "GET", path, nil).list()
	require.Len(t, list, 1)
	require.Equal(t, "pending", list[0]["status"])
}

// TestShipmentCreateShipDateWindow: ship_date has the window of /rates,
// yesterday (UTC) to 365 days ahead.
func TestShipmentCreateShipDateWindow(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	today := time.Now().UTC()
	for date, msg := range map[string]string{
		today.AddDate(0, 0, -2).Format("2006-01-02"): "must not be in the past",
		"1999-01-01": "must not be in the past",
		today.AddDate(0, 0, 367).Format("2006-01-02"): "must be at most 365 days ahead",
	} {
		body := shpBody(orderID, acct)
		body["ship_date"] = date
		res := e.do(owner.caller, "POST", "/api/v1/shipments", body)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, []any{map[string]any{"field": "ship_date", "message": msg}}, res.Body["error"].(map[string]any)["details"], date)
	}
	require.Zero(t, sb.ships.Load(), "no carrier call")
	require.Zero(t, shpCount(t, e, owner.org))
}

// TestShipmentCreateGeocodes: the label's addresses are placed on the
// tracking map at once (coarse gazetteer coordinates); an unknown place
// has none.
func TestShipmentCreateGeocodes(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	d := shpCreate(t, e, owner.caller, shpBody(orderID, acct))

	var toLat, toLng, fromLat, fromLng *float64
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT ship_to_lat, ship_to_lng, ship_from_lat, ship_from_lng
		FROM shipments WHERE id = $1`, d["id"]).Scan(&toLat, &toLng, &fromLat, &fromLng))
	require.NotNil(t, toLat)
	require.InDelta(t, 47.61, *toLat, 0.01, "Seattle")
	require.InDelta(t, -122.33, *toLng, 0.01)
	require.InDelta(t, 35.14, *fromLat, 0.01, "Memphis")
	require.InDelta(t, -90.05, *fromLng, 0.01)

	res := e.do(owner.caller, "GET", "/api/v1/shipment-tracking/map", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 1)
	item := res.list()[0]
	require.Equal(t, d["id"], item["id"])
	require.InDelta(t, 47.61, item["ship_to_lat"].(float64), 0.01)
	require.Equal(t, map[string]any{"city": "Seattle", "state": "WA"}, item["ship_to"])

	// A town the gazetteer does not list falls back to its state's centre.
	body := shpBody(orderID, acct)
	body["ship_from"] = map[string]any{"street": "1 Elm St", "city": "Smallville", "state": "KS", "zip": "66002", "country": "US"}
	d = shpCreate(t, e, owner.caller, body)
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT ship_from_lat FROM shipments WHERE id = $1`, d["id"]).Scan(&fromLat))
	require.NotNil(t, fromLat)
	require.InDelta(t, 38.53, *fromLat, 0.01)
}

// TestShipmentCreateNetworkErrorHidden: a network failure is 502 with a
// generic message: the carrier's (internal) address never reaches the client.
func TestShipmentCreateNetworkErrorHidden(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	hook := func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/ship/v1/shipments") {
			return false
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		_ = conn.Close()
		return true
	}
	sb.hook.Store(&hook)
	res := e.do(owner.caller, "POST", "/api/v1/shipments", shpBody(orderID, acct))
	requireError(t, res, 502, "carrier_error")
	require.NotContains(t, string(res.Raw), strings.TrimPrefix(sb.srv.URL, "http://"))
	require.NotContains(t, string(res.Raw), "/ship/v1")
	// The connection dropped after the request was sent: the outcome is
	// unknown.
	msg := res.Body["error"].(map[string]any)["message"].(string)
	require.True(t, strings.HasPrefix(msg, "carrier_a could not create the label: the carrier did not answer; the label may or may not have been bought"), msg)
	require.True(t, strings.HasSuffix(msg, "(the carrier could not be reached)"), msg)
	require.Equal(t, 1, shpCount(t, e, owner.org))
}

// TestShipmentCreateLostAnswerLookedUp: carrier_b sells the label but its
// answer is lost; carrier_b can look a label up by its reference (the
// shipment id), so the label found is voided: the purchase fails cleanly
// (502, nothing billed, the shipment removed) and one label was bought.
func TestShipmentCreateLostAnswerLookedUp(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_b", "active", map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"})
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	var ships, voids atomic.Int32
	hook := func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ship"):
			ships.Add(1)
			sb.inner.ServeHTTP(httptest.NewRecorder(), r) // sold
			w.WriteHeader(http.StatusGatewayTimeout)      // the answer lost
			return true
		case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/void/cancel/"):
			voids.Add(1)
		}
		return false
	}
	sb.hook.Store(&hook)
	body := shpBody(orderID, acct)
	body["service"] = "03"
	res := e.do(owner.caller, "POST", "/api/v1/shipments", body)
	requireError(t, res, 502, "carrier_error")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "was voided: nothing is billed")
	require.EqualValues(t, 1, ships.Load())
	require.EqualValues(t, 1, voids.Load())
	require.Zero(t, shpCount(t, e, owner.org))
}
