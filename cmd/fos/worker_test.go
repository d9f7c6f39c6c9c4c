package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// Under FOS_SANDBOX=1 every bridge type's real connector reads the
// sandbox's store of its API with the seed's credentials; with
// FOS_SANDBOX=0 the connectors point at the real hosts (never the
// sandbox), or where the CONTRACT 8b variables say.
func TestPlatformRegistry(t *testing.T) {
	var calls atomic.Int64
	sb := sandboxapi.NewHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sb.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	reg := platformRegistry(config.Config{Sandbox: true, SandboxURL: srv.URL})
	for _, b := range demoBridges() {
		typ := b["type"].(string)
		cfg, errs := platforms.NormalizeConfig(typ, b["config"].(map[string]any))
		require.Empty(t, errs)
		require.Empty(t, reg.CheckConfig(typ, cfg), typ)
		conn, err := reg.Get(typ)
		require.NoError(t, err)
		orders, _, err := conn.ListOrders(context.Background(), platforms.Bridge{Type: typ, Config: cfg}, time.Time{}, "")
		require.NoError(t, err, typ)
		require.NotEmpty(t, orders, typ)
	}
	require.NotZero(t, calls.Load())

	prod := platformRegistry(config.Config{SandboxURL: srv.URL, PlatformURLs: map[string]string{}})
	require.Equal(t, "config.shopDomain", prod.CheckConfig(platforms.TypeStorefrontA, map[string]any{"shopDomain": "shop.example.com", "accessToken": "t"})[0].Field)
	require.Equal(t, "config.storeUrl", prod.CheckConfig(platforms.TypeStorefrontB, map[string]any{"storeUrl": "http://shop.example.com", "consumerKey": "k", "consumerSecret": "s"})[0].Field)
	pointed := platformRegistry(config.Config{PlatformURLs: map[string]string{platforms.EnvStorefrontAURL: "https://shops.internal"}})
	require.Empty(t, pointed.CheckConfig(platforms.TypeStorefrontA, map[string]any{"shopDomain": "shop.example.com", "accessToken": "t"}))
}
