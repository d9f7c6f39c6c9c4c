package api

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// rcAccount inserts a carrier account with credentials sealed by the test
// Box (the carrier accounts API is not needed for these tests).
func rcAccount(t *testing.T, e *testEnv, orgID, carrier, status string, supportsRating bool) string {
	t.Helper()
	creds := map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}
	if carrier == "carrier_b" {
		creds = map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": "A1B2C3"}
	}
	id := uuid.NewString()
	sealed := sealAccountCreds(t, e, orgID, id, creds)
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, orgID, carrier+" account", carrier, sealed, supportsRating, status)
	require.NoError(t, err)
	return id
}

func rcItems(n int, prefix string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"trackingNumber": fmt.Sprintf("%s%07d", prefix, i+1)}
		if i%2 == 0 {
			out[i]["netCost"] = 12.5
		}
		if i%3 == 0 {
			out[i]["serviceType"] = "FEDEX_GROUND"
		}
	}
	return out
}

func rcCreate(t *testing.T, e *testEnv, c caller, accountID string, items []map[string]any) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/rate-comparisons", map[string]any{
		"name": "Q1 invoices", "carrierAccountId": accountID, "sourceCarrier": "carrier_a", "items": items,
	})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

var rcComparisonFields = []string{"id", "organizationId", "name", "carrierAccountId", "carrier", "sourceCarrier", "status",
	"totalItems", "pendingItems", "completedItems", "failedItems", "skippedItems", "progress", "totalNetCost", "totalQuotedCost",
	"totalSavings", "savingsPercent", "error", "workflowId", "startedAt", "completedAt", "createdAt", "updatedAt"}

func requireKeys(t *testing.T, m map[string]any, keys []string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	want := append([]string(nil), keys...)
	sort.Strings(got)
	sort.Strings(want)
	require.Equal(t, want, got)
}

func TestRateComparisonCreateAndRead(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_b", "active", true)

	d := rcCreate(t, e, owner.caller, acct, rcItems(25, "RC"))
	requireKeys(t, d, rcComparisonFields)
	require.Equal(t, owner.org, d["organizationId"])
	require.Equal(t, "Q1 invoices", d["name"])
	require.Equal(t, acct, d["carrierAccountId"])
	require.Equal(t, "carrier_b", d["carrier"])
	require.Equal(t, "carrier_a", d["sourceCarrier"])
	require.Equal(t, "draft", d["status"])
	require.EqualValues(t, 25, d["totalItems"])
	require.EqualValues(t, 25, d["pendingItems"])
	require.EqualValues(t, 0, d["completedItems"])
	require.EqualValues(t, 0, d["progress"])
	require.Nil(t, d["savingsPercent"])
	require.Nil(t, d["error"])
	require.Nil(t, d["workflowId"])
	require.Nil(t, d["startedAt"])

	id := d["id"].(string)
	res := e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, d, res.data())

	// The items, in upload order, pending, with every field present.
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id+"/items", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	items := res.list()
	require.Len(t, items, 25)
	requireKeys(t, items[0], []string{"id", "comparisonId", "position", "trackingNumber", "status", "netCost", "serviceType",
		"serviceLevel", "origin", "destination", "weight", "zone", "quotedService", "quotedServiceName", "quotedPrice", "currency",
		"transitDays", "savings", "error", "createdAt", "updatedAt"})
	require.Equal(t, "RC0000001", items[0]["trackingNumber"])
	require.EqualValues(t, 1, items[0]["position"])
	require.Equal(t, "pending", items[0]["status"])
	require.EqualValues(t, 12.5, items[0]["netCost"])
	require.Equal(t, "FEDEX_GROUND", items[0]["serviceType"])
	require.Nil(t, items[1]["netCost"])
	require.Nil(t, items[1]["serviceType"])
	require.Nil(t, items[0]["origin"])

	// Another organization sees nothing; unknown and malformed ids are 404.
	other := e.signup()
	for _, path := range []string{"", "/items", "/summary"} {
		requireError(t, e.do(other.caller, "GET", "/api/v1/rate-comparisons/"+id+path, nil), 404, "not_found")
	}
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rate-comparisons/nope", nil), 404, "not_found")
	requireError(t, e.do(caller{}, "GET", "/api/v1/rate-comparisons/"+id, nil), 401, "unauthorized")
}

func TestRateComparisonCreateValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	valid := func() map[string]any {
		return map[string]any{"name": "N", "carrierAccountId": acct, "sourceCarrier": "carrier_a", "items": rcItems(2, "V")}
	}
	fields := func(res *response) []string {
		var out []string
		for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
			out = append(out, d.(map[string]any)["field"].(string))
		}
		return out
	}
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/rate-comparisons", body) }

	requireError(t, post("{nope"), 400, "invalid_json")
	requireError(t, post(""), 400, "invalid_json")

	res := post(map[string]any{})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"name", "carrierAccountId", "sourceCarrier", "items"}, fields(res))

	for _, tc := range []struct {
		name  string
		edit  func(b map[string]any)
		field string
		msg   string
	}{
		{"blank name", func(b map[string]any) { b["name"] = "  " }, "name", "is required"},
		{"long name", func(b map[string]any) { b["name"] = strings.Repeat("n", 256) }, "name", "must be 1-255 characters"},
		{"account not a uuid", func(b map[string]any) { b["carrierAccountId"] = "x" }, "carrierAccountId", "must be a UUID"},
		{"source carrier", func(b map[string]any) { b["sourceCarrier"] = "carrier_c" }, "sourceCarrier", "must be one of carrier_a, carrier_b"},
		{"no items", func(b map[string]any) { b["items"] = []any{} }, "items", "must have 1-10000 items"},
		{"10,001 items", func(b map[string]any) { b["items"] = rcItems(10_001, "X") }, "items", "must have 1-10000 items"},
		{"items not an array", func(b map[string]any) { b["items"] = "x" }, "items", "must be an array"},
		{"tracking number missing", func(b map[string]any) { b["items"] = []any{map[string]any{"netCost": 1}} }, "items[0].trackingNumber", "is required"},
		{"tracking number blank", func(b map[string]any) { b["items"] = []any{map[string]any{"trackingNumber": " "}} }, "items[0].trackingNumber", "is required"},
		{"tracking number 101 chars", func(b map[string]any) {
			b["items"] = []any{map[string]any{"trackingNumber": "A"}, map[string]any{"trackingNumber": strings.Repeat("1", 101)}}
		}, "items[1].trackingNumber", "must be 1-100 characters"},
		{"tracking number not a string", func(b map[string]any) { b["items"] = []any{map[string]any{"trackingNumber": 12}} }, "items.trackingNumber", "must be a string"},
		{"negative net cost", func(b map[string]any) { b["items"] = []any{map[string]any{"trackingNumber": "A", "netCost": -1}} }, "items[0].netCost", "must be a number from 0 to 1000000"},
		{"net cost not a number", func(b map[string]any) { b["items"] = []any{map[string]any{"trackingNumber": "A", "netCost": "9"}} }, "items.netCost", "must be a number"},
		{"long service", func(b map[string]any) {
			b["items"] = []any{map[string]any{"trackingNumber": "A", "serviceType": strings.Repeat("s", 101)}}
		}, "items[0].serviceType", "must be at most 100 characters"},
		{"duplicate", func(b map[string]any) {
			b["items"] = []any{map[string]any{"trackingNumber": "1zabc"}, map[string]any{"trackingNumber": "B"}, map[string]any{"trackingNumber": " 1ZABC "}}
		}, "items[2].trackingNumber", "duplicates items[0].trackingNumber"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := valid()
			tc.edit(b)
			res := post(b)
			requireError(t, res, 400, "validation_error")
			d := res.Body["error"].(map[string]any)["details"].([]any)
			require.Len(t, d, 1, "%s", res.Raw)
			require.Equal(t, tc.field, d[0].(map[string]any)["field"])
			require.Equal(t, tc.msg, d[0].(map[string]any)["message"])
		})
	}

	// Many bad items: the details are capped, with a count of the rest.
	bad := make([]any, 500)
	for i := range bad {
		bad[i] = map[string]any{"trackingNumber": ""}
	}
	b := valid()
	b["items"] = bad
	res = post(b)
	requireError(t, res, 400, "validation_error")
	d := res.Body["error"].(map[string]any)["details"].([]any)
	require.Len(t, d, 101)
	require.Equal(t, map[string]any{"field": "items", "message": "has 400 more problems"}, d[100])

	// The account: unknown or another organization's is 404; inactive or
	// not rating is 400.
	b = valid()
	b["carrierAccountId"] = uuid.NewString()
	requireError(t, post(b), 404, "not_found")
	other := e.signup()
	b["carrierAccountId"] = rcAccount(t, e, other.org, "carrier_b", "active", true)
	requireError(t, post(b), 404, "not_found")
	for _, id := range []string{
		rcAccount(t, e, owner.org, "carrier_b", "inactive", true),
		rcAccount(t, e, owner.org, "carrier_b", "active", false),
	} {
		b["carrierAccountId"] = id
		res = post(b)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, []string{"carrierAccountId"}, fields(res))
	}

	// Exactly 10,000 items is fine; a 100-character number too; net cost
	// is kept to the cent.
	b = valid()
	items := rcItems(10_000, "T")
	items[0]["trackingNumber"] = strings.Repeat("9", 100)
	items[0]["netCost"] = 10.456
	b["items"] = items
	res = post(b)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.EqualValues(t, 10_000, res.data()["totalItems"])
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+res.data()["id"].(string)+"/items?limit=1", nil)
	require.Equal(t, 200, res.Code)
	require.EqualValues(t, 10.46, res.list()[0]["netCost"])
	require.EqualValues(t, 10_000, res.Body["pagination"].(map[string]any)["total"])
}

func TestRateComparisonScopes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	id := rcCreate(t, e, owner.caller, acct, rcItems(1, "S"))["id"].(string)

	read := e.apiKey(owner, "rate-compare:read")
	for _, path := range []string{"", "/" + id, "/" + id + "/items", "/" + id + "/summary"} {
		res := e.do(read, "GET", "/api/v1/rate-comparisons"+path, nil)
		require.Equal(t, 200, res.Code, "%s %s", path, res.Raw)
	}
	body := map[string]any{"name": "N", "carrierAccountId": acct, "sourceCarrier": "carrier_a", "items": rcItems(1, "K")}
	res := e.do(read, "POST", "/api/v1/rate-comparisons", body)
	requireError(t, res, 403, "insufficient_scope")
	require.Contains(t, string(res.Raw), "rate-compare:write")
	requireError(t, e.do(read, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil), 403, "insufficient_scope")
	requireError(t, e.do(read, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil), 403, "insufficient_scope")
	requireError(t, e.do(read, "DELETE", "/api/v1/rate-comparisons/"+id, nil), 403, "insufficient_scope")

	write := e.apiKey(owner, "rate-compare:write")
	requireError(t, e.do(write, "GET", "/api/v1/rate-comparisons/"+id, nil), 403, "insufficient_scope")
	res = e.do(write, "POST", "/api/v1/rate-comparisons", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)

	other := e.apiKey(owner, "rates:read")
	requireError(t, e.do(other, "GET", "/api/v1/rate-comparisons", nil), 403, "insufficient_scope")
}

func TestRateComparisonList(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	var ids []string
	for range 3 {
		ids = append(ids, rcCreate(t, e, owner.caller, acct, rcItems(1, "L"))["id"].(string))
	}
	_, _, err := store.StartRateComparison(context.Background(), e.deps.Store.Pool, uuid.MustParse(owner.org), uuid.MustParse(ids[0]), "wf")
	require.NoError(t, err)
	// Another organization's comparison is not listed.
	other := e.signup()
	rcCreate(t, e, other.caller, rcAccount(t, e, other.org, "carrier_b", "active", true), rcItems(1, "L"))

	res := e.do(owner.caller, "GET", "/api/v1/rate-comparisons", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.list()
	require.Len(t, list, 3)
	require.Equal(t, []any{ids[2], ids[1], ids[0]}, []any{list[0]["id"], list[1]["id"], list[2]["id"]}, "newest first")
	requireKeys(t, list[0], rcComparisonFields)
	require.Equal(t, map[string]any{"page": 1.0, "limit": 20.0, "total": 3.0, "totalPages": 1.0, "hasMore": false}, res.Body["pagination"])

	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons?status=processing", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 1)
	require.Equal(t, ids[0], res.list()[0]["id"])

	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons?limit=2&page=2", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 1)
	require.Equal(t, map[string]any{"page": 2.0, "limit": 2.0, "total": 3.0, "totalPages": 2.0, "hasMore": false}, res.Body["pagination"])

	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons?limit=500", nil)
	require.Equal(t, 200, res.Code)
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"], "clamped")

	requireError(t, e.do(owner.caller, "GET", "/api/v1/rate-comparisons?status=bogus", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rate-comparisons?page=0", nil), 400, "validation_error")
}

// expectRateComparisonStart expects one RateComparison start.
func expectRateComparisonStart(t *testing.T, tc *mocks.Client, orgID, id string, err error) {
	t.Helper()
	expectRateComparisonStartWith(t, tc, orgID, id, enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING, err, 1)
}

// expectRateComparisonStartWith expects times RateComparison starts with
// the given conflict policy (a start sent again after a lost answer joins:
// USE_EXISTING).
func expectRateComparisonStartWith(t *testing.T, tc *mocks.Client, orgID, id string, policy enumspb.WorkflowIdConflictPolicy, err error, times int) {
	t.Helper()
	call := tc.On("ExecuteWorkflow", mock.Anything,
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
			org, ok := o.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
			return o.ID == "rate-comparison/"+id && o.TaskQueue == "fos-test-bulk" &&
				o.WorkflowIDConflictPolicy == policy &&
				ok && org == orgID && o.Memo["comparisonId"] == id
		}),
		mock.MatchedBy(func(fn any) bool {
			return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.RateComparison).Pointer()
		}),
		mock.MatchedBy(func(in workflows.RateComparisonInput) bool {
			return in.OrganizationID == orgID && in.ComparisonID == id && in.RequestedBy.Type == "user" && in.State == nil &&
				in.BatchSize == workflows.DefaultRateComparisonBatchSize && in.Parallelism == workflows.DefaultRateComparisonParallelism &&
				in.BatchesPerRun == workflows.DefaultRateComparisonBatchesPerRun &&
				in.BatchScheduleToClose == workflows.DefaultRateComparisonBatchScheduleToClose
		}),
	)
	if err != nil {
		call.Return(nil, err).Times(times)
		return
	}
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return(workflows.RateComparisonWorkflowID(id)).Maybe()
	run.On("GetRunID").Return("run-1").Maybe()
	call.Return(run, nil).Times(times)
}

func TestRateComparisonProcess(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	acctB := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	id := rcCreate(t, e, owner.caller, acctB, rcItems(3, "P"))["id"].(string)
	path := "/api/v1/rate-comparisons/" + id + "/process"

	// No active carrier_a account to track the carrier_a numbers: 400.
	res := e.do(owner.caller, "POST", path, nil)
	requireError(t, res, 400, "no_active_carrier_account")
	require.Contains(t, string(res.Raw), "carrier_a")
	rcAccount(t, e, owner.org, "carrier_a", "active", true)

	// Temporal unreachable (the start is sent again; then Temporal says
	// there is no run): 503, and the comparison stays a draft.
	expectRateComparisonStart(t, tc, owner.org, id, serviceerror.NewUnavailable("connection refused"))
	expectRateComparisonStartWith(t, tc, owner.org, id, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, serviceerror.NewUnavailable("connection refused"), worker.StartAttempts-1)
	tc.On("DescribeWorkflowExecution", mock.Anything, "rate-comparison/"+id, "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	requireError(t, e.do(owner.caller, "POST", path, nil), 503, "temporal_unavailable")
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id, nil)
	require.Equal(t, "draft", res.data()["status"])
	require.Nil(t, res.data()["workflowId"])

	// 202 at once, processing.
	expectRateComparisonStart(t, tc, owner.org, id, nil)
	res = e.do(owner.caller, "POST", path, nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	d := res.data()
	requireKeys(t, d, rcComparisonFields)
	require.Equal(t, "processing", d["status"])
	require.Equal(t, "rate-comparison/"+id, d["workflowId"])
	require.NotNil(t, d["startedAt"])

	// Twice: 409. Another organization, unknown ids: 404.
	requireError(t, e.do(owner.caller, "POST", path, nil), 409, "conflict")
	other := e.signup()
	requireError(t, e.do(other.caller, "POST", path, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+uuid.NewString()+"/process", nil), 404, "not_found")

	// Completed: 409. Failed: may be processed again.
	orgID, compID := uuid.MustParse(owner.org), uuid.MustParse(id)
	_, err := store.FinishRateComparison(context.Background(), e.deps.Store.Pool, orgID, compID, store.FinishCompleted, "")
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "POST", path, nil), 409, "conflict")
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE rate_comparisons SET status = 'failed', error = 'boom' WHERE id = $1`, id)
	require.NoError(t, err)
	expectRateComparisonStart(t, tc, owner.org, id, nil)
	res = e.do(owner.caller, "POST", path, nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Nil(t, res.data()["error"], "the old error is cleared")

	// The account got deactivated: 400.
	id2 := rcCreate(t, e, owner.caller, acctB, rcItems(1, "Q"))["id"].(string)
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'inactive' WHERE id = $1`, acctB)
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id2+"/process", nil), 400, "no_active_carrier_account")

	// No Temporal at all.
	bare := newEnv(t)
	o2 := bare.signup()
	a2 := rcAccount(t, bare, o2.org, "carrier_a", "active", true)
	id3 := rcCreate(t, bare, o2.caller, a2, rcItems(1, "R"))["id"].(string)
	requireError(t, bare.do(o2.caller, "POST", "/api/v1/rate-comparisons/"+id3+"/process", nil), 503, "temporal_unavailable")
}

func TestRateComparisonCancelAndDelete(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_a", "active", true)
	id := rcCreate(t, e, owner.caller, acct, rcItems(4, "C"))["id"].(string)
	orgID, compID := uuid.MustParse(owner.org), uuid.MustParse(id)

	// A draft cannot be cancelled.
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil), 409, "conflict")

	// Processing, one item done: cancel closes it at once and cancels the workflow.
	_, _, err := store.StartRateComparison(context.Background(), e.deps.Store.Pool, orgID, compID, "rate-comparison/"+id)
	require.NoError(t, err)
	claimed, err := store.ClaimRateComparisonBatch(context.Background(), e.deps.Store.Pool, orgID, compID, 1, 1)
	require.NoError(t, err)
	price := 5.0
	_, err = store.RecordRateComparisonResults(context.Background(), e.deps.Store.Pool, orgID, compID, []store.RateComparisonItemResult{
		{ID: claimed[0].ID, Status: store.RateItemCompleted, Zone: "4", QuotedService: "FEDEX_GROUND", QuotedPrice: &price, Currency: "USD"},
	})
	require.NoError(t, err)
	other := e.signup()
	requireError(t, e.do(other.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil), 404, "not_found")
	tc.On("CancelWorkflow", mock.Anything, "rate-comparison/"+id, "").Return(nil).Once()
	res := e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, "cancelled", d["status"])
	require.EqualValues(t, 1, d["completedItems"])
	require.EqualValues(t, 3, d["skippedItems"])
	require.EqualValues(t, 0, d["pendingItems"])
	require.EqualValues(t, 100, d["progress"])
	require.NotNil(t, d["completedAt"])
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id+"/items?status=skipped", nil)
	require.Len(t, res.list(), 3)
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil), 409, "conflict")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil), 409, "conflict")

	// Delete a closed one: no workflow call.
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/rate-comparisons/"+id, nil), 404, "not_found")
	res = e.do(owner.caller, "DELETE", "/api/v1/rate-comparisons/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/rate-comparisons/"+id, nil), 404, "not_found")

	// Delete a processing one: its workflow is cancelled first; a run that
	// is already gone, or an unreachable Temporal, does not block the delete.
	for _, cancelErr := range []error{nil, serviceerror.NewNotFound("gone"), serviceerror.NewUnavailable("down")} {
		id := rcCreate(t, e, owner.caller, acct, rcItems(2, "D"))["id"].(string)
		_, _, err := store.StartRateComparison(context.Background(), e.deps.Store.Pool, orgID, uuid.MustParse(id), "rate-comparison/"+id)
		require.NoError(t, err)
		tc.On("CancelWorkflow", mock.Anything, "rate-comparison/"+id, "").Return(cancelErr).Once()
		res = e.do(owner.caller, "DELETE", "/api/v1/rate-comparisons/"+id, nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var n int
		require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM rate_comparison_items WHERE comparison_id = $1`, id).Scan(&n))
		require.Zero(t, n, "items deleted too")
	}
}

// TestRateComparisonCancelWhenCloseFails: when closing the comparison
// fails, its workflow is cancelled all the same (the workflow then closes
// it as cancelled); a deadlock on the close is retried.
func TestRateComparisonCancelWhenCloseFails(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_a", "active", true)
	pool := e.deps.Store.Pool
	ctx := context.Background()
	start := func() string {
		id := rcCreate(t, e, owner.caller, acct, rcItems(3, "K"))["id"].(string)
		_, _, err := store.StartRateComparison(ctx, pool, uuid.MustParse(owner.org), uuid.MustParse(id), "rate-comparison/"+id)
		require.NoError(t, err)
		return id
	}
	// failSkips makes the next `times` skips of the comparison's items fail
	// with SQLSTATE code (times < 0: all).
	failSkips := func(id string, times int, code string) {
		name := "rc_fail_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		limit := "true"
		if times >= 0 {
			limit = fmt.Sprintf("nextval('%s') <= %d", name, times)
		}
		for _, q := range []string{
			`CREATE SEQUENCE ` + name,
			`CREATE FUNCTION ` + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.comparison_id = '` + id + `' AND ` + limit + ` THEN
        RAISE EXCEPTION 'injected failure' USING ERRCODE = '` + code + `';
    END IF;
    RETURN NEW;
END $$`,
			`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON rate_comparison_items FOR EACH ROW EXECUTE FUNCTION ` + name + `()`,
		} {
			_, err := pool.Exec(ctx, q)
			require.NoError(t, err)
		}
		t.Cleanup(func() {
			_, _ = pool.Exec(ctx, `DROP TRIGGER `+name+` ON rate_comparison_items`)
			_, _ = pool.Exec(ctx, `DROP FUNCTION `+name+`()`)
			_, _ = pool.Exec(ctx, `DROP SEQUENCE `+name)
		})
	}

	// The close keeps failing: 500, but the workflow is cancelled.
	id := start()
	failSkips(id, -1, "XX000")
	tc.On("CancelWorkflow", mock.Anything, "rate-comparison/"+id, "").Return(nil).Once()
	res := e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil)
	require.Equal(t, 500, res.Code, "%s", res.Raw)
	tc.AssertCalled(t, "CancelWorkflow", mock.Anything, "rate-comparison/"+id, "")

	// A deadlock victim is run again: 200, cancelled.
	id = start()
	failSkips(id, 1, "40P01")
	tc.On("CancelWorkflow", mock.Anything, "rate-comparison/"+id, "").Return(nil).Once()
	res = e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "cancelled", res.data()["status"])
	require.EqualValues(t, 3, res.data()["skippedItems"])
}

func TestRateComparisonItemsAndSummary(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	acct := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	id := rcCreate(t, e, owner.caller, acct, rcItems(60, "IT"))["id"].(string)
	orgID, compID := uuid.MustParse(owner.org), uuid.MustParse(id)
	ctx := context.Background()
	pool := e.deps.Store.Pool

	// Process the first four items by hand: three completed, one failed.
	_, _, err := store.StartRateComparison(ctx, pool, orgID, compID, "wf")
	require.NoError(t, err)
	claimed, err := store.ClaimRateComparisonBatch(ctx, pool, orgID, compID, 1, 4)
	require.NoError(t, err)
	f := func(v float64) *float64 { return &v }
	days := 2
	_, err = store.RecordRateComparisonResults(ctx, pool, orgID, compID, []store.RateComparisonItemResult{
		{ID: claimed[0].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_GROUND", ServiceLevel: "ground",
			Origin: &store.RateAddress{City: "DENVER", State: "CO", Zip: "80202", Country: "US"}, Destination: &store.RateAddress{City: "RENO", State: "NV", Zip: "89501", Country: "US"},
			WeightValue: f(3.5), WeightUnit: "lb", Zone: "4", QuotedService: "03", QuotedServiceName: "UPS Ground", QuotedPrice: f(10), Currency: "USD", TransitDays: &days},
		{ID: claimed[1].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_2_DAY", ServiceLevel: "2_day", Zone: "4", QuotedService: "02", QuotedPrice: f(30), Currency: "USD"},
		{ID: claimed[2].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_GROUND", ServiceLevel: "ground", Zone: "7", QuotedService: "03", QuotedPrice: f(8.5), Currency: "USD"},
		{ID: claimed[3].ID, Status: store.RateItemFailed, Error: "tracking number unknown to carrier_a"},
	})
	require.NoError(t, err)

	// The comparison's live counters.
	d := e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id, nil).data()
	require.EqualValues(t, 3, d["completedItems"])
	require.EqualValues(t, 1, d["failedItems"])
	require.EqualValues(t, 56, d["pendingItems"])
	require.EqualValues(t, 6.67, d["progress"])
	require.EqualValues(t, 25, d["totalNetCost"])
	require.EqualValues(t, 48.5, d["totalQuotedCost"])
	require.EqualValues(t, 6.5, d["totalSavings"])
	require.EqualValues(t, 26, d["savingsPercent"])

	base := "/api/v1/rate-comparisons/" + id + "/items"
	res := e.do(owner.caller, "GET", base, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 50, "default limit 50")
	require.Equal(t, map[string]any{"page": 1.0, "limit": 50.0, "total": 60.0, "totalPages": 2.0, "hasMore": true}, res.Body["pagination"])
	first := res.list()[0]
	require.Equal(t, "completed", first["status"])
	require.Equal(t, map[string]any{"city": "DENVER", "state": "CO", "zip": "80202", "country": "US"}, first["origin"])
	require.Equal(t, "RENO", first["destination"].(map[string]any)["city"])
	require.Equal(t, map[string]any{"value": 3.5, "unit": "lb"}, first["weight"])
	require.Equal(t, "4", first["zone"])
	require.Equal(t, "03", first["quotedService"])
	require.Equal(t, "UPS Ground", first["quotedServiceName"])
	require.EqualValues(t, 10, first["quotedPrice"])
	require.Equal(t, "USD", first["currency"])
	require.EqualValues(t, 2, first["transitDays"])
	require.EqualValues(t, 2.5, first["savings"])
	require.Equal(t, "ground", first["serviceLevel"])
	require.Nil(t, first["error"])

	res = e.do(owner.caller, "GET", base+"?limit=1000", nil)
	require.Len(t, res.list(), 60)
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"])

	for _, tc := range []struct {
		query string
		want  int
	}{
		{"status=completed", 3},
		{"status=failed", 1},
		{"status=pending", 56},
		{"zone=4", 2},
		{"serviceType=FEDEX_GROUND", 21}, // 20 uploaded (every third item) + 1 learnt by tracking
		{"serviceType=FEDEX_2_DAY", 1},
		{"search=it000005", 10}, // IT0000050-IT0000059
		{"search=IT0000060", 1},
		{"zone=4&status=completed&serviceType=FEDEX_GROUND", 1},
	} {
		res := e.do(owner.caller, "GET", base+"?limit=100&"+tc.query, nil)
		require.Equal(t, 200, res.Code, "%s %s", tc.query, res.Raw)
		require.EqualValues(t, tc.want, res.Body["pagination"].(map[string]any)["total"], tc.query)
	}
	requireError(t, e.do(owner.caller, "GET", base+"?status=done", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", base+"?limit=0", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", base+"?search="+strings.Repeat("x", 101), nil), 400, "validation_error")

	// Summary.
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id+"/summary", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	s := res.data()
	require.Equal(t, id, s["comparisonId"])
	require.Equal(t, "processing", s["status"])
	require.Equal(t, map[string]any{"items": 60.0, "pending": 56.0, "completed": 3.0, "failed": 1.0, "skipped": 0.0,
		"netCost": 25.0, "quotedCost": 48.5, "savings": 6.5, "savingsPercent": 26.0}, s["totals"])
	require.Equal(t, []any{
		map[string]any{"zone": "4", "items": 2.0, "netCost": 12.5, "quotedCost": 40.0, "savings": 2.5, "savingsPercent": 20.0},
		map[string]any{"zone": "7", "items": 1.0, "netCost": 12.5, "quotedCost": 8.5, "savings": 4.0, "savingsPercent": 32.0},
	}, s["byZone"])
	require.Equal(t, []any{
		map[string]any{"serviceType": "FEDEX_GROUND", "serviceLevel": "ground", "quotedService": "03", "items": 2.0,
			"netCost": 25.0, "quotedCost": 18.5, "savings": 6.5, "savingsPercent": 26.0},
		map[string]any{"serviceType": "FEDEX_2_DAY", "serviceLevel": "2_day", "quotedService": "02", "items": 1.0,
			"netCost": 0.0, "quotedCost": 30.0, "savings": 0.0, "savingsPercent": nil},
	}, s["byService"])

	// A fresh comparison: empty groups, not null.
	id2 := rcCreate(t, e, owner.caller, acct, rcItems(1, "E"))["id"].(string)
	s = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id2+"/summary", nil).data()
	require.Equal(t, []any{}, s["byZone"])
	require.Equal(t, []any{}, s["byService"])
	require.Nil(t, s["totals"].(map[string]any)["savingsPercent"])
}
