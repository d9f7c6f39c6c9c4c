package carriers_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
)

// recordingTransport answers nothing: it records each request's scheme and
// host and fails it as a network error, so no test reaches the internet.
type recordingTransport struct {
	mu    sync.Mutex
	hosts []string
}

var errOffline = errors.New("offline test transport")

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.hosts = append(rt.hosts, r.URL.Scheme+"://"+r.URL.Host+r.URL.Path)
	rt.mu.Unlock()
	return nil, errOffline
}

func (rt *recordingTransport) seen() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.hosts)
}

func TestEndpointVarsMatchConfig(t *testing.T) {
	var names []string
	for _, e := range carriers.EndpointVars {
		for _, n := range []string{e.Production, e.Test} {
			if n != "" {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	want := slices.Clone(config.CarrierURLVars)
	sort.Strings(want)
	require.Equal(t, want, names)
}

func TestEndpointsFromEnv(t *testing.T) {
	none := func(string) string { return "" }

	// FOS_SANDBOX=0: the vendors' hosts, whatever the sandbox URL.
	got := carriers.EndpointsFromEnv(none, false, "http://127.0.0.1:8089")
	require.Equal(t, carriers.DefaultEndpoints, got)

	// FOS_SANDBOX=1: the sandbox's prefix per carrier.
	got = carriers.EndpointsFromEnv(none, true, "http://127.0.0.1:8089/")
	for _, code := range carriers.Codes() {
		u := "http://127.0.0.1:8089/carriers/" + code
		assert.Equal(t, carriers.Endpoints{Production: u, Test: u}, got[code])
	}

	// Each variable replaces its own environment only.
	env := map[string]string{
		"FOS_CARRIER_A_URL":      "https://fedex-proxy.example",
		"FOS_CARRIER_B_TEST_URL": "http://ups-mock.example:9000",
		"FOS_CARRIER_C_URL":      "https://se.example",
	}
	getenv := func(k string) string { return env[k] }
	got = carriers.EndpointsFromEnv(getenv, false, "")
	assert.Equal(t, carriers.Endpoints{Production: "https://fedex-proxy.example", Test: "https://apis-sandbox.fedex.com"}, got[carriers.CarrierA])
	assert.Equal(t, carriers.Endpoints{Production: "https://onlinetools.ups.com", Test: "http://ups-mock.example:9000"}, got[carriers.CarrierB])
	assert.Equal(t, carriers.Endpoints{Production: "https://se.example", Test: "https://se.example"}, got[carriers.CarrierC])
	got = carriers.EndpointsFromEnv(getenv, true, "http://sb")
	assert.Equal(t, carriers.Endpoints{Production: "https://fedex-proxy.example", Test: "http://sb/carriers/carrier_a"}, got[carriers.CarrierA])
}

// The variables replace scheme and host only: the adapter's paths follow.
// With FOS_SANDBOX=0 no call goes to the sandbox even when its URL is known.
func TestBaseURLsReplaceHostOnlyAndSandboxOff(t *testing.T) {
	ctx := context.Background()
	rt := &recordingTransport{}
	env := map[string]string{"FOS_CARRIER_C_URL": "https://se.example"}
	reg := carriers.NewRegistry(carriers.Config{
		Sandbox:    false,
		SandboxURL: "http://sandbox.invalid:8089",
		HTTPClient: &http.Client{Transport: rt},
		BaseURLs:   carriers.EndpointsFromEnv(func(k string) string { return env[k] }, false, "http://sandbox.invalid:8089"),
		CarrierA:   carriers.CarrierAConfig{ClientID: "id", ClientSecret: "secret", TestClientID: "test-id", TestClientSecret: "test-secret"},
	})
	for _, code := range carriers.Codes() {
		acct := acctOf(code)
		_, err := get(t, reg, code).Rate(ctx, acct, rateReq())
		require.Error(t, err, code)
		acct.IsTest = true
		_, _ = get(t, reg, code).Rate(ctx, acct, rateReq())
	}
	seen := rt.seen()
	require.NotEmpty(t, seen)
	for _, u := range seen {
		assert.NotContains(t, u, "sandbox.invalid", "FOS_SANDBOX=0 must not reach the sandbox")
	}
	called := func(prefix string) bool {
		return slices.ContainsFunc(seen, func(u string) bool { return strings.HasPrefix(u, prefix+"/") })
	}
	for _, host := range []string{"https://apis.fedex.com", "https://apis-sandbox.fedex.com", "https://onlinetools.ups.com", "https://wwwcie.ups.com", "https://se.example"} {
		assert.True(t, called(host), "no call to %s: %v", host, seen)
	}
	assert.False(t, called("https://api.shipengine.com"), "FOS_CARRIER_C_URL replaced the vendor host: %v", seen)
}
