package api

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// resyncFixtureOrder inserts a bridge (unless withoutBridge) and an order
// of the account's organization straight into the database.
func resyncFixtureOrder(t *testing.T, e *testEnv, orgID string, withoutBridge bool) string {
	t.Helper()
	ctx := context.Background()
	var bridgeID *uuid.UUID
	if !withoutBridge {
		id := uuid.New()
		bridgeID = &id
		_, err := e.deps.Store.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config)
			VALUES ($1, $2, 'storefront_a', 'Shop', '{"shopDomain": "shop.example.com"}')`, id, orgID)
		require.NoError(t, err)
	}
	orderID := uuid.New()
	_, err := e.deps.Store.Pool.Exec(ctx, `
		INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
		VALUES ($1, $2, $3, $4, 'pending', '{"email": "a@example.com"}', 'a@example.com', '[]',
		        '{"subtotal": 0, "shipping": 0, "tax": 0, "discount": 0, "total": 0}', now())`,
		orderID, orgID, bridgeID, "ext-"+orderID.String()[:8])
	require.NoError(t, err)
	return orderID.String()
}

// expectResyncStart expects one OrderResync start for the order and answers
// with a run.
func expectResyncStart(t *testing.T, tc *mocks.Client, orgID, orderID string, requestedBy func(workflows.Actor) bool) {
	t.Helper()
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return(workflows.OrderResyncWorkflowID(orderID)).Maybe()
	run.On("GetRunID").Return("run-123").Maybe()
	tc.On("ExecuteWorkflow", mock.Anything,
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
			org, ok := o.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
			return o.ID == "order-resync/"+orderID && o.TaskQueue == "fos-test" &&
				o.WorkflowIDConflictPolicy == enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING &&
				ok && org == orgID && o.Memo["orderId"] == orderID
		}),
		mock.MatchedBy(func(fn any) bool {
			return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.OrderResync).Pointer()
		}),
		mock.MatchedBy(func(in workflows.OrderResyncInput) bool {
			return in.OrganizationID == orgID && in.OrderID == orderID && requestedBy(in.RequestedBy)
		}),
	).Return(run, nil).Once()
}

func TestResyncOrderQueuesWorkflow(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	orderID := resyncFixtureOrder(t, e, owner.org, false)

	expectResyncStart(t, tc, owner.org, orderID, func(a workflows.Actor) bool {
		return a.Type == "user" && a.ID == owner.userID && a.Name != ""
	})
	res := e.do(owner.caller, "POST", "/api/v1/orders/"+orderID+"/resync", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, orderID, d["id"])
	require.Equal(t, "queued", d["status"])
	require.NotEmpty(t, d["message"])
	require.Equal(t, "order-resync/"+orderID, d["workflowId"])
	require.Equal(t, "run-123", d["runId"])

	// An API key with orders:write is attributed as itself.
	key := e.apiKey(owner, "orders:write")
	expectResyncStart(t, tc, owner.org, orderID, func(a workflows.Actor) bool {
		return a.Type == "api_key" && a.ID != "" && a.Name == "test key"
	})
	res = e.do(key, "POST", "/api/v1/orders/"+orderID+"/resync", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
}

func TestResyncOrderRefusals(t *testing.T) {
	tc := mocks.NewClient(t) // no start is expected
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	orderID := resyncFixtureOrder(t, e, owner.org, false)

	// Scope.
	readOnly := e.apiKey(owner, "orders:read")
	res := e.do(readOnly, "POST", "/api/v1/orders/"+orderID+"/resync", nil)
	requireError(t, res, 403, "insufficient_scope")

	// Another organization's order, an unknown and a malformed id.
	other := e.signup()
	requireError(t, e.do(other.caller, "POST", "/api/v1/orders/"+orderID+"/resync", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders/"+uuid.NewString()+"/resync", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders/nope/resync", nil), 404, "not_found")

	// No source bridge.
	orphan := resyncFixtureOrder(t, e, owner.org, true)
	res = e.do(owner.caller, "POST", "/api/v1/orders/"+orphan+"/resync", nil)
	requireError(t, res, 409, "conflict")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "no source bridge")

	// Unauthenticated.
	requireError(t, e.do(caller{}, "POST", "/api/v1/orders/"+orderID+"/resync", nil), 401, "unauthorized")
}

func TestResyncOrderTemporalUnavailable(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	orderID := resyncFixtureOrder(t, e, owner.org, false)

	// Unreachable: the start is sent again, then the workflow described.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewUnavailable("connection refused")).Times(worker.StartAttempts)
	tc.On("DescribeWorkflowExecution", mock.Anything, "order-resync/"+orderID, "").Return(nil, serviceerror.NewUnavailable("connection refused")).Once()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders/"+orderID+"/resync", nil), 503, "temporal_unavailable")

	// Any other refusal is an internal error that shows nothing of Temporal.
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewInvalidArgument("search attribute OrganizationId is not defined")).Once()
	res := e.do(owner.caller, "POST", "/api/v1/orders/"+orderID+"/resync", nil)
	requireError(t, res, 500, "internal")
	require.NotContains(t, string(res.Raw), "OrganizationId")

	// No Temporal client at all.
	bare := newEnv(t)
	owner2 := bare.signup()
	orderID2 := resyncFixtureOrder(t, bare, owner2.org, false)
	requireError(t, bare.do(owner2.caller, "POST", "/api/v1/orders/"+orderID2+"/resync", nil), 503, "temporal_unavailable")
}
