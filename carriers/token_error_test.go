package carriers_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
)

const (
	tokenPathA = "/carriers/carrier_a/oauth/token"
	tokenPathB = "/carriers/carrier_b/security/v1/oauth/token"
)

func rateReq() carriers.RateRequest {
	return carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(2), ShipDate: weekdayFrom(2)}
}

// fakeClock is a settable clock for token expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestTokenCachedPerCredentialSet(t *testing.T) {
	sb := newSandbox(t)
	reg := sb.registry()
	ctx := context.Background()
	a, b := get(t, reg, "carrier_a"), get(t, reg, "carrier_b")

	for i := 0; i < 5; i++ {
		_, err := a.Rate(ctx, acctA(), rateReq())
		require.NoError(t, err)
		_, err = b.Rate(ctx, acctB(), rateReq())
		require.NoError(t, err)
	}
	assert.Equal(t, 1, sb.count(tokenPathA))
	assert.Equal(t, 1, sb.count(tokenPathB))

	// Another credential set, another token; the test environment too.
	_, err := a.Rate(ctx, withCred(acctA(), "childKey", "other"), rateReq())
	require.NoError(t, err)
	test := acctA()
	test.IsTest = true
	_, err = a.Rate(ctx, test, rateReq())
	require.NoError(t, err)
	assert.Equal(t, 3, sb.count(tokenPathA))

	// Concurrent first calls of a new credential set share one fetch.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Rate(ctx, withCred(acctB(), "clientId", "client-2"), rateReq())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 2, sb.count(tokenPathB))
}

func TestTokenRefreshedBeforeExpiry(t *testing.T) {
	sb := newSandbox(t)
	clock := &fakeClock{t: time.Now()}
	reg := sb.registry(func(c *carriers.Config) { c.Now = clock.Now })
	ctx := context.Background()
	a, b := get(t, reg, "carrier_a"), get(t, reg, "carrier_b")

	call := func() {
		t.Helper()
		_, err := a.Rate(ctx, acctA(), rateReq())
		require.NoError(t, err)
		_, err = b.Rate(ctx, acctB(), rateReq())
		require.NoError(t, err)
	}
	call()
	clock.Advance(50 * time.Minute)
	call()
	assert.Equal(t, 1, sb.count(tokenPathA), "still valid after 50 of 60 minutes")
	clock.Advance(9*time.Minute + 30*time.Second)
	call()
	assert.Equal(t, 2, sb.count(tokenPathA), "refreshed within the last minute of the hour")
	assert.Equal(t, 1, sb.count(tokenPathB), "carrier_b tokens live about 4 hours")
	clock.Advance(4 * time.Hour)
	call()
	assert.Equal(t, 2, sb.count(tokenPathB))
}

// ttlTransport asks the sandbox for short-lived tokens.
type ttlTransport struct{ ttl string }

func (tt ttlTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/oauth/token") {
		r = r.Clone(r.Context())
		r.Header.Set(sandboxapi.HeaderTokenTTL, tt.ttl)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestTokenExpiredAtCarrierIsRefetchedOnce(t *testing.T) {
	sb := newSandbox(t)
	frozen := &fakeClock{t: time.Now()} // the adapter never sees the token age
	reg := sb.registry(func(c *carriers.Config) {
		c.Now = frozen.Now
		c.HTTPClient = &http.Client{Transport: ttlTransport{ttl: "1"}}
	})
	ctx := context.Background()
	a, b := get(t, reg, "carrier_a"), get(t, reg, "carrier_b")
	_, err := a.Rate(ctx, acctA(), rateReq())
	require.NoError(t, err)
	_, err = b.Track(ctx, acctB(), []string{"1Z1442YY7229014688"})
	require.NoError(t, err)

	time.Sleep(1100 * time.Millisecond) // the sandbox's tokens expire

	_, err = a.Rate(ctx, acctA(), rateReq())
	require.NoError(t, err, "401 → new token → retried")
	_, err = b.Track(ctx, acctB(), []string{"1Z1442YY7229014688"})
	require.NoError(t, err)
	assert.Equal(t, 2, sb.count(tokenPathA))
	assert.Equal(t, 2, sb.count(tokenPathB))
	assert.Equal(t, 3, sb.count("/rate/v1/rates/quotes"), "the second call was refused once and retried")
}

func requireCarrierError(t *testing.T, err error, carrier string, status int, code string, retryable bool, kind error) {
	t.Helper()
	require.Error(t, err)
	ce, ok := carriers.AsError(err)
	require.True(t, ok, "%T %v", err, err)
	assert.Equal(t, carrier, ce.Carrier)
	assert.Equal(t, status, ce.StatusCode)
	assert.Equal(t, code, ce.Code)
	assert.Equal(t, retryable, ce.Retryable)
	assert.Equal(t, retryable, carriers.IsRetryable(err))
	assert.NotEmpty(t, ce.Message)
	if kind != nil {
		assert.ErrorIs(t, err, kind)
	}
}

func TestSandboxFailMapsToTypedErrors(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	a, b, c := get(t, reg, "carrier_a"), get(t, reg, "carrier_b"), get(t, reg, "carrier_c")

	// Authenticating credentials: 401, not retryable.
	err := a.TestCredentials(ctx, withCred(acctA(), "childSecret", "sandbox-fail"))
	requireCarrierError(t, err, "carrier_a", 401, "NOT.AUTHORIZED.ERROR", false, carriers.ErrUnauthorized)
	_, err = b.Rate(ctx, withCred(acctB(), "clientSecret", "sandbox-fail"), rateReq())
	requireCarrierError(t, err, "carrier_b", 401, "10401", false, carriers.ErrUnauthorized)
	err = c.TestCredentials(ctx, withCred(acctC(), "apiKey", "sandbox-fail"))
	requireCarrierError(t, err, "carrier_c", 401, "unauthorized", false, carriers.ErrUnauthorized)

	// Account numbers: the carrier is unavailable for the account, 503, retryable.
	_, err = a.Rate(ctx, withCred(acctA(), "accountNumber", "sandbox-fail"), rateReq())
	requireCarrierError(t, err, "carrier_a", 503, "SERVICE.UNAVAILABLE.ERROR", true, nil)
	_, err = b.Rate(ctx, withCred(acctB(), "accountNumber", "sandbox-fail"), rateReq())
	requireCarrierError(t, err, "carrier_b", 503, "190001", true, nil)
	_, err = b.Track(ctx, withCred(acctB(), "accountNumber", "sandbox-fail"), []string{"1Z1442YY7229014688"})
	requireCarrierError(t, err, "carrier_b", 503, "190001", true, nil)

	// The documented invalid carrier_c key.
	err = c.TestCredentials(ctx, withCred(acctC(), "apiKey", "invalid"))
	requireCarrierError(t, err, "carrier_c", 401, "unauthorized", false, carriers.ErrUnauthorized)
	_, err = c.Rate(ctx, withCred(acctC(), "apiKey", "invalid"), rateReq())
	assert.ErrorIs(t, err, carriers.ErrUnauthorized)

	// Valid credentials pass the test.
	for _, code := range reg.Codes() {
		assert.NoError(t, get(t, reg, code).TestCredentials(ctx, acctOf(code)), code)
	}

	// Missing credentials and a foreign account never reach the network.
	_, err = a.Rate(ctx, carriers.Account{Carrier: "carrier_a"}, rateReq())
	assert.ErrorIs(t, err, carriers.ErrUnauthorized)
	_, err = a.Rate(ctx, acctB(), rateReq())
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
}

func TestNetworkAndContextErrors(t *testing.T) {
	ctx := context.Background()

	// Nothing listens: a retryable network error.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: dead.URL})
	_, err := get(t, reg, "carrier_c").Rate(ctx, acctC(), rateReq())
	requireCarrierError(t, err, "carrier_c", 0, carriers.ErrCodeNetwork, true, nil)

	// A cancelled context: not retryable, and it is context.Canceled.
	reg = newSandbox(t).registry()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, code := range reg.Codes() {
		_, err := get(t, reg, code).Rate(cctx, acctOf(code), rateReq())
		require.Error(t, err, code)
		assert.True(t, errors.Is(err, context.Canceled), "%s: %v", code, err)
		assert.False(t, carriers.IsRetryable(err))
	}

	// A deadline hit while the carrier hangs: retryable.
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(block)
	reg = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: slow.URL})
	dctx, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = get(t, reg, "carrier_a").Rate(dctx, acctA(), rateReq())
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.True(t, carriers.IsRetryable(err))

	// Several numbers tracked one per call stop at a cancellation.
	_, err = get(t, newSandbox(t).registry(), "carrier_b").Track(cctx, acctB(), []string{"1Z1", "1Z2", "1Z3"})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

func TestConfigurationAndBaseURLs(t *testing.T) {
	sb := newSandbox(t)
	ctx := context.Background()

	// Outside sandbox mode carrier_a needs the platform client id/secret.
	reg := carriers.NewRegistry(carriers.Config{BaseURLs: map[string]carriers.Endpoints{
		"carrier_a": {Production: sb.srv.URL + "/carriers/carrier_a"},
		"carrier_c": {Production: sb.srv.URL + "/carriers/carrier_c/"},
	}})
	_, err := get(t, reg, "carrier_a").Rate(ctx, acctA(), rateReq())
	assert.ErrorIs(t, err, carriers.ErrNotConfigured)
	_, err = get(t, reg, "carrier_c").Rate(ctx, acctC(), rateReq())
	require.NoError(t, err, "overridden base URL")

	env := map[string]string{carriers.EnvCarrierAClientID: "id-1", carriers.EnvCarrierAClientSecret: "secret-1"}
	reg = carriers.NewRegistry(carriers.Config{
		CarrierA: carriers.CarrierAConfigFromEnv(func(k string) string { return env[k] }),
		BaseURLs: map[string]carriers.Endpoints{"carrier_a": {Production: sb.srv.URL + "/carriers/carrier_a"}},
	})
	_, err = get(t, reg, "carrier_a").Rate(ctx, acctA(), rateReq())
	require.NoError(t, err)
	test := acctA()
	test.IsTest = true
	tokens := sb.count("/oauth/token")
	_, err = get(t, reg, "carrier_a").Rate(ctx, test, rateReq())
	assert.ErrorIs(t, err, carriers.ErrNotConfigured, "the test environment never borrows the production keys")
	assert.Contains(t, err.Error(), carriers.EnvCarrierATestClientID)
	assert.Equal(t, tokens, sb.count("/oauth/token"), "no token was asked for")

	// With its own pair the test environment works (on the production base
	// URL when no test URL is set).
	env[carriers.EnvCarrierATestClientID], env[carriers.EnvCarrierATestClientSecret] = "test-id-1", "test-secret-1"
	reg = carriers.NewRegistry(carriers.Config{
		CarrierA: carriers.CarrierAConfigFromEnv(func(k string) string { return env[k] }),
		BaseURLs: map[string]carriers.Endpoints{"carrier_a": {Production: sb.srv.URL + "/carriers/carrier_a"}},
	})
	_, err = get(t, reg, "carrier_a").Rate(ctx, test, rateReq())
	require.NoError(t, err, "test environment with its own keys")
	_, err = get(t, reg, "carrier_a").Rate(ctx, acctA(), rateReq())
	require.NoError(t, err)

	// Sandbox mode without a sandbox URL is a configuration error.
	reg = carriers.NewRegistry(carriers.Config{Sandbox: true})
	_, err = get(t, reg, "carrier_b").Rate(ctx, acctB(), rateReq())
	assert.ErrorIs(t, err, carriers.ErrNotConfigured)
}
