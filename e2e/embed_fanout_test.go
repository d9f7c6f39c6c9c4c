package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// fanOutSetup gives n end users of a new organization one bridge and one
// webhook (order.created) each at fast, plus one end user whose webhook
// hangs; it returns the organization.
func fanOutSetup(t testing.TB, s *embedStack, n int, fast, hang string) uuid.UUID {
	t.Helper()
	orgID, _, _ := s.embedAccount(nil)
	org := uuid.MustParse(orgID)
	ctx := context.Background()
	for _, target := range []struct {
		n   int
		url string
	}{{n, fast}, {1, hang}} {
		_, err := s.store.Pool.Exec(ctx, `
WITH u AS (
  INSERT INTO end_users (id, organization_id, external_id)
  SELECT gen_random_uuid(), $1, 'fan-' || gen_random_uuid() FROM generate_series(1, $2) RETURNING id
), b AS (
  INSERT INTO bridges (id, organization_id, type, name, config, end_user_id)
  SELECT gen_random_uuid(), $1, 'storefront_a', 'fan', '{"shopDomain": "fan.myshopify.com"}', id FROM u RETURNING end_user_id
)
INSERT INTO end_user_webhooks (id, organization_id, end_user_id, url, events)
SELECT gen_random_uuid(), $1, end_user_id, $3, '{order.created}' FROM b`, org, target.n, target.url)
		require.NoError(t, err)
	}
	return org
}

// fanOutOrders creates one order on every bridge of the organization (one
// statement; the trigger writes one outbox event per order).
func fanOutOrders(t testing.TB, s *embedStack, org uuid.UUID, round int) {
	t.Helper()
	_, err := s.store.Pool.Exec(context.Background(), `
INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
SELECT gen_random_uuid(), $1, id, 'r' || $2::text || '-' || id, 'pending', '{}', 'fan@example.com', '[]', '{}', now()
  FROM bridges WHERE organization_id = $1`, org, strconv.Itoa(round))
	require.NoError(t, err)
}

type fanReceivers struct {
	fast, hung atomic.Int64
	fastSrv    *httptest.Server
	hangSrv    *httptest.Server
}

func startFanReceivers(t testing.TB) *fanReceivers {
	r := &fanReceivers{}
	stop := make(chan struct{})
	r.fastSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.fast.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	r.hangSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hung.Add(1)
		select { // hang until the sender gives up
		case <-req.Context().Done():
		case <-stop:
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(func() { close(stop); r.hangSrv.Close(); r.fastSrv.Close() })
	return r
}

// A receiver that hangs does not hold up the others' deliveries.
func TestEndUserWebhookFanOutWithAHangingReceiver(t *testing.T) {
	s := startEmbedStack(t)
	rc := startFanReceivers(t)
	const n = 200
	org := fanOutSetup(t, s, n, rc.fastSrv.URL, rc.hangSrv.URL)
	start := time.Now()
	fanOutOrders(t, s, org, 1)
	require.Eventually(t, func() bool { return rc.fast.Load() >= n }, 60*time.Second, 20*time.Millisecond)
	took := time.Since(start)
	require.GreaterOrEqual(t, rc.hung.Load(), int64(1), "the hanging receiver was called")
	t.Logf("%d deliveries beside a hanging receiver in %s", n, took)
	// The hang costs its batch at most the first-attempt budget (1 s), not
	// the 15 s delivery timeout.
	require.Less(t, took, 12*time.Second)
	require.Equal(t, int64(n), rc.fast.Load(), "each event delivered once")
}

// BenchmarkEmbedWebhookFanOut: one event fanned out to 1,000 end-user
// webhooks (one per end user) delivered to a local receiver, beside one
// receiver that hangs. Reports deliveries/s (target ≥ 200 with the
// embedded Temporal server). Run alone:
//
//	./scripts/test-postgres.sh go test -run '^$' -bench BenchmarkEmbedWebhookFanOut -benchtime 3x ./e2e/
func BenchmarkEmbedWebhookFanOut(b *testing.B) {
	s := startEmbedStack(b)
	rc := startFanReceivers(b)
	const n = 1000
	org := fanOutSetup(b, s, n, rc.fastSrv.URL, rc.hangSrv.URL)
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		want := int64(n * (i + 1))
		start := time.Now()
		fanOutOrders(b, s, org, i)
		deadline := time.Now().Add(2 * time.Minute)
		for rc.fast.Load() < want {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d deliveries after 2 minutes", rc.fast.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "deliveries/s")
}
