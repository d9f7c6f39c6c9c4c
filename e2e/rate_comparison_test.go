package e2e

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// rcStack is the running service with an organization and an API key with
// the rate-compare scopes; it serves tests and benchmarks alike.
type rcStack struct {
	*stack
	tb    testing.TB
	key   string // API key with the rate-compare scopes
	orgID string
}

func rcStart(tb testing.TB) *rcStack {
	tb.Helper()
	s := &rcStack{stack: start(tb), tb: tb}

	// A user with an organization and an API key with the rate-compare scopes.
	mail := "rc-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "RC Shop",
	}))
	s.orgID = signup["organization"].(map[string]any)["id"].(string)
	key := data(s.mustCall(201, signup["access_token"].(string), s.orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "rc", "scopes": []string{"rate-compare:read", "rate-compare:write"},
	}))
	s.key = key["key"].(string)
	return s
}

func (s *rcStack) mustCall(status int, token, org, method, path string, body any) map[string]any {
	s.tb.Helper()
	code, out := s.call(token, org, method, path, body)
	require.Equal(s.tb, status, code, "%s %s: %v", method, path, out)
	return out
}

// do calls the API with the stack's API key.
func (s *rcStack) do(status int, method, path string, body any) map[string]any {
	s.tb.Helper()
	return s.mustCall(status, s.key, "", method, path, body)
}

// account inserts an active carrier account with sealed sandbox credentials.
func (s *rcStack) account(carrier string) string {
	s.tb.Helper()
	creds := map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}
	if carrier == carriers.CarrierB {
		creds = map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": "A1B2C3"}
	}
	id := uuid.NewString()
	sealed, err := s.box.SealJSON(creds, store.CarrierAccountCredentialsAD(uuid.MustParse(s.orgID), uuid.MustParse(id)))
	require.NoError(s.tb, err)
	_, err = s.store.Pool.Exec(context.Background(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials,
		supports_rating, supports_labels, supports_pickup, status)
		VALUES ($1, $2, $3, $4, $5, true, true, $6, 'active')`, id, s.orgID, carrier+" e2e", carrier, sealed, carrier == carriers.CarrierA)
	require.NoError(s.tb, err)
	return id
}

// rcUpload is n invoice lines of carrier_a numbers: every 100th unknown to
// the carrier (ending 0000), a net cost on four lines in five, the service
// on every third line.
func rcUpload(n int) []map[string]any {
	items := make([]map[string]any, n)
	for i := range items {
		number := fmt.Sprintf("7940%08d", i+1)
		if (i+1)%100 == 0 {
			number = fmt.Sprintf("79%06d0000", i+1)
		}
		it := map[string]any{"trackingNumber": number}
		if i%5 != 4 {
			it["netCost"] = 45 + float64(i%61)
		}
		if i%3 == 0 {
			it["serviceType"] = "FEDEX_GROUND"
		}
		items[i] = it
	}
	return items
}

// create uploads a comparison rated with accountID.
func (s *rcStack) create(accountID string, items []map[string]any) string {
	s.tb.Helper()
	d := data(s.do(201, "POST", "/api/v1/rate-comparisons", map[string]any{
		"name": "E2E", "carrierAccountId": accountID, "sourceCarrier": carriers.CarrierA, "items": items,
	}))
	require.Equal(s.tb, "draft", d["status"])
	return d["id"].(string)
}

// waitDone polls the comparison until it leaves processing, and returns
// it with every distinct (finished items) count seen on the way.
func (s *rcStack) waitDone(id string, timeout time.Duration) (map[string]any, []int) {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	var seen []int
	for {
		d := data(s.do(200, "GET", "/api/v1/rate-comparisons/"+id, nil))
		done := int(d["completedItems"].(float64) + d["failedItems"].(float64) + d["skippedItems"].(float64))
		require.EqualValues(s.tb, d["totalItems"], float64(done)+d["pendingItems"].(float64), "counters add up: %v", d)
		if len(seen) == 0 || seen[len(seen)-1] != done {
			seen = append(seen, done)
		}
		if d["status"] != "processing" {
			return d, seen
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("rate comparison %s still processing after %s: %v", id, timeout, d)
		}
		time.Sleep(15 * time.Millisecond)
	}
}

// TestRateComparisonEndToEnd runs a 500-item comparison through the
// in-process Temporal server: carrier_a numbers tracked on the sandbox and
// rated with a carrier_b account.
func TestRateComparisonEndToEnd(t *testing.T) {
	began := time.Now()
	s := rcStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.account(carriers.CarrierA) // tracks the source numbers
	target := s.account(carriers.CarrierB)
	upload := rcUpload(500)
	id := s.create(target, upload)

	processedAt := time.Now()
	d := data(s.do(202, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil))
	require.Equal(t, "processing", d["status"])
	wfID := workflows.RateComparisonWorkflowID(id)
	require.Equal(t, wfID, d["workflowId"])
	s.do(409, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil)

	// Poll while it runs: the counters only grow, and items are seen
	// moving through tracking and rating.
	var (
		final     map[string]any
		seen      []int // distinct finished counts
		inFlight  = map[string]float64{}
		lastState string
	)
	for deadline := time.Now().Add(30 * time.Second); ; {
		final = data(s.do(200, "GET", "/api/v1/rate-comparisons/"+id, nil))
		done := int(final["completedItems"].(float64) + final["failedItems"].(float64))
		require.EqualValues(t, 500, float64(done)+final["pendingItems"].(float64)+final["skippedItems"].(float64))
		if len(seen) == 0 || seen[len(seen)-1] != done {
			require.True(t, len(seen) == 0 || done > seen[len(seen)-1], "the counters only grow: %v then %d", seen, done)
			seen = append(seen, done)
		}
		if lastState = final["status"].(string); lastState != "processing" {
			break
		}
		for _, st := range []string{"tracking", "rating"} {
			page := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?limit=1&status="+st, nil)
			inFlight[st] = max(inFlight[st], page["pagination"].(map[string]any)["total"].(float64))
		}
		require.False(t, time.Now().After(deadline), "still processing after 30s: %v", final)
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(processedAt)
	t.Logf("500 items processed in %s (%.0f items/s); finished counts seen while polling: %v; most items seen tracking %v, rating %v",
		elapsed.Round(time.Millisecond), 500/elapsed.Seconds(), seen, inFlight["tracking"], inFlight["rating"])
	require.Less(t, elapsed, 10*time.Second)
	require.Greater(t, inFlight["tracking"]+inFlight["rating"], 0.0, "items are seen in flight")
	require.Equal(t, 0, seen[0], "the first poll saw nothing finished")

	// Completed: 495 rated, the 5 unknown numbers failed.
	require.Equal(t, "completed", final["status"])
	require.EqualValues(t, 495, final["completedItems"])
	require.EqualValues(t, 5, final["failedItems"])
	require.EqualValues(t, 0, final["pendingItems"])
	require.EqualValues(t, 0, final["skippedItems"])
	require.EqualValues(t, 100, final["progress"])
	require.Nil(t, final["error"])
	require.NotNil(t, final["completedAt"])
	var wantNet float64
	for i, it := range upload {
		if c, ok := it["netCost"].(float64); ok && (i+1)%100 != 0 {
			wantNet += c
		}
	}
	require.InDelta(t, wantNet, final["totalNetCost"], 0.001)
	require.Greater(t, final["totalQuotedCost"], 0.0)
	pct := final["totalSavings"].(float64) / final["totalNetCost"].(float64) * 100
	require.InDelta(t, math.Round(pct*100)/100, final["savingsPercent"], 0.001)

	// The items: unknown numbers failed with the reason; the others carry
	// route, weight, zone, quote and savings.
	failed := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?status=failed", nil)
	require.EqualValues(t, 5, failed["pagination"].(map[string]any)["total"])
	for _, it := range failed["data"].([]any) {
		m := it.(map[string]any)
		require.Regexp(t, "0000$", m["trackingNumber"])
		require.Equal(t, "tracking number unknown to carrier_a", m["error"])
	}
	page := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?status=completed&limit=100", nil)
	require.EqualValues(t, 495, page["pagination"].(map[string]any)["total"])
	require.EqualValues(t, 100, page["pagination"].(map[string]any)["limit"])
	var sumSavings float64
	for _, it := range page["data"].([]any) {
		m := it.(map[string]any)
		require.NotNil(t, m["origin"])
		require.NotEmpty(t, m["destination"].(map[string]any)["zip"])
		require.Greater(t, m["weight"].(map[string]any)["value"], 0.0)
		require.NotEmpty(t, m["zone"])
		require.NotEmpty(t, m["quotedService"])
		require.Greater(t, m["quotedPrice"], 0.0)
		if m["netCost"] == nil {
			require.Nil(t, m["savings"])
		} else {
			require.InDelta(t, m["netCost"].(float64)-m["quotedPrice"].(float64), m["savings"], 0.001)
			sumSavings += m["savings"].(float64)
		}
	}
	first := page["data"].([]any)[0].(map[string]any)
	zone := first["zone"].(string)
	byZone := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?zone="+zone+"&limit=1", nil)
	search := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?search="+first["trackingNumber"].(string), nil)
	require.EqualValues(t, 1, search["pagination"].(map[string]any)["total"])

	// Summary: by zone and by service, adding up to the totals.
	sum := data(s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/summary", nil))
	totals := sum["totals"].(map[string]any)
	require.Equal(t, "completed", sum["status"])
	require.EqualValues(t, 500, totals["items"])
	require.EqualValues(t, 495, totals["completed"])
	require.EqualValues(t, 5, totals["failed"])
	require.InDelta(t, final["totalSavings"], totals["savings"], 0.001)
	require.InDelta(t, final["totalNetCost"], totals["netCost"], 0.001)
	require.InDelta(t, final["totalQuotedCost"], totals["quotedCost"], 0.001)
	require.Equal(t, final["savingsPercent"], totals["savingsPercent"])
	for _, group := range []string{"byZone", "byService"} {
		var items, savings, quoted float64
		rows := sum[group].([]any)
		require.NotEmpty(t, rows, group)
		for _, g := range rows {
			m := g.(map[string]any)
			items += m["items"].(float64)
			savings += m["savings"].(float64)
			quoted += m["quotedCost"].(float64)
			if group == "byZone" && m["zone"] == zone {
				require.Equal(t, byZone["pagination"].(map[string]any)["total"], m["items"])
			}
		}
		require.EqualValues(t, 495, items, group)
		require.InDelta(t, totals["savings"], savings, 0.02, group)
		require.InDelta(t, totals["quotedCost"], quoted, 0.02, group)
	}
	require.Greater(t, len(sum["byZone"].([]any)), 1, "several zones")
	require.Greater(t, len(sum["byService"].([]any)), 1, "several services")
	t.Logf("savings %.2f (%.2f%%) over %d zones and %d services", totals["savings"], totals["savingsPercent"],
		len(sum["byZone"].([]any)), len(sum["byService"].([]any)))

	// The run: completed, with the OrganizationId search attribute and memo.
	var res workflows.RateComparisonResult
	run := s.temporal.GetWorkflow(ctx, wfID, "")
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, "completed", res.Status)
	require.EqualValues(t, 495, res.CompletedItems)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo()
	require.Equal(t, workflows.RateComparisonWorkflowType, info.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	require.Equal(t, bulkTaskQueue, info.GetTaskQueue(), "bulk work runs on the bulk task queue")
	var gotOrg, gotMemo string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(info.GetSearchAttributes().GetIndexedFields()["OrganizationId"], &gotOrg))
	require.Equal(t, s.orgID, gotOrg)
	require.NoError(t, dataConverter.FromPayload(info.GetMemo().GetFields()["comparisonId"], &gotMemo))
	require.Equal(t, id, gotMemo)
	writeHistory(t, ctx, s.temporal, wfID, run.GetRunID(), "rate_comparison_history.json")
	s.do(409, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil)
	t.Logf("end to end in %s", time.Since(began).Round(time.Millisecond))
}

// TestRateComparisonCancelAndDeleteEndToEnd cancels and deletes comparisons
// while their workflows run.
func TestRateComparisonCancelAndDeleteEndToEnd(t *testing.T) {
	s := rcStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.account(carriers.CarrierA)
	target := s.account(carriers.CarrierB)

	// Cancel right after process: closed at once, the rest skipped, the run ends.
	id := s.create(target, rcUpload(3000))
	s.do(202, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil)
	d := data(s.do(200, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil))
	require.Equal(t, "cancelled", d["status"])
	require.EqualValues(t, 0, d["pendingItems"])
	require.Greater(t, d["skippedItems"], 0.0)
	s.do(409, "POST", "/api/v1/rate-comparisons/"+id+"/cancel", nil)
	wfID := workflows.RateComparisonWorkflowID(id)
	_ = s.temporal.GetWorkflow(ctx, wfID, "").Get(ctx, nil) // cancelled (or ended on its own)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	// Nothing changed after the cancellation: the counters match the items.
	after := data(s.do(200, "GET", "/api/v1/rate-comparisons/"+id, nil))
	require.Equal(t, d["completedItems"], after["completedItems"])
	require.Equal(t, d["skippedItems"], after["skippedItems"])
	for _, st := range []string{"completed", "failed", "skipped"} {
		items := s.do(200, "GET", "/api/v1/rate-comparisons/"+id+"/items?limit=1&status="+st, nil)
		require.Equal(t, after[st+"Items"], items["pagination"].(map[string]any)["total"], st)
	}
	t.Logf("cancelled with %v completed, %v skipped", after["completedItems"], after["skippedItems"])

	// Delete while processing: the workflow is cancelled and the data gone.
	id2 := s.create(target, rcUpload(3000))
	s.do(202, "POST", "/api/v1/rate-comparisons/"+id2+"/process", nil)
	s.do(200, "DELETE", "/api/v1/rate-comparisons/"+id2, nil)
	s.do(404, "GET", "/api/v1/rate-comparisons/"+id2, nil)
	_ = s.temporal.GetWorkflow(ctx, workflows.RateComparisonWorkflowID(id2), "").Get(ctx, nil)
	var n int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM rate_comparison_items WHERE comparison_id = $1`, id2).Scan(&n))
	require.Zero(t, n)
}
