package insights_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/insights/insightstest"
	"github.com/fos-dev/fos/store"
)

// fakeOperations is the operations area's port, holding operations in
// memory.
type fakeOperations map[uuid.UUID]fakeOperation

type fakeOperation struct {
	org   uuid.UUID
	name  string
	items []store.OperationItemRef
}

func (f fakeOperations) Operation(_ context.Context, orgID, id uuid.UUID) (insights.OperationRef, []store.OperationItemRef, error) {
	op, ok := f[id]
	if !ok || op.org != orgID {
		return insights.OperationRef{}, nil, domain.NotFound("operation")
	}
	return insights.OperationRef{ID: id, Name: op.name}, op.items, nil
}

// operationFixture: four items of 4 orders.
//   - item 1: carrier_a ground 20.00 (3 days) for request R1, where carrier_b
//     quoted 15.00 in 3 days (saves 5.00) and carrier_c 10.00 in 5 days (slower);
//   - item 2: carrier_b express 30.00 (2 days), its account inactive;
//   - item 3: nothing assigned (high risk);
//   - item 4: carrier_a ground 10.00 (1 day), its quote expired.
func operationFixture(e *env, ops fakeOperations) uuid.UUID {
	a := e.seed.CarrierAccount("carrier_a", "active")
	b := e.seed.CarrierAccount("carrier_b", "inactive")
	c := e.seed.CarrierAccount("carrier_c", "active")
	s1 := e.seed.Snapshot(insightstest.Snapshot{Account: a, Carrier: "carrier_a", Service: "ground", Price: 20, TransitDays: insightstest.Days(3), Request: "R1"})
	e.seed.Snapshot(insightstest.Snapshot{Account: b, Carrier: "carrier_b", Service: "ground", Price: 15, TransitDays: insightstest.Days(3), Request: "R1"})
	e.seed.Snapshot(insightstest.Snapshot{Account: c, Carrier: "carrier_c", Service: "ground", Price: 10, TransitDays: insightstest.Days(5), Request: "R1"})
	s2 := e.seed.Snapshot(insightstest.Snapshot{Account: b, Carrier: "carrier_b", Service: "express", Price: 30, TransitDays: insightstest.Days(2), Request: "R2"})
	s4 := e.seed.Snapshot(insightstest.Snapshot{Account: a, Carrier: "carrier_a", Service: "ground", Price: 10, TransitDays: insightstest.Days(1), Request: "R3",
		ExpiresAt: now.Add(-time.Hour)})
	items := []store.OperationItemRef{
		{OrderID: e.seed.Order("pending", ago(day), 50), RateSnapshotID: &s1},
		{OrderID: e.seed.Order("pending", ago(day), 50), RateSnapshotID: &s2},
		{OrderID: e.seed.Order("pending", ago(day), 50)},
		{OrderID: e.seed.Order("pending", ago(day), 50), RateSnapshotID: &s4},
	}
	id := uuid.New()
	ops[id] = fakeOperation{e.seed.Org, "Black Friday", items}
	return id
}

func TestOperationInsights(t *testing.T) {
	ops := fakeOperations{}
	e := newEnv(t, ops)
	id := operationFixture(e, ops)
	ctx := context.Background()
	o, err := e.svc.OperationInsights(ctx, e.actor, id)
	require.NoError(t, err)
	require.Equal(t, "Black Friday", o.OperationName)
	require.Equal(t, 4, o.Summary.TotalOrders)
	require.Equal(t, 60.0, o.Summary.EstimatedCost)
	require.Equal(t, 5.0, o.Summary.EstimatedSavings)
	require.Equal(t, 2.0, *o.Summary.AverageTransitDays)
	// Items 2 (inactive account), 3 (nothing assigned), 4 (expired).
	require.Equal(t, 3, o.RiskAnalysis.HighRiskOrders)
	require.Equal(t, 0.75, o.Summary.RiskScore)
	require.Nil(t, o.RiskAnalysis.WeatherImpact)
	require.Nil(t, o.RiskAnalysis.DelayRisk) // no delivery history
	require.Equal(t, []insights.CapacityIssue{{Carrier: "carrier_b", Items: 1, Reason: "the carrier account is not active or was deleted"}}, o.RiskAnalysis.CarrierCapacityIssues)
	require.Equal(t, []insights.CostShare{{Name: "carrier_a", Amount: 30, Percentage: 50}, {Name: "carrier_b", Amount: 30, Percentage: 50}}, o.CostBreakdown.ByCarrier)
	require.Equal(t, []insights.CostShare{{Name: "express", Amount: 30, Percentage: 50}, {Name: "ground", Amount: 30, Percentage: 50}}, o.CostBreakdown.ByService)
	require.Empty(t, o.Optimizations)

	// Generating for the operation stores its savings, which the
	// operation's insights then show.
	found := e.generate(insights.GenerateInput{OperationID: &id, Types: []string{"optimization"}})
	require.Len(t, found["operation_savings"], 1)
	require.EqualValues(t, 5, metric(t, found["operation_savings"][0], "Estimated savings"))
	o, err = e.svc.OperationInsights(ctx, e.actor, id)
	require.NoError(t, err)
	require.Len(t, o.Optimizations, 1)
	require.Equal(t, found["operation_savings"][0].ID, o.Optimizations[0].ID)

	// Another organization's operation is not found.
	other := e.actor
	other.OrganizationID = insightstest.New(t, e.st).Org
	_, err = e.svc.OperationInsights(ctx, other, id)
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
}

func TestCostSharesSumTo100(t *testing.T) {
	ops := fakeOperations{}
	e := newEnv(t, ops)
	acct := e.seed.CarrierAccount("carrier_a", "active")
	var items []store.OperationItemRef
	for i, c := range []string{"carrier_a", "carrier_b", "carrier_c"} {
		s := e.seed.Snapshot(insightstest.Snapshot{Account: acct, Carrier: c, Service: "ground", Price: 10, Request: fmt.Sprint(i)})
		items = append(items, store.OperationItemRef{OrderID: e.seed.Order("pending", ago(day), 1), RateSnapshotID: &s})
	}
	id := uuid.New()
	ops[id] = fakeOperation{e.seed.Org, "thirds", items}
	o, err := e.svc.OperationInsights(context.Background(), e.actor, id)
	require.NoError(t, err)
	var hundredths int
	for _, s := range o.CostBreakdown.ByCarrier {
		hundredths += int(s.Percentage*100 + 0.5)
	}
	require.Equal(t, 10000, hundredths)
	require.Equal(t, 33.34, o.CostBreakdown.ByCarrier[0].Percentage)
	// No item has a cheaper quote of its request: no savings to find.
	require.Zero(t, o.Summary.EstimatedSavings)
	require.Empty(t, e.generate(insights.GenerateInput{OperationID: &id})["operation_savings"])
}

func TestCarrierPerformance(t *testing.T) {
	e := newEnv(t, nil)
	ship := func(carrier string, created time.Time, cost float64, transit time.Duration, late bool) {
		sh := insightstest.Shipment{Carrier: carrier, Status: "in_transit", Rate: insightstest.Money(cost), CreatedAt: created}
		if transit > 0 {
			est := created.Add(transit)
			if late {
				est = created.Add(transit - day)
			}
			sh.Status, sh.DeliveredAt, sh.Estimated = "delivered", insightstest.At(created.Add(transit)), &est
		}
		e.seed.Shipment(sh)
	}
	// carrier_a: first half (30-15 days ago) two on time at 10.00; second
	// half one on time, one late, at 12.00, and one in transit at 12.00.
	ship("carrier_a", ago(25*day), 10, 2*day, false)
	ship("carrier_a", ago(20*day), 10, 4*day, false)
	ship("carrier_a", ago(10*day), 12, 2*day, false)
	ship("carrier_a", ago(8*day), 12, 3*day, true)
	ship("carrier_a", ago(2*day), 12, 0, false)
	// carrier_b: steady costs (+2 %).
	ship("carrier_b", ago(20*day), 10, 0, false)
	ship("carrier_b", ago(5*day), 10.2, 0, false)
	// Outside the window.
	ship("carrier_a", ago(40*day), 99, 2*day, true)

	list, err := e.svc.CarrierPerformance(context.Background(), e.actor, 0)
	require.NoError(t, err)
	require.Len(t, list, 2)
	a := list[0]
	require.Equal(t, "carrier_a", a.CarrierID)
	require.Equal(t, "Carrier A", a.CarrierName)
	require.Equal(t, 5, a.TotalShipments)
	require.Equal(t, 4, a.DeliveredCount)
	require.Equal(t, 0.75, *a.OnTimeRate)
	require.Equal(t, 2.75, *a.AverageTransitDays)
	require.Equal(t, 11.2, *a.CostPerPackage)
	require.Equal(t, "declining", a.OnTimeTrend)
	require.Equal(t, "up", a.CostTrend)
	require.Equal(t, now.AddDate(0, 0, -30), a.Start)
	require.Equal(t, now, a.End)
	b := list[1]
	require.Equal(t, 2, b.TotalShipments)
	require.Nil(t, b.OnTimeRate)
	require.Nil(t, b.AverageTransitDays)
	require.Equal(t, "stable", b.CostTrend)
	require.Equal(t, "stable", b.OnTimeTrend)
	// The counts match the table.
	require.Equal(t, a.TotalShipments, e.count(`SELECT count(*) FROM shipments WHERE organization_id = $1 AND carrier = 'carrier_a' AND created_at >= $2`, e.seed.Org, ago(30*day)))

	// 365 days takes the old shipment in.
	list, err = e.svc.CarrierPerformance(context.Background(), e.actor, 365)
	require.NoError(t, err)
	require.Equal(t, 6, list[0].TotalShipments)
	for _, d := range []int{-1, 366} {
		_, err = e.svc.CarrierPerformance(context.Background(), e.actor, d)
		require.Equal(t, domain.KindInvalid, domain.KindOf(err))
	}
}

// askFixture: orders and shipments around the Wednesday 2026-11-18.
// Last week is Monday 2026-11-09 to Monday 2026-11-16.
func askFixture(e *env) (shippedLastWeek []uuid.UUID) {
	lastWeek := time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		o := e.seed.Order("shipped", lastWeek, 40)
		shippedLastWeek = append(shippedLastWeek, o)
		// Two labels for the first order: it counts once.
		for j := 0; j <= boolInt(i == 0); j++ {
			e.seed.Shipment(insightstest.Shipment{Order: &o, Carrier: "carrier_a", Rate: insightstest.Money(12), CreatedAt: lastWeek, State: "CA", Country: "US"})
		}
	}
	thisWeek := time.Date(2026, 11, 17, 10, 0, 0, 0, time.UTC)
	o := e.seed.Order("shipped", thisWeek, 60)
	e.seed.Shipment(insightstest.Shipment{Order: &o, Carrier: "carrier_b", Rate: insightstest.Money(8), CreatedAt: thisWeek, State: "CA", Country: "US",
		Status: "delivered", DeliveredAt: insightstest.At(thisWeek.Add(36 * time.Hour))})
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_b", Rate: insightstest.Money(30), CreatedAt: thisWeek, State: "NY", Country: "US"})
	for i := 0; i < 2; i++ {
		e.seed.Order("pending", thisWeek, 20)
	}
	return shippedLastWeek
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *env) ask(q string) insights.Answer {
	e.t.Helper()
	a, err := e.svc.Ask(context.Background(), e.actor, insights.AskInput{Query: q})
	require.NoError(e.t, err)
	return a
}

func TestAskAnswersItsQuestionForms(t *testing.T) {
	e := newEnv(t, nil)
	shipped := askFixture(e)

	a := e.ask("How many orders shipped last week?")
	require.True(t, a.Understood)
	require.True(t, strings.HasPrefix(a.Answer, "3 orders were shipped"), a.Answer)
	require.ElementsMatch(t, shipped, a.Orders)
	require.Equal(t, time.Date(2026, 11, 9, 0, 0, 0, 0, time.UTC), a.Start)
	require.Equal(t, time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), a.End)
	require.Zero(t, a.TokensUsed)
	require.Greater(t, a.ProcessingTime, time.Duration(0))

	a = e.ask("which carrier was cheapest to CA this month")
	require.True(t, strings.HasPrefix(a.Answer, "Carrier B was the cheapest carrier to CA"), a.Answer)
	require.Contains(t, a.Answer, "8.00 per label on average over 1 shipments")
	require.Contains(t, a.Answer, "Carrier A 12.00")

	a = e.ask("Which carrier was the most expensive this month?")
	require.True(t, strings.HasPrefix(a.Answer, "Carrier B was the most expensive carrier"), a.Answer) // (8+30)/2 = 19 > 12

	a = e.ask("how many orders are pending")
	require.True(t, strings.HasPrefix(a.Answer, "2 orders pending created"), a.Answer)
	require.Len(t, a.Orders, 2)

	a = e.ask("What was the total shipping cost this month?")
	require.Contains(t, a.Answer, "was 86.00 over 6 shipments", a.Answer) // 4×12 + 8 + 30

	a = e.ask("average shipping cost by carrier this month")
	require.Contains(t, a.Answer, "was 14.33 over 6 shipments")
	require.Contains(t, a.Answer, "Carrier A: 12.00. Carrier B: 19.00.")

	a = e.ask("how many shipments are delivered this week")
	require.True(t, strings.HasPrefix(a.Answer, "1 shipment delivered created"), a.Answer)

	a = e.ask("top 1 carriers by shipments this month")
	require.Contains(t, a.Answer, "1. Carrier A (4 shipments)")

	a = e.ask("average transit time by carrier this week")
	require.Contains(t, a.Answer, "took 1.5 days from label to delivery on average (1 delivered)")

	a = e.ask("what is the average order value this week")
	require.Contains(t, a.Answer, "3 orders")
	require.Contains(t, a.Answer, "totalled 100.00 USD, 33.33 USD on average")

	a = e.ask("what's the weather in Paris")
	require.False(t, a.Understood)
	require.Contains(t, a.Answer, "cannot answer")
	require.Len(t, a.SuggestedQueries, 3)
	require.Empty(t, a.Orders)
}

func TestAskDefaultRangeAndContext(t *testing.T) {
	e := newEnv(t, nil)
	shipped := askFixture(e)
	// Without a named range: the last 30 days.
	a := e.ask("how many orders shipped")
	require.True(t, strings.HasPrefix(a.Answer, "4 orders were shipped"), a.Answer)
	require.Equal(t, now.Add(-insights.DefaultAskRange), a.Start)
	// Context orders narrow it.
	res, err := e.svc.Ask(context.Background(), e.actor, insights.AskInput{Query: "how many orders shipped", Context: insights.AskContext{OrderIDs: shipped[:1]}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Answer, "1 order was shipped"), res.Answer)
	// Context range when the question names none.
	start, end := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC)
	res, err = e.svc.Ask(context.Background(), e.actor, insights.AskInput{Query: "how many orders shipped", Context: insights.AskContext{Start: &start, End: &end}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Answer, "1 order was shipped"), res.Answer)

	for _, in := range []insights.AskInput{{Query: ""}, {Query: "   "}, {Query: strings.Repeat("x", 1001)},
		{Query: "ok", Context: insights.AskContext{Start: &end, End: &start}}} {
		_, err := e.svc.Ask(context.Background(), e.actor, in)
		require.Equal(t, domain.KindInvalid, domain.KindOf(err))
	}
}

type fakeWording struct{}

func (fakeWording) Word(_ context.Context, q string, a insights.Answer) (string, int, error) {
	return fmt.Sprintf("Worded: %v", a.Facts[0].Value), 42, nil
}

func TestAskWordingIsOptional(t *testing.T) {
	e := newEnv(t, nil)
	askFixture(e)
	svc := insights.New(insights.Deps{Store: e.st, Wording: fakeWording{}, Now: func() time.Time { return now }})
	a, err := svc.Ask(context.Background(), e.actor, insights.AskInput{Query: "how many orders shipped last week"})
	require.NoError(t, err)
	require.Equal(t, "Worded: 3", a.Answer)
	require.Equal(t, 42, a.TokensUsed)
	require.Equal(t, "model", a.Source)
}

// The adapter over the operations area's tables: without them (a build
// without that area) every operation is not found; with them, it reads the
// operation's items in order and keeps other organizations' out.
func TestStoreOperations(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := insights.StoreOperations{Store: e.st}
	var present bool
	require.NoError(t, e.st.Pool.QueryRow(ctx, `SELECT to_regclass('operation_items') IS NOT NULL`).Scan(&present))
	if !present {
		_, _, err := src.Operation(ctx, e.seed.Org, uuid.New())
		require.Equal(t, domain.KindNotFound, domain.KindOf(err))
		return
	}
	acct := e.seed.CarrierAccount("carrier_a", "active")
	snap := e.seed.Snapshot(insightstest.Snapshot{Account: acct, Carrier: "carrier_a", Service: "ground", Price: 10, Request: "x"})
	op := uuid.New()
	_, err := e.st.Pool.Exec(ctx, `INSERT INTO operations (id, organization_id, name) VALUES ($1, $2, 'Op')`, op, e.seed.Org)
	require.NoError(t, err)
	o1, o2 := e.seed.Order("pending", ago(day), 1), e.seed.Order("pending", ago(day), 1)
	_, err = e.st.Pool.Exec(ctx, `INSERT INTO operation_items (id, organization_id, operation_id, order_id, rate_snapshot_id, override_carrier_account_id)
	  VALUES ($1, $2, $3, $4, $5, NULL), ($6, $2, $3, $7, NULL, $8)`, uuid.New(), e.seed.Org, op, o1, snap, uuid.New(), o2, acct)
	require.NoError(t, err)
	ref, items, err := src.Operation(ctx, e.seed.Org, op)
	require.NoError(t, err)
	require.Equal(t, "Op", ref.Name)
	require.Equal(t, []store.OperationItemRef{{OrderID: o1, RateSnapshotID: &snap}, {OrderID: o2, OverrideCarrierAccountID: &acct}}, items)
	_, _, err = src.Operation(ctx, insightstest.New(t, e.st).Org, op)
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
}
