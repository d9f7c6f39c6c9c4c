package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/devenv"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// startAgent is the API and a worker over one embedded Temporal server,
// with the sandbox model (as under fos dev).
func startAgent(t testing.TB) *stack {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	opts := []temporaltest.TestServerOption{
		temporaltest.WithBaseClientOptions(client.Options{DataConverter: dataConverter, FailureConverter: codectest.FailureConverter()}),
		temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(devenv.DynamicConfig())),
	}
	var ts *temporaltest.TestServer
	if tt, ok := t.(*testing.T); ok {
		ts = temporaltest.NewServer(append(opts, temporaltest.WithT(tt))...)
	} else {
		ts = temporaltest.NewServer(opts...)
		t.Cleanup(ts.Stop)
	}
	c := ts.GetDefaultClient()
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
	cfg := agent.Config{ApprovalTTL: time.Hour}
	w := worker.New(c, taskQueue, worker.Deps{Store: st, Secrets: box, Logger: logger, LLM: llm.Sandbox{}, Agent: cfg})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	srv := httptest.NewServer(api.NewRouter(api.Deps{
		Store: st, Logger: logger, Secrets: box, Temporal: c, TaskQueue: taskQueue, TemporalNamespace: ts.GetDefaultNamespace(),
		Tokens:    auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost}, BaseURL: "http://fos.test", LLM: llm.Sandbox{}, Agent: cfg,
	}))
	t.Cleanup(srv.Close)
	return &stack{t: t, api: srv, temporal: c, store: st, box: box}
}

// agentOrg signs up an organization and inserts an order; it returns the
// owner's token, the organization and the order.
func (s *stack) agentOrg(t testing.TB) (token, org, order string) {
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "agent-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Agent",
	}))
	token, org = signup["access_token"].(string), signup["organization"].(map[string]any)["id"].(string)
	id := uuid.New()
	_, err := s.store.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, line_items, totals, total, ordered_at)
		VALUES ($1, $2, $3, '#1001', 'pending', '{"email": "c@example.com"}', 'c@example.com', '[]', '{"total": 25}', 25, now())`, id, org, "e2e-"+id.String()[:8])
	require.NoError(t, err)
	return token, org, id.String()
}

// TestAgentApprovalEndToEnd: a chat proposes a write, which waits as a
// pending action in the conversation's workflow; another request approves
// it; the order changes once; the run then completes.
func TestAgentApprovalEndToEnd(t *testing.T) {
	s := startAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	token, org, order := s.agentOrg(t)

	code, out := s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "set status of order " + order + " to on_hold"})
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, "awaiting_approval", data(out)["status"])
	conv := data(out)["conversationId"].(string)

	wfID := workflows.AgentConversationWorkflowID(conv)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), "the approval wait is a durable Temporal wait")
	require.Contains(t, desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields(), "OrganizationId")

	_, list := s.call(token, org, "GET", "/api/v1/agent/pending-actions", nil)
	actions := list["data"].([]any)
	require.Len(t, actions, 1)
	action := actions[0].(map[string]any)["id"].(string)
	_, o := s.call(token, org, "GET", "/api/v1/orders/"+order, nil)
	require.Equal(t, "pending", data(o)["status"], "nothing changed before approval")

	// Two approvals race: one runs the write, the other is refused.
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			c, _ := s.call(token, org, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", map[string]any{"note": "ok"})
			codes <- c
		}()
	}
	got := []int{<-codes, <-codes}
	sort.Ints(got)
	require.Equal(t, []int{200, 409}, got)
	_, o = s.call(token, org, "GET", "/api/v1/orders/"+order, nil)
	require.Equal(t, "on_hold", data(o)["status"])
	_, acts := s.call(token, org, "GET", "/api/v1/orders/"+order+"/activities", nil)
	changes := 0
	for _, a := range acts["data"].([]any) {
		if a.(map[string]any)["type"] == "status_change" {
			changes++
		}
	}
	require.Equal(t, 1, changes, "the order changed once")

	// Nothing is pending: the run completes.
	run := s.temporal.GetWorkflow(ctx, wfID, "")
	require.NoError(t, run.Get(ctx, nil))
	desc, err = s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	writeHistory(t, ctx, s.temporal, wfID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "agent_conversation_history.json")

	// The conversation goes on in a new run.
	code, out = s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "show order " + order, "conversationId": conv})
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, "completed", data(out)["status"])
	_, detail := s.call(token, org, "GET", "/api/v1/agent/conversations/"+conv, nil)
	msgs := data(detail)["messages"].([]any)
	require.GreaterOrEqual(t, len(msgs), 6)
}

// BenchmarkAgentTurn measures a chat turn with one read tool, end to end
// (HTTP, update-with-start, model step, tool, answer) on the embedded
// server with the sandbox model. Numbers on a loaded machine are noise:
//
//	./scripts/test-postgres.sh go test -run '^$' -bench BenchmarkAgentTurn -benchtime 200x ./e2e/
func BenchmarkAgentTurn(b *testing.B) {
	s := startAgent(b)
	token, org, _ := s.agentOrg(b)
	code, out := s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "list pending orders"})
	require.Equal(b, 200, code, "%v", out)
	conv := data(out)["conversationId"].(string)
	// The in-run floor: the same HTTP round trip reading the conversation
	// (no workflow, no model), measured on this machine in this run, so
	// the turn's cost reads as a ratio even when the machine is loaded.
	floor := make([]time.Duration, 0, 40)
	for range 40 {
		start := time.Now()
		if code, _ := s.call(token, org, "GET", "/api/v1/agent/conversations/"+conv, nil); code != 200 {
			b.Fatalf("floor: %d", code)
		}
		floor = append(floor, time.Since(start))
	}
	sort.Slice(floor, func(i, j int) bool { return floor[i] < floor[j] })
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		code, out := s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "list pending orders", "conversationId": conv})
		lat = append(lat, time.Since(start))
		if code != 200 || data(out)["status"] != "completed" {
			b.Fatalf("turn: %d %v", code, out)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(floor[len(floor)/2].Microseconds())/1000, "floor-p50-ms")
	b.ReportMetric(float64(lat[len(lat)/2])/float64(floor[len(floor)/2]), "p50/floor")
}

// BenchmarkAgentConcurrentTurns runs turns (one read tool each) in 50
// conversations at once and reports the sustained turns per second:
//
//	./scripts/test-postgres.sh go test -run '^$' -bench BenchmarkAgentConcurrentTurns -benchtime 500x ./e2e/
func BenchmarkAgentConcurrentTurns(b *testing.B) {
	s := startAgent(b)
	token, org, _ := s.agentOrg(b)
	const conversations = 50
	convs := make([]string, conversations)
	for i := range convs {
		code, out := s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "list pending orders"})
		require.Equal(b, 200, code, "%v", out)
		convs[i] = data(out)["conversationId"].(string)
	}
	work := make(chan string)
	errs := make(chan error, conversations)
	b.ResetTimer()
	start := time.Now()
	for _, conv := range convs {
		go func(conv string) {
			for range work {
				code, out := s.call(token, org, "POST", "/api/v1/agent/chat", map[string]any{"message": "list pending orders", "conversationId": conv})
				if code != 200 || data(out)["status"] != "completed" {
					errs <- fmt.Errorf("turn: %d %v", code, out)
					return
				}
			}
			errs <- nil
		}(conv)
	}
	for i := 0; i < b.N; i++ {
		work <- ""
	}
	close(work)
	for range convs {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
}

// TestAgentStandingOrderEndToEnd: an order created through the API fires
// the organization's on_order_created standing order from the create's
// event point; its action waits for approval as a pending action of the
// run's conversation (titled with the standing order's name); the event
// told again starts nothing; the approval adds the note once.
func TestAgentStandingOrderEndToEnd(t *testing.T) {
	s := startAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	token, org, _ := s.agentOrg(t)
	code, out := s.call(token, org, "POST", "/api/v1/agent/standing-orders", map[string]any{
		"name": "Note big orders", "naturalLanguage": "note every big order", "triggerType": "on_order_created",
		"conditions": []map[string]any{{"field": "total", "operator": "greater_than", "value": 20}},
		"actions":    []map[string]any{{"tool": "add_order_note", "input": map[string]any{"order_id": "{{id}}", "note": "big order {{orderNumber}}"}}},
	})
	require.Equal(t, 201, code, "%v", out)
	code, out = s.call(token, org, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Shop", "config": map[string]any{"shopDomain": "so-shop.example.com", "accessToken": "shpat_so"},
	})
	require.Equal(t, 201, code, "%v", out)
	bridge := data(out)["id"]
	create := func(number string, total float64) string {
		code, out := s.call(token, org, "POST", "/api/v1/orders", map[string]any{
			"bridge_id": bridge, "external_id": "so-" + number, "order_number": number, "status": "pending",
			"customer":   map[string]any{"email": "c@example.com", "firstName": "C", "lastName": "D"},
			"line_items": []map[string]any{{"sku": "S", "name": "Item", "quantity": 1, "unitPrice": total, "totalPrice": total, "requiresShipping": true, "taxable": true}},
			"totals":     map[string]any{"subtotal": total, "shipping": 0, "tax": 0, "discount": 0, "total": total},
			"currency":   "USD",
		})
		require.Equal(t, 201, code, "%v", out)
		return data(out)["id"].(string)
	}
	create("SMALL-1", 5)
	big := create("BIG-1", 500)

	var actions []any
	require.Eventually(t, func() bool {
		_, list := s.call(token, org, "GET", "/api/v1/agent/pending-actions", nil)
		actions, _ = list["data"].([]any)
		return len(actions) > 0
	}, 20*time.Second, 100*time.Millisecond, "the standing order's write waits for approval")
	require.Len(t, actions, 1, "the small order fails the conditions")
	action := actions[0].(map[string]any)
	require.Equal(t, "add_order_note", action["tool_name"])
	require.Equal(t, big, action["tool_input"].(map[string]any)["order_id"])
	conv := action["conversation_id"].(string)
	_, detail := s.call(token, org, "GET", "/api/v1/agent/conversations/"+conv, nil)
	require.Equal(t, "Note big orders", data(detail)["title"])
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, workflows.AgentConversationWorkflowID(conv), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), "the approval wait is a durable wait")

	// The event told again (a retried activity, a redelivered webhook).
	events := worker.AgentEvents(s.store, s.temporal, taskQueue, llm.Sandbox{}, agent.Config{ApprovalTTL: time.Hour}, nil)
	events.Happened(ctx, uuid.MustParse(org), "on_order_created", []uuid.UUID{uuid.MustParse(big)})
	_, list := s.call(token, org, "GET", "/api/v1/agent/conversations", nil)
	require.Len(t, list["data"].([]any), 1, "one run per event and standing order")

	code, out = s.call(token, org, "POST", "/api/v1/agent/pending-actions/"+action["id"].(string)+"/approve", map[string]any{"note": "ok"})
	require.Equal(t, 200, code, "%v", out)
	_, acts := s.call(token, org, "GET", "/api/v1/orders/"+big+"/activities", nil)
	notes := 0
	for _, a := range acts["data"].([]any) {
		if a.(map[string]any)["type"] == "note" {
			notes++
			require.Equal(t, "big order BIG-1", a.(map[string]any)["description"])
		}
	}
	require.Equal(t, 1, notes, "the approved action ran once")
}
