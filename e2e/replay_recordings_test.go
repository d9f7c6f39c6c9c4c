package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// The embed workflows run end to end on the embedded Temporal server and
// leave the recorded histories of the replay tests (FOS_UPDATE_HISTORY=1):
// an end user connects a storefront_a shop through the sandbox's OAuth
// (StorefrontAOAuth exchanges the code), a new order of the shop reaches
// the end user's webhook through the outbox (EmbedOutbox), whose first
// attempt the receiver fails, so the WebhookDelivery run retries it.
func TestEmbedWorkflowsEndToEnd(t *testing.T) {
	s := startEmbedStack(t)
	ctx := t.Context()
	// The stack's outbox dispatcher polls every 100 ms; one that idles a
	// second keeps its recorded history short.
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, workflows.EmbedOutboxWorkflowID, "", "restarted with a longer idle"))
	outbox, err := s.temporal.ExecuteWorkflow(ctx, worker.StartOptions(workflows.EmbedOutboxWorkflowID, worker.WebhookTaskQueue(taskQueue), "system", nil),
		workflows.EmbedOutbox, workflows.EmbedOutboxInput{Idle: time.Second})
	require.NoError(t, err)

	rc := &hookReceiver{script: []int{503}}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	_, key, _ := s.embedAccount(nil)
	tok := data(s.mustCall(201, key, "POST", "/api/v1/embed/sessions", map[string]any{"externalId": "ann"}))["token"].(string)
	hook := data(s.mustCall(201, tok, "POST", "/api/v1/embed/webhooks", map[string]any{
		"url": recv.URL, "events": []string{"order.created"}, "secret": "whsec-ann-0123456789"}))

	// OAuth: the sandbox's authorize page approves at once and sends the
	// browser to the service's callback, which runs StorefrontAOAuth.
	start := data(s.mustCall(200, tok, "POST", "/api/v1/embed/bridges/storefront_a/oauth/start", map[string]any{"shopDomain": "ann-e2e"}))
	bridgeID := start["bridgeId"].(string)
	resp, err := http.Get(start["authUrl"].(string))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the callback page says connected")
	require.Equal(t, embed.CallbackPath, resp.Request.URL.Path)
	bridges := s.mustCall(200, tok, "GET", "/api/v1/embed/bridges", nil)["data"].([]any)
	require.Len(t, bridges, 1)
	require.Equal(t, bridgeID, bridges[0].(map[string]any)["id"])
	require.Equal(t, "active", bridges[0].(map[string]any)["status"])
	oauthID := workflows.StorefrontAOAuthWorkflowID(bridgeID)
	var exchanged embed.ExchangeResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, oauthID, "").Get(ctx, &exchanged))

	// An order of the connected shop: order.created, failed once, then
	// delivered by the retry run.
	s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(bridgeID, "OAUTH-1", 12))
	var deliveryID string
	require.Eventually(t, func() bool {
		ds := s.mustCall(200, tok, "GET", "/api/v1/embed/webhooks/"+hook["id"].(string)+"/deliveries", nil)["data"].([]any)
		for _, d := range ds {
			if d := d.(map[string]any); d["success"] == true {
				deliveryID = d["id"].(string)
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	require.GreaterOrEqual(t, rc.count(), 2, "the first attempt failed, a retry delivered it")
	delivery := s.temporal.GetWorkflow(ctx, workflows.WebhookDeliveryWorkflowID(deliveryID), "")
	var delivered workflows.WebhookDeliveryResult
	require.NoError(t, delivery.Get(ctx, &delivered))
	require.Equal(t, workflows.WebhookDeliveryResult{Success: true, Attempts: 2}, delivered)

	require.NoError(t, s.temporal.TerminateWorkflow(ctx, workflows.EmbedOutboxWorkflowID, outbox.GetRunID(), "recorded"))
	writeHistory(t, ctx, s.temporal, oauthID, "", "storefront_a_oauth_history.json")
	writeHistory(t, ctx, s.temporal, delivery.GetID(), delivery.GetRunID(), "webhook_delivery_history.json")
	writeHistory(t, ctx, s.temporal, outbox.GetID(), outbox.GetRunID(), "embed_outbox_history.json")
}

// The agent's reconciler (the Schedule schedule/agent-reconcile) runs on
// the worker: a turn left processing for longer than agent.StuckTurnAfter
// (its run was lost) ends failed, telling the user to send it again.
func TestAgentReconcileEndToEnd(t *testing.T) {
	s := startAgent(t)
	ctx := t.Context()
	_, org, _ := s.agentOrg(t)
	conv := uuid.New()
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO agent_conversations (id, organization_id, title, actor, turn_status, turn_started_at)
 VALUES ($1, $2, 'stuck', '{"kind": "user"}', 'processing', now() - interval '2 hours')`, conv, org)
	require.NoError(t, err)
	run, err := s.temporal.ExecuteWorkflow(ctx, worker.StartOptions("agent-reconcile-test/"+uuid.NewString(), taskQueue, "system", nil), workflows.AgentReconcile)
	require.NoError(t, err)
	var res agent.ReconcileResult
	require.NoError(t, run.Get(ctx, &res))
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	require.Equal(t, 1, res.FailedTurns, "%+v", res)
	var status string
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT turn_status FROM agent_conversations WHERE id = $1`, conv).Scan(&status))
	require.Equal(t, "failed", status)
	writeHistory(t, ctx, s.temporal, run.GetID(), run.GetRunID(), "agent_reconcile_history.json")
}
