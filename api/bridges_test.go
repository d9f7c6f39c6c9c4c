package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// bridgeTestFixture is a complete config of one bridge type: public values and
// secret values (unique strings, so a leak is easy to spot).
type bridgeTestFixture struct {
	typ     string
	public  map[string]any
	secrets map[string]string
}

func bridgeTestFixtures() []bridgeTestFixture {
	sec := func(name string) string { return "sek-" + name + "-" + uuid.NewString() }
	return []bridgeTestFixture{
		{platforms.TypeStorefrontA, map[string]any{"shopDomain": "acme.example.com"}, map[string]string{"accessToken": sec("at")}},
		{platforms.TypeShippingHubA, map[string]any{"storeId": "42"}, map[string]string{"apiKey": sec("ak"), "apiSecret": sec("as")}},
		{platforms.TypeStorefrontB, map[string]any{"storeUrl": "https://shop.example.com"}, map[string]string{"consumerKey": sec("ck"), "consumerSecret": sec("cs")}},
		{platforms.TypeStorefrontC, map[string]any{"storeHash": "abc123"}, map[string]string{"accessToken": sec("at")}},
		{platforms.TypeMarketplaceA, map[string]any{"sellerId": "S1", "clientId": "C1", "marketplaceId": "M1"}, map[string]string{"refreshToken": sec("rt"), "clientSecret": sec("cs")}},
	}
}

// camel is the fixture's config with camelCase keys.
func (f bridgeTestFixture) camel() map[string]any {
	out := map[string]any{}
	for k, v := range f.public {
		out[k] = v
	}
	for k, v := range f.secrets {
		out[k] = v
	}
	return out
}

// snake is the fixture's config with snake_case keys.
func (f bridgeTestFixture) snake() map[string]any {
	out := map[string]any{}
	for k, v := range f.camel() {
		out[bridgeSnakeKey(k)] = v
	}
	return out
}

func bridgeSnakeKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// createBridge creates a bridge and returns its JSON.
func (e *testEnv) bridgeCreate(c caller, typ, name string, cfg map[string]any) map[string]any {
	e.t.Helper()
	res := e.do(c, "POST", "/api/v1/bridges", map[string]any{"type": typ, "name": name, "config": cfg})
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

// storefrontA creates a storefront_a bridge with the given token.
func (e *testEnv) bridgeStorefrontA(c caller, name, token string) map[string]any {
	e.t.Helper()
	return e.bridgeCreate(c, platforms.TypeStorefrontA, name, map[string]any{"shopDomain": "acme.example.com", "accessToken": token})
}

// bridgeRow reads the stored row of a bridge.
func (e *testEnv) bridgeStoredRow(id string) store.Bridge {
	e.t.Helper()
	b, err := store.BridgeByIDAnyOrganization(e.t.Context(), e.deps.Store.Pool, uuid.MustParse(id))
	require.NoError(e.t, err)
	return b
}

// requireSecretStoredSafely checks the raw row: config has no secret,
// credentials are set, and the decrypted full config holds the secret.
func (e *testEnv) bridgeRequireSecretSealed(id, key, secret string) {
	e.t.Helper()
	var configText string
	var creds []byte
	require.NoError(e.t, e.deps.Store.Pool.QueryRow(e.t.Context(), `SELECT config::text, credentials FROM bridges WHERE id = $1`, id).Scan(&configText, &creds))
	require.NotContains(e.t, configText, secret)
	require.NotContains(e.t, configText, key, "secret keys live in credentials only")
	require.NotNil(e.t, creds)
	require.NotContains(e.t, string(creds), secret)
	full, err := store.BridgeFullConfig(e.deps.Secrets, e.bridgeStoredRow(id))
	require.NoError(e.t, err)
	require.Equal(e.t, secret, full[key])
}

func bridgeErrFields(t testing.TB, res *response) []string {
	t.Helper()
	e, _ := res.Body["error"].(map[string]any)
	details, _ := e["details"].([]any)
	var out []string
	for _, d := range details {
		out = append(out, d.(map[string]any)["field"].(string))
	}
	return out
}

func TestBridgeCreateEveryType(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	for _, f := range bridgeTestFixtures() {
		for _, style := range []string{"camel", "snake"} {
			t.Run(f.typ+"/"+style, func(t *testing.T) {
				cfg := f.camel()
				if style == "snake" {
					cfg = f.snake()
				}
				res := e.do(owner.caller, "POST", "/api/v1/bridges", map[string]any{"type": f.typ, "name": "  My " + f.typ + "  ", "config": cfg})
				require.Equal(t, 201, res.Code, "%s", res.Raw)
				d := res.data()
				for _, k := range []string{"id", "organizationId", "type", "name", "config", "status", "lastSyncAt", "createdAt", "updatedAt"} {
					require.Contains(t, d, k)
				}
				require.Equal(t, owner.org, d["organizationId"])
				require.Equal(t, f.typ, d["type"])
				require.Equal(t, "My "+f.typ, d["name"])
				require.Equal(t, "active", d["status"])
				require.Nil(t, d["lastSyncAt"])
				got := d["config"].(map[string]any)
				for k, v := range f.public {
					require.Equal(t, v, got[k], k)
				}
				for k, secret := range f.secrets {
					require.Equal(t, platforms.RedactedValue, got[k], k)
					require.NotContains(t, string(res.Raw), secret)
					e.bridgeRequireSecretSealed(d["id"].(string), k, secret)
				}
				require.Equal(t, []any{}, got["enabledWebhooks"])
				require.Equal(t, map[string]any{}, got["registeredWebhooks"])
				for k := range got {
					require.NotContains(t, k, "_", "keys are camelCase")
				}

				// GET redacts as well.
				one := e.do(owner.caller, "GET", "/api/v1/bridges/"+d["id"].(string), nil)
				require.Equal(t, 200, one.Code, "%s", one.Raw)
				require.Equal(t, d, one.data())
				for _, secret := range f.secrets {
					require.NotContains(t, string(one.Raw), secret)
				}
			})
		}
	}

	// The list redacts every bridge.
	list := e.do(owner.caller, "GET", "/api/v1/bridges?limit=100", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	require.Len(t, list.list(), 10)
	require.Contains(t, string(list.Raw), platforms.RedactedValue)
	require.NotContains(t, string(list.Raw), "sek-")
}

func TestBridgeCreateValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/bridges", body) }

	// Every missing required config field is named, one detail each.
	res := post(map[string]any{"type": "marketplace_a", "name": "m", "config": map[string]any{"seller_id": "S1"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.refreshToken", "config.clientId", "config.clientSecret", "config.marketplaceId"}, bridgeErrFields(t, res))
	d := res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)
	require.Equal(t, "is required", d["message"])

	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": map[string]any{}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.shopDomain", "config.accessToken"}, bridgeErrFields(t, res))

	// Blank and null values are missing; the redaction placeholder is not a value.
	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": map[string]any{"shopDomain": "  ", "accessToken": platforms.RedactedValue}})
	require.Equal(t, []string{"config.shopDomain", "config.accessToken"}, bridgeErrFields(t, res))
	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": map[string]any{"shopDomain": nil, "accessToken": "x"}})
	require.Equal(t, []string{"config.shopDomain"}, bridgeErrFields(t, res))

	// type, name and config are required.
	res = post(map[string]any{})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"type", "name", "config"}, bridgeErrFields(t, res))
	res = post(map[string]any{"type": "erp_x", "name": "x", "config": map[string]any{}})
	require.Equal(t, []string{"type"}, bridgeErrFields(t, res))

	// Wrong JSON types.
	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": "shopDomain=x"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config"}, bridgeErrFields(t, res))
	res = post(map[string]any{"type": "storefront_a", "name": 7, "config": map[string]any{}})
	requireError(t, res, 400, "validation_error")
	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": map[string]any{"shopDomain": 12, "accessToken": "t", "enabledWebhooks": "orders/create"}})
	requireError(t, res, 400, "validation_error")
	require.ElementsMatch(t, []string{"config.shopDomain", "config.enabledWebhooks"}, bridgeErrFields(t, res))
	requireError(t, post("[1,2]"), 400, "invalid_json")

	// Name length: 1-100 characters.
	good := map[string]any{"shopDomain": "a.example.com", "accessToken": "tok"}
	res = post(map[string]any{"type": "storefront_a", "name": "   ", "config": good})
	require.Equal(t, []string{"name"}, bridgeErrFields(t, res))
	res = post(map[string]any{"type": "storefront_a", "name": strings.Repeat("n", 101), "config": good})
	require.Equal(t, []string{"name"}, bridgeErrFields(t, res))
	require.Equal(t, 201, post(map[string]any{"type": "storefront_a", "name": strings.Repeat("é", 100), "config": good}).Code)

	// A status in the body is ignored: bridges start active.
	res = post(map[string]any{"type": "storefront_a", "name": "s", "config": good, "status": "paused"})
	require.Equal(t, 201, res.Code)
	require.Equal(t, "active", res.data()["status"])

	// Nothing invalid was stored.
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/bridges", nil).list(), 2)
}

func TestBridgeUnknownKeysAndWebhookConfig(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	d := e.bridgeCreate(owner.caller, "storefront_a", "s", map[string]any{
		"shop_domain": "a.example.com", "access_token": "tok-1", "custom_setting": "x",
		"webhook_secret": "whsec-1", "my_private_token": "ptok-1", "enabled_webhooks": []string{"orders/create"},
	})
	cfg := d["config"].(map[string]any)
	require.Equal(t, "x", cfg["customSetting"])
	require.Equal(t, platforms.RedactedValue, cfg["webhookSecret"])
	require.Equal(t, platforms.RedactedValue, cfg["myPrivateToken"], "credential-like unknown keys are secret")
	require.Equal(t, []any{"orders/create"}, cfg["enabledWebhooks"])
	require.NotContains(t, string(e.do(owner.caller, "GET", "/api/v1/bridges/"+d["id"].(string), nil).Raw), "ptok-1")
	e.bridgeRequireSecretSealed(d["id"].(string), "myPrivateToken", "ptok-1")
	e.bridgeRequireSecretSealed(d["id"].(string), "webhookSecret", "whsec-1")
}

func TestBridgePatch(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	created := e.bridgeCreate(owner.caller, "storefront_b", "Woo", map[string]any{
		"storeUrl": "https://shop.example.com", "consumerKey": "ck-original", "consumerSecret": "cs-original",
	})
	id := created["id"].(string)
	path := "/api/v1/bridges/" + id

	// Sending back what was read changes nothing secret: with a new host
	// it is refused (stored credentials never follow a new storeUrl, issue
	// 15); with the credentials entered again it is taken.
	readBack := e.do(owner.caller, "GET", path, nil).data()["config"].(map[string]any)
	readBack["storeUrl"] = "https://new.example.com"
	res := e.do(owner.caller, "PATCH", path, map[string]any{"config": readBack})
	requireError(t, res, 400, "validation_error")
	require.ElementsMatch(t, []string{"config.consumerKey", "config.consumerSecret"}, bridgeErrFields(t, res))
	readBack["consumerKey"], readBack["consumerSecret"] = "ck-original", "cs-original"
	res = e.do(owner.caller, "PATCH", path, map[string]any{"config": readBack})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	cfg := res.data()["config"].(map[string]any)
	require.Equal(t, "https://new.example.com", cfg["storeUrl"])
	require.Equal(t, platforms.RedactedValue, cfg["consumerKey"])
	require.Equal(t, platforms.RedactedValue, cfg["consumerSecret"])
	e.bridgeRequireSecretSealed(id, "consumerKey", "ck-original")
	e.bridgeRequireSecretSealed(id, "consumerSecret", "cs-original")

	// A new secret (snake_case key) replaces the old one; the rest is merged.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"config": map[string]any{"consumer_secret": "cs-new", "extra_flag": true}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.NotContains(t, string(res.Raw), "cs-new")
	cfg = res.data()["config"].(map[string]any)
	require.Equal(t, "https://new.example.com", cfg["storeUrl"])
	require.Equal(t, true, cfg["extraFlag"])
	require.Equal(t, platforms.RedactedValue, cfg["consumerSecret"])
	e.bridgeRequireSecretSealed(id, "consumerSecret", "cs-new")
	e.bridgeRequireSecretSealed(id, "consumerKey", "ck-original")

	// Required fields must survive the merge; null and blank remove values.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"config": map[string]any{"consumerKey": nil, "store_url": ""}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.storeUrl", "config.consumerKey"}, bridgeErrFields(t, res))
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"config": "x"}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"config": map[string]any{"consumerKey": 5}}), 400, "validation_error")
	e.bridgeRequireSecretSealed(id, "consumerKey", "ck-original")

	// An optional key can be removed with null.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"config": map[string]any{"extraFlag": nil}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.NotContains(t, res.data()["config"], "extraFlag")

	// Status and name.
	for _, st := range []string{"paused", "error", "disconnected", "active"} {
		res = e.do(owner.caller, "PATCH", path, map[string]any{"status": st})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Equal(t, st, res.data()["status"])
	}
	res = e.do(owner.caller, "PATCH", path, map[string]any{"status": "broken"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"status"}, bridgeErrFields(t, res))
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"name": ""}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"name": strings.Repeat("x", 101)}), 400, "validation_error")
	res = e.do(owner.caller, "PATCH", path, map[string]any{"name": " Renamed ", "status": "paused"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "Renamed", res.data()["name"])
	require.Equal(t, "paused", res.data()["status"])
	require.Equal(t, "https://new.example.com", res.data()["config"].(map[string]any)["storeUrl"])
	require.NotEqual(t, created["updatedAt"], res.data()["updatedAt"])
	require.Equal(t, created["createdAt"], res.data()["createdAt"])

	// An empty body is fine and changes nothing.
	res = e.do(owner.caller, "PATCH", path, map[string]any{})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "Renamed", res.data()["name"])

	// Type cannot be changed.
	res = e.do(owner.caller, "PATCH", path, map[string]any{"type": "storefront_a"})
	require.Equal(t, 200, res.Code)
	require.Equal(t, "storefront_b", res.data()["type"])

	requireError(t, e.do(owner.caller, "PATCH", "/api/v1/bridges/"+uuid.NewString(), map[string]any{"name": "x"}), 404, "not_found")
}

func TestBridgeList(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	var ids []string
	for i := range 3 {
		ids = append(ids, e.bridgeStorefrontA(owner.caller, fmt.Sprintf("a%d", i), "tok")["id"].(string))
	}
	hub := e.bridgeCreate(owner.caller, "shipping_hub_a", "hub", map[string]any{"apiKey": "k", "apiSecret": "s"})
	res := e.do(owner.caller, "PATCH", "/api/v1/bridges/"+ids[0], map[string]any{"status": "paused"})
	require.Equal(t, 200, res.Code)

	// Newest first.
	list := e.do(owner.caller, "GET", "/api/v1/bridges", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	var got []string
	for _, b := range list.list() {
		got = append(got, b["id"].(string))
	}
	require.Equal(t, []string{hub["id"].(string), ids[2], ids[1], ids[0]}, got)
	require.Equal(t, map[string]any{"page": float64(1), "limit": float64(20), "total": float64(4), "totalPages": float64(1), "hasMore": false}, list.Body["pagination"])

	// Filters.
	list = e.do(owner.caller, "GET", "/api/v1/bridges?type=storefront_a", nil)
	require.Len(t, list.list(), 3)
	list = e.do(owner.caller, "GET", "/api/v1/bridges?type=storefront_a&status=paused", nil)
	require.Len(t, list.list(), 1)
	require.Equal(t, ids[0], list.list()[0]["id"])
	list = e.do(owner.caller, "GET", "/api/v1/bridges?status=error", nil)
	require.Empty(t, list.list())
	require.Equal(t, "[]", strings.TrimSpace(string(bridgeJSONOf(t, list.Body["data"]))))
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges?type=erp_x", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges?status=deleted", nil), 400, "validation_error")

	// Pagination.
	list = e.do(owner.caller, "GET", "/api/v1/bridges?limit=3&page=1", nil)
	require.Len(t, list.list(), 3)
	p := list.Body["pagination"].(map[string]any)
	require.Equal(t, true, p["hasMore"])
	require.Equal(t, float64(2), p["totalPages"])
	list = e.do(owner.caller, "GET", "/api/v1/bridges?limit=3&page=2", nil)
	require.Len(t, list.list(), 1)
	require.Equal(t, false, list.Body["pagination"].(map[string]any)["hasMore"])
	list = e.do(owner.caller, "GET", "/api/v1/bridges?limit=3&page=9", nil)
	require.Empty(t, list.list())
	list = e.do(owner.caller, "GET", "/api/v1/bridges?limit=1000", nil)
	require.Equal(t, 200, list.Code)
	require.Equal(t, float64(100), list.Body["pagination"].(map[string]any)["limit"])
	for _, q := range []string{"page=0", "page=abc", "limit=0", "limit=-1", "page=1.5"} {
		requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges?"+q, nil), 400, "validation_error")
	}

	// Only the organization's own bridges are listed.
	other := e.signup()
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/bridges", nil).list())
}

func TestBridgeTasks(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	for _, f := range bridgeTestFixtures() {
		d := e.bridgeCreate(owner.caller, f.typ, f.typ, f.camel())
		res := e.do(owner.caller, "GET", "/api/v1/bridges/"+d["id"].(string)+"/tasks", nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		tasks := res.Body["data"].([]any)
		want := platforms.Tasks(f.typ)
		require.Len(t, tasks, len(want))
		for i, raw := range tasks {
			task := raw.(map[string]any)
			for _, k := range []string{"id", "bridge_type", "name", "display_name", "description", "category", "supports_schedule", "created_at"} {
				require.Contains(t, task, k)
			}
			require.Equal(t, f.typ, task["bridge_type"])
			require.Equal(t, want[i].Name, task["name"])
		}
	}
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges/"+uuid.NewString()+"/tasks", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges/nope/tasks", nil), 404, "not_found")
}

func TestBridgeTypes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	res := e.do(owner.caller, "GET", "/api/v1/bridge-types", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	items := res.list()
	require.Len(t, items, 5)
	for _, k := range []string{"id", "name", "slug", "description", "category", "icon_url", "auth_methods", "config_fields", "tasks", "created_at"} {
		require.Contains(t, items[0], k)
	}
	field := items[0]["config_fields"].([]any)[0].(map[string]any)
	for _, k := range []string{"key", "label", "type", "required"} {
		require.Contains(t, field, k)
	}
	require.Equal(t, float64(5), res.Body["pagination"].(map[string]any)["total"])

	res = e.do(owner.caller, "GET", "/api/v1/bridge-types?category=ecommerce", nil)
	require.Len(t, res.list(), 3)
	for _, it := range res.list() {
		require.Equal(t, "ecommerce", it["category"])
	}
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/bridge-types?category=shipping", nil).list(), 1)
	res = e.do(owner.caller, "GET", "/api/v1/bridge-types?category=erp", nil)
	require.Equal(t, 200, res.Code)
	require.Empty(t, res.list())
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridge-types?category=crm", nil), 400, "validation_error")

	res = e.do(owner.caller, "GET", "/api/v1/bridge-types?limit=2&page=3", nil)
	require.Len(t, res.list(), 1)
	require.Equal(t, false, res.Body["pagination"].(map[string]any)["hasMore"])
	res = e.do(owner.caller, "GET", "/api/v1/bridge-types?limit=500", nil)
	require.Equal(t, float64(100), res.Body["pagination"].(map[string]any)["limit"])
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridge-types?page=0", nil), 400, "validation_error")

	// One type, by id or slug.
	bt, _ := platforms.TypeBySlug("shipping_hub_a")
	res = e.do(owner.caller, "GET", "/api/v1/bridge-types/"+bt.ID, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "shipping_hub_a", res.data()["slug"])
	res = e.do(owner.caller, "GET", "/api/v1/bridge-types/marketplace_a", nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, "marketplace", res.data()["category"])
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridge-types/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridge-types/erp_x", nil), 404, "not_found")
}

func TestBridgeScopes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	id := e.bridgeStorefrontA(owner.caller, "s", "tok")["id"].(string)
	body := map[string]any{"type": "storefront_a", "name": "k", "config": map[string]any{"shopDomain": "a.example.com", "accessToken": "t"}}

	type call struct {
		method, path string
		body         any
		scope        string
	}
	calls := []call{
		{"GET", "/api/v1/bridges", nil, "bridges:read"},
		{"GET", "/api/v1/bridges/" + id, nil, "bridges:read"},
		{"GET", "/api/v1/bridges/" + id + "/tasks", nil, "bridges:read"},
		{"GET", "/api/v1/bridge-types", nil, "bridges:read"},
		{"GET", "/api/v1/bridge-types/storefront_a", nil, "bridges:read"},
		{"POST", "/api/v1/bridges", body, "bridges:write"},
		{"PATCH", "/api/v1/bridges/" + id, map[string]any{"name": "x"}, "bridges:write"},
		{"DELETE", "/api/v1/bridges/" + id, nil, "bridges:write"},
	}
	ordersOnly := e.apiKey(owner, "orders:read")
	for _, c := range calls {
		res := e.do(ordersOnly, c.method, c.path, c.body)
		requireError(t, res, 403, "insufficient_scope")
		require.Equal(t, []string{"scope"}, bridgeErrFields(t, res))
		require.Equal(t, c.scope, res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["message"])
	}

	reader := e.apiKey(owner, "bridges:read")
	for _, c := range calls {
		res := e.do(reader, c.method, c.path, c.body)
		if c.scope == "bridges:read" {
			require.Equal(t, 200, res.Code, "%s %s: %s", c.method, c.path, res.Raw)
		} else {
			requireError(t, res, 403, "insufficient_scope")
		}
	}

	writer := e.apiKey(owner, "bridges:read", "bridges:write")
	require.Equal(t, 201, e.do(writer, "POST", "/api/v1/bridges", body).Code)
	require.Equal(t, 200, e.do(writer, "PATCH", "/api/v1/bridges/"+id, map[string]any{"name": "x"}).Code)
	require.Equal(t, 200, e.do(writer, "DELETE", "/api/v1/bridges/"+id, nil).Code)

	requireError(t, e.do(caller{}, "GET", "/api/v1/bridges", nil), 401, "unauthorized")
}

func TestBridgeOtherOrganization(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	theirs := e.bridgeStorefrontA(other.caller, "theirs", "their-token")["id"].(string)
	for _, id := range []string{theirs, uuid.NewString(), "not-a-uuid"} {
		p := "/api/v1/bridges/" + id
		requireError(t, e.do(owner.caller, "GET", p, nil), 404, "not_found")
		requireError(t, e.do(owner.caller, "PATCH", p, map[string]any{"name": "mine"}), 404, "not_found")
		requireError(t, e.do(owner.caller, "PATCH", p, map[string]any{"config": map[string]any{"accessToken": "stolen"}}), 404, "not_found")
		requireError(t, e.do(owner.caller, "DELETE", p, nil), 404, "not_found")
		requireError(t, e.do(owner.caller, "GET", p+"/tasks", nil), 404, "not_found")
	}
	// Untouched.
	res := e.do(other.caller, "GET", "/api/v1/bridges/"+theirs, nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, "theirs", res.data()["name"])
	e.bridgeRequireSecretSealed(theirs, "accessToken", "their-token")

	// An API key of one organization sees only its own.
	k := e.apiKey(owner, "bridges:read")
	requireError(t, e.do(k, "GET", "/api/v1/bridges/"+theirs, nil), 404, "not_found")
}

func TestBridgeDeleteKeepsOrders(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	id := e.bridgeStorefrontA(owner.caller, "s", "tok")["id"].(string)
	orderID := uuid.New()
	_, err := e.deps.Store.Pool.Exec(t.Context(), `
INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
VALUES ($1, $2, $3, 'ext-1', 'pending', '{}', 'c@example.com', '[]', '{}', now())`, orderID, owner.org, id)
	require.NoError(t, err)

	res := e.do(owner.caller, "DELETE", "/api/v1/bridges/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)

	var bridgeID *uuid.UUID
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT bridge_id FROM orders WHERE id = $1`, orderID).Scan(&bridgeID))
	require.Nil(t, bridgeID, "the order survives without its bridge")

	requireError(t, e.do(owner.caller, "GET", "/api/v1/bridges/"+id, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/bridges/"+id, nil), 404, "not_found")
}

func TestBridgeSecretsNeverLogged(t *testing.T) {
	logs := &bridgeLogBuffer{}
	e := newEnv(t, func(d *Deps) { d.Logger = bridgeTestLogger(logs) })
	owner := e.signup()
	id := e.bridgeStorefrontA(owner.caller, "s", "logged-secret-1")["id"].(string)
	e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"accessToken": "logged-secret-2"}})
	e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"accessToken": 5}})
	e.do(owner.caller, "GET", "/api/v1/bridges/"+id, nil)
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), "logged-secret")
}

func bridgeJSONOf(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// bridgeLogBuffer is an io.Writer safe for concurrent log writes.
type bridgeLogBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *bridgeLogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *bridgeLogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func bridgeTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
