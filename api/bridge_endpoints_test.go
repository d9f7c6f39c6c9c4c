package api

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Attack (issue 15, finding 3): a caller who may PATCH a bridge but not
// read its secrets points storefront_b's storeUrl at its own host. The
// stored consumer key and secret must never reach that host: the update is
// refused (400 naming the credentials to enter again), and the connector
// keeps talking to the owner's host with the owner's credentials.
func TestRetargetedStoreURLDoesNotTakeTheCredentials(t *testing.T) {
	type seen struct {
		mu    sync.Mutex
		auths []string
	}
	serve := func(s *seen) *httptest.Server {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.auths = append(s.auths, r.Header.Get("Authorization")+r.URL.RawQuery)
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[]`))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var owner, attacker seen
	ownerSrv, attackerSrv := serve(&owner), serve(&attacker)
	reg := platforms.NewAPIRegistry(platforms.APIURLs{}, ownerSrv.Client(), ownerSrv.Client())
	e := newEnv(t, func(d *Deps) { d.AllowPrivateURLs = true; d.Platforms = reg })
	acct := e.signup()
	res := e.do(acct.caller, "POST", "/api/v1/bridges", map[string]any{"type": "storefront_b", "name": "wp",
		"config": map[string]any{"storeUrl": ownerSrv.URL, "consumerKey": "ck_owner", "consumerSecret": "cs_owner"}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	id := res.data()["id"].(string)
	editor := e.apiKey(acct, "bridges:write", "bridges:read")

	// Retargeted without the credentials (or with their redacted
	// placeholders): refused, naming the fields to enter again.
	for _, cfg := range []map[string]any{
		{"storeUrl": attackerSrv.URL},
		{"store_url": attackerSrv.URL + "/shop", "consumerKey": platforms.RedactedValue},
		{"storeUrl": attackerSrv.URL, "webhookSecret": "new"},
	} {
		res = e.do(editor, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": cfg})
		requireError(t, res, 400, "validation_error")
		require.ElementsMatch(t, []string{"config.consumerKey", "config.consumerSecret"}, bridgeErrFields(t, res), "%v", cfg)
		require.Contains(t, string(res.Raw), "must be entered again")
	}
	// One credential re-entered is not enough.
	res = e.do(editor, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"storeUrl": attackerSrv.URL, "consumerKey": "ck_new"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.consumerSecret"}, bridgeErrFields(t, res))

	// Nothing changed: a sync talks to the owner's host with the owner's
	// credentials; the attacker's host sees nothing.
	ctx := t.Context()
	b, err := store.BridgeByID(ctx, e.deps.Store.Pool, uuid.MustParse(acct.org), uuid.MustParse(id))
	require.NoError(t, err)
	pb, err := store.PlatformBridge(e.deps.Secrets, b)
	require.NoError(t, err)
	require.Equal(t, ownerSrv.URL, pb.Config["storeUrl"])
	conn, err := reg.Get(platforms.TypeStorefrontB)
	require.NoError(t, err)
	_, _, _ = conn.ListOrders(ctx, pb, time.Time{}, "")
	require.Empty(t, attacker.auths)
	require.NotEmpty(t, owner.auths)

	// The same request with both credentials: accepted, and the new host
	// gets the new credentials only.
	res = e.do(editor, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"storeUrl": attackerSrv.URL,
		"consumerKey": "ck_new", "consumerSecret": "cs_new"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	b, err = store.BridgeByID(ctx, e.deps.Store.Pool, uuid.MustParse(acct.org), uuid.MustParse(id))
	require.NoError(t, err)
	pb, err = store.PlatformBridge(e.deps.Secrets, b)
	require.NoError(t, err)
	require.Equal(t, "ck_new", pb.Config["consumerKey"])
	require.Equal(t, "cs_new", pb.Config["consumerSecret"])

	// Changes that keep the host need no credentials.
	res = e.do(editor, "PATCH", "/api/v1/bridges/"+id, map[string]any{"name": "renamed", "config": map[string]any{"storeUrl": attackerSrv.URL}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	// storefront_a's shopDomain is bound the same way.
	res = e.do(acct.caller, "POST", "/api/v1/bridges", map[string]any{"type": "storefront_a", "name": "shop",
		"config": map[string]any{"shopDomain": "owner.myshopify.com", "accessToken": "shpat_owner"}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	res = e.do(editor, "PATCH", "/api/v1/bridges/"+res.data()["id"].(string), map[string]any{"config": map[string]any{"shopDomain": "evil.myshopify.com"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.accessToken"}, bridgeErrFields(t, res))
}
