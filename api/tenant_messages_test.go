package api

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

// closedAddr is an address on which nothing listens: a call gets
// "connection refused", whose Go text names the IP:port.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// requireNoInternals fails when text shows the unreachable address or a Go
// network error.
func requireNoInternals(t *testing.T, text, addr string) {
	t.Helper()
	for _, bad := range []string{addr, "127.0.0.1", "connection refused", "dial tcp", "http://"} {
		require.False(t, strings.Contains(text, bad), "%q leaks %q", text, bad)
	}
}

// A carrier that cannot be reached: neither the API bodies nor the stored
// lastError carry the network error's text.
func TestConnectionRefusedNeverReachesTenants(t *testing.T) {
	addr := closedAddr(t)
	e := newEnv(t, func(d *Deps) {
		d.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: "http://" + addr})
	})
	owner := e.signup()
	acct := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", carrierCCreate("Unreachable"))
	require.Equal(t, 201, acct.Code, "%s", acct.Raw)
	path := "/api/v1/carrier-accounts/" + acct.data()["id"].(string)

	res := e.do(owner.caller, "POST", path+"/test", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, false, res.Body["valid"])
	require.NotEmpty(t, res.Body["error"])
	requireNoInternals(t, string(res.Raw), addr)

	got := e.do(owner.caller, "GET", path, nil)
	require.NotNil(t, got.data()["lastError"])
	requireNoInternals(t, string(got.Raw), addr)
	var stored string
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT last_error FROM carrier_accounts WHERE id = $1`, acct.data()["id"]).Scan(&stored))
	require.NotEmpty(t, stored)
	requireNoInternals(t, stored, addr)

	// Rates from the same account: 502 carrier_error without the text.
	require.Equal(t, 200, e.do(owner.caller, "PATCH", path, map[string]any{"status": "active"}).Code)
	res = e.do(owner.caller, "POST", "/api/v1/rates", rateTestBody())
	requireError(t, res, 502, "carrier_error")
	requireNoInternals(t, string(res.Raw), addr)
}
