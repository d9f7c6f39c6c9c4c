package api

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// taskFixtureBridge inserts a bridge of the organization straight into the
// database.
func taskFixtureBridge(t *testing.T, e *testEnv, orgID, typ, status string) string {
	t.Helper()
	id := uuid.New()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO bridges (id, organization_id, type, name, config, status)
		VALUES ($1, $2, $3, 'Shop', '{"shopDomain": "shop.example.com"}', $4)`, id, orgID, typ, status)
	require.NoError(t, err)
	return id.String()
}

// expectTaskStart expects one BridgeTask start for the bridge's task and
// answers with run (a new mock run when nil); it returns the started input.
func expectTaskStart(t *testing.T, tc *mocks.Client, orgID, bridgeID, task string, run client.WorkflowRun) *workflows.BridgeTaskInput {
	t.Helper()
	if run == nil {
		r := mocks.NewWorkflowRun(t)
		r.On("GetID").Return("").Maybe()
		run = r
	}
	got := &workflows.BridgeTaskInput{}
	tc.On("ExecuteWorkflow", mock.Anything,
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
			org, ok := o.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
			return strings.HasPrefix(o.ID, "bridge-task/") && o.TaskQueue == "fos-test-bulk" && ok && org == orgID &&
				o.Memo["bridgeId"] == bridgeID && o.Memo["taskName"] == task && o.Memo["taskExecutionId"] == strings.TrimPrefix(o.ID, "bridge-task/")
		}),
		mock.MatchedBy(func(fn any) bool {
			return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.BridgeTask).Pointer()
		}),
		mock.MatchedBy(func(in workflows.BridgeTaskInput) bool {
			*got = in
			return in.OrganizationID == orgID && in.BridgeID == bridgeID && in.TaskName == task
		}),
	).Return(run, nil).Once()
	return got
}

func TestRunBridgeTaskQueuesAndReads(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	bridgeID := taskFixtureBridge(t, e, owner.org, "storefront_a", "active")

	in := expectTaskStart(t, tc, owner.org, bridgeID, "grab-orders", nil)
	res := e.do(owner.caller, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	d := res.data()
	execID := d["id"].(string)
	require.Equal(t, in.TaskExecutionID, execID)
	require.Equal(t, "queued", d["status"])
	require.Equal(t, "grab-orders", d["taskName"])
	require.Equal(t, bridgeID, d["bridgeId"])
	require.Equal(t, owner.org, d["organizationId"])
	require.Equal(t, "bridge-task/"+execID, d["workflowId"])
	require.Equal(t, map[string]any{}, d["input"])
	for _, k := range []string{"output", "error", "startedAt", "finishedAt"} {
		v, ok := d[k]
		require.True(t, ok, k)
		require.Nil(t, v, k)
	}

	// A second run with an input, by an API key with bridges:write.
	key := e.apiKey(owner, "bridges:write", "bridges:read")
	expectTaskStart(t, tc, owner.org, bridgeID, "warehouse-sync", nil)
	res = e.do(key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/warehouse-sync/run", map[string]any{"input": map[string]any{"full": true}})
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"full": true}, res.data()["input"])
	second := res.data()["id"].(string)
	// While a grab-orders run is queued, another is refused.
	res = e.do(key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil)
	requireError(t, res, 409, "conflict")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "already queued or running")

	got := e.do(key, "GET", "/api/v1/task-executions/"+execID, nil)
	require.Equal(t, 200, got.Code, "%s", got.Raw)
	require.Equal(t, d, got.data())

	list := e.do(key, "GET", "/api/v1/bridges/"+bridgeID+"/executions?limit=1", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	require.Len(t, list.list(), 1)
	require.Equal(t, second, list.list()[0]["id"], "newest first")
	pg := list.Body["pagination"].(map[string]any)
	require.Equal(t, float64(2), pg["total"])
	require.Equal(t, true, pg["hasMore"])
	requireError(t, e.do(key, "GET", "/api/v1/bridges/"+bridgeID+"/executions?page=0", nil), 400, "validation_error")

	// Another organization sees none of it.
	other := e.signup()
	requireError(t, e.do(other.caller, "GET", "/api/v1/task-executions/"+execID, nil), 404, "not_found")
	requireError(t, e.do(other.caller, "GET", "/api/v1/bridges/"+bridgeID+"/executions", nil), 404, "not_found")
	requireError(t, e.do(other.caller, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/task-executions/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/task-executions/nope", nil), 404, "not_found")
}

func TestRunBridgeTaskRefusals(t *testing.T) {
	tc := mocks.NewClient(t) // no start is expected
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	active := taskFixtureBridge(t, e, owner.org, "storefront_b", "active")

	// A task the type does not have, and a webhook-only task.
	res := e.do(owner.caller, "POST", "/api/v1/bridges/"+active+"/tasks/warehouse-sync/run", nil)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "taskName", res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "warehouse-sync")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges/"+active+"/tasks/nonsense/run", nil), 400, "validation_error")
	sfa := taskFixtureBridge(t, e, owner.org, "storefront_a", "active")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges/"+sfa+"/tasks/process-webhook/run", nil), 400, "validation_error")

	// Paused, disconnected and error bridges refuse.
	for _, st := range []string{"paused", "disconnected", "error"} {
		b := taskFixtureBridge(t, e, owner.org, "storefront_a", st)
		res := e.do(owner.caller, "POST", "/api/v1/bridges/"+b+"/tasks/grab-orders/run", nil)
		requireError(t, res, 409, "conflict")
		require.Contains(t, res.Body["error"].(map[string]any)["message"], st)
	}

	// Scopes.
	readOnly := e.apiKey(owner, "bridges:read")
	requireError(t, e.do(readOnly, "POST", "/api/v1/bridges/"+sfa+"/tasks/grab-orders/run", nil), 403, "insufficient_scope")
	ordersOnly := e.apiKey(owner, "orders:read")
	requireError(t, e.do(ordersOnly, "GET", "/api/v1/bridges/"+sfa+"/executions", nil), 403, "insufficient_scope")
	requireError(t, e.do(ordersOnly, "GET", "/api/v1/task-executions/"+uuid.NewString(), nil), 403, "insufficient_scope")
	requireError(t, e.do(caller{}, "GET", "/api/v1/task-executions/"+uuid.NewString(), nil), 401, "unauthorized")

	// Nothing was queued.
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM task_executions WHERE organization_id = $1`, owner.org).Scan(&n))
	require.Zero(t, n)
}

func TestRunBridgeTaskStartFailureKeepsTheRow(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	b := taskFixtureBridge(t, e, owner.org, "storefront_a", "active")

	// Unavailable: the start may have reached Temporal (sent again, then
	// described, still unknown); the row stays queued.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewUnavailable("down")).Times(worker.StartAttempts)
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.MatchedBy(func(id string) bool { return strings.HasPrefix(id, "bridge-task/") }), "").
		Return(nil, serviceerror.NewUnavailable("down")).Once()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges/"+b+"/tasks/grab-orders/run", nil), 503, "temporal_unavailable")
	// Refused: nothing runs, the row is failed.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewInvalidArgument("bad")).Once()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges/"+b+"/tasks/warehouse-sync/run", nil), 500, "internal")
	// The queued one still holds its task: a new grab-orders waits for the
	// reconciler.
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges/"+b+"/tasks/grab-orders/run", nil), 409, "conflict")

	list := e.do(owner.caller, "GET", "/api/v1/bridges/"+b+"/executions", nil)
	require.Equal(t, 200, list.Code)
	require.Len(t, list.list(), 2)
	require.Equal(t, "failed", list.list()[0]["status"])
	require.Equal(t, "the task could not be started", list.list()[0]["error"])
	require.Equal(t, "queued", list.list()[1]["status"])
}

func TestSyncLocations(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	ctx := context.Background()
	b := taskFixtureBridge(t, e, owner.org, "storefront_a", "active")

	// The run "finishes": the execution completed with two locations.
	var locIDs []string
	for i := range 2 {
		id := uuid.New()
		_, err := e.deps.Store.Pool.Exec(ctx, `INSERT INTO locations (id, organization_id, name, bridge_id, external_id, city)
			VALUES ($1, $2, $3, $4, $5, 'Ottawa')`, id, owner.org, fmt.Sprintf("WH %d", i), b, fmt.Sprint(100+i))
		require.NoError(t, err)
		locIDs = append(locIDs, id.String())
	}
	finishWith := func(output, errMsg string) *mocks.WorkflowRun {
		run := mocks.NewWorkflowRun(t)
		run.On("Get", mock.Anything, mock.Anything).Return(nil).Run(func(mock.Arguments) {
			var out any
			if output != "" {
				out = []byte(output)
			}
			_, err := e.deps.Store.Pool.Exec(ctx, `UPDATE task_executions SET status = CASE WHEN $2 = '' THEN 'completed' ELSE 'failed' END,
				output = $1, error = nullif($2, ''), finished_at = now() WHERE status = 'queued' AND organization_id = $3`, out, errMsg, owner.org)
			require.NoError(t, err)
		}).Once()
		return run
	}
	expectTaskStart(t, tc, owner.org, b, "warehouse-sync", finishWith(fmt.Sprintf(`{"locationIds": ["%s", "%s"]}`, locIDs[1], locIDs[0]), ""))
	res := e.do(owner.caller, "POST", "/api/v1/locations/sync/"+b, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 2)
	require.Equal(t, locIDs[1], res.list()[0]["id"])
	require.Equal(t, "101", res.list()[0]["externalId"])
	require.Equal(t, b, res.list()[0]["bridgeId"])
	require.Equal(t, "completed", res.Body["taskExecution"].(map[string]any)["status"])

	// A failed sync is a 502 with the reason.
	expectTaskStart(t, tc, owner.org, b, "warehouse-sync", finishWith("", `bridge "Shop" refused its credentials`))
	res = e.do(owner.caller, "POST", "/api/v1/locations/sync/"+b, nil)
	requireError(t, res, 502, "platform_error")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "refused its credentials")

	// No warehouse sync for the type; another organization's bridge; scope.
	sfb := taskFixtureBridge(t, e, owner.org, "storefront_b", "active")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/locations/sync/"+sfb, nil), 400, "validation_error")
	other := e.signup()
	requireError(t, e.do(other.caller, "POST", "/api/v1/locations/sync/"+b, nil), 404, "not_found")
	requireError(t, e.do(e.apiKey(owner, "locations:read"), "POST", "/api/v1/locations/sync/"+b, nil), 403, "insufficient_scope")
	paused := taskFixtureBridge(t, e, owner.org, "storefront_a", "paused")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/locations/sync/"+paused, nil), 409, "conflict")

	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM task_executions WHERE organization_id = $1 AND status = $2`, owner.org, store.TaskQueued).Scan(&n))
	require.Zero(t, n)
}
