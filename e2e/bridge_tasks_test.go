package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/workflows"
)

// waitForExecution polls a task execution until it is completed or failed.
func (s *stack) waitForExecution(key, id string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e := data(s.mustCall(200, key, "GET", "/api/v1/task-executions/"+id, nil))
		if st := e["status"]; st == "completed" || st == "failed" {
			return e
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("task execution %s still %v after 30s", id, e["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBridgeTasksEndToEnd(t *testing.T) {
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Tasks",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "locations:read", "locations:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	shop := "tasks-" + uuid.NewString()[:8] + ".example.com"
	bridge := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Sandbox shop", "config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))
	bridgeID := bridge["id"].(string)
	require.Nil(t, bridge["lastSyncAt"])

	// grab-orders imports the sandbox store's catalog.
	queued := data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil))
	require.Equal(t, "queued", queued["status"])
	execID := queued["id"].(string)
	done := s.waitForExecution(key, execID)
	require.Equal(t, "completed", done["status"], "%v", done)
	n := len(sandboxapi.OrderIDs(platforms.TypeStorefrontA, shop))
	require.Equal(t, map[string]any{"fetched": float64(n), "created": float64(n), "updated": float64(0), "unchanged": float64(0), "failed": float64(0)}, done["output"])
	require.NotNil(t, done["startedAt"])
	require.NotNil(t, done["finishedAt"])

	orders := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID+"&limit=100", nil)
	require.Equal(t, float64(n), orders["pagination"].(map[string]any)["total"])
	first := orders["data"].([]any)[0].(map[string]any)
	acts := s.waitForActivity(key, first["id"].(string), "sync", 1)
	require.Equal(t, "Imported from Sandbox shop", acts[0]["description"])
	require.NotNil(t, data(s.mustCall(200, key, "GET", "/api/v1/bridges/"+bridgeID, nil))["lastSyncAt"])

	// The run in Temporal: completed, under its stable id.
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, workflows.BridgeTaskWorkflowID(execID), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())

	// A second run starts at the high-water mark: nothing new is created.
	again := s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil))["id"].(string))
	require.Equal(t, "completed", again["status"], "%v", again)
	outAgain := again["output"].(map[string]any)
	require.Equal(t, float64(0), outAgain["created"])
	require.Equal(t, outAgain["fetched"], outAgain["unchanged"])
	require.Equal(t, float64(n), s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID, nil)["pagination"].(map[string]any)["total"])

	list := s.mustCall(200, key, "GET", "/api/v1/bridges/"+bridgeID+"/executions", nil)
	require.Len(t, list["data"].([]any), 2)
	require.Equal(t, again["id"], list["data"].([]any)[0].(map[string]any)["id"])

	// Warehouse sync: the locations when the connector lists them, else a
	// clear refusal.
	conn, err := platforms.NewSandboxRegistry(s.sandbox.URL, s.sandbox.Client()).Get(platforms.TypeStorefrontA)
	require.NoError(t, err)
	code, out = s.call(key, "", "POST", "/api/v1/locations/sync/"+bridgeID, nil)
	if _, ok := conn.(platforms.LocationLister); ok {
		require.Equal(t, http.StatusOK, code, "%v", out)
		require.NotEmpty(t, out["data"])
	} else {
		require.Equal(t, http.StatusBadGateway, code, "%v", out)
		require.Contains(t, out["error"].(map[string]any)["message"], "not supported by this bridge type")
	}

	// Credentials the platform refuses: the run fails and the bridge is in error.
	bad := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Refused", "config": map[string]any{"shopDomain": shop, "accessToken": "sandbox-fail"},
	}))
	failed := s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bad["id"].(string)+"/tasks/grab-orders/run", nil))["id"].(string))
	require.Equal(t, "failed", failed["status"])
	require.Contains(t, failed["error"], "refused its credentials")
	require.Equal(t, "error", data(s.mustCall(200, key, "GET", "/api/v1/bridges/"+bad["id"].(string), nil))["status"])
	// ... and it refuses the next run.
	s.mustCall(409, key, "POST", "/api/v1/bridges/"+bad["id"].(string)+"/tasks/grab-orders/run", nil)
}
