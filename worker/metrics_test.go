package worker

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMetricsScrape emits through the SDK handler and scrapes the
// Prometheus endpoint.
func TestMetricsScrape(t *testing.T) {
	m := NewMetrics(slog.New(slog.DiscardHandler))
	defer m.Close()
	h := m.Handler().WithTags(map[string]string{"task_queue": "fos-bulk", "namespace": "default"})
	h.Counter("temporal_request").Inc(3)
	h.Gauge("temporal_worker_task_slots_available").Update(7)
	h.Timer("temporal_activity_execution_latency").Record(40 * time.Millisecond)
	// Same name, another tag set: logged, not a panic.
	m.Handler().WithTags(map[string]string{"other": "x"}).Counter("temporal_request").Inc(1)

	srv := httptest.NewServer(m.HTTPHandler())
	defer srv.Close()
	var body string
	require.Eventually(t, func() bool {
		resp, err := srv.Client().Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		body = string(raw)
		// Counters and gauges reach the reporter once a second.
		return resp.StatusCode == 200 && strings.Contains(body, `temporal_request{namespace="default",task_queue="fos-bulk"} 3`)
	}, 5*time.Second, 50*time.Millisecond, "scraped:\n%s", body)
	require.Contains(t, body, `temporal_worker_task_slots_available{namespace="default",task_queue="fos-bulk"} 7`)
	require.Contains(t, body, `temporal_activity_execution_latency_bucket{`)
}
