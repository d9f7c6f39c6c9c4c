package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/temporaltest"

	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store/storetest"
)

// TestMetricsEndpoints scrapes FOS_METRICS_ADDR of `fos serve` (the HTTP
// series by route pattern and status, beside the Temporal SDK's) and of
// `fos worker` (the backlog series).
func TestMetricsEndpoints(t *testing.T) {
	storetest.New(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	httpAddr, serveMetrics, workerMetrics := freeAddr(t), freeAddr(t), freeAddr(t)
	env := map[string]string{
		"DATABASE_URL":       storetest.URL(),
		"TEMPORAL_ADDRESS":   ts.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE": ts.GetDefaultNamespace(),
		"FOS_ENCRYPTION_KEY": secrets.NewKey(),
		"FOS_JWT_SECRET":     "serve-test-secret-serve-test-secret!",
		"FOS_HTTP_ADDR":      httpAddr,
		"FOS_METRICS_ADDR":   serveMetrics,
		"FOS_LOG_LEVEL":      "warn",
	}
	runCommand(t, env, runServe)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond)
	resp, err := http.Get("http://" + httpAddr + "/api/v1/orders")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	scrape := func(addr string, want ...string) string {
		t.Helper()
		var body string
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			body = string(raw)
			for _, w := range want {
				if !strings.Contains(body, w) {
					return false
				}
			}
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 200*time.Millisecond, "want %q in:\n%s", want, body)
		return body
	}
	body := scrape(serveMetrics,
		`fos_http_request_duration_seconds_count{method="GET",route="/api/v1/orders",status="401"} 1`,
		`fos_http_request_duration_seconds_bucket{method="GET",route="/readyz",status="200",le=`,
		`temporal_request{`, // the SDK's, beside
		`go_goroutines`)
	require.NotContains(t, body, "fos_backlog_items", "the API does not count backlogs")

	// The worker counts the backlogs.
	t.Setenv("FOS_METRICS_ADDR", workerMetrics)
	runCommand(t, nil, runWorker)
	scrape(workerMetrics,
		`fos_backlog_items{backlog="inbound_webhook_events_waiting"} 0`,
		`fos_backlog_items{backlog="dispatch_assignments_pending"} 0`,
		`temporal_`)
}
