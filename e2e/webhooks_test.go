package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// hookStack is the service as platforms see it: the API on a listener
// whose base URL is its own address (so the sandbox stores can deliver
// webhooks to it), the platforms' own connectors pointed at the sandbox,
// and, once process is called, the worker and the webhook relay.
type hookStack struct {
	*stack
	apiPlat  *platforms.Registry
	logger   *slog.Logger
	ts       *temporaltest.TestServer
	stopOnce []func()
}

func startHookStack(t testing.TB) *hookStack {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	apiPlat := platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), sb.Client(), nil)

	// Payloads encrypted as the service's clients encrypt them (the
	// recorded histories hold nothing in clear).
	codecOpts := temporaltest.WithBaseClientOptions(client.Options{DataConverter: dataConverter, FailureConverter: codectest.FailureConverter()})
	var ts *temporaltest.TestServer
	if tt, ok := t.(*testing.T); ok {
		ts = temporaltest.NewServer(temporaltest.WithT(tt), codecOpts)
	} else {
		ts = temporaltest.NewServer(codecOpts)
		t.Cleanup(ts.Stop)
	}
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))

	// The handler is set once the listener's URL is known.
	var handler atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	handler.Store(api.NewRouter(api.Deps{
		Store:     st,
		Logger:    logger,
		Tokens:    auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost},
		Secrets:   box,
		Temporal:  c,
		TaskQueue: taskQueue,
		BaseURL:   srv.URL,
		Platforms: apiPlat,
		// As under fos dev: the plain-http loopback address may be registered.
		AllowPrivateURLs: true,
	}))
	return &hookStack{
		stack:   &stack{t: t, api: srv, sandbox: sb, temporal: c, store: st, box: box},
		apiPlat: apiPlat, logger: logger, ts: ts,
	}
}

// process starts the workers (the main queue's and the inbound webhook
// queue's, as fos runs them) and the webhook relay, which starts the
// events' runs on the inbound queue.
func (s *hookStack) process() {
	s.t.Helper()
	for _, q := range []string{taskQueue, inboundTaskQueue} {
		w := worker.New(s.temporal, q, worker.Deps{
			Store: s.store, Secrets: s.box, Logger: s.logger,
			Platforms: s.apiPlat,
			Carriers:  carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: s.sandbox.URL}),
		})
		require.NoError(s.t, w.Start())
		s.t.Cleanup(w.Stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	relay := &worker.WebhookRelay{Store: s.store, Temporal: s.temporal, TaskQueue: inboundTaskQueue, Logger: s.logger, Poll: 500 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = relay.Run(ctx) }()
	s.t.Cleanup(func() { cancel(); <-done })
}

// owner signs up and returns an API key of a new organization.
func (s *hookStack) owner() string {
	s.t.Helper()
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "hooks-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse",
		"first_name": "Ada", "last_name": "Lovelace", "organization_name": "Hooks",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "orders:write", "transformations:read", "transformations:write"},
	})
	require.Equal(s.t, 201, code, "%v", out)
	return data(out)["key"].(string)
}

// shopBridge creates a storefront_a bridge on a new sandbox shop whose app
// secret is the bridge's webhookSecret, and registers orders/create.
func (s *hookStack) shopBridge(key string) (bridgeID, shop string) {
	s.t.Helper()
	shop = "hooks-" + uuid.NewString()[:8] + ".myshopify.com"
	bridgeID = data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Webhook shop",
		"config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e", "webhookSecret": sandboxapi.SandboxAppSecret},
	}))["id"].(string)
	reg := data(s.mustCall(200, key, "POST", "/api/v1/bridges/"+bridgeID+"/webhooks", map[string]any{"topics": []string{"orders/create"}}))
	require.Equal(s.t, []any{"orders/create"}, reg["registered"])
	require.Equal(s.t, s.api.URL+"/api/v1/webhooks/"+bridgeID, reg["webhookUrl"])
	return bridgeID, shop
}

// addSandboxOrder adds an order to the sandbox shop (which delivers
// orders/create) and returns its id.
func (s *hookStack) addSandboxOrder(shop string) (string, json.RawMessage) {
	s.t.Helper()
	raw, _ := json.Marshal(map[string]any{"shop_domain": shop})
	resp, err := s.sandbox.Client().Post(s.sandbox.URL+"/platforms/storefront_a/_sandbox/orders", "application/json", bytes.NewReader(raw))
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, 201, resp.StatusCode)
	var out struct {
		Order      json.RawMessage `json:"order"`
		Deliveries int             `json:"deliveries"`
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(s.t, 1, out.Deliveries)
	var o struct {
		ID json.Number `json:"id"`
	}
	require.NoError(s.t, json.Unmarshal(out.Order, &o))
	return o.ID.String(), out.Order
}

// bridgeOrders lists the bridge's orders by external id (count of each).
func (s *hookStack) bridgeOrders(key, bridgeID string) map[string]int {
	out := s.mustCall(200, key, "GET", "/api/v1/orders?limit=100&bridge_id="+bridgeID, nil)
	got := map[string]int{}
	for _, it := range out["data"].([]any) {
		got[it.(map[string]any)["external_id"].(string)]++
	}
	return got
}

func (s *hookStack) waitOrders(key, bridgeID string, want []string, within time.Duration) map[string]int {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := s.bridgeOrders(key, bridgeID)
		all := true
		for _, w := range want {
			all = all && got[w] > 0
		}
		if all {
			return got
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("orders %v not all in GET /orders after %s: %v", want, within, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *hookStack) eventCounts(bridgeID string) map[string]int {
	counts, err := store.WebhookEventCounts(context.Background(), s.store.Pool, uuid.MustParse(bridgeID))
	require.NoError(s.t, err)
	return counts
}

func (s *hookStack) waitEvents(bridgeID, status string, n int, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for s.eventCounts(bridgeID)[status] < n {
		if time.Now().After(deadline) {
			s.t.Fatalf("not %d %s events after %s: %v", n, status, within, s.eventCounts(bridgeID))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookOrderCreateEndToEnd: registering orders/create on a sandbox
// storefront_a bridge, then adding an order to that sandbox store, makes
// the order appear in GET /orders within seconds, once, with no task
// triggered by hand.
func TestWebhookOrderCreateEndToEnd(t *testing.T) {
	s := startHookStack(t)
	s.process()
	key := s.owner()
	bridgeID, shop := s.shopBridge(key)
	before := s.bridgeOrders(key, bridgeID)
	require.Empty(t, before)

	added := time.Now()
	ext, _ := s.addSandboxOrder(shop)
	got := s.waitOrders(key, bridgeID, []string{ext}, 10*time.Second)
	t.Logf("order visible in GET /orders %s after it was added to the store", time.Since(added).Round(time.Millisecond))
	require.Equal(t, map[string]int{ext: 1}, got)
	s.waitEvents(bridgeID, store.WebhookEventProcessed, 1, 10*time.Second)
	var eventID string
	require.NoError(t, s.store.Pool.QueryRow(context.Background(), `SELECT id::text FROM webhook_events WHERE bridge_id = $1`, bridgeID).Scan(&eventID))
	s.waitClosed(workflows.InboundWebhookWorkflowID(eventID))
	wui := describeForUI(t, context.Background(), s.temporal, workflows.InboundWebhookWorkflowID(eventID))
	require.Equal(t, bridgeID, wui.SearchAttributes["BridgeId"])
	require.Contains(t, wui.Summary, "Inbound webhook orders/create from bridge "+bridgeID)
	writeHistory(t, context.Background(), s.temporal, workflows.InboundWebhookWorkflowID(eventID), "", "inbound_webhook_history.json")

	// The order is the platform's copy, with a sync activity naming the event.
	list := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID, nil)["data"].([]any)
	orderID := list[0].(map[string]any)["id"].(string)
	syncs := s.waitForActivity(key, orderID, "sync", 1)
	md := syncs[0]["metadata"].(map[string]any)
	require.Equal(t, "orders/create", md["topic"])
	require.Equal(t, true, md["created"])
	order := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+orderID, nil))
	require.Equal(t, ext, order["externalId"])

	// A redelivery of the same event (same event id) is processed once.
	var ev store.WebhookEvent
	require.NoError(t, s.store.Pool.QueryRow(context.Background(), `SELECT id, payload, headers FROM webhook_events WHERE bridge_id = $1`, bridgeID).Scan(&ev.ID, &ev.Payload, &ev.Headers))
	var hdr map[string]string
	require.NoError(t, json.Unmarshal(ev.Headers, &hdr))
	req, _ := http.NewRequest("POST", s.api.URL+"/api/v1/webhooks/"+bridgeID, bytes.NewReader(ev.Payload))
	req.Header.Set("X-Shopify-Topic", "orders/create")
	req.Header.Set("X-Shopify-Event-Id", hdr["X-Shopify-Event-Id"])
	req.Header.Set("X-Shopify-Hmac-Sha256", api.SignWebhookBody(sandboxapi.SandboxAppSecret, ev.Payload))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var ack struct {
		Data struct {
			Received bool   `json:"received"`
			EventID  string `json:"event_id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ack))
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, ev.ID.String(), ack.Data.EventID)
	time.Sleep(time.Second)
	require.Equal(t, map[string]int{store.WebhookEventProcessed: 1}, s.eventCounts(bridgeID))
	require.Equal(t, map[string]int{ext: 1}, s.bridgeOrders(key, bridgeID))
	require.Len(t, s.waitForActivity(key, orderID, "sync", 1), 1)
}

// TestWebhookEventsSurviveNoProcessing: events acknowledged while nothing
// processes them (the process killed between the 200 and the processing,
// or Temporal down) are all processed, once, when the relay runs again.
func TestWebhookEventsSurviveNoProcessing(t *testing.T) {
	s := startHookStack(t)
	key := s.owner()
	bridgeID, shop := s.shopBridge(key)

	var exts []string
	for i := 0; i < 5; i++ {
		ext, _ := s.addSandboxOrder(shop)
		exts = append(exts, ext)
	}
	// Acknowledged and stored, not processed: no worker, no relay.
	s.waitEvents(bridgeID, store.WebhookEventReceived, 5, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, map[string]int{store.WebhookEventReceived: 5}, s.eventCounts(bridgeID))
	require.Empty(t, s.bridgeOrders(key, bridgeID))

	// The relay also survives Temporal refusing starts: a relay whose
	// client points nowhere leaves the events queued.
	dead, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1", Namespace: s.ts.GetDefaultNamespace()})
	require.NoError(t, err)
	n, err := (&worker.WebhookRelay{Store: s.store, Temporal: dead, TaskQueue: taskQueue, RetryWait: time.Millisecond}).RelayOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 5, n, "all five claimed, none started")
	dead.Close()
	require.Equal(t, map[string]int{store.WebhookEventReceived: 5}, s.eventCounts(bridgeID))
	var relayed int
	require.NoError(t, s.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_events WHERE bridge_id = $1 AND relayed_at IS NOT NULL`, bridgeID).Scan(&relayed))
	require.Zero(t, relayed)

	s.process()
	got := s.waitOrders(key, bridgeID, exts, 20*time.Second)
	want := map[string]int{}
	for _, e := range exts {
		want[e] = 1
	}
	require.Equal(t, want, got)
	s.waitEvents(bridgeID, store.WebhookEventProcessed, 5, 10*time.Second)
	require.Equal(t, map[string]int{store.WebhookEventProcessed: 5}, s.eventCounts(bridgeID))
}

// BenchmarkWebhookAck measures inbound webhook acknowledgements (verified,
// stored, deduplicated; no processing) at 32 concurrent clients and
// reports events/s and the p50/p99 latency.
func BenchmarkWebhookAck(b *testing.B) {
	s := startHookStack(b)
	key := s.owner()
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Bench",
		"config": map[string]any{"shopDomain": "bench.myshopify.com", "accessToken": "t", "webhookSecret": "bench-secret"},
	}))["id"].(string)
	url := s.api.URL + "/api/v1/webhooks/" + bridgeID
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	hc := &http.Client{Transport: tr}
	const clients = 32
	var (
		mu   sync.Mutex
		lats []time.Duration
		next atomic.Int64
	)
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					break
				}
				body := []byte(fmt.Sprintf(`{"id": %d, "email": "b%d@example.com", "total_price": "10.00"}`, 5_000_000+i, i))
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("X-Shopify-Topic", "orders/create")
				req.Header.Set("X-Shopify-Event-Id", uuid.NewString())
				req.Header.Set("X-Shopify-Hmac-Sha256", api.SignWebhookBody("bench-secret", body))
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) > 0 {
		b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkWebhookDrain measures how fast stored orders/create events
// drain into processed orders (relay, InboundWebhook workflow, platform
// re-fetch, upsert) on the in-process stack: b.N events are stored with
// nothing running, then the worker and relay are started and timed until
// every event is processed.
func BenchmarkWebhookDrain(b *testing.B) {
	s := startHookStack(b)
	key := s.owner()
	bridgeID, shop := s.shopBridge(key)
	for i := 0; i < b.N; i++ {
		s.addSandboxOrder(shop)
	}
	s.waitEvents(bridgeID, store.WebhookEventReceived, b.N, time.Minute)
	b.ResetTimer()
	began := time.Now()
	s.process()
	s.waitEvents(bridgeID, store.WebhookEventProcessed, b.N, 10*time.Minute)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "orders/s")
}

// TestWebhookHubOrderNotify: ORDER_NOTIFY registered on a shipping_hub_a
// bridge (the target URL carries the token), then a new order in the
// sandbox hub: the unsigned {resource_url, resource_type} delivery is
// accepted by its token and the order, re-read through the connector,
// appears in GET /orders.
func TestWebhookHubOrderNotify(t *testing.T) {
	s := startHookStack(t)
	s.process()
	key := s.owner()
	apiKey := "hub-" + uuid.NewString()[:8]
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "shipping_hub_a", "name": "Hub", "config": map[string]any{"apiKey": apiKey, "apiSecret": "secret"},
	}))["id"].(string)
	reg := data(s.mustCall(200, key, "POST", "/api/v1/bridges/"+bridgeID+"/webhooks", map[string]any{"topics": []string{"ORDER_NOTIFY"}}))
	require.Equal(t, []any{"ORDER_NOTIFY"}, reg["registered"])

	raw, _ := json.Marshal(map[string]any{"api_key": apiKey})
	resp, err := s.sandbox.Client().Post(s.sandbox.URL+"/platforms/shipping_hub_a/_sandbox/orders", "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	var out struct {
		Order struct {
			OrderID json.Number `json:"orderId"`
		} `json:"order"`
		Deliveries int `json:"deliveries"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, 1, out.Deliveries)
	got := s.waitOrders(key, bridgeID, []string{out.Order.OrderID.String()}, 15*time.Second)
	require.Equal(t, map[string]int{out.Order.OrderID.String(): 1}, got)
	s.waitEvents(bridgeID, store.WebhookEventProcessed, 1, 10*time.Second)
	var topic string
	require.NoError(t, s.store.Pool.QueryRow(context.Background(), `SELECT topic FROM webhook_events WHERE bridge_id = $1`, bridgeID).Scan(&topic))
	require.Equal(t, "ORDER_NOTIFY", topic)
}

// TestWebhookOrderTransformed: an order a webhook creates passes through the
// organization's before_sync and after_sync transformations, as a
// grab-orders run's orders do.
func TestWebhookOrderTransformed(t *testing.T) {
	s := startHookStack(t)
	s.process()
	key := s.owner()
	bridgeID, shop := s.shopBridge(key)
	s.mustCall(201, key, "POST", "/api/v1/transformations", map[string]any{
		"name": "tag", "triggerPoint": "before_sync", "bridgeId": bridgeID,
		"code": `function transform(d) { d.tags = (d.tags || []).concat(['via-webhook']); }`,
	})
	s.mustCall(201, key, "POST", "/api/v1/transformations", map[string]any{
		"name": "stamp", "triggerPoint": "after_sync",
		"code": `function transform(o) { o.metadata.importedBy = 'webhook'; }`,
	})
	ext, _ := s.addSandboxOrder(shop)
	s.waitOrders(key, bridgeID, []string{ext}, 10*time.Second)
	s.waitEvents(bridgeID, store.WebhookEventProcessed, 1, 10*time.Second)
	list := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID, nil)["data"].([]any)
	o := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+list[0].(map[string]any)["id"].(string), nil))
	require.Contains(t, o["tags"], "via-webhook")
	require.Equal(t, "webhook", o["metadata"].(map[string]any)["importedBy"])
}

// TestWebhookTerminatedRunReconciled: an event whose InboundWebhook run was
// terminated in the Temporal UI before it processed anything stays
// received; the reconciler (Maintenance's ReconcileRuns) puts it back for
// the relay, which starts a new run under the same id, and the order
// appears once.
func TestWebhookTerminatedRunReconciled(t *testing.T) {
	s := startHookStack(t)
	key := s.owner()
	bridgeID, shop := s.shopBridge(key)
	ext, _ := s.addSandboxOrder(shop)
	s.waitEvents(bridgeID, store.WebhookEventReceived, 1, 10*time.Second)
	ctx := context.Background()

	// Relayed to a queue no worker polls, then terminated by an operator.
	n, err := (&worker.WebhookRelay{Store: s.store, Temporal: s.temporal, TaskQueue: "nobody-polls"}).RelayOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var eventID string
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT id::text FROM webhook_events WHERE bridge_id = $1`, bridgeID).Scan(&eventID))
	wfID := workflows.InboundWebhookWorkflowID(eventID)
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, wfID, "", "stuck on a dead queue"))
	// Long past the reconciler's bound.
	_, err = s.store.Pool.Exec(ctx, `UPDATE webhook_events SET relayed_at = now() - interval '1 hour', created_at = now() - interval '1 hour' WHERE id = $1`, eventID)
	require.NoError(t, err)

	m := &activities.MaintenanceActivities{Store: s.store, Temporal: s.temporal, Logger: s.logger}
	res, err := m.ReconcileRuns(ctx, activities.ReconcileRunsInput{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Checked)
	var status, errText string
	var attempts int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT status, coalesce(error, ''), attempts FROM webhook_events WHERE id = $1`, eventID).Scan(&status, &errText, &attempts))
	require.Equal(t, store.WebhookEventReceived, status)
	require.Equal(t, "previous attempt stopped: stopped by an operator: stuck on a dead queue", errText)
	require.Equal(t, 1, attempts)

	s.process()
	got := s.waitOrders(key, bridgeID, []string{ext}, 20*time.Second)
	require.Equal(t, map[string]int{ext: 1}, got)
	s.waitEvents(bridgeID, store.WebhookEventProcessed, 1, 10*time.Second)
}
