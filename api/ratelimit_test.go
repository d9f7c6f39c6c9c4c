package api

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/workflows"
)

// limitedEnv is a test env with the given limits (the rest default).
func limitedEnv(t *testing.T, l config.Limits, opts ...func(*Deps)) *testEnv {
	t.Helper()
	return newEnv(t, append([]func(*Deps){func(d *Deps) { d.Limits = l }}, opts...)...)
}

// from sends a request from remote (host:port), with extra headers.
func (e *testEnv) from(remote string, c caller, method, path string, body any, headers ...string) *response {
	e.t.Helper()
	prev := e.handler
	e.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = remote
		prev.ServeHTTP(w, r)
	})
	defer func() { e.handler = prev }()
	return e.do(c, method, path, body, headers...)
}

// requireLimited asserts a 429 rate_limited answer with a Retry-After in
// whole seconds.
func requireLimited(t *testing.T, res *response) {
	t.Helper()
	requireError(t, res, 429, "rate_limited")
	ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", res.Header.Get("Retry-After"))
	require.Positive(t, ra)
}

func per(n int, d time.Duration) config.Rate { return config.Rate{Events: n, Per: d} }

func TestRateLimitLogin(t *testing.T) {
	e := limitedEnv(t, config.Limits{LoginPerIP: per(3, time.Hour), LoginPerEmail: per(2, time.Hour)})
	login := func(remote, addr string, headers ...string) *response {
		return e.from(remote, caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": addr, "password": "wrong password"}, headers...)
	}
	// Per e-mail, whatever the address: the third try is refused.
	require.Equal(t, 401, login("198.51.100.1:1000", "victim@example.com").Code)
	require.Equal(t, 401, login("198.51.100.2:1000", "VICTIM@example.com").Code)
	requireLimited(t, login("198.51.100.3:1000", "victim@example.com"))

	// Per IP, whatever the e-mail; X-Forwarded-For from an untrusted peer is
	// not believed.
	for i := range 3 {
		require.Equal(t, 401, login("203.0.113.9:1000", "a"+strconv.Itoa(i)+"@example.com").Code)
	}
	requireLimited(t, login("203.0.113.9:2000", "b@example.com", "X-Forwarded-For", "192.0.2.77"))
	// Another address is not affected.
	require.Equal(t, 401, login("203.0.113.10:1000", "b@example.com").Code)
}

func TestRateLimitSignup(t *testing.T) {
	e := limitedEnv(t, config.Limits{SignupPerIP: per(2, time.Hour), SignupPerEmail: per(1, time.Hour)})
	signup := func(remote, addr string) *response {
		return e.from(remote, caller{}, "POST", "/api/v1/auth/signup", map[string]any{
			"email": addr, "password": "correct horse", "first_name": "A", "last_name": "B"})
	}
	require.Equal(t, 201, signup("198.51.100.1:1", "one@example.com").Code)
	// The same e-mail again: refused before the 409 can tell it is taken.
	requireLimited(t, signup("198.51.100.2:1", "one@example.com"))
	require.Equal(t, 201, signup("198.51.100.1:1", "two@example.com").Code)
	requireLimited(t, signup("198.51.100.1:1", "three@example.com"))
}

func TestRateLimitInvitations(t *testing.T) {
	e := limitedEnv(t, config.Limits{InvitationsPerOrg: per(2, time.Hour)})
	owner := e.signup()
	other := e.signup()
	invite := func(c caller, addr string) *response {
		return e.do(c, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": addr})
	}
	require.Equal(t, 201, invite(owner.caller, "i1@example.com").Code)
	require.Equal(t, 201, invite(owner.caller, "i2@example.com").Code)
	res := invite(owner.caller, "i3@example.com")
	requireLimited(t, res)
	require.Empty(t, e.mailbox.Messages("i3@example.com"))
	// A 429 is not stored under an Idempotency-Key: it would replay forever.
	requireLimited(t, e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": "i4@example.com"}, "Idempotency-Key", "k1"))
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_keys WHERE key = 'k1'`).Scan(&n))
	require.Zero(t, n)
	// Another organization has its own allowance.
	require.Equal(t, 201, invite(other.caller, "i1@example.com").Code)
}

func TestRateLimitCarrierAPINRequests(t *testing.T) {
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	tc := mocks.NewClient(t)
	e := limitedEnv(t, config.Limits{CarrierPINPerAccount: per(2, time.Hour), WrongPINs: 4}, func(d *Deps) {
		d.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
		d.Temporal = tc
	})
	owner := e.signup()
	// The configured wrong-PIN cap travels to the workflow with register.
	expectRegister(t, tc, owner.org, func(_ string, a workflows.RegisterArgs) bool { return a.MaxWrongPINs == 4 }, mfaRegisterResult)
	res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134221"))
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	acctID := res.Body["accountId"].(string)

	for range 2 {
		expectStep(t, tc, acctID, workflows.RegistrationUpdateRequestPIN, func(any) bool { return true },
			workflows.RequestPINResult{Success: true, Message: "sent"}, nil)
		res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/request-pin", map[string]any{"accountId": acctID, "option": "SMS"})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
	}
	// The third never reaches the workflow (the mock would fail on it).
	requireLimited(t, e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/request-pin", map[string]any{"accountId": acctID, "option": "SMS"}))
}

func TestRateLimitAPIKeyBudget(t *testing.T) {
	e := limitedEnv(t, config.Limits{APIKey: per(3, time.Hour)})
	owner := e.signup()
	key := e.apiKey(owner, "orders:read")
	other := e.apiKey(owner, "orders:read")
	for range 3 {
		require.Equal(t, 200, e.do(key, "GET", "/api/v1/orders", nil).Code)
	}
	requireLimited(t, e.do(key, "GET", "/api/v1/orders", nil))
	// Another key, and the user's token, are not affected.
	require.Equal(t, 200, e.do(other, "GET", "/api/v1/orders", nil).Code)
	for range 5 {
		require.Equal(t, 200, e.do(owner.caller, "GET", "/api/v1/orders", nil).Code)
	}
	// An unknown key is 401, not a budget.
	requireError(t, e.do(caller{token: "fos_" + uuid.NewString()}, "GET", "/api/v1/orders", nil), 401, "unauthorized")
}

func TestRateLimitOff(t *testing.T) {
	e := limitedEnv(t, config.Limits{LoginPerIP: config.Rate{Off: true}, LoginPerEmail: config.Rate{Off: true}})
	for range 30 {
		res := e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": "x@example.com", "password": "nope nope"})
		require.Equal(t, 401, res.Code)
	}
}

func TestClientIPTrustedProxies(t *testing.T) {
	s := &Server{limits: newLimiters(config.Limits{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}})}
	cases := []struct {
		remote, xff, want string
	}{
		// Untrusted peer: its own address, whatever it claims.
		{"203.0.113.5:4000", "1.2.3.4", "203.0.113.5"},
		// Trusted proxy: the rightmost address it did not add itself.
		{"10.1.2.3:4000", "1.2.3.4, 198.51.100.7", "198.51.100.7"},
		// A chain of trusted proxies is skipped; a client-written prefix is not believed.
		{"10.1.2.3:4000", "6.6.6.6, 198.51.100.7, 10.9.9.9", "198.51.100.7"},
		{"[2001:db8::1]:4000", "198.51.100.8", "198.51.100.8"},
		// Garbage after the last good hop: the last good hop.
		{"10.1.2.3:4000", "198.51.100.7, not-an-ip", "10.1.2.3"},
		// A trusted proxy with no header is the client.
		{"10.1.2.3:4000", "", "10.1.2.3"},
		{"[::ffff:203.0.113.5]:1", "", "203.0.113.5"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		require.Equal(t, c.want, s.clientIP(r), "%s %q", c.remote, c.xff)
	}
}

func TestLimiterSetEvictsIdleKeys(t *testing.T) {
	ls := newLimiterSet("things", per(2, time.Minute))
	now := time.Now()
	for i := range 1000 {
		ok, _ := ls.allow("k"+strconv.Itoa(i), now)
		require.True(t, ok)
	}
	ok, _ := ls.allow("k1", now)
	require.True(t, ok)
	ok, wait := ls.allow("k1", now)
	require.False(t, ok)
	require.InDelta(t, 30*time.Second, wait, float64(time.Second))
	require.Equal(t, 1000, ls.size())
	// Once refilled, idle keys are forgotten on the next sweep.
	later := now.Add(2 * time.Minute)
	ok, _ = ls.allow("fresh", later)
	require.True(t, ok)
	require.Equal(t, 1, ls.size())

	// The set never grows past its cap.
	ls.maxKeys = 10
	for i := range 25 {
		ls.allow("m"+strconv.Itoa(i), later)
	}
	require.LessOrEqual(t, ls.size(), 10)
}

// Behind a trusted proxy, each client behind it has its own allowance, and
// what a client writes into X-Forwarded-For itself is not believed.
func TestRateLimitBehindTrustedProxy(t *testing.T) {
	e := limitedEnv(t, config.Limits{LoginPerIP: per(2, time.Hour), TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	login := func(xff string) *response {
		return e.from("10.0.0.1:5000", caller{}, "POST", "/api/v1/auth/login",
			map[string]any{"email": uuid.NewString()[:8] + "@example.com", "password": "wrong password"}, "X-Forwarded-For", xff)
	}
	require.Equal(t, 401, login("198.51.100.20").Code)
	// The client prepends an address of its choice: the proxy appended the real one.
	require.Equal(t, 401, login("192.0.2.99, 198.51.100.20").Code)
	requireLimited(t, login("192.0.2.98, 198.51.100.20"))
	// Another client behind the same proxy.
	require.Equal(t, 401, login("198.51.100.21").Code)
}

// BenchmarkLimiterSetAllow is the per-request cost of a budget check (one
// key, contended by every goroutine, as one busy API key is).
func BenchmarkLimiterSetAllow(b *testing.B) {
	ls := newLimiterSet("requests", config.Rate{Events: 1 << 30, Per: time.Second})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if ok, _ := ls.allow("key", time.Now()); !ok {
				b.Error("refused")
			}
		}
	})
}
