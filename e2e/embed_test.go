package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// embedStack is the service for the embed flows: the API on a listener
// (its base URL is the OAuth redirect), the sandbox platforms, an
// in-process Temporal server, a worker on the main queue and one on the
// webhook queue, and the outbox dispatcher. Private URLs are allowed (the
// receivers listen on loopback), as under fos dev.
type embedStack struct {
	*stack
	app embed.StorefrontAApp
}

// embedRetrySchedule is the contract's schedule scaled down a
// thousandfold (5 ms, 300 ms, 1.8 s, ...): the e2e test checks the real
// pipeline's order and spacing without waiting hours.
var embedRetrySchedule = func() []time.Duration {
	out := make([]time.Duration, len(embed.RetrySchedule))
	for i, d := range embed.RetrySchedule {
		out[i] = d / 1000
	}
	out[0] = 200 * time.Millisecond
	return out
}()

func startEmbedStack(t testing.TB) *embedStack {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	plat := platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), sb.Client(), nil)
	// Payloads encrypted as every client of the service encrypts them
	// (the recorded histories of the replay tests come from here too).
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

	app := embed.StorefrontAApp{ClientID: sandboxapi.SandboxStorefrontAClientID,
		ClientSecret: sandboxapi.StorefrontAClientSecret(sandboxapi.SandboxStorefrontAClientID),
		BaseURL:      sb.URL + "/platforms/storefront_a"}
	hookQueue := worker.WebhookTaskQueue(taskQueue)
	var handler atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	handler.Store(api.NewRouter(api.Deps{
		Store: st, Logger: logger, Secrets: box, Temporal: c, TaskQueue: taskQueue, BaseURL: srv.URL, Platforms: plat,
		Tokens:           auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords:        auth.Passwords{Cost: bcrypt.MinCost},
		AllowPrivateURLs: true,
		Embed:            api.EmbedDeps{StorefrontA: app, TaskQueue: hookQueue, Demo: true},
	}))
	deps := worker.Deps{Store: st, Secrets: box, Logger: logger, Platforms: plat,
		Carriers:       carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL}),
		EmbedTaskQueue: hookQueue,
		Embed:          worker.EmbedDeps{StorefrontA: app, AllowPrivateURLs: true, BaseURL: srv.URL, RetrySchedule: embedRetrySchedule}}
	for _, q := range []string{taskQueue, hookQueue} {
		w := worker.New(c, q, deps)
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}
	opts := worker.StartOptions(workflows.EmbedOutboxWorkflowID, hookQueue, "system", nil)
	run, err := c.ExecuteWorkflow(ctx, opts, workflows.EmbedOutbox, workflows.EmbedOutboxInput{Idle: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.TerminateWorkflow(context.Background(), run.GetID(), "", "test over")
	})
	return &embedStack{stack: &stack{t: t, api: srv, sandbox: sb, temporal: c, store: st, box: box, platforms: plat}, app: app}
}

// embedAccount makes an organization with an embed config and returns its
// key (embed:manage, with the bridge, order, shipment and dispatcher
// scopes) and publishable key.
func (s *embedStack) embedAccount(patch map[string]any) (orgID, key, pk string) {
	s.t.Helper()
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "embed-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse",
		"first_name": "Ada", "last_name": "Lovelace", "organization_name": "Embed",
	}))
	token := signup["access_token"].(string)
	orgID = signup["organization"].(map[string]any)["id"].(string)
	code, res := s.call(token, orgID, "POST", "/api/v1/api-keys", map[string]any{"name": "embed", "scopes": []string{"embed:manage",
		"bridges:read", "bridges:write", "orders:read", "orders:write", "shipments:read", "dispatchers:read", "dispatchers:write"}})
	require.Equal(s.t, 201, code, "%v", res)
	key = data(res)["key"].(string)
	if patch == nil {
		patch = map[string]any{}
	}
	patch["slug"] = "e2e-" + uuid.NewString()[:10]
	cfg := data(s.mustCall(200, key, "PATCH", "/api/v1/embed/config", patch))
	return orgID, key, cfg["publishable_key"].(string)
}

// hookReceiver records deliveries with their arrival times and answers
// with the next status of its script (then 200).
type hookReceiver struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	at     []time.Time
	script []int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs, h.bodies, h.at = append(h.reqs, r), append(h.bodies, raw), append(h.at, time.Now())
	code := 200
	if len(h.script) > 0 {
		code, h.script = h.script[0], h.script[1:]
	}
	h.mu.Unlock()
	w.WriteHeader(code)
}

func (h *hookReceiver) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.reqs) }

func verifySignatures(t *testing.T, secret string, r *http.Request, body []byte) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	require.Equal(t, base64.StdEncoding.EncodeToString(m.Sum(nil)), r.Header.Get("X-Service-Signature"))
	ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), ts, 60, "a fresh timestamp lets receivers refuse replays")
	m = hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s.%d.", r.Header.Get("webhook-id"), ts)
	m.Write(body)
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)), r.Header.Get("webhook-signature"))
}

// An order created on an end user's bridge reaches their webhook through
// the outbox and the WebhookDelivery workflow: signed both ways, retried
// after a failure on the (scaled) schedule with the same webhook-id, and
// logged.
func TestEndUserWebhookDeliveryWithRetries(t *testing.T) {
	s := startEmbedStack(t)
	rc := &hookReceiver{script: []int{500, 503}}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	orgID, key, _ := s.embedAccount(nil)
	sess := data(s.mustCall(201, key, "POST", "/api/v1/embed/sessions", map[string]any{"externalId": "ann"}))
	tok := sess["token"].(string)
	secret := "whsec-ann-0123456789"
	hook := data(s.mustCall(201, tok, "POST", "/api/v1/embed/webhooks", map[string]any{
		"url": recv.URL + "/hooks", "events": []string{"order.created", "bridge.connected"}, "secret": secret}))
	bridge := data(s.mustCall(201, tok, "POST", "/api/v1/embed/bridges", map[string]any{"type": "storefront_a", "name": "Ann's shop",
		"config": map[string]any{"shopDomain": "ann.myshopify.com", "accessToken": "shpat_ann"}}))

	org, bid := uuid.MustParse(orgID), uuid.MustParse(bridge["id"].(string))
	o, err := store.CreateOrder(t.Context(), s.store.Pool, store.Order{
		ID: uuid.New(), OrganizationID: org, BridgeID: &bid, ExternalID: "A-1", Status: "pending", PaymentStatus: "pending",
		FulfillmentStatus: "unfulfilled", Customer: json.RawMessage(`{"email":"c@example.com"}`), CustomerEmail: "c@example.com",
		LineItems: json.RawMessage(`[]`), Totals: json.RawMessage(`{"total":1}`), Total: 1, Currency: "USD"})
	require.NoError(t, err)

	// bridge.connected and order.created; the receiver fails the first
	// two requests, so at least one event is retried.
	require.Eventually(t, func() bool { return rc.count() >= 4 }, 60*time.Second, 50*time.Millisecond, "got %d", rc.count())
	rc.mu.Lock()
	reqs, bodies, at := rc.reqs, rc.bodies, rc.at
	rc.mu.Unlock()
	byID := map[string][]int{}
	for i, r := range reqs {
		verifySignatures(t, secret, r, bodies[i])
		byID[r.Header.Get("webhook-id")] = append(byID[r.Header.Get("webhook-id")], i)
	}
	require.Len(t, byID, 2, "two events, each with one dedupe id across its attempts")
	var orderAttempts []int
	for _, idx := range byID {
		var p map[string]any
		require.NoError(t, json.Unmarshal(bodies[idx[0]], &p))
		require.Equal(t, orgID, p["organizationId"])
		require.Equal(t, sess["endUser"].(map[string]any)["id"], p["endUserId"])
		if p["event"] == "order.created" {
			require.Equal(t, o.ID.String(), p["data"].(map[string]any)["id"])
			orderAttempts = idx
		} else {
			require.Equal(t, "bridge.connected", p["event"])
		}
	}
	require.NotEmpty(t, orderAttempts)
	// The failed first attempts were retried no sooner than the schedule's
	// first wait.
	for _, idx := range byID {
		if len(idx) > 1 {
			require.GreaterOrEqual(t, at[idx[1]].Sub(at[idx[0]]), embedRetrySchedule[0])
		}
	}
	require.Eventually(t, func() bool {
		ds := s.mustCall(200, tok, "GET", "/api/v1/embed/webhooks/"+hook["id"].(string)+"/deliveries", nil)["data"].([]any)
		if len(ds) != 2 {
			return false
		}
		for _, d := range ds {
			if d.(map[string]any)["success"] != true {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond)
}

// payloadsOf waits for n deliveries at rc and returns their bodies by
// event.
func payloadsOf(t *testing.T, rc *hookReceiver, n int) map[string]map[string]any {
	t.Helper()
	require.Eventually(t, func() bool { return rc.count() >= n }, 60*time.Second, 50*time.Millisecond, "got %d of %d", rc.count(), n)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]map[string]any{}
	for _, raw := range rc.bodies {
		var p map[string]any
		require.NoError(t, json.Unmarshal(raw, &p))
		out[p["event"].(string)] = p
	}
	return out
}

// The data of an end-user webhook payload is the resource as the API shows
// it (CONTRACT 12): order.created carries exactly GET /orders/:id's data,
// shipment.created and shipment.shipped GET /shipments/:id's at that
// moment, bridge.connected the embed bridge with its secrets masked.
func TestEndUserWebhookPayloadsAreTheResourcesAsTheAPIShowsThem(t *testing.T) {
	s := startEmbedStack(t)
	rc := &hookReceiver{}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	orgID, key, _ := s.embedAccount(nil)
	tok := data(s.mustCall(201, key, "POST", "/api/v1/embed/sessions", map[string]any{"externalId": "ann"}))["token"].(string)
	s.mustCall(201, tok, "POST", "/api/v1/embed/webhooks", map[string]any{"url": recv.URL, "secret": "whsec-ann-0123456789",
		"events": []string{"order.created", "shipment.created", "shipment.shipped", "bridge.connected"}})
	bridge := data(s.mustCall(201, tok, "POST", "/api/v1/embed/bridges", map[string]any{"type": "storefront_a", "name": "Ann's shop",
		"config": map[string]any{"shopDomain": "ann.myshopify.com", "accessToken": "shpat_ann_secret"}}))
	bid := bridge["id"].(string)
	order := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(bid, "P-1", 42)))
	oid := order["id"].(string)

	got := payloadsOf(t, rc, 2)
	want := s.mustCall(200, key, "GET", "/api/v1/orders/"+oid, nil)["data"]
	require.Equal(t, want, got["order.created"]["data"], "order.created data is GET /orders/:id")
	conn := got["bridge.connected"]["data"].(map[string]any)
	require.Equal(t, bid, conn["id"])
	require.Equal(t, platforms.RedactedValue, conn["config"].(map[string]any)["accessToken"], "secrets masked")
	require.NotContains(t, string(rc.bodies[0])+string(rc.bodies[1]), "shpat_ann_secret")

	// A shipment of the order: created, then shipped.
	org, ordID := uuid.MustParse(orgID), uuid.MustParse(oid)
	sh, _, err := store.InsertPendingShipment(t.Context(), s.store.Pool, store.Shipment{ID: uuid.New(), OrganizationID: org, OrderID: &ordID,
		Carrier: "carrier_a", Service: "ground", ShipTo: json.RawMessage(`{"name":"Jane Doe","city":"Austin"}`),
		Parcels: json.RawMessage(`[{"weight":1}]`)})
	require.NoError(t, err)
	got = payloadsOf(t, rc, 3)
	created := s.mustCall(200, key, "GET", "/api/v1/shipments/"+sh.ID.String(), nil)["data"]
	require.Equal(t, created, got["shipment.created"]["data"], "shipment.created data is GET /shipments/:id")
	_, err = s.store.Pool.Exec(t.Context(), `UPDATE shipments SET status = 'in_transit', tracking_number = '1Z999', updated_at = now() WHERE id = $1`, sh.ID)
	require.NoError(t, err)
	got = payloadsOf(t, rc, 4)
	shipped := s.mustCall(200, key, "GET", "/api/v1/shipments/"+sh.ID.String(), nil)["data"]
	require.Equal(t, shipped, got["shipment.shipped"]["data"], "shipment.shipped data is GET /shipments/:id")
	require.Equal(t, "1Z999", got["shipment.shipped"]["data"].(map[string]any)["tracking_number"])
}

// The new orders of an end user's bridge are evaluated by the embed
// config's default dispatcher (CONTRACT 12) through the routing domain's
// own evaluation: the order over the dispatcher's condition is assigned to
// its destination and pushed there by the DispatchAssignment workflow, the
// one under it is not, and an organization bridge that is not among the
// dispatcher's sources is not routed by it. Deleting the dispatcher clears
// the setting.
func TestEmbedDefaultDispatcherRoutesEndUserOrders(t *testing.T) {
	s := startEmbedStack(t)
	_, key, _ := s.embedAccount(nil)
	hub := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "shipping_hub_a", "name": "Hub", "config": map[string]any{"apiKey": "emb-" + uuid.NewString()[:8], "apiSecret": "secret"}}))["id"].(string)
	shop := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Own shop", "config": map[string]any{"shopDomain": "own-" + uuid.NewString()[:8] + ".example.com", "accessToken": "shpat_own"}}))["id"].(string)
	other := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Other shop", "config": map[string]any{"shopDomain": "oth-" + uuid.NewString()[:8] + ".example.com", "accessToken": "shpat_oth"}}))["id"].(string)
	disp := data(s.mustCall(201, key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "Embed default", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub,
		"conditions": []any{map[string]any{"field": "totals.total", "operator": "greater_than", "value": 100}},
	}))["id"].(string)
	cfg := data(s.mustCall(200, key, "PATCH", "/api/v1/embed/config", map[string]any{"default_dispatcher_id": disp}))
	require.Equal(t, disp, cfg["default_dispatcher_id"])

	tok := data(s.mustCall(201, key, "POST", "/api/v1/embed/sessions", map[string]any{"externalId": "ann"}))["token"].(string)
	annBridge := data(s.mustCall(201, tok, "POST", "/api/v1/embed/bridges", map[string]any{"type": "storefront_a", "name": "Ann's shop",
		"config": map[string]any{"shopDomain": "ann.myshopify.com", "accessToken": "shpat_ann"}}))["id"].(string)

	big := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(annBridge, "E-BIG", 250)))["id"].(string)
	s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(annBridge, "E-SMALL", 20))
	s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(other, "O-BIG", 300))
	as := s.waitAssignments(key, disp, 1, dispatchWait)
	require.Len(t, as, 1, "%v", as)
	a := as[0]
	require.Equal(t, big, a["orderId"])
	require.Equal(t, hub, a["destinationBridgeId"])
	require.Equal(t, "completed", a["status"], "%v", a)
	require.Equal(t, "order_created", a["metadata"].(map[string]any)["trigger"])
	order := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+big, nil))
	require.NotNil(t, order["sentToFulfillment"], "pushed to the hub")
	d := data(s.mustCall(200, key, "GET", "/api/v1/dispatchers/"+disp, nil))
	require.Equal(t, float64(1), d["ordersAssigned"])

	// The manual evaluation of the routing domain runs it too (nothing
	// new: the order is assigned there already).
	ev := data(s.mustCall(200, key, "POST", "/api/v1/dispatchers/evaluate/"+big, nil))
	require.Equal(t, float64(0), ev["assignmentsCreated"])

	// A deleted dispatcher is no longer the default.
	s.mustCall(200, key, "DELETE", "/api/v1/dispatchers/"+disp, nil)
	cfg = data(s.mustCall(200, key, "GET", "/api/v1/embed/config/me", nil))
	require.Nil(t, cfg["default_dispatcher_id"])
}
