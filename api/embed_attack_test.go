package api

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/sandboxapi"
)

// Attacks on the embed layer (issue 21, "Bad input and security"), row by
// row: another end user's or organization's ids are 404 on every route
// that takes one; wrong, expired and revoked tokens are 401 on every
// session route at once; credentials never cross modes; floods are cut.

// sessionRoutes are every est_ route with an id of the caller's own (or
// someone else's) bridge and webhook.
func sessionRoutes(bridge, hook, delivery string) [][3]string {
	return [][3]string{
		{"GET", "/api/v1/embed/bridges", ""},
		{"POST", "/api/v1/embed/bridges", `{"type":"storefront_a","name":"x","config":{}}`},
		{"PATCH", "/api/v1/embed/bridges/" + bridge, `{"name":"mine"}`},
		{"DELETE", "/api/v1/embed/bridges/" + bridge, ""},
		{"POST", "/api/v1/embed/bridges/" + bridge + "/test", ""},
		{"POST", "/api/v1/embed/bridges/storefront_a/oauth/start", `{"shopDomain":"acme"}`},
		{"GET", "/api/v1/embed/bridge-types", ""},
		{"GET", "/api/v1/embed/webhooks", ""},
		{"POST", "/api/v1/embed/webhooks", `{"url":"https://hooks.example.com/x","events":["order.created"]}`},
		{"GET", "/api/v1/embed/webhooks/event-types", ""},
		{"PATCH", "/api/v1/embed/webhooks/" + hook, `{"is_active":false}`},
		{"DELETE", "/api/v1/embed/webhooks/" + hook, ""},
		{"POST", "/api/v1/embed/webhooks/" + hook + "/test", ""},
		{"GET", "/api/v1/embed/webhooks/" + hook + "/deliveries", ""},
		{"POST", "/api/v1/embed/webhooks/" + hook + "/deliveries/" + delivery + "/redeliver", ""},
		{"GET", "/api/embed/webhooks", ""},
		{"DELETE", "/api/embed/webhooks/" + hook, ""},
	}
}

func TestEmbedAttackForeignIDsAreNotFound(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(nil)
	ann, annRes := e.embedSession(o, "ann", nil)
	bob, _ := e.embedSession(o, "bob", nil)
	foreign := e.embedOrg(nil)
	eve, _ := e.embedSession(foreign, "ann", nil) // Ann's external id, another organization
	bridge := e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("Ann's shop")).data()["id"].(string)
	hookRes := e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": "https://hooks.example.com/ann", "events": []string{"order.created"}})
	require.Equal(t, 201, hookRes.Code, "%s", hookRes.Raw)
	hook := hookRes.data()["id"].(string)
	// A delivery of Ann's webhook (recorded, never sent).
	var delivery string
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `INSERT INTO webhook_deliveries
 (id, organization_id, webhook_id, end_user_id, message_id, event, body)
 SELECT gen_random_uuid(), organization_id, id, end_user_id, 'msg_x', 'order.created', '{}' FROM end_user_webhooks WHERE id = $1
 RETURNING id::text`, hook).Scan(&delivery))

	// Every id-taking session route: 404 for Bob (same organization) and
	// Eve (another one), never 403 or 200; lists show them nothing.
	for _, c := range []caller{bob, eve} {
		for _, rt := range sessionRoutes(bridge, hook, delivery) {
			if !strings.Contains(rt[1], bridge) && !strings.Contains(rt[1], hook) {
				continue
			}
			var body any
			if rt[2] != "" {
				body = rt[2]
			}
			requireError(t, e.do(c, rt[0], rt[1], body), 404, "not_found")
		}
		require.Empty(t, e.do(c, "GET", "/api/v1/embed/bridges", nil).list())
		require.Empty(t, e.do(c, "GET", "/api/v1/embed/webhooks", nil).list())
	}
	// Ann's own webhook with a delivery that is not its own, or made up.
	requireError(t, e.do(ann, "POST", "/api/v1/embed/webhooks/"+hook+"/deliveries/"+uuid.NewString()+"/redeliver", nil), 404, "not_found")
	requireError(t, e.do(ann, "PATCH", "/api/v1/embed/webhooks/not-a-uuid", map[string]any{"is_active": false}), 404, "not_found")
	// Nothing of Ann's changed.
	require.Equal(t, "Ann's shop", e.do(ann, "GET", "/api/v1/embed/bridges", nil).list()[0]["name"])
	require.Equal(t, true, e.do(ann, "GET", "/api/v1/embed/webhooks", nil).list()[0]["is_active"])

	// Management routes of another organization: 404 for Ann's user and
	// session, and its event log shows none of hers.
	annID := annRes["endUser"].(map[string]any)["id"].(string)
	sid := annRes["sessionId"].(string)
	requireError(t, e.do(foreign.key, "GET", "/api/v1/embed/users/"+annID, nil), 404, "not_found")
	requireError(t, e.do(foreign.key, "DELETE", "/api/v1/embed/users/"+annID, nil), 404, "not_found")
	requireError(t, e.do(foreign.key, "DELETE", "/api/v1/embed/sessions/"+sid, nil), 404, "not_found")
	require.Empty(t, e.do(foreign.key, "GET", "/api/v1/embed/events?end_user_id="+annID, nil).list())
	require.Equal(t, 200, e.do(ann, "GET", "/api/v1/embed/bridges", nil).Code, "Ann's session still works")
}

func TestEmbedAttackTokensAre401AtOnceOnEverySessionRoute(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(nil)
	ann, annRes := e.embedSession(o, "ann", nil)
	bridge := e.do(ann, "POST", "/api/v1/embed/bridges", sfaBridgeBody("shop")).data()["id"].(string)
	hook := e.do(ann, "POST", "/api/v1/embed/webhooks", map[string]any{"url": "https://hooks.example.com/ann", "events": []string{"order.created"}}).data()["id"].(string)
	routes := sessionRoutes(bridge, hook, uuid.NewString())
	all401 := func(c caller, why string) {
		t.Helper()
		for _, rt := range routes {
			var body any
			if rt[2] != "" {
				body = rt[2]
			}
			res := e.do(c, rt[0], rt[1], body)
			require.Equal(t, 401, res.Code, "%s %s %s: %s", why, rt[0], rt[1], res.Raw)
		}
	}

	// Credentials of the other modes never open a session route.
	all401(caller{}, "no token")
	all401(o.key, "an embed:manage API key")
	all401(caller{token: o.pk}, "the publishable key")
	all401(o.owner.caller, "a user token")

	// Expired since it was issued: refused on the next request (no cache
	// outlives the session).
	expiring, expRes := e.embedSession(o, "carl", nil)
	require.Equal(t, 200, e.do(expiring, "GET", "/api/v1/embed/bridges", nil).Code)
	_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE embed_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, expRes["sessionId"])
	require.NoError(t, err)
	all401(expiring, "an expired session")

	// Revoked: refused at once, everywhere, alias included.
	require.Equal(t, 200, e.do(ann, "GET", "/api/embed/webhooks", nil).Code)
	require.Equal(t, 200, e.do(o.key, "DELETE", "/api/v1/embed/sessions/"+annRes["sessionId"].(string), nil).Code)
	all401(ann, "a revoked session")

	// The est_ token reaches nothing but the session routes.
	live, _ := e.embedSession(o, "dora", nil)
	for _, rt := range [][2]string{
		{"GET", "/api/v1/orders"}, {"GET", "/api/v1/bridges"}, {"GET", "/api/v1/embed/users"}, {"GET", "/api/v1/embed/events"},
		{"PATCH", "/api/v1/embed/config"}, {"POST", "/api/v1/embed/sessions"}, {"GET", "/api/v1/embed/config/me"},
	} {
		requireError(t, e.do(live, rt[0], rt[1], map[string]any{}), 401, "unauthorized")
	}
	// The publishable key opens nothing but the auto-session and the
	// public config.
	for _, rt := range [][2]string{{"GET", "/api/v1/orders"}, {"POST", "/api/v1/embed/sessions"}, {"GET", "/api/v1/embed/users"}} {
		requireError(t, e.do(caller{token: o.pk}, rt[0], rt[1], map[string]any{"externalId": "x"}), 401, "unauthorized")
	}
	// Malformed tokens.
	for _, tok := range []string{"est_", "EST_" + strings.Repeat("a", 64), "est_" + strings.Repeat("a", 5000), "est_' OR 1=1 --"} {
		requireError(t, e.do(caller{token: tok}, "GET", "/api/v1/embed/bridges", nil), 401, "unauthorized")
	}
	require.Equal(t, 200, e.do(live, "GET", "/api/v1/embed/bridges", nil).Code)
}

func TestEmbedAttackFloodsAreCut(t *testing.T) {
	e := newEnv(t)
	o := e.embedOrg(nil)
	ann, _ := e.embedSession(o, "ann", nil)

	// One session's requests: 600 a minute.
	n429 := 0
	for range 620 {
		res := e.do(ann, "GET", "/api/v1/embed/webhooks/event-types", nil)
		if res.Code == 429 {
			n429++
			require.NotEmpty(t, res.Header.Get("Retry-After"))
		}
	}
	require.GreaterOrEqual(t, n429, 10)
	bob, _ := e.embedSession(o, "bob", nil)
	require.Equal(t, 200, e.do(bob, "GET", "/api/v1/embed/webhooks/event-types", nil).Code, "another session is not held back")

	// Guessing tokens from one address: past 60 refusals a minute the
	// address is refused before any lookup, whatever the token.
	codes := map[int]int{}
	for i := range 70 {
		codes[e.do(caller{token: "est_guess" + uuid.NewString() + string(rune('a'+i%26))}, "GET", "/api/v1/embed/bridges", nil).Code]++
	}
	require.Equal(t, 60, codes[401], "%v", codes)
	require.Equal(t, 10, codes[429], "%v", codes)
	requireError(t, e.do(bob, "GET", "/api/v1/embed/bridges", nil), 429, "rate_limited")

	// Oversized bodies are refused before any work.
	huge := `{"type":"storefront_a","name":"x","config":{"x":"` + strings.Repeat("a", 11<<20) + `"}}`
	requireError(t, e.do(o.key, "POST", "/api/v1/embed/sessions", huge), 413, "payload_too_large")
}

func TestEmbedAttackOAuthCallbackRefusalsLeaveTheBridge(t *testing.T) {
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
	start := e.do(ann, "POST", "/api/v1/embed/bridges/storefront_a/oauth/start", map[string]any{"shopDomain": "acme"})
	require.Equal(t, 200, start.Code, "%s", start.Raw)
	bridgeID := start.data()["bridgeId"].(string)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(start.data()["authUrl"].(string))
	require.NoError(t, err)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	cb := loc.Query()
	callback := func(q url.Values) int {
		return e.do(caller{}, "GET", embed.CallbackPath+"?"+q.Encode(), nil).Code
	}
	status := func() string {
		var s string
		require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT status FROM bridges WHERE id = $1`, bridgeID).Scan(&s))
		return s
	}
	resign := func(q url.Values) url.Values {
		q.Set("hmac", embed.QueryHMAC(app.ClientSecret, q))
		return q
	}
	clone := func() url.Values {
		q := url.Values{}
		for k, v := range cb {
			q[k] = append([]string(nil), v...)
		}
		return q
	}

	// No hmac, a bad one, one made with another secret.
	q := clone()
	q.Del("hmac")
	require.Equal(t, 401, callback(q))
	q = clone()
	q.Set("hmac", strings.Repeat("0", 64))
	require.Equal(t, 401, callback(q))
	q = clone()
	q.Set("hmac", embed.QueryHMAC("not-the-secret", q))
	require.Equal(t, 401, callback(q))
	// Signed, but a foreign shop, a shop host that is not storefront_a's,
	// no code.
	for _, shop := range []string{"evil.myshopify.com", "acme.myshopify.com.evil.example", "acme"} {
		q = clone()
		q.Set("shop", shop)
		require.Equal(t, 400, callback(resign(q)), shop)
	}
	q = clone()
	q.Del("code")
	require.Equal(t, 400, callback(resign(q)))
	// An expired state.
	_, err = e.deps.Store.Pool.Exec(t.Context(), `UPDATE embed_oauth_states SET expires_at = now() - interval '1 second' WHERE bridge_id = $1`, bridgeID)
	require.NoError(t, err)
	require.Equal(t, 400, callback(cb))
	require.Equal(t, "disconnected", status(), "no refusal changed the bridge")
	var used *string
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT used_at::text FROM embed_oauth_states WHERE bridge_id = $1`, bridgeID).Scan(&used))
	require.Nil(t, used, "refusals do not spend the state")

	// A callback flood from one address is cut at 60 a minute.
	n429 := 0
	for range 70 {
		if callback(cb) == 429 {
			n429++
		}
	}
	require.GreaterOrEqual(t, n429, 1)
}
