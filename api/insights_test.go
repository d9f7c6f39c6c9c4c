package api

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/insights/insightstest"
	"github.com/fos-dev/fos/store"
)

var (
	insKeys = shpSorted("id", "category", "severity", "status", "title", "summary", "metrics", "actions", "confidence", "tags",
		"detectedAt", "source", "expiresAt", "operationId")
	insPerfKeys = shpSorted("carrierId", "carrierName", "onTimeRate", "averageTransitDays", "costPerPackage", "totalShipments",
		"deliveredCount", "onTimeTrend", "costTrend", "dateRange")
)

func insKeysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// insOrg is an organization with an insights key and a carrier account
// in error (an alert fires).
func insOrg(t *testing.T, e *testEnv) (account, caller, *insightstest.Seed) {
	owner := e.signup()
	key := e.apiKey(owner, "insights:read", "insights:write")
	seed := insightstest.For(t, e.deps.Store, uuid.MustParse(owner.org))
	seed.CarrierAccount("carrier_a", "error")
	return owner, key, seed
}

func TestInsightsGenerateListAcknowledge(t *testing.T) {
	e := newEnv(t)
	_, key, seed := insOrg(t, e)

	res := e.do(key, "POST", "/api/v1/insights/generate", map[string]any{})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	list := d["insights"].([]any)
	require.Len(t, list, 1)
	in := list[0].(map[string]any)
	require.Equal(t, insKeys, insKeysOf(in))
	require.Equal(t, "alert", in["category"])
	require.Equal(t, "high", in["severity"])
	require.Equal(t, "new", in["status"])
	require.Equal(t, "rules", in["source"])
	require.Equal(t, 1.0, in["confidence"])
	require.Nil(t, in["operationId"])
	gen, _ := time.Parse(time.RFC3339Nano, d["generatedAt"].(string))
	exp, _ := time.Parse(time.RFC3339Nano, d["expiresAt"].(string))
	require.Equal(t, 24*time.Hour, exp.Sub(gen))
	action := in["actions"].([]any)[0].(map[string]any)
	require.Equal(t, shpSorted("id", "label", "type", "command"), insKeysOf(action))
	id := in["id"].(string)

	// The body is optional.
	res = e.do(key, "POST", "/api/v1/insights/generate", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, id, res.data()["insights"].([]any)[0].(map[string]any)["id"])

	res = e.do(key, "GET", "/api/v1/insights?category=alert&status=new", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 1)
	require.Equal(t, 1.0, res.Body["pagination"].(map[string]any)["total"])
	res = e.do(key, "GET", "/api/v1/insights?category=trend", nil)
	require.Empty(t, res.list())

	res = e.do(key, "POST", "/api/v1/insights/"+id+"/acknowledge", map[string]any{"action": "resolve", "note": "fixed the password"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	ack := res.data()
	require.Equal(t, id, ack["insightId"])
	require.Equal(t, "resolve", ack["action"])
	require.Equal(t, "resolved", ack["status"])
	require.Equal(t, "fixed the password", ack["note"])
	require.NotEmpty(t, ack["acknowledgedAt"])
	res = e.do(key, "GET", "/api/v1/insights?status=resolved", nil)
	require.Len(t, res.list(), 1)
	// Default action, empty body: acknowledge (a resolved insight refuses).
	res = e.do(key, "POST", "/api/v1/insights/"+id+"/acknowledge", nil)
	requireError(t, res, 409, "conflict")

	// Paging.
	seed.CarrierAccount("carrier_b", "error")
	e.do(key, "POST", "/api/v1/insights/generate", map[string]any{"scope": "organization", "types": []string{"alert"}})
	res = e.do(key, "GET", "/api/v1/insights?limit=1&page=2", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 1)
	require.Equal(t, map[string]any{"page": 2.0, "limit": 1.0, "total": 2.0, "totalPages": 2.0, "hasMore": false}, res.Body["pagination"])
}

func TestInsightsRefuseBadInput(t *testing.T) {
	e := newEnv(t)
	_, key, _ := insOrg(t, e)
	ids := make([]string, 1001)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	for _, c := range []struct {
		path  string
		body  any
		field string
	}{
		{"/api/v1/insights/generate", map[string]any{"scope": "galaxy"}, "scope"},
		{"/api/v1/insights/generate", map[string]any{"scope": 5}, "scope"},
		{"/api/v1/insights/generate", map[string]any{"types": []string{"anomaly", "astrology"}}, "types[1]"},
		{"/api/v1/insights/generate", map[string]any{"scope": "orders"}, "orderIds"},
		{"/api/v1/insights/generate", map[string]any{"scope": "orders", "orderIds": ids}, "orderIds"},
		{"/api/v1/insights/generate", map[string]any{"scope": "orders", "orderIds": []string{"nope"}}, "orderIds[0]"},
		{"/api/v1/insights/generate", map[string]any{"operationId": "nope"}, "operationId"},
		{"/api/v1/insights/ask", map[string]any{}, "query"},
		{"/api/v1/insights/ask", map[string]any{"query": ""}, "query"},
		{"/api/v1/insights/ask", map[string]any{"query": strings.Repeat("é", 1001)}, "query"},
		{"/api/v1/insights/ask", map[string]any{"query": "how many orders", "context": map[string]any{"orderIds": ids}}, "context.orderIds"},
		{"/api/v1/insights/ask", map[string]any{"query": "how many orders", "context": map[string]any{"dateRange": map[string]any{"start": "yesterday"}}}, ""},
	} {
		res := e.do(key, "POST", c.path, c.body)
		requireError(t, res, 400, "validation_error")
		if c.field != "" {
			require.Equal(t, c.field, res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"], "%s", res.Raw)
		}
	}
	requireError(t, e.do(key, "POST", "/api/v1/insights/generate", "{not json"), 400, "invalid_json")
	requireError(t, e.do(key, "POST", "/api/v1/insights/ask", "[]"), 400, "invalid_json")
	// The longest question is answered.
	res := e.do(key, "POST", "/api/v1/insights/ask", map[string]any{"query": strings.Repeat("é", 1000)})
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	e.do(key, "POST", "/api/v1/insights/generate", nil)
	res = e.do(key, "GET", "/api/v1/insights", nil)
	id := res.list()[0]["id"].(string)
	for _, body := range []map[string]any{{"action": "snooze"}, {"note": strings.Repeat("n", 501)}, {"note": 7}} {
		requireError(t, e.do(key, "POST", "/api/v1/insights/"+id+"/acknowledge", body), 400, "validation_error")
	}
	for _, q := range []string{"days=0", "days=366", "days=abc", "days=-3"} {
		requireError(t, e.do(key, "GET", "/api/v1/insights/carriers/performance?"+q, nil), 400, "validation_error")
	}
	for _, q := range []string{"status=open", "category=astrology", "page=0", "limit=x"} {
		requireError(t, e.do(key, "GET", "/api/v1/insights?"+q, nil), 400, "validation_error")
	}
	// A body over 10 MiB.
	requireError(t, e.do(key, "POST", "/api/v1/insights/ask", `{"query": "`+strings.Repeat("x", 11<<20)+`"}`), 413, "payload_too_large")
}

func TestInsightsAcrossOrganizations(t *testing.T) {
	e := newEnv(t)
	_, keyA, _ := insOrg(t, e)
	_, keyB, seedB := insOrg(t, e)
	res := e.do(keyB, "POST", "/api/v1/insights/generate", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	idB := res.data()["insights"].([]any)[0].(map[string]any)["id"].(string)

	// A never sees nor touches B's insight.
	res = e.do(keyA, "GET", "/api/v1/insights", nil)
	require.Empty(t, res.list())
	requireError(t, e.do(keyA, "POST", "/api/v1/insights/"+idB+"/acknowledge", nil), 404, "not_found")
	requireError(t, e.do(keyA, "POST", "/api/v1/insights/not-an-id/acknowledge", nil), 404, "not_found")
	requireError(t, e.do(keyA, "POST", "/api/v1/insights/"+uuid.NewString()+"/acknowledge", nil), 404, "not_found")
	// Operations: unknown (and B's, when the operations area is wired) are 404.
	requireError(t, e.do(keyA, "GET", "/api/v1/insights/operations/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(keyA, "GET", "/api/v1/insights/operations/nope", nil), 404, "not_found")
	requireError(t, e.do(keyA, "POST", "/api/v1/insights/generate", map[string]any{"operationId": uuid.NewString()}), 404, "not_found")
	// Orders of B named by A match nothing of A's: B's numbers never leak.
	orderB := seedB.Order("pending", time.Now().Add(-time.Hour), 10)
	res = e.do(keyA, "POST", "/api/v1/insights/ask", map[string]any{"query": "how many orders", "context": map[string]any{"orderIds": []string{orderB.String()}}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	resp := res.data()["response"].(map[string]any)
	require.True(t, strings.HasPrefix(resp["answer"].(string), "0 orders"), resp["answer"])
	require.Empty(t, resp["referencedData"].(map[string]any)["orders"])

	// Scopes: reading is not writing, and no scope is no access.
	owner := e.signup()
	read := e.apiKey(owner, "insights:read")
	requireError(t, e.do(read, "POST", "/api/v1/insights/generate", nil), 403, "insufficient_scope")
	requireError(t, e.do(read, "POST", "/api/v1/insights/"+uuid.NewString()+"/acknowledge", nil), 403, "insufficient_scope")
	none := e.apiKey(owner, "orders:read")
	for _, p := range []string{"/api/v1/insights", "/api/v1/insights/carriers/performance", "/api/v1/insights/operations/" + uuid.NewString()} {
		requireError(t, e.do(none, "GET", p, nil), 403, "insufficient_scope")
	}
	requireError(t, e.do(none, "POST", "/api/v1/insights/ask", map[string]any{"query": "how many orders"}), 403, "insufficient_scope")
	// A user token works without scopes.
	res = e.do(owner.caller, "GET", "/api/v1/insights", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
}

func TestInsightsFlood(t *testing.T) {
	e := newEnv(t)
	owner, key, _ := insOrg(t, e)
	// Generating again and again refreshes the same rows.
	for i := 0; i < 30; i++ {
		res := e.do(key, "POST", "/api/v1/insights/generate", nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
	}
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM insights WHERE organization_id = $1`, owner.org).Scan(&n))
	require.Equal(t, 1, n)

	// An API key's budget bounds a flood of questions.
	limited := newEnv(t, func(d *Deps) { d.Limits = config.Limits{APIKey: config.Rate{Events: 5, Per: time.Hour}} })
	o := limited.signup()
	k := limited.apiKey(o, "insights:read")
	for i := 0; i < 5; i++ {
		res := limited.do(k, "POST", "/api/v1/insights/ask", map[string]any{"query": fmt.Sprintf("how many orders last %d days", i+1)})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
	}
	requireError(t, limited.do(k, "POST", "/api/v1/insights/ask", map[string]any{"query": "how many orders"}), 429, "rate_limited")
}

func TestInsightsAskAndPerformance(t *testing.T) {
	e := newEnv(t)
	_, key, seed := insOrg(t, e)
	now := time.Now().UTC()
	o := seed.Order("shipped", now.Add(-2*24*time.Hour), 10)
	created := now.Add(-3 * 24 * time.Hour)
	seed.Shipment(insightstest.Shipment{Order: &o, Carrier: "carrier_b", Status: "delivered", Rate: insightstest.Money(7.5), CreatedAt: created,
		DeliveredAt: insightstest.At(created.Add(48 * time.Hour)), Estimated: insightstest.At(created.Add(48 * time.Hour))})
	seed.Shipment(insightstest.Shipment{Carrier: "carrier_b", Status: "in_transit", Rate: insightstest.Money(9.5), CreatedAt: now.Add(-time.Hour)})

	res := e.do(key, "POST", "/api/v1/insights/ask", map[string]any{"query": "How many orders shipped in the last 7 days?", "context": map[string]any{"includeOrders": true}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.NotEmpty(t, d["generatedAt"])
	r := d["response"].(map[string]any)
	require.Equal(t, shpSorted("answer", "insights", "suggestedQueries", "referencedData", "processingTime", "tokensUsed"), insKeysOf(r))
	require.True(t, strings.HasPrefix(r["answer"].(string), "1 order was shipped"), r["answer"])
	require.Equal(t, 0.0, r["tokensUsed"])
	require.Greater(t, r["processingTime"].(float64), 0.0)
	require.Equal(t, []any{o.String()}, r["referencedData"].(map[string]any)["orders"])
	tr := r["referencedData"].(map[string]any)["timeRange"].(map[string]any)
	require.NotEmpty(t, tr["start"])
	require.NotEmpty(t, tr["end"])
	require.Len(t, r["suggestedQueries"], 3)

	res = e.do(key, "POST", "/api/v1/insights/ask", map[string]any{"query": "tell me a joke"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	r = res.data()["response"].(map[string]any)
	require.Contains(t, r["answer"], "cannot answer")

	res = e.do(key, "GET", "/api/v1/insights/carriers/performance", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.list()
	require.Len(t, list, 1)
	p := list[0]
	require.Equal(t, insPerfKeys, insKeysOf(p))
	require.Equal(t, "carrier_b", p["carrierId"])
	require.Equal(t, 2.0, p["totalShipments"])
	require.Equal(t, 1.0, p["deliveredCount"])
	require.Equal(t, 1.0, p["onTimeRate"])
	require.Equal(t, 2.0, p["averageTransitDays"])
	require.Equal(t, 8.5, p["costPerPackage"])
	require.Equal(t, shpSorted("start", "end"), insKeysOf(p["dateRange"].(map[string]any)))
	res = e.do(key, "GET", "/api/v1/insights/carriers/performance?days=1", nil)
	require.Equal(t, 1.0, res.list()[0]["totalShipments"])
}

// insOperations is the operations port of the insights, in memory.
type insOperations map[uuid.UUID]insOperation

type insOperation struct {
	org   uuid.UUID
	items []store.OperationItemRef
}

func (f insOperations) Operation(_ context.Context, orgID, id uuid.UUID) (insights.OperationRef, []store.OperationItemRef, error) {
	op, ok := f[id]
	if !ok || op.org != orgID {
		return insights.OperationRef{}, nil, domain.NotFound("operation")
	}
	return insights.OperationRef{ID: id, Name: "Peak"}, op.items, nil
}

func TestInsightsOperation(t *testing.T) {
	ops := insOperations{}
	e := newEnv(t, func(d *Deps) { d.InsightsOperations = ops })
	owner, key, seed := insOrg(t, e)
	_, keyB, _ := insOrg(t, e)
	acct := seed.CarrierAccount("carrier_a", "active")
	chosen := seed.Snapshot(insightstest.Snapshot{Account: acct, Carrier: "carrier_a", Service: "ground", Price: 12, TransitDays: insightstest.Days(2), Request: "r"})
	seed.Snapshot(insightstest.Snapshot{Account: acct, Carrier: "carrier_b", Service: "ground", Price: 9, TransitDays: insightstest.Days(2), Request: "r"})
	opID := uuid.New()
	ops[opID] = insOperation{org: uuid.MustParse(owner.org), items: []store.OperationItemRef{
		{OrderID: seed.Order("pending", time.Now(), 1), RateSnapshotID: &chosen},
		{OrderID: seed.Order("pending", time.Now(), 1)},
	}}

	res := e.do(key, "POST", "/api/v1/insights/generate", map[string]any{"operationId": opID.String(), "types": []string{"optimization"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.data()["insights"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, opID.String(), list[0].(map[string]any)["operationId"])

	res = e.do(key, "GET", "/api/v1/insights/operations/"+opID.String(), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, shpSorted("operationId", "operationName", "summary", "costBreakdown", "riskAnalysis", "optimizations", "anomalies", "insights"), insKeysOf(d))
	require.Equal(t, "Peak", d["operationName"])
	require.Equal(t, map[string]any{"totalOrders": 2.0, "estimatedCost": 12.0, "estimatedSavings": 3.0, "averageTransitDays": 2.0, "riskScore": 0.5}, d["summary"])
	require.Equal(t, map[string]any{
		"byCarrier": []any{map[string]any{"carrier": "carrier_a", "amount": 12.0, "percentage": 100.0}},
		"byService": []any{map[string]any{"service": "ground", "amount": 12.0, "percentage": 100.0}},
	}, d["costBreakdown"])
	require.Equal(t, map[string]any{"highRiskOrders": 1.0, "delayRisk": nil, "weatherImpact": nil, "carrierCapacityIssues": []any{}}, d["riskAnalysis"])
	require.Len(t, d["optimizations"], 1)
	require.Equal(t, []any{}, d["anomalies"])
	require.Equal(t, []any{}, d["insights"])

	// Another organization's operation is not found, in every endpoint.
	requireError(t, e.do(keyB, "GET", "/api/v1/insights/operations/"+opID.String(), nil), 404, "not_found")
	requireError(t, e.do(keyB, "POST", "/api/v1/insights/generate", map[string]any{"operationId": opID.String()}), 404, "not_found")
	requireError(t, e.do(keyB, "POST", "/api/v1/insights/ask", map[string]any{"query": "how many orders", "context": map[string]any{"operationId": opID.String()}}), 404, "not_found")
	// With its operation as context, a question counts its orders.
	res = e.do(key, "POST", "/api/v1/insights/ask", map[string]any{"query": "how many orders are pending", "context": map[string]any{"operationId": opID.String()}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.True(t, strings.HasPrefix(res.data()["response"].(map[string]any)["answer"].(string), "2 orders pending"), "%s", res.Raw)
}
