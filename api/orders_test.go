package api

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/auth"
)

// orderTestBridge inserts a bridge row directly (the bridges API is not
// needed to test orders).
func orderTestBridge(t testing.TB, e *testEnv, orgID, name string) string {
	t.Helper()
	id := uuid.NewString()
	_, err := e.deps.Store.Pool.Exec(context.Background(),
		`INSERT INTO bridges (id, organization_id, type, name, config) VALUES ($1, $2, 'storefront_a', $3, '{}')`, id, orgID, name)
	require.NoError(t, err)
	return id
}

// orderTestBody is a valid create body.
func orderTestBody(bridgeID, externalID string) map[string]any {
	return map[string]any{
		"bridge_id":    bridgeID,
		"external_id":  externalID,
		"order_number": "#" + externalID,
		"status":       "pending",
		"customer":     map[string]any{"email": "jane.doe@example.com", "firstName": "Jane", "lastName": "Doe", "phone": "+1 555 0100"},
		"line_items": []any{map[string]any{
			"sku": "SKU-1", "name": "Widget", "quantity": 2, "unitPrice": 9.5, "totalPrice": 19, "requiresShipping": true, "taxable": false,
		}},
		"totals": map[string]any{"subtotal": 19, "shipping": 5, "tax": 1.52, "discount": 0, "total": 25.52},
	}
}

// orderTestCreate creates an order and returns its data.
func orderTestCreate(t testing.TB, e *testEnv, c caller, body map[string]any) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/orders", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

// orderTestFields are the field names of a validation error.
func orderTestFields(t testing.TB, res *response) []string {
	t.Helper()
	requireError(t, res, 400, "validation_error")
	var out []string
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		out = append(out, d.(map[string]any)["field"].(string))
	}
	return out
}

func orderTestKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orderTestSorted(s ...string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// orderTestAPIKeyID is the id of an API key caller.
func orderTestAPIKeyID(t testing.TB, e *testEnv, c caller) string {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE key_hash = $1`, auth.HashAPIKey(c.token)).Scan(&id))
	return id.String()
}

func TestOrderCreate(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	key := e.apiKey(owner, "orders:write", "orders:read")

	before := time.Now().Add(-time.Second)
	body := orderTestBody(bridge, "1001")
	body["shipping_address"] = map[string]any{"line1": "1 Main St", "city": "Springfield", "country": "US"}
	body["tags"] = []string{"vip", "rush"}
	body["note"] = "leave at the door"
	body["metadata"] = map[string]any{"channel": "web"}
	body["source_data"] = map[string]any{"raw": true}
	body["line_items"] = append(body["line_items"].([]any), map[string]any{
		"sku": "SKU-2", "name": "Gadget", "quantity": 1, "unitPrice": 0, "totalPrice": 0, "requiresShipping": false, "taxable": true, "weight": 1.5,
	})
	o := orderTestCreate(t, e, key, body)
	require.Equal(t, orderTestSorted("id", "organizationId", "bridgeId", "externalId", "orderNumber", "status", "paymentStatus",
		"fulfillmentStatus", "customer", "lineItems", "totals", "currency", "tags", "metadata", "orderedAt", "createdAt", "updatedAt",
		"shippingAddress", "billingAddress", "note", "sourceData"), orderTestKeys(o))
	require.Equal(t, owner.org, o["organizationId"])
	require.Equal(t, bridge, o["bridgeId"])
	require.Equal(t, "1001", o["externalId"])
	require.Equal(t, "#1001", o["orderNumber"])
	require.Equal(t, "pending", o["status"])
	require.Equal(t, "pending", o["paymentStatus"], "default")
	require.Equal(t, "unfulfilled", o["fulfillmentStatus"], "default")
	require.Equal(t, "USD", o["currency"], "default")
	require.Equal(t, []any{"vip", "rush"}, o["tags"])
	require.Equal(t, map[string]any{"channel": "web"}, o["metadata"])
	require.Equal(t, map[string]any{"raw": true}, o["sourceData"])
	require.Equal(t, "leave at the door", o["note"])
	require.Nil(t, o["billingAddress"])
	require.Equal(t, "Springfield", o["shippingAddress"].(map[string]any)["city"])
	require.Equal(t, "jane.doe@example.com", o["customer"].(map[string]any)["email"])
	require.Equal(t, "Jane", o["customer"].(map[string]any)["firstName"])
	items := o["lineItems"].([]any)
	require.Len(t, items, 2)
	require.Equal(t, 1.5, items[1].(map[string]any)["weight"], "extra line item keys are kept")
	require.Equal(t, 25.52, o["totals"].(map[string]any)["total"])
	orderedAt, err := time.Parse(time.RFC3339Nano, o["orderedAt"].(string))
	require.NoError(t, err)
	require.True(t, orderedAt.After(before), "ordered_at defaults to now")

	// GET: the full order with the sync timestamps.
	res := e.do(key, "GET", "/api/v1/orders/"+o["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	got := res.data()
	require.Contains(t, got, "sentToFulfillment")
	require.Contains(t, got, "sentToCart")
	require.Nil(t, got["sentToFulfillment"])
	require.NotContains(t, got, "bridge", "only with include")
	for k, v := range o {
		require.Equal(t, v, got[k], k)
	}

	// Optional fields given explicitly; ordered_at kept; null optional fields.
	body = orderTestBody(bridge, "1002")
	body["payment_status"] = "paid"
	body["fulfillment_status"] = "partial"
	body["currency"] = "EUR"
	body["ordered_at"] = "2024-03-01T10:00:00Z"
	body["order_number"] = nil
	body["note"] = nil
	body["customer"] = map[string]any{"email": "solo@example.com"}
	o = orderTestCreate(t, e, owner.caller, body)
	require.Equal(t, "paid", o["paymentStatus"])
	require.Equal(t, "partial", o["fulfillmentStatus"])
	require.Equal(t, "EUR", o["currency"])
	require.Equal(t, "2024-03-01T10:00:00Z", o["orderedAt"])
	require.Nil(t, o["orderNumber"])
	require.Nil(t, o["note"])
	require.Equal(t, []any{}, o["tags"])
	require.Equal(t, map[string]any{}, o["metadata"])
	list := e.do(owner.caller, "GET", "/api/v1/orders?search=solo", nil).list()
	require.Len(t, list, 1)
	require.Equal(t, map[string]any{"name": nil, "email": "solo@example.com"}, list[0]["customer"], "an empty name is null")
}

func TestOrderCreateValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/orders", body) }

	// Every missing required field at once.
	require.ElementsMatch(t, []string{"bridge_id", "external_id", "status", "customer", "line_items", "totals"}, orderTestFields(t, post(map[string]any{})))
	require.ElementsMatch(t, []string{"bridge_id", "external_id", "status", "customer", "line_items", "totals"}, orderTestFields(t, post("null")))

	// Missing nested fields, reported with their paths, together.
	body := orderTestBody(bridge, "v1")
	body["customer"] = map[string]any{"firstName": "Jane"}
	body["line_items"] = []any{map[string]any{}, "not an object"}
	body["totals"] = map[string]any{"subtotal": 1}
	require.ElementsMatch(t, []string{
		"customer.email",
		"line_items[0].sku", "line_items[0].name", "line_items[0].quantity", "line_items[0].unitPrice",
		"line_items[0].totalPrice", "line_items[0].requiresShipping", "line_items[0].taxable",
		"line_items[1]",
		"totals.shipping", "totals.tax", "totals.discount", "totals.total",
	}, orderTestFields(t, post(body)))

	// Wrong types.
	body = orderTestBody(bridge, "v2")
	body["status"] = 5
	body["external_id"] = 1001
	body["customer"] = "jane@example.com"
	body["totals"] = []any{1}
	body["tags"] = "vip"
	body["metadata"] = []any{}
	body["shipping_address"] = "1 Main St"
	body["line_items"] = []any{map[string]any{
		"sku": 7, "name": "Widget", "quantity": "2", "unitPrice": "9.50", "totalPrice": true, "requiresShipping": "yes", "taxable": 0,
	}}
	require.ElementsMatch(t, []string{
		"status", "external_id", "customer", "totals", "tags", "metadata", "shipping_address",
		"line_items[0].sku", "line_items[0].quantity", "line_items[0].unitPrice", "line_items[0].totalPrice",
		"line_items[0].requiresShipping", "line_items[0].taxable",
	}, orderTestFields(t, post(body)))
	body = orderTestBody(bridge, "v2b")
	body["line_items"] = map[string]any{"sku": "x"}
	body["tags"] = []any{"ok", 3, ""}
	require.ElementsMatch(t, []string{"line_items", "tags[1]", "tags[2]"}, orderTestFields(t, post(body)))

	// Bad enums, currency, e-mail, timestamp.
	body = orderTestBody(bridge, "v3")
	body["status"] = "lost"
	body["payment_status"] = "free"
	body["fulfillment_status"] = "done"
	body["currency"] = "usd"
	body["customer"] = map[string]any{"email": "not-an-email"}
	body["ordered_at"] = "yesterday"
	require.ElementsMatch(t, []string{"status", "payment_status", "fulfillment_status", "currency", "customer.email", "ordered_at"}, orderTestFields(t, post(body)))
	for _, c := range []string{"US", "USDX", "U$D"} {
		body = orderTestBody(bridge, "v3")
		body["currency"] = c
		require.Equal(t, []string{"currency"}, orderTestFields(t, post(body)), c)
	}

	// Empty line items; negative, zero and fractional quantities; negative money.
	body = orderTestBody(bridge, "v4")
	body["line_items"] = []any{}
	require.Equal(t, []string{"line_items"}, orderTestFields(t, post(body)))
	for _, q := range []any{-1, 0, 1.5} {
		body = orderTestBody(bridge, "v4")
		body["line_items"].([]any)[0].(map[string]any)["quantity"] = q
		require.Equal(t, []string{"line_items[0].quantity"}, orderTestFields(t, post(body)), "%v", q)
	}
	body = orderTestBody(bridge, "v4")
	body["line_items"].([]any)[0].(map[string]any)["unitPrice"] = -1
	body["totals"].(map[string]any)["total"] = -0.01
	require.ElementsMatch(t, []string{"line_items[0].unitPrice", "totals.total"}, orderTestFields(t, post(body)))

	// Blank strings are missing.
	body = orderTestBody(bridge, "v5")
	body["external_id"] = "   "
	body["line_items"].([]any)[0].(map[string]any)["sku"] = ""
	require.ElementsMatch(t, []string{"external_id", "line_items[0].sku"}, orderTestFields(t, post(body)))

	// bridge_id: not a UUID, unknown, or another organization's: 400 on bridge_id.
	body = orderTestBody("nope", "v6")
	require.Equal(t, []string{"bridge_id"}, orderTestFields(t, post(body)))
	body = orderTestBody(uuid.NewString(), "v6")
	require.Equal(t, []string{"bridge_id"}, orderTestFields(t, post(body)))
	other := e.signup()
	theirs := orderTestBridge(t, e, other.org, "Their shop")
	require.Equal(t, []string{"bridge_id"}, orderTestFields(t, post(orderTestBody(theirs, "v6"))))

	// Not JSON, not an object.
	requireError(t, post("{nope"), 400, "invalid_json")
	requireError(t, post("[1, 2]"), 400, "invalid_json")

	// Nothing was created.
	res := e.do(owner.caller, "GET", "/api/v1/orders", nil)
	require.Equal(t, 200, res.Code)
	require.Empty(t, res.list())
}

func TestOrderCreateDuplicateExternalID(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	b1 := orderTestBridge(t, e, owner.org, "Shop 1")
	b2 := orderTestBridge(t, e, owner.org, "Shop 2")
	orderTestCreate(t, e, owner.caller, orderTestBody(b1, "X-1"))
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders", orderTestBody(b1, "X-1")), 409, "conflict")
	// The same external_id from another bridge is another order.
	orderTestCreate(t, e, owner.caller, orderTestBody(b2, "X-1"))
	// And in another organization.
	other := e.signup()
	orderTestCreate(t, e, other.caller, orderTestBody(orderTestBridge(t, e, other.org, "Shop"), "X-1"))
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/orders", nil).list(), 2)
}

func TestOrderIdempotentCreate(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "orders:write", "orders:read")
	body := orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "I-1")
	first := e.do(key, "POST", "/api/v1/orders", body, "Idempotency-Key", "order-1")
	require.Equal(t, 201, first.Code, "%s", first.Raw)
	again := e.do(key, "POST", "/api/v1/orders", body, "Idempotency-Key", "order-1")
	require.Equal(t, 201, again.Code, "a replay, not a 409 duplicate")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Raw, again.Raw)
	require.Len(t, e.do(key, "GET", "/api/v1/orders", nil).list(), 1)
}

// orderTestHooks records OrderCreated calls.
type orderTestHooks struct {
	mu    sync.Mutex
	calls [][2]uuid.UUID
	err   error
}

func (h *orderTestHooks) OrderCreated(_ context.Context, orgID, orderID uuid.UUID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, [2]uuid.UUID{orgID, orderID})
	return h.err
}

func TestOrderCreatedHook(t *testing.T) {
	hooks := &orderTestHooks{}
	e := newEnv(t, func(d *Deps) { d.OrderHooks = hooks })
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	o := orderTestCreate(t, e, owner.caller, orderTestBody(bridge, "H-1"))
	require.Equal(t, [][2]uuid.UUID{{uuid.MustParse(owner.org), uuid.MustParse(o["id"].(string))}}, hooks.calls)

	// A failing hook does not undo or fail the create.
	hooks.err = errors.New("rules broke")
	orderTestCreate(t, e, owner.caller, orderTestBody(bridge, "H-2"))
	require.Len(t, hooks.calls, 2)
	// Refused creates do not call it.
	e.do(owner.caller, "POST", "/api/v1/orders", orderTestBody(bridge, "H-2"))
	e.do(owner.caller, "POST", "/api/v1/orders", map[string]any{})
	require.Len(t, hooks.calls, 2)
}

func TestOrderList(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	b1 := orderTestBridge(t, e, owner.org, "Shop 1")
	b2 := orderTestBridge(t, e, owner.org, "Shop 2")
	type spec struct {
		ext, number, first, last, email, status, bridge string
		total                                           float64
	}
	specs := []spec{
		{"A1", "#A-100", "Alice", "Smith", "alice@example.com", "pending", b1, 30},
		{"A2", "#A-101", "Bob", "Jones", "bob.jones@mail.test", "shipped", b1, 10},
		{"A3", "#A-102", "Carol", "SMITHERS", "carol@example.org", "pending", b2, 20},
		{"A4", "50%_OFF", "Dan", "Brown", "dan@example.com", "delivered", b2, 40},
		{"A5", "#A-104", "Eve", "Stone", "EVE@Example.com", "on_hold", b1, 5},
	}
	ids := map[string]string{}
	for _, s := range specs {
		body := orderTestBody(s.bridge, s.ext)
		body["order_number"] = s.number
		body["status"] = s.status
		body["customer"] = map[string]any{"email": s.email, "firstName": s.first, "lastName": s.last}
		body["totals"].(map[string]any)["total"] = s.total
		ids[s.ext] = orderTestCreate(t, e, owner.caller, body)["id"].(string)
	}
	// Another organization's orders never show.
	other := e.signup()
	orderTestCreate(t, e, other.caller, orderTestBody(orderTestBridge(t, e, other.org, "Theirs"), "Z1"))

	exts := func(res *response) []string {
		t.Helper()
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var out []string
		for _, it := range res.list() {
			for ext, id := range ids {
				if id == it["id"] {
					out = append(out, ext)
				}
			}
		}
		return out
	}
	get := func(q string) *response { return e.do(owner.caller, "GET", "/api/v1/orders"+q, nil) }

	// Default: newest first, exact item fields, pagination.
	res := get("")
	require.Equal(t, []string{"A5", "A4", "A3", "A2", "A1"}, exts(res))
	item := res.list()[0]
	require.Equal(t, orderTestSorted("id", "order_number", "status", "customer", "line_items", "total", "currency", "bridge_id",
		"external_id", "sent_to_fulfillment", "sent_to_cart", "created_at", "updated_at"), orderTestKeys(item))
	require.Equal(t, map[string]any{"name": "Eve Stone", "email": "EVE@Example.com"}, item["customer"])
	require.Equal(t, 5.0, item["total"])
	require.Equal(t, "#A-104", item["order_number"])
	require.Equal(t, "A5", item["external_id"])
	require.Equal(t, b1, item["bridge_id"])
	require.Nil(t, item["sent_to_fulfillment"])
	require.Nil(t, item["sent_to_cart"])
	require.Len(t, item["line_items"], 1)
	require.Equal(t, map[string]any{"page": 1.0, "limit": 20.0, "total": 5.0, "totalPages": 1.0, "hasMore": false}, res.Body["pagination"])

	// Filters.
	require.Equal(t, []string{"A3", "A1"}, exts(get("?status=pending")))
	require.Equal(t, []string{"A5"}, exts(get("?status=on_hold")))
	require.Equal(t, []string{"A4", "A3"}, exts(get("?bridge_id="+b2)))
	require.Equal(t, []string{"A3"}, exts(get("?bridge_id="+b2+"&status=pending")))
	require.Empty(t, exts(get("?bridge_id="+uuid.NewString())))

	// Search: order number, name, e-mail; case-insensitive substrings.
	require.Equal(t, []string{"A3", "A1"}, exts(get("?search=smith")))
	require.Equal(t, []string{"A3", "A1"}, exts(get("?search=SMITH")))
	require.Equal(t, []string{"A2"}, exts(get("?search=a-101")))
	require.Equal(t, []string{"A2"}, exts(get("?search="+url.QueryEscape("bob.jones@MAIL"))))
	require.Equal(t, []string{"A5"}, exts(get("?search=eve%40example")))
	require.Equal(t, []string{"A3"}, exts(get("?search="+url.QueryEscape("carol smithers"))))
	require.Equal(t, []string{"A5", "A4", "A1"}, exts(get("?search=example.com")))
	// LIKE wildcards are literal.
	require.Equal(t, []string{"A4"}, exts(get("?search="+url.QueryEscape("50%_"))))
	require.Equal(t, []string{"A4"}, exts(get("?search="+url.QueryEscape("%"))))
	require.Equal(t, []string{"A4"}, exts(get("?search=_")))
	require.Empty(t, exts(get("?search=a_10")), "_ would match the - of #A-10x")
	require.Empty(t, exts(get("?search="+url.QueryEscape("a%104"))))
	require.Empty(t, exts(get("?search="+url.QueryEscape(`\`))))
	require.Empty(t, exts(get("?search=nobody")))
	res = get("?search=smith&status=pending&bridge_id=" + b1)
	require.Equal(t, []string{"A1"}, exts(res))
	require.Equal(t, 1.0, res.Body["pagination"].(map[string]any)["total"])

	// Sort and order (whitelisted).
	require.Equal(t, []string{"A5", "A2", "A3", "A1", "A4"}, exts(get("?sort=total&order=asc")))
	require.Equal(t, []string{"A4", "A1", "A3", "A2", "A5"}, exts(get("?sort=total")))
	require.Equal(t, []string{"A1", "A2", "A3", "A5", "A4"}, exts(get("?sort=order_number&order=asc")))
	require.Equal(t, []string{"A1", "A2", "A3", "A4", "A5"}, exts(get("?order=asc")))
	require.Len(t, exts(get("?sort=updated_at")), 5)
	require.Len(t, exts(get("?sort=ordered_at&order=DESC")), 5)
	require.Equal(t, []string{"sort"}, orderTestFields(t, get("?sort=customer_email")))
	require.Equal(t, []string{"sort"}, orderTestFields(t, get("?sort="+url.QueryEscape("total;DROP TABLE orders"))))
	require.Equal(t, []string{"order"}, orderTestFields(t, get("?order=up")))

	// since: created after the timestamp.
	var mid time.Time
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT created_at FROM orders WHERE id = $1`, ids["A3"]).Scan(&mid))
	require.Equal(t, []string{"A5", "A4"}, exts(get("?since="+url.QueryEscape(mid.Format(time.RFC3339Nano)))))
	require.Len(t, exts(get("?since=2000-01-01")), 5)
	require.Empty(t, exts(get("?since="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339)))))

	// Pagination: page 2, clamp, out of range, totals from the count.
	res = get("?limit=2&page=2")
	require.Equal(t, []string{"A3", "A2"}, exts(res))
	require.Equal(t, map[string]any{"page": 2.0, "limit": 2.0, "total": 5.0, "totalPages": 3.0, "hasMore": true}, res.Body["pagination"])
	res = get("?limit=2&page=3")
	require.Equal(t, []string{"A1"}, exts(res))
	require.Equal(t, 5.0, res.Body["pagination"].(map[string]any)["total"])
	res = get("?limit=2&page=9")
	require.Empty(t, exts(res))
	require.Equal(t, 5.0, res.Body["pagination"].(map[string]any)["total"])
	res = get("?limit=1000")
	require.Equal(t, 100.0, res.Body["pagination"].(map[string]any)["limit"], "clamped")
	require.Len(t, exts(res), 5)

	// Bad parameters, all named at once.
	require.ElementsMatch(t, []string{"page", "limit", "status", "bridge_id", "since", "include"},
		orderTestFields(t, get("?page=0&limit=x&status=lost&bridge_id=nope&since=yesterday&include=shipments")))

	// include=bridge: the bridge summary; dispatch_assignments: [] for now.
	res = get("?include=bridge,dispatch_assignments")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	for _, it := range res.list() {
		b := it["bridge"].(map[string]any)
		require.Equal(t, orderTestSorted("id", "name", "type", "status"), orderTestKeys(b))
		require.Equal(t, it["bridge_id"], b["id"])
		require.Equal(t, "storefront_a", b["type"])
		require.Equal(t, "active", b["status"])
		require.Equal(t, []any{}, it["dispatch_assignments"])
	}
	require.Equal(t, "Shop 1", res.list()[0]["bridge"].(map[string]any)["name"])
	res = get("?include=bridge")
	require.NotContains(t, res.list()[0], "dispatch_assignments")
	// A deleted bridge leaves the order with a null bridge.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM bridges WHERE id = $1`, b2)
	require.NoError(t, err)
	res = get("?include=bridge&search=a-102")
	require.Len(t, res.list(), 1)
	require.Contains(t, res.list()[0], "bridge")
	require.Nil(t, res.list()[0]["bridge"])
	require.Nil(t, res.list()[0]["bridge_id"])
}

func TestOrderGetInclude(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	o := orderTestCreate(t, e, owner.caller, orderTestBody(bridge, "G-1"))
	res := e.do(owner.caller, "GET", "/api/v1/orders/"+o["id"].(string)+"?include=bridge,dispatch_assignments", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"id": bridge, "name": "Shop", "type": "storefront_a", "status": "active"}, res.data()["bridge"])
	require.Equal(t, []any{}, res.data()["dispatchAssignments"])
	requireError(t, e.do(owner.caller, "GET", "/api/v1/orders/"+o["id"].(string)+"?include=everything", nil), 400, "validation_error")
}

func TestOrderOtherOrganization(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	o := orderTestCreate(t, e, owner.caller, orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "O-1"))
	path := "/api/v1/orders/" + o["id"].(string)

	other := e.signup()
	otherKey := e.apiKey(other, "orders:read", "orders:write")
	for _, c := range []caller{other.caller, otherKey} {
		requireError(t, e.do(c, "GET", path, nil), 404, "not_found")
		requireError(t, e.do(c, "PATCH", path, map[string]any{"status": "cancelled"}), 404, "not_found")
		requireError(t, e.do(c, "DELETE", path, nil), 404, "not_found")
		requireError(t, e.do(c, "GET", path+"/activities", nil), 404, "not_found")
		requireError(t, e.do(c, "POST", path+"/notes", map[string]any{"note": "hi"}), 404, "not_found")
	}
	// Unknown and malformed ids.
	for _, p := range []string{"/api/v1/orders/" + uuid.NewString(), "/api/v1/orders/not-a-uuid"} {
		requireError(t, e.do(owner.caller, "GET", p, nil), 404, "not_found")
		requireError(t, e.do(owner.caller, "PATCH", p, map[string]any{"status": "cancelled"}), 404, "not_found")
		requireError(t, e.do(owner.caller, "DELETE", p, nil), 404, "not_found")
		requireError(t, e.do(owner.caller, "GET", p+"/activities", nil), 404, "not_found")
		requireError(t, e.do(owner.caller, "POST", p+"/notes", map[string]any{"note": "hi"}), 404, "not_found")
	}
	// Untouched.
	res := e.do(owner.caller, "GET", path, nil)
	require.Equal(t, "pending", res.data()["status"])
	require.Empty(t, e.do(owner.caller, "GET", path+"/activities", nil).list())
}

func TestOrderPatch(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "orders:read", "orders:write")
	keyID := orderTestAPIKeyID(t, e, key)
	body := orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "P-1")
	body["metadata"] = map[string]any{"a": 1, "b": 2}
	body["tags"] = []string{"old"}
	o := orderTestCreate(t, e, owner.caller, body)
	path := "/api/v1/orders/" + o["id"].(string)
	activities := func() []map[string]any {
		t.Helper()
		res := e.do(owner.caller, "GET", path+"/activities", nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		return res.list()
	}

	// A status change by a user.
	res := e.do(owner.caller, "PATCH", path, map[string]any{"status": "processing"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "processing", res.data()["status"])
	require.Contains(t, res.data(), "sentToFulfillment", "the full order")
	require.NotEqual(t, o["updatedAt"], res.data()["updatedAt"])
	acts := activities()
	require.Len(t, acts, 1)
	a := acts[0]
	require.Equal(t, orderTestSorted("id", "type", "description", "actor", "metadata", "created_at"), orderTestKeys(a))
	require.Equal(t, "status_change", a["type"])
	require.Equal(t, map[string]any{"from": "pending", "to": "processing"}, a["metadata"])
	require.Equal(t, map[string]any{"type": "user", "id": owner.userID, "name": "Ada Lovelace"}, a["actor"])
	require.Contains(t, a["description"], "pending")
	require.Contains(t, a["description"], "processing")

	// A status change by an API key; any move is allowed (even backwards).
	res = e.do(key, "PATCH", path, map[string]any{"status": "pending"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	acts = activities()
	require.Len(t, acts, 2)
	require.Equal(t, map[string]any{"from": "processing", "to": "pending"}, acts[1]["metadata"])
	require.Equal(t, map[string]any{"type": "api_key", "id": keyID, "name": "test key"}, acts[1]["actor"])

	// Other fields: one edit activity naming them; metadata is merged.
	res = e.do(key, "PATCH", path, map[string]any{
		"notes": "call first", "tags": []string{"vip", "gift"}, "metadata": map[string]any{"b": 3, "c": "x", "a": nil},
		"shipping_address": map[string]any{"city": "Paris"},
	})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, "call first", d["note"])
	require.Equal(t, []any{"vip", "gift"}, d["tags"])
	require.Equal(t, map[string]any{"b": 3.0, "c": "x"}, d["metadata"])
	require.Equal(t, map[string]any{"city": "Paris"}, d["shippingAddress"])
	require.Equal(t, "pending", d["status"])
	acts = activities()
	require.Len(t, acts, 3)
	require.Equal(t, "edit", acts[2]["type"])
	require.ElementsMatch(t, []any{"notes", "tags", "metadata", "shipping_address"}, acts[2]["metadata"].(map[string]any)["fields"])
	require.Equal(t, "api_key", acts[2]["actor"].(map[string]any)["type"])

	// Status and edits together: two activities; unchanged values are not changes.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"status": "confirmed", "notes": "call first", "tags": []string{"vip"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	acts = activities()
	require.Len(t, acts, 5)
	require.Equal(t, "status_change", acts[3]["type"])
	require.Equal(t, "edit", acts[4]["type"])
	require.Equal(t, []any{"tags"}, acts[4]["metadata"].(map[string]any)["fields"])

	// A patch that changes nothing writes nothing.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"status": "confirmed", "tags": []string{"vip"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	res = e.do(owner.caller, "PATCH", path, map[string]any{})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, activities(), 5)

	// Clearing the note and the address.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"notes": nil, "shipping_address": nil})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Nil(t, res.data()["note"])
	require.Nil(t, res.data()["shippingAddress"])

	// Line items, validated like create.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"line_items": []any{map[string]any{
		"sku": "NEW", "name": "New", "quantity": 3, "unitPrice": 1, "totalPrice": 3, "requiresShipping": true, "taxable": true,
	}}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "NEW", res.data()["lineItems"].([]any)[0].(map[string]any)["sku"])

	// Validation, all at once.
	require.ElementsMatch(t, []string{"status", "notes", "metadata", "tags", "line_items[0].quantity", "shipping_address"},
		orderTestFields(t, e.do(owner.caller, "PATCH", path, map[string]any{
			"status": "lost", "notes": 5, "metadata": "x", "tags": nil, "shipping_address": []any{},
			"line_items": []any{map[string]any{"sku": "a", "name": "b", "quantity": -2, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}},
		})))
	require.Equal(t, []string{"line_items"}, orderTestFields(t, e.do(owner.caller, "PATCH", path, map[string]any{"line_items": []any{}})))
	require.Equal(t, []string{"notes"}, orderTestFields(t, e.do(owner.caller, "PATCH", path, map[string]any{"notes": strings.Repeat("x", 5001)})))
	requireError(t, e.do(owner.caller, "PATCH", path, "{bad"), 400, "invalid_json")
}

func TestOrderLineItemsLockedOnceShipped(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	newItems := []any{map[string]any{"sku": "N", "name": "N", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}}
	for _, st := range []string{"shipped", "delivered"} {
		body := orderTestBody(bridge, "L-"+st)
		body["status"] = st
		o := orderTestCreate(t, e, owner.caller, body)
		path := "/api/v1/orders/" + o["id"].(string)
		requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"line_items": newItems}), 409, "conflict")
		// Also with other changes in the same request: nothing is applied.
		requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"line_items": newItems, "status": "processing", "notes": "x"}), 409, "conflict")
		got := e.do(owner.caller, "GET", path, nil).data()
		require.Equal(t, st, got["status"])
		require.Nil(t, got["note"])
		require.Equal(t, "SKU-1", got["lineItems"].([]any)[0].(map[string]any)["sku"])
		require.Empty(t, e.do(owner.caller, "GET", path+"/activities", nil).list())
		// Sending the same line items back is not a change.
		res := e.do(owner.caller, "PATCH", path, map[string]any{"line_items": o["lineItems"], "notes": "ok"})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		// Other fields still change.
		res = e.do(owner.caller, "PATCH", path, map[string]any{"status": "delivered", "tags": []string{"done"}})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
	}
	// Before shipping, line items change.
	o := orderTestCreate(t, e, owner.caller, orderTestBody(bridge, "L-open"))
	res := e.do(owner.caller, "PATCH", "/api/v1/orders/"+o["id"].(string), map[string]any{"line_items": newItems})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
}

func TestOrderNotesAndActivities(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "orders:read", "orders:write")
	keyID := orderTestAPIKeyID(t, e, key)
	o := orderTestCreate(t, e, owner.caller, orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "N-1"))
	path := "/api/v1/orders/" + o["id"].(string)

	res := e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": "  customer called  "})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	n := res.data()
	require.Equal(t, orderTestSorted("id", "type", "description", "actor", "created_at"), orderTestKeys(n))
	require.Equal(t, "note", n["type"])
	require.Equal(t, "customer called", n["description"])
	require.Equal(t, map[string]any{"type": "user", "id": owner.userID, "name": "Ada Lovelace"}, n["actor"])

	res = e.do(key, "POST", path+"/notes", map[string]any{"note": "label printed"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"type": "api_key", "id": keyID, "name": "test key"}, res.data()["actor"])

	require.Equal(t, 200, e.do(owner.caller, "PATCH", path, map[string]any{"status": "shipped"}).Code)
	require.Equal(t, 201, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": "third"}).Code)

	// Chronological.
	acts := e.do(key, "GET", path+"/activities", nil).list()
	require.Len(t, acts, 4)
	var types, descs []string
	var prev time.Time
	for _, a := range acts {
		types = append(types, a["type"].(string))
		descs = append(descs, a["description"].(string))
		at, err := time.Parse(time.RFC3339Nano, a["created_at"].(string))
		require.NoError(t, err)
		require.False(t, at.Before(prev))
		prev = at
		require.NotNil(t, a["metadata"])
	}
	require.Equal(t, []string{"note", "note", "status_change", "note"}, types)
	require.Equal(t, "customer called", descs[0])
	require.Equal(t, "third", descs[3])

	// Validation.
	requireError(t, e.do(owner.caller, "POST", path+"/notes", map[string]any{}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": "   "}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": 5}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": strings.Repeat("x", 5001)}), 400, "validation_error")
	require.Equal(t, 201, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": strings.Repeat("é", 5000)}).Code)
}

func TestOrderDelete(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	o := orderTestCreate(t, e, owner.caller, orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "D-1"))
	path := "/api/v1/orders/" + o["id"].(string)
	require.Equal(t, 201, e.do(owner.caller, "POST", path+"/notes", map[string]any{"note": "x"}).Code)
	res := e.do(owner.caller, "DELETE", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(owner.caller, "GET", path, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", path, nil), 404, "not_found")
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM order_activities WHERE order_id = $1`, o["id"]).Scan(&n))
	require.Zero(t, n, "activities go with the order")
}

func TestOrderScopes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	o := orderTestCreate(t, e, owner.caller, orderTestBody(orderTestBridge(t, e, owner.org, "Shop"), "S-1"))
	path := "/api/v1/orders/" + o["id"].(string)
	reader := e.apiKey(owner, "orders:read")
	nobody := e.apiKey(owner, "bridges:read")

	insufficient := func(res *response, scope string) {
		t.Helper()
		requireError(t, res, 403, "insufficient_scope")
		require.Equal(t, []any{map[string]any{"field": "scope", "message": scope}}, res.Body["error"].(map[string]any)["details"])
	}
	insufficient(e.do(reader, "POST", "/api/v1/orders", orderTestBody(o["bridgeId"].(string), "S-2")), "orders:write")
	insufficient(e.do(reader, "PATCH", path, map[string]any{"status": "cancelled"}), "orders:write")
	insufficient(e.do(reader, "DELETE", path, nil), "orders:write")
	insufficient(e.do(reader, "POST", path+"/notes", map[string]any{"note": "x"}), "orders:write")
	require.Equal(t, 200, e.do(reader, "GET", "/api/v1/orders", nil).Code)
	require.Equal(t, 200, e.do(reader, "GET", path, nil).Code)
	require.Equal(t, 200, e.do(reader, "GET", path+"/activities", nil).Code)

	insufficient(e.do(nobody, "GET", "/api/v1/orders", nil), "orders:read")
	insufficient(e.do(nobody, "GET", path, nil), "orders:read")
	insufficient(e.do(nobody, "GET", path+"/activities", nil), "orders:read")

	requireError(t, e.do(caller{}, "GET", "/api/v1/orders", nil), 401, "unauthorized")
	require.Equal(t, "pending", e.do(owner.caller, "GET", path, nil).data()["status"])
}

func TestOrderListCountBeyondPage(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	for i := range 25 {
		orderTestCreate(t, e, owner.caller, orderTestBody(bridge, fmt.Sprintf("C-%02d", i)))
	}
	res := e.do(owner.caller, "GET", "/api/v1/orders?limit=10", nil)
	require.Len(t, res.list(), 10)
	require.Equal(t, map[string]any{"page": 1.0, "limit": 10.0, "total": 25.0, "totalPages": 3.0, "hasMore": true}, res.Body["pagination"])
	res = e.do(owner.caller, "GET", "/api/v1/orders?limit=10&page=3", nil)
	require.Len(t, res.list(), 5)
	require.Equal(t, false, res.Body["pagination"].(map[string]any)["hasMore"])
}

// Numbers are kept as written: a 64-bit id from a platform is not rounded
// through float64, on create or when metadata is merged.
func TestOrderLargeNumbersKept(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	raw := fmt.Sprintf(`{"bridge_id": %q, "external_id": "big", "status": "pending",
		"customer": {"email": "a@example.com"},
		"line_items": [{"sku": "S", "name": "N", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true, "variantId": 9007199254740993}],
		"totals": {"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
		"metadata": {"platformId": 12345678901234567890},
		"source_data": {"id": 9007199254740993}}`, bridge)
	res := e.do(owner.caller, "POST", "/api/v1/orders", raw)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	path := "/api/v1/orders/" + res.data()["id"].(string)
	for _, r := range []*response{res, e.do(owner.caller, "GET", path, nil)} {
		require.Contains(t, string(r.Raw), `"platformId":12345678901234567890`)
		require.Contains(t, string(r.Raw), `"variantId":9007199254740993`)
		require.Contains(t, string(r.Raw), `"id":9007199254740993`)
	}
	res = e.do(owner.caller, "PATCH", path, `{"metadata": {"other": 18014398509481985}}`)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Contains(t, string(res.Raw), `"platformId":12345678901234567890`)
	require.Contains(t, string(res.Raw), `"other":18014398509481985`)
}

// A duplicate external_id is 409 naming the order that holds it, and the
// order list filters by external_id (extension), counting exactly.
func TestOrderExternalIDConflictAndFilter(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := e.bridgeStorefrontA(owner.caller, "shop", "tok")["id"]
	body := func(ext string) map[string]any {
		return map[string]any{
			"bridge_id": bridge, "external_id": ext, "status": "pending",
			"customer":   map[string]any{"email": "b@example.com"},
			"line_items": []map[string]any{{"sku": "S", "name": "N", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}},
			"totals":     map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
		}
	}
	first := e.do(owner.caller, "POST", "/api/v1/orders", body("EXT-1"))
	require.Equal(t, 201, first.Code, "%s", first.Raw)
	require.Equal(t, 201, e.do(owner.caller, "POST", "/api/v1/orders", body("EXT-2")).Code)
	dup := e.do(owner.caller, "POST", "/api/v1/orders", body("EXT-1"))
	requireError(t, dup, 409, "conflict")
	details := dup.Body["error"].(map[string]any)["details"].([]any)
	require.Equal(t, map[string]any{"field": "external_id", "message": "already used by order " + first.data()["id"].(string)}, details[0])

	list := e.do(owner.caller, "GET", "/api/v1/orders?external_id=EXT-1", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	items := list.Body["data"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, first.data()["id"], items[0].(map[string]any)["id"])
	require.EqualValues(t, 1, list.Body["pagination"].(map[string]any)["total"])
	none := e.do(owner.caller, "GET", "/api/v1/orders?external_id=EXT-9&limit=1&page=2", nil)
	require.Equal(t, 200, none.Code)
	require.EqualValues(t, 0, none.Body["pagination"].(map[string]any)["total"])
	requireError(t, e.do(owner.caller, "GET", "/api/v1/orders?external_id="+strings.Repeat("x", 256), nil), 400, "validation_error")
}
