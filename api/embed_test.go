package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
)

// embedOrg is an organization with an embed:manage key and a config.
type embedOrg struct {
	owner  account
	key    caller // embed:manage
	pk     string
	slug   string
	config map[string]any
}

func (e *testEnv) embedOrg(patch map[string]any) embedOrg {
	e.t.Helper()
	owner := e.signup()
	key := e.apiKey(owner, "embed:manage")
	if patch == nil {
		patch = map[string]any{}
	}
	if _, ok := patch["slug"]; !ok {
		patch["slug"] = "s-" + uuid.NewString()[:12]
	}
	res := e.do(key, "PATCH", "/api/v1/embed/config", patch)
	require.Equal(e.t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	return embedOrg{owner: owner, key: key, pk: d["publishable_key"].(string), slug: d["slug"].(string), config: d}
}

// session opens a server-side session of externalID.
func (e *testEnv) embedSession(o embedOrg, externalID string, extra map[string]any) (caller, map[string]any) {
	e.t.Helper()
	body := map[string]any{"externalId": externalID}
	for k, v := range extra {
		body[k] = v
	}
	res := e.do(o.key, "POST", "/api/v1/embed/sessions", body)
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return caller{token: res.data()["token"].(string)}, res.data()
}

func sfaBridgeBody(name string) map[string]any {
	return map[string]any{"type": "storefront_a", "name": name, "config": map[string]any{"shopDomain": "acme.myshopify.com", "accessToken": "shpat_secret_value_1234"}}
}

func TestEmbedConfigUpsertPublicAndRefusals(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(map[string]any{"branding": map[string]any{"primary_color": "#112233", "company_name": "Acme"},
		"allowed_origins": []string{"https://App.Example.com/"}, "allowed_bridge_types": []string{"storefront_a", "storefront_b"}})
	require.True(t, strings.HasPrefix(o.pk, "pk_"))
	require.Len(t, o.pk, 35)
	require.Equal(t, []any{"https://app.example.com"}, o.config["allowed_origins"])
	require.ElementsMatch(t, []any{"bridges", "end_user_webhooks"}, o.config["enabled_features"])
	for _, f := range []string{"id", "organization_id", "slug", "publishable_key", "branding", "allowed_origins", "allowed_bridge_types", "default_dispatcher_id", "settings", "enabled_features", "is_active", "created_at", "updated_at"} {
		require.Contains(t, o.config, f)
	}

	again := e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{"settings": map[string]any{"maxBridgesPerUser": 2}})
	require.Equal(t, 200, again.Code, "%s", again.Raw)
	require.Equal(t, o.pk, again.data()["publishable_key"], "the key is kept")
	me := e.do(o.key, "GET", "/api/v1/embed/config/me", nil)
	require.Equal(t, 200, me.Code)
	require.Equal(t, float64(2), me.data()["settings"].(map[string]any)["maxBridgesPerUser"])

	pub := e.do(caller{}, "GET", "/api/v1/embed/config?slug="+o.slug, nil, "Origin", "https://app.example.com")
	require.Equal(t, 200, pub.Code, "%s", pub.Raw)
	require.Equal(t, "https://app.example.com", pub.Header.Get("Access-Control-Allow-Origin"))
	types := pub.data()["allowedBridgeTypes"].([]any)
	require.Len(t, types, 2)
	require.NotContains(t, string(pub.Raw), o.pk, "the public config never shows the key")
	evil := e.do(caller{}, "GET", "/api/v1/embed/config?slug="+o.slug, nil, "Origin", "https://evil.example")
	require.Empty(t, evil.Header.Get("Access-Control-Allow-Origin"))

	requireError(t, e.do(caller{}, "GET", "/api/v1/embed/config", nil), 400, "validation_error")
	requireError(t, e.do(caller{}, "GET", "/api/v1/embed/config?slug=nope-"+uuid.NewString()[:8], nil), 404, "not_found")
	off := e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{"is_active": false})
	require.Equal(t, 200, off.Code)
	requireError(t, e.do(caller{}, "GET", "/api/v1/embed/config?slug="+o.slug, nil), 404, "not_found")

	other := e.embedOrg(nil)
	requireError(t, e.do(other.key, "PATCH", "/api/v1/embed/config", map[string]any{"slug": o.slug}), 409, "conflict")

	noScope := e.apiKey(o.owner, "orders:read")
	requireError(t, e.do(noScope, "GET", "/api/v1/embed/config/me", nil), 403, "insufficient_scope")
	requireError(t, e.do(caller{token: o.pk}, "GET", "/api/v1/embed/config/me", nil), 401, "unauthorized")

	bad := e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{
		"slug": "Bad Slug!", "allowed_origins": []string{"https://a.example/path", "javascript:alert(1)"},
		"branding": map[string]any{"primary_color": "red;}", "logo_url": "ftp://x"}, "enabled_features": []string{"root"},
		"allowed_bridge_types": []string{"nope"}, "settings": map[string]any{"maxBridgesPerUser": -1},
		"default_dispatcher_id": uuid.NewString()})
	requireError(t, bad, 400, "validation_error")
	for _, f := range []string{"slug", "allowed_origins[0]", "allowed_origins[1]", "branding.primary_color", "branding.logo_url", "enabled_features[0]", "allowed_bridge_types[0]", "settings.maxBridgesPerUser"} {
		require.Contains(t, string(bad.Raw), `"field":"`+f+`"`)
	}
	requireError(t, e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{"default_dispatcher_id": uuid.NewString()}), 400, "validation_error")
	requireError(t, e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{"is_active": "yes"}), 400, "validation_error")
	huge := `{"settings":{"x":"` + strings.Repeat("a", 11<<20) + `"}}`
	requireError(t, e.do(o.key, "PATCH", "/api/v1/embed/config", huge), 413, "payload_too_large")
}

func TestEmbedSessionsTokensAndRevocation(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(nil)
	tok, res := e.embedSession(o, "user-1", map[string]any{"name": "Ann", "email": "ann@example.com", "ttlSeconds": 120})
	require.True(t, strings.HasPrefix(tok.token, "est_"))
	require.ElementsMatch(t, []any{"bridges:read", "bridges:write"}, res["scopes"])
	require.Equal(t, "user-1", res["endUser"].(map[string]any)["externalId"])
	require.NotEmpty(t, res["sessionId"])
	exp, err := time.Parse(time.RFC3339, res["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(2*time.Minute), exp, 10*time.Second)

	require.Equal(t, 200, e.do(tok, "GET", "/api/v1/embed/bridges", nil).Code)
	// An est_ token reaches only the session routes; keys never reach them.
	requireError(t, e.do(tok, "GET", "/api/v1/orders", nil), 401, "unauthorized")
	requireError(t, e.do(tok, "GET", "/api/v1/embed/users", nil), 401, "unauthorized")
	requireError(t, e.do(tok, "GET", "/api/v1/embed/config/me", nil), 401, "unauthorized")
	requireError(t, e.do(o.key, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")
	requireError(t, e.do(caller{token: o.pk}, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")
	requireError(t, e.do(caller{token: "est_" + strings.Repeat("0", 64)}, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")

	for _, bad := range []map[string]any{
		{}, {"externalId": ""}, {"externalId": strings.Repeat("x", 300)}, {"externalId": "a", "ttlSeconds": 59},
		{"externalId": "a", "ttlSeconds": 86401}, {"externalId": "a", "scopes": []string{"orders:read"}},
		{"externalId": "a", "allowedBridgeTypes": []string{"nope"}}, {"externalId": "a", "email": "no-at"},
	} {
		requireError(t, e.do(o.key, "POST", "/api/v1/embed/sessions", bad), 400, "validation_error")
	}

	// Revocation holds at once; a second revoke is fine; another
	// organization's session is not found.
	sid := res["sessionId"].(string)
	other := e.embedOrg(nil)
	requireError(t, e.do(other.key, "DELETE", "/api/v1/embed/sessions/"+sid, nil), 404, "not_found")
	require.Equal(t, 200, e.do(o.key, "DELETE", "/api/v1/embed/sessions/"+sid, nil).Code)
	requireError(t, e.do(tok, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")
	require.Equal(t, 200, e.do(o.key, "DELETE", "/api/v1/embed/sessions/"+sid, nil).Code)

	// An expired session is refused.
	orgID := uuid.MustParse(o.owner.org)
	u, err := store.UpsertEndUser(t.Context(), e.deps.Store.Pool, orgID, uuid.New(), "old", nil, nil, nil)
	require.NoError(t, err)
	expired := "est_expired" + uuid.NewString()
	h := sha256.Sum256([]byte(expired))
	_, err = store.CreateEmbedSession(t.Context(), e.deps.Store.Pool, store.EmbedSession{ID: uuid.New(), OrganizationID: orgID, EndUserID: u.ID,
		Kind: "manual", Scopes: embed.SessionScopes, ExpiresAt: time.Now().Add(-time.Second)}, h[:])
	require.NoError(t, err)
	requireError(t, e.do(caller{token: expired}, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")

	// A read-only session cannot write.
	ro, _ := e.embedSession(o, "reader", map[string]any{"scopes": []string{"bridges:read"}})
	requireError(t, e.do(ro, "POST", "/api/v1/embed/bridges", sfaBridgeBody("x")), 403, "insufficient_scope")
}

func TestEmbedAutoSessionOriginsKeysAndFloods(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(map[string]any{"allowed_origins": []string{"https://app.example.com"}})
	body := map[string]any{"key": o.pk, "externalId": "auto-1"}
	res := e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", body, "Origin", "https://app.example.com")
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "https://app.example.com", res.Header.Get("Access-Control-Allow-Origin"))
	d := res.data()
	require.True(t, strings.HasPrefix(d["token"].(string), "est_"))
	require.NotContains(t, d, "sessionId")
	require.NotContains(t, d, "endUser")
	require.ElementsMatch(t, []any{"bridges:read", "bridges:write"}, d["scopes"])
	exp, _ := time.Parse(time.RFC3339, d["expiresAt"].(string))
	require.WithinDuration(t, time.Now().Add(time.Hour), exp, 10*time.Second)

	requireError(t, e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", body, "Origin", "https://evil.example"), 403, "forbidden")
	requireError(t, e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", body), 403, "forbidden")
	requireError(t, e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", map[string]any{"key": "pk_" + strings.Repeat("0", 32), "externalId": "a"}), 401, "unauthorized")
	requireError(t, e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", map[string]any{"key": o.key.token, "externalId": "a"}), 401, "unauthorized")
	requireError(t, e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", map[string]any{"key": o.pk}), 400, "validation_error")

	pre := e.do(caller{}, "OPTIONS", "/api/v1/embed/sessions/auto", nil, "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST")
	require.Equal(t, 204, pre.Code)
	require.Contains(t, pre.Header.Get("Access-Control-Allow-Headers"), "Authorization")

	// A flood from one address is cut at 60 a minute.
	n429 := 0
	for range 70 {
		if e.do(caller{}, "POST", "/api/v1/embed/sessions/auto", body, "Origin", "https://app.example.com").Code == 429 {
			n429++
		}
	}
	require.GreaterOrEqual(t, n429, 10)
}

func TestEmbedBridgesIsolationLimitsAndMasking(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(map[string]any{"settings": map[string]any{"maxBridgesPerUser": 2}})
	ann, _ := e.embedSession(o, "ann", nil)
	bob, _ := e.embedSession(o, "bob", nil)
	onlyB, _ := e.embedSession(o, "carl", map[string]any{"allowedBridgeTypes": []string{"storefront_b"}})
	foreignOrg := e.embedOrg(nil)
	eve, _ := e.embedSession(foreignOrg, "ann", nil) // same external id, other organization

	res := e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("Ann's shop"))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	b := res.data()
	id := b["id"].(string)
	require.Equal(t, "shpat_secret_value_1234", b["config"].(map[string]any)["accessToken"], "unmasked in the create answer")
	for _, f := range []string{"id", "organization_id", "type", "name", "config", "status", "end_user_id", "last_sync_at", "error_message", "created_at", "updated_at"} {
		require.Contains(t, b, f)
	}
	list := e.do(ann, "GET", "/api/v1/embed/bridges", nil)
	require.Len(t, list.list(), 1)
	require.Equal(t, platforms.RedactedValue, list.list()[0]["config"].(map[string]any)["accessToken"], "masked when read")
	var sealed []byte
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT credentials FROM bridges WHERE id = $1`, id).Scan(&sealed))
	require.NotContains(t, string(sealed), "shpat_secret_value_1234", "encrypted at rest")

	// Another end user, or the same external id in another organization,
	// sees none of it.
	for _, c := range []caller{bob, eve} {
		require.Empty(t, e.do(c, "GET", "/api/v1/embed/bridges", nil).list())
		requireError(t, e.do(c, "PATCH", "/api/v1/embed/bridges/"+id, map[string]any{"name": "mine"}), 404, "not_found")
		requireError(t, e.do(c, "DELETE", "/api/v1/embed/bridges/"+id, nil), 404, "not_found")
		requireError(t, e.do(c, "POST", "/api/v1/embed/bridges/"+id+"/test", nil), 404, "not_found")
	}
	requireError(t, e.do(ann, "PATCH", "/api/v1/embed/bridges/not-a-uuid", map[string]any{"name": "x"}), 404, "not_found")

	// Types: session and config filter; a type not allowed is refused.
	typesRes := e.do(onlyB, "GET", "/api/v1/embed/bridge-types", nil)
	require.Equal(t, 200, typesRes.Code)
	require.Len(t, typesRes.list(), 1)
	require.Equal(t, "storefront_b", typesRes.list()[0]["id"])
	for _, f := range []string{"id", "name", "description", "icon", "category", "auth_methods", "config_fields", "webhook_support", "docs_url"} {
		require.Contains(t, typesRes.list()[0], f)
	}
	requireError(t, e.do(onlyB, "POST", "/api/v1/embed/bridges", sfaBridgeBody("x")), 400, "validation_error")
	bad := e.do(ann, "POST", "/api/v1/embed/bridges", map[string]any{"type": "storefront_a", "name": "x", "config": map[string]any{"shopDomain": 5}})
	requireError(t, bad, 400, "validation_error")
	require.Contains(t, string(bad.Raw), "config.")
	requireError(t, e.do(ann, "POST", "/api/v1/embed/bridges", map[string]any{"type": "storefront_a", "name": strings.Repeat("n", 5000), "config": map[string]any{}}), 400, "validation_error")

	// Shallow merge: the token stays when only the name and another key change.
	up := e.do(ann, "PATCH", "/api/v1/embed/bridges/"+id, map[string]any{"name": "Renamed", "config": map[string]any{"apiVersion": "2026-07", "accessToken": platforms.RedactedValue}})
	require.Equal(t, 200, up.Code, "%s", up.Raw)
	require.Equal(t, "Renamed", up.data()["name"])
	require.Equal(t, "shpat_secret_value_1234", up.data()["config"].(map[string]any)["accessToken"])
	require.Equal(t, "2026-07", up.data()["config"].(map[string]any)["apiVersion"])
	requireError(t, e.do(ann, "PATCH", "/api/v1/embed/bridges/"+id, map[string]any{"status": "exploded"}), 400, "validation_error")

	// maxBridgesPerUser.
	require.Equal(t, 201, e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("second")).Code)
	requireError(t, e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("third")), 409, "conflict")

	// Delete removes the bridge and its synced orders.
	orgID := uuid.MustParse(o.owner.org)
	_, err := e.deps.Store.Pool.Exec(t.Context(), `INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
VALUES ($1, $2, $3, 'x1', 'pending', '{}', 'a@example.com', '[]', '{}', now())`, uuid.New(), orgID, id)
	require.NoError(t, err)
	require.Equal(t, 200, e.do(ann, "DELETE", "/api/v1/embed/bridges/"+id, nil).Code)
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE organization_id = $1`, orgID).Scan(&n))
	require.Zero(t, n)
	requireError(t, e.do(ann, "DELETE", "/api/v1/embed/bridges/"+id, nil), 404, "not_found")
}

func TestEmbedEndUsersAndEventLog(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(nil)
	ann, annRes := e.embedSession(o, "ann", map[string]any{"name": "Ann"})
	_, _ = e.embedSession(o, "bob", nil)
	bid := e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("shop"), "X-Forwarded-For", "203.0.113.9").data()["id"].(string)
	annID := annRes["endUser"].(map[string]any)["id"].(string)

	users := e.do(o.key, "GET", "/api/v1/embed/users", nil)
	require.Equal(t, 200, users.Code)
	require.Len(t, users.list(), 2)
	require.Equal(t, float64(20), users.Body["pagination"].(map[string]any)["limit"])
	counts := map[string]float64{}
	for _, u := range users.list() {
		counts[u["external_id"].(string)] = u["bridge_count"].(float64)
	}
	require.Equal(t, map[string]float64{"ann": 1, "bob": 0}, counts)
	detail := e.do(o.key, "GET", "/api/v1/embed/users/"+annID, nil)
	require.Equal(t, 200, detail.Code)
	require.Len(t, detail.data()["bridges"].([]any), 1)

	other := e.embedOrg(nil)
	requireError(t, e.do(other.key, "GET", "/api/v1/embed/users/"+annID, nil), 404, "not_found")
	requireError(t, e.do(other.key, "DELETE", "/api/v1/embed/users/"+annID, nil), 404, "not_found")
	require.Empty(t, e.do(other.key, "GET", "/api/v1/embed/users", nil).list())

	require.Equal(t, 200, e.do(o.key, "DELETE", "/api/v1/embed/users/"+annID, nil).Code)
	requireError(t, e.do(ann, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")
	var eu *uuid.UUID
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT end_user_id FROM bridges WHERE id = $1`, bid).Scan(&eu))
	require.Nil(t, eu, "the bridge stays, without its end user")
	requireError(t, e.do(o.key, "GET", "/api/v1/embed/users/"+annID, nil), 404, "not_found")

	events := e.do(o.key, "GET", "/api/v1/embed/events", nil)
	require.Equal(t, 200, events.Code)
	require.Equal(t, float64(50), events.Body["pagination"].(map[string]any)["limit"])
	types := map[string]bool{}
	for _, ev := range events.list() {
		types[ev["event_type"].(string)] = true
		for _, f := range []string{"id", "end_user_id", "session_id", "event_type", "resource_type", "resource_id", "metadata", "ip_address", "created_at"} {
			require.Contains(t, ev, f)
		}
		require.NotEmpty(t, ev["ip_address"])
	}
	require.True(t, types["session.created"] && types["bridge.created"] && types["user.deleted"] && types["session.revoked"], "%v", types)
	// Deleting Ann revoked her live session, logged where it happened.
	revoked := e.do(o.key, "GET", "/api/v1/embed/events?event_type=session.revoked&end_user_id="+annID, nil).list()
	require.Len(t, revoked, 1)
	require.Equal(t, annRes["sessionId"], revoked[0]["session_id"])
	require.Equal(t, "user_deleted", revoked[0]["metadata"].(map[string]any)["reason"])
	only := e.do(o.key, "GET", "/api/v1/embed/events?event_type=bridge.created&end_user_id="+annID, nil)
	require.Len(t, only.list(), 1)
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	require.Empty(t, e.do(o.key, "GET", "/api/v1/embed/events?from="+future, nil).list())
	requireError(t, e.do(o.key, "GET", "/api/v1/embed/events?event_type=nope", nil), 400, "validation_error")
	requireError(t, e.do(o.key, "GET", "/api/v1/embed/events?from=yesterday", nil), 400, "validation_error")
	requireError(t, e.do(o.key, "GET", "/api/v1/embed/events?end_user_id=x", nil), 400, "validation_error")
	require.Empty(t, e.do(other.key, "GET", "/api/v1/embed/events", nil).list())
}

// receiver records deliveries and answers with the next status.
type receiver struct {
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	status []int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, r)
	rc.bodies = append(rc.bodies, raw)
	code := 200
	if len(rc.status) > 0 {
		code, rc.status = rc.status[0], rc.status[1:]
	}
	rc.mu.Unlock()
	w.WriteHeader(code)
}

func TestEndUserWebhooksCrudTestAndSignatures(t *testing.T) {
	rc := &receiver{status: []int{200, 410}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := newEnv(t, func(d *Deps) { d.AllowPrivateURLs = true })
	o := e.embedOrg(nil)
	ann, _ := e.embedSession(o, "ann", nil)
	bob, _ := e.embedSession(o, "bob", nil)
	secret := "s3cret-s3cret-s3cret"

	types := e.do(ann, "GET", "/api/v1/embed/webhooks/event-types", nil)
	require.Equal(t, 200, types.Code)
	require.Contains(t, string(types.Raw), "shipment.shipped")

	res := e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": srv.URL + "/hook", "events": []string{"order.created"}, "secret": secret, "description": "mine"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	hook := res.data()
	id := hook["id"].(string)
	require.NotContains(t, string(res.Raw), secret, "the secret is masked")
	require.Equal(t, "********cret", hook["secret"])
	for _, f := range []string{"url", "secret", "description", "events", "is_active", "disabled_reason", "consecutive_failures"} {
		require.Contains(t, hook, f)
	}
	var sealed []byte
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT secret FROM end_user_webhooks WHERE id = $1`, id).Scan(&sealed))
	require.NotContains(t, string(sealed), secret)

	for _, bad := range []map[string]any{
		{"url": "ftp://x", "events": []string{"order.created"}},
		{"url": srv.URL, "events": []string{}},
		{"url": srv.URL, "events": []string{"order.deleted"}},
		{"url": srv.URL, "events": []string{"order.created"}, "secret": "short"},
		{"url": srv.URL + "/" + strings.Repeat("p", 3000), "events": []string{"order.created"}},
		{"events": []string{"order.created"}},
	} {
		requireError(t, e.do(ann, "POST", "/api/v1/embed/webhooks", bad), 400, "validation_error")
	}

	// Bob sees none of Ann's webhook.
	require.Empty(t, e.do(bob, "GET", "/api/v1/embed/webhooks", nil).list())
	requireError(t, e.do(bob, "PATCH", "/api/v1/embed/webhooks/"+id, map[string]any{"is_active": false}), 404, "not_found")
	requireError(t, e.do(bob, "DELETE", "/api/v1/embed/webhooks/"+id, nil), 404, "not_found")
	requireError(t, e.do(bob, "POST", "/api/v1/embed/webhooks/"+id+"/test", nil), 404, "not_found")
	requireError(t, e.do(bob, "GET", "/api/v1/embed/webhooks/"+id+"/deliveries", nil), 404, "not_found")

	// The test delivery is signed both ways.
	tr := e.do(ann, "POST", "/api/v1/embed/webhooks/"+id+"/test", nil)
	require.Equal(t, 200, tr.Code, "%s", tr.Raw)
	require.Equal(t, true, tr.Body["success"])
	require.Equal(t, float64(200), tr.Body["statusCode"])
	require.Len(t, rc.got, 1)
	req, raw := rc.got[0], rc.bodies[0]
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	require.Equal(t, "webhook.test", p["event"])
	require.Equal(t, o.owner.org, p["organizationId"])
	require.NotEmpty(t, p["endUserId"])
	require.NotEmpty(t, p["timestamp"])
	require.NotEmpty(t, p["data"].(map[string]any)["message"])
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(raw)
	require.Equal(t, base64.StdEncoding.EncodeToString(m.Sum(nil)), req.Header.Get("X-Service-Signature"))
	m = hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s.%s.", req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"))
	m.Write(raw)
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)), req.Header.Get("webhook-signature"))

	// A 410 disables the webhook at once.
	gone := e.do(ann, "POST", "/api/v1/embed/webhooks/"+id+"/test", nil)
	require.Equal(t, false, gone.Body["success"])
	require.Equal(t, float64(410), gone.Body["statusCode"])
	list := e.do(ann, "GET", "/api/v1/embed/webhooks", nil).list()
	require.Equal(t, false, list[0]["is_active"])
	require.Equal(t, "gone", list[0]["disabled_reason"])
	deliveries := e.do(ann, "GET", "/api/v1/embed/webhooks/"+id+"/deliveries", nil)
	require.Len(t, deliveries.list(), 2)
	for _, f := range []string{"id", "event", "status_code", "success", "error", "attempt", "duration_ms", "created_at"} {
		require.Contains(t, deliveries.list()[0], f)
	}
	first := deliveries.list()[1]["id"].(string)
	requireError(t, e.do(ann, "POST", "/api/v1/embed/webhooks/"+id+"/deliveries/"+first+"/redeliver", nil), 409, "conflict")
	on := e.do(ann, "PATCH", "/api/v1/embed/webhooks/"+id, map[string]any{"is_active": true, "events": []string{"order.created", "shipment.shipped"}})
	require.Equal(t, 200, on.Code, "%s", on.Raw)
	require.Nil(t, on.data()["disabled_reason"])
	re := e.do(ann, "POST", "/api/v1/embed/webhooks/"+id+"/deliveries/"+first+"/redeliver", nil)
	require.Equal(t, 200, re.Code, "%s", re.Raw)
	require.Len(t, rc.got, 3)
	require.Equal(t, rc.got[0].Header.Get("webhook-id"), rc.got[2].Header.Get("webhook-id"), "a redelivery keeps the dedupe id")
	requireError(t, e.do(bob, "POST", "/api/v1/embed/webhooks/"+id+"/deliveries/"+first+"/redeliver", nil), 404, "not_found")

	// The unversioned alias.
	require.Equal(t, 200, e.do(ann, "GET", "/api/embed/webhooks", nil).Code)

	// At most five per end user.
	for i := range 4 {
		require.Equal(t, 201, e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i), "events": []string{"order.created"}}).Code)
	}
	requireError(t, e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": srv.URL, "events": []string{"order.created"}}), 409, "conflict")
	require.Equal(t, 200, e.do(ann, "DELETE", "/api/v1/embed/webhooks/"+id, nil).Code)
	requireError(t, e.do(ann, "DELETE", "/api/v1/embed/webhooks/"+id, nil), 404, "not_found")

	events := e.do(o.key, "GET", "/api/v1/embed/events?event_type=webhook.deleted", nil)
	require.Len(t, events.list(), 1)
}

func TestEndUserWebhookTargetsMustBePublicInProduction(t *testing.T) {
	e := newEnv(t) // AllowPrivateURLs off, as in production
	o := e.embedOrg(nil)
	ann, _ := e.embedSession(o, "ann", nil)
	for _, u := range []string{"http://127.0.0.1:8080/h", "http://10.0.0.5/h", "http://169.254.169.254/latest", "http://localhost/h", "http://[::1]/h"} {
		requireError(t, e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": u, "events": []string{"order.created"}}), 400, "validation_error")
	}
	// Features: with end_user_webhooks off, the routes refuse.
	require.Equal(t, 200, e.do(o.key, "PATCH", "/api/v1/embed/config", map[string]any{"enabled_features": []string{"bridges"}}).Code)
	requireError(t, e.do(ann, "GET", "/api/v1/embed/webhooks", nil), 403, "forbidden")
}

// directOAuth runs the exchange in-process (the worker's activity body).
type directOAuth struct{ svc *embed.Service }

func (d directOAuth) ExchangeOAuthCode(ctx context.Context, in embed.ExchangeInput) (embed.ExchangeResult, error) {
	return d.svc.ExchangeOAuthCode(ctx, in)
}

func TestStorefrontAOAuthAgainstTheSandbox(t *testing.T) {
	sandbox := httptest.NewServer(sandboxapi.NewHandler())
	defer sandbox.Close()
	app := embed.StorefrontAApp{ClientID: sandboxapi.SandboxStorefrontAClientID,
		ClientSecret: sandboxapi.StorefrontAClientSecret(sandboxapi.SandboxStorefrontAClientID),
		BaseURL:      sandbox.URL + "/platforms/storefront_a"}
	var runner directOAuth
	e := newEnv(t, func(d *Deps) {
		d.Embed.StorefrontA = app
		d.Embed.OAuth = &runner
	})
	runner.svc = embed.New(embed.Deps{Store: e.deps.Store, Secrets: e.deps.Secrets, StorefrontA: app, BaseURL: e.deps.BaseURL})
	o := e.embedOrg(nil)
	ann, _ := e.embedSession(o, "ann", nil)
	bob, _ := e.embedSession(o, "bob", nil)

	requireError(t, e.do(ann, "POST", "/api/v1/embed/bridges/storefront_a/oauth/start", map[string]any{"shopDomain": "not a shop!"}), 400, "validation_error")
	requireError(t, e.do(ann, "POST", "/api/v1/embed/bridges/storefront_a/oauth/start", map[string]any{}), 400, "validation_error")

	start := func(c caller, shop string) (string, string) {
		res := e.do(c, "POST", "/api/v1/embed/bridges/storefront_a/oauth/start", map[string]any{"shopDomain": shop})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		return res.data()["bridgeId"].(string), res.data()["authUrl"].(string)
	}
	bridgeID, authURL := start(ann, "acme")
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "/platforms/storefront_a/admin/oauth/authorize", u.Path)
	require.Equal(t, app.ClientID, u.Query().Get("client_id"))
	require.Equal(t, "http://fos.test"+embed.CallbackPath, u.Query().Get("redirect_uri"))
	require.Equal(t, "acme.myshopify.com", u.Query().Get("shop"))
	pending := e.do(ann, "GET", "/api/v1/embed/bridges", nil).list()
	require.Equal(t, "disconnected", pending[0]["status"])

	// The sandbox's authorize page approves at once.
	authorize := func(authURL string) url.Values {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(authURL)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, embed.CallbackPath, loc.Path)
		return loc.Query()
	}
	cb := authorize(authURL)
	callback := func(q url.Values) *response { return e.do(caller{}, "GET", embed.CallbackPath+"?"+q.Encode(), nil) }

	// A bad HMAC, a foreign shop or a made-up state change nothing.
	tampered := url.Values{}
	for k, v := range cb {
		tampered[k] = v
	}
	tampered.Set("shop", "evil.myshopify.com")
	require.Equal(t, 401, callback(tampered).Code)
	tampered.Set("hmac", embed.QueryHMAC(app.ClientSecret, tampered)) // signed, but not the state's shop
	require.Equal(t, 400, callback(tampered).Code)
	forged := url.Values{"code": {"x"}, "shop": {"acme.myshopify.com"}, "state": {"made-up"}, "timestamp": {"1"}}
	forged.Set("hmac", embed.QueryHMAC(app.ClientSecret, forged))
	require.Equal(t, 400, callback(forged).Code)
	require.Equal(t, "disconnected", e.do(ann, "GET", "/api/v1/embed/bridges", nil).list()[0]["status"])

	ok := callback(cb)
	require.Equal(t, 200, ok.Code, "%s", ok.Raw)
	require.Contains(t, string(ok.Raw), bridgeID)
	require.Contains(t, ok.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	got := e.do(ann, "GET", "/api/v1/embed/bridges", nil).list()[0]
	require.Equal(t, "active", got["status"])
	require.Equal(t, platforms.RedactedValue, got["config"].(map[string]any)["accessToken"])
	orgID := uuid.MustParse(o.owner.org)
	b, err := store.BridgeByID(t.Context(), e.deps.Store.Pool, orgID, uuid.MustParse(bridgeID))
	require.NoError(t, err)
	full, err := store.BridgeFullConfig(e.deps.Secrets, b)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(full["accessToken"].(string), "shpca_"))

	// Replaying the callback is refused (the state is spent).
	require.Equal(t, 400, callback(cb).Code)
	// Bob cannot see the new bridge; the event log has the OAuth steps.
	require.Empty(t, e.do(bob, "GET", "/api/v1/embed/bridges", nil).list())
	ev := e.do(o.key, "GET", "/api/v1/embed/events?event_type=bridge.oauth_started", nil)
	require.Len(t, ev.list(), 1)
	require.Len(t, e.do(o.key, "GET", "/api/v1/embed/events?event_type=bridge.created", nil).list(), 1)

	// The sandbox refuses a code twice and a wrong secret, like the platform.
	_, authURL2 := start(ann, "acme2.myshopify.com")
	cb2 := authorize(authURL2)
	tok := func(secret string) int {
		body := strings.NewReader(`{"client_id":"` + app.ClientID + `","client_secret":"` + secret + `","code":"` + cb2.Get("code") + `"}`)
		req, _ := http.NewRequest("POST", app.BaseURL+"/admin/oauth/access_token", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Shopify-Shop-Domain", "acme2.myshopify.com")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 400, tok("wrong-secret"))
	require.Equal(t, 200, tok(app.ClientSecret))
	require.Equal(t, 400, tok(app.ClientSecret), "a code is single-use")
	// The callback now fails at the exchange (the code is spent) and the
	// bridge stays disconnected.
	require.Equal(t, 502, callback(cb2).Code)
}

func TestConnectWidgetPageIsFramedOnlyByAllowedOrigins(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(map[string]any{"allowed_origins": []string{"https://app.example.com"}, "branding": map[string]any{"company_name": "<b>Acme</b>"}})
	js := e.do(caller{}, "GET", "/embed/connect.js", nil)
	require.Equal(t, 200, js.Code)
	require.Contains(t, string(js.Raw), "FosConnect")
	page := e.do(caller{}, "GET", "/embed/connect?key="+o.pk+"&origin="+url.QueryEscape("https://app.example.com"), nil)
	require.Equal(t, 200, page.Code, "%s", page.Raw)
	csp := page.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "frame-ancestors https://app.example.com;")
	require.Contains(t, csp, "script-src 'self'")
	require.NotContains(t, string(page.Raw), "<b>Acme</b>", "branding is escaped")
	require.Contains(t, string(page.Raw), "&lt;b&gt;Acme&lt;/b&gt;")
	require.Equal(t, 403, e.do(caller{}, "GET", "/embed/connect?key="+o.pk+"&origin="+url.QueryEscape("https://evil.example"), nil).Code)
	require.Equal(t, 404, e.do(caller{}, "GET", "/embed/connect?key=pk_unknown&origin="+url.QueryEscape("https://app.example.com"), nil).Code)
	require.Equal(t, 404, e.do(caller{}, "GET", "/dev/embed-demo", nil).Code, "the demo page only under fos dev")
}

// embedService is an embed.Service over the environment's store (the one
// the router holds is private).
func (e *testEnv) embedService() *embed.Service {
	return embed.New(embed.Deps{Store: e.deps.Store, Secrets: e.deps.Secrets})
}
