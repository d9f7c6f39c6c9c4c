package insights_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/insights/insightstest"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// now is the clock of every test: a Wednesday noon (UTC).
var now = time.Date(2026, 11, 18, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

const day = 24 * time.Hour

type env struct {
	t     *testing.T
	st    *store.Store
	seed  *insightstest.Seed
	svc   *insights.Service
	actor domain.Actor
	clock *time.Time
}

func newEnv(t *testing.T, ops insights.OperationSource) *env {
	st := storetest.New(t)
	seed := insightstest.New(t, st)
	clock := now
	e := &env{t: t, st: st, seed: seed, clock: &clock,
		actor: domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: seed.Org, Name: "Ada"}}
	e.svc = insights.New(insights.Deps{Store: st, Operations: ops, Now: func() time.Time { return *e.clock }})
	return e
}

// generate runs the detectors of the types over the organization and
// answers the insights per detector.
func (e *env) generate(in insights.GenerateInput) map[string][]insights.Insight {
	e.t.Helper()
	res, err := e.svc.Generate(context.Background(), e.actor, in)
	require.NoError(e.t, err)
	out := map[string][]insights.Insight{}
	for _, in := range res.Insights {
		out[in.Detector] = append(out[in.Detector], in)
	}
	return out
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.st.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func metric(t *testing.T, in insights.Insight, label string) any {
	t.Helper()
	for _, m := range in.Metrics {
		if m.Label == label {
			return m.Value
		}
	}
	t.Fatalf("insight %q has no metric %q: %+v", in.Title, label, in.Metrics)
	return nil
}

// costBaseline seeds 20 carrier_a ground labels of the last 90 days
// (older than a week) costing 9.00-10.90.
func costBaseline(e *env) {
	for i := 0; i < 20; i++ {
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(9 + float64(i%10)*0.2),
			CreatedAt: ago(time.Duration(10+i) * day), WeightLb: 2 + float64(i%5)*0.1})
	}
}

func TestCostAnomalyFires(t *testing.T) {
	e := newEnv(t, nil)
	costBaseline(e)
	// Recent: two usual labels, two far above.
	for _, v := range []float64{9.8, 10.2, 48, 95} {
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(v), CreatedAt: ago(2 * day)})
	}
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Len(t, found["cost_anomaly"], 1)
	in := found["cost_anomaly"][0]
	require.Equal(t, "anomaly", in.Category)
	require.EqualValues(t, 2, metric(t, in, "Shipments outside the usual range"))
	require.EqualValues(t, 2, metric(t, in, "Above the median"))
	require.EqualValues(t, 95.0, metric(t, in, "Highest"))
	// The median and the baseline size match PostgreSQL's own answer.
	var median float64
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY rate_amount::float8)
	   FROM shipments WHERE organization_id = $1 AND created_at >= $2`, e.seed.Org, ago(90*day)).Scan(&median))
	require.InDelta(t, median, metric(t, in, "Usual label cost (median)"), 0.005)
	require.EqualValues(t, e.count(`SELECT count(*) FROM shipments WHERE organization_id = $1`, e.seed.Org), metric(t, in, "Baseline shipments"))
	require.Greater(t, in.Confidence, 0.5)
	require.Equal(t, "GET /api/v1/shipments?carrier=carrier_a", in.Actions[0].Command)
	// Weights were usual: no weight anomaly.
	require.Empty(t, found["weight_anomaly"])
}

func TestCostAnomalyQuietOnUsualCosts(t *testing.T) {
	e := newEnv(t, nil)
	costBaseline(e)
	for _, v := range []float64{9.8, 10.2, 10.9, 9.0} {
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(v), CreatedAt: ago(2 * day)})
	}
	// A far cost of another service has no baseline of its own.
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Service: "overnight", Rate: insightstest.Money(95), CreatedAt: ago(2 * day)})
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Empty(t, found["cost_anomaly"])
}

func TestWeightAnomalyFires(t *testing.T) {
	e := newEnv(t, nil)
	costBaseline(e)
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(10), CreatedAt: ago(day), WeightLb: 70})
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Len(t, found["weight_anomaly"], 1)
	require.EqualValues(t, 1, metric(t, found["weight_anomaly"][0], "Shipments outside the usual range"))
	require.EqualValues(t, 70.0, metric(t, found["weight_anomaly"][0], "Highest lb"))
	require.Empty(t, found["cost_anomaly"])
}

// stuckBaseline: 10 orders that left pending after 2 hours.
func stuckBaseline(e *env) {
	for i := 0; i < 10; i++ {
		created := ago(time.Duration(20+i) * day)
		o := e.seed.Order("processing", created, 10)
		e.seed.StatusChange(o, "pending", "processing", created.Add(2*time.Hour))
	}
}

func TestStuckOrdersFire(t *testing.T) {
	e := newEnv(t, nil)
	stuckBaseline(e)
	// Created before the 90-day window: when its order entered pending is
	// unknown, so this change is not measured.
	old := e.seed.Order("processing", ago(200*day), 10)
	e.seed.StatusChange(old, "pending", "processing", ago(10*day))
	for i := 0; i < 3; i++ {
		e.seed.Order("pending", ago(3*day), 10)
	}
	// Re-entered pending 5 hours ago (past 4 hours: stuck), and 1 hour ago
	// (not stuck although created long ago).
	o := e.seed.Order("pending", ago(10*day), 10)
	e.seed.StatusChange(o, "on_hold", "pending", ago(5*time.Hour))
	o = e.seed.Order("pending", ago(10*day), 10)
	e.seed.StatusChange(o, "on_hold", "pending", ago(time.Hour))
	e.seed.Order("pending", ago(time.Hour), 10)

	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Len(t, found["stuck_orders"], 1)
	in := found["stuck_orders"][0]
	require.EqualValues(t, 4, metric(t, in, "Stuck orders"))
	require.EqualValues(t, 2.0, metric(t, in, "Usual hours in pending"))
	require.EqualValues(t, 4.0, metric(t, in, "Stuck after hours"))
	require.EqualValues(t, 10, metric(t, in, "Status changes measured"))
	// The same count straight from the tables.
	require.Equal(t, 4, e.count(`SELECT count(*) FROM orders o WHERE organization_id = $1 AND status = 'pending'
	   AND coalesce((SELECT max(created_at) FROM order_activities a WHERE a.order_id = o.id), o.created_at) < $2`, e.seed.Org, ago(4*time.Hour)))
}

func TestStuckOrdersQuietWhenFresh(t *testing.T) {
	e := newEnv(t, nil)
	stuckBaseline(e)
	e.seed.Order("pending", ago(time.Hour), 10)
	e.seed.Order("pending", ago(3*time.Hour), 10)
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Empty(t, found["stuck_orders"])
}

// exceptionWindows seeds 20 carrier_b shipments in the previous week (1
// exception) and 20 in the current week with curEx exceptions, half by
// status and half by checkpoint.
func exceptionWindows(e *env, curEx int) {
	for i := 0; i < 20; i++ {
		st := "delivered"
		if i == 0 {
			st = "exception"
		}
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_b", Status: st, CreatedAt: ago(10 * day)})
	}
	for i := 0; i < 20; i++ {
		st := "in_transit"
		if i < curEx/2 {
			st = "exception"
		}
		id := e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_b", Status: st, CreatedAt: ago(3 * day)})
		if i >= curEx/2 && i < curEx {
			e.seed.ExceptionCheckpoint(id, ago(2*day))
		}
	}
}

func TestExceptionRateRiseFires(t *testing.T) {
	e := newEnv(t, nil)
	exceptionWindows(e, 8)
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Len(t, found["exception_rate"], 1)
	in := found["exception_rate"][0]
	require.EqualValues(t, 40.0, metric(t, in, "Exception rate (%)"))
	require.EqualValues(t, 5.0, metric(t, in, "Previous exception rate (%)"))
	require.EqualValues(t, 8, metric(t, in, "Exceptions"))
	require.EqualValues(t, e.count(`SELECT count(*) FROM shipments s WHERE organization_id = $1 AND created_at >= $2
	   AND (status = 'exception' OR EXISTS (SELECT 1 FROM tracking_checkpoints c WHERE c.shipment_id = s.id AND c.is_exception))`,
		e.seed.Org, ago(7*day)), metric(t, in, "Exceptions"))
	require.Equal(t, "high", in.Severity)
}

func TestExceptionRateQuietWhenSteady(t *testing.T) {
	e := newEnv(t, nil)
	exceptionWindows(e, 2)
	found := e.generate(insights.GenerateInput{Types: []string{"anomaly"}})
	require.Empty(t, found["exception_rate"])
}

// deliveredLabels seeds three carrier_a labels costing 20.00 delivered
// in 3 days, tracked as T1-T3.
func deliveredLabels(e *env) {
	for i := 1; i <= 3; i++ {
		created := ago(20 * day)
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "delivered", Rate: insightstest.Money(20), CreatedAt: created,
			DeliveredAt: insightstest.At(created.Add(3 * day)), Tracking: "T" + string(rune('0'+i)) + e.seed.Org.String()[:6]})
	}
}

func TestCheaperQuotesFire(t *testing.T) {
	e := newEnv(t, nil)
	deliveredLabels(e)
	cmp := e.seed.Comparison("carrier_b")
	suffix := e.seed.Org.String()[:6]
	e.seed.ComparisonItem(cmp, 1, "T1"+suffix, "ground", 15, 2) // cheaper and quicker: counts
	e.seed.ComparisonItem(cmp, 2, "T2"+suffix, "ground", 12, 5) // cheaper but slower: no
	e.seed.ComparisonItem(cmp, 3, "T3"+suffix, "ground", 25, 1) // dearer: no
	found := e.generate(insights.GenerateInput{Types: []string{"optimization"}})
	require.Len(t, found["cheaper_quotes"], 1)
	in := found["cheaper_quotes"][0]
	require.EqualValues(t, 1, metric(t, in, "Shipments"))
	require.EqualValues(t, 5.0, metric(t, in, "Savings"))
	require.EqualValues(t, 20.0, metric(t, in, "Spent"))
}

func TestCheaperQuotesQuietWithoutBetterQuote(t *testing.T) {
	e := newEnv(t, nil)
	deliveredLabels(e)
	cmp := e.seed.Comparison("carrier_b")
	suffix := e.seed.Org.String()[:6]
	e.seed.ComparisonItem(cmp, 2, "T2"+suffix, "ground", 12, 5)
	e.seed.ComparisonItem(cmp, 3, "T3"+suffix, "ground", 25, 1)
	found := e.generate(insights.GenerateInput{Types: []string{"optimization"}})
	require.Empty(t, found["cheaper_quotes"])
}

// transitHistory seeds 10 carrier_a ground deliveries that took 2 days
// (8 by their estimate, 2 late).
func transitHistory(e *env) {
	for i := 0; i < 10; i++ {
		created := ago(time.Duration(20+i) * day)
		est := created.Add(2 * day)
		if i < 2 {
			est = created.Add(day)
		}
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "delivered", CreatedAt: created,
			DeliveredAt: insightstest.At(created.Add(2*day + time.Hour)), Estimated: &est})
	}
}

func TestLateShipmentsFire(t *testing.T) {
	e := newEnv(t, nil)
	transitHistory(e)
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(5 * day)})
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(4 * day)})
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(1 * day), Estimated: insightstest.At(ago(2 * day))})
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(time.Hour)})
	found := e.generate(insights.GenerateInput{Types: []string{"prediction"}})
	require.Len(t, found["late_shipments"], 1)
	in := found["late_shipments"][0]
	require.EqualValues(t, 3, metric(t, in, "Likely late"))
	require.EqualValues(t, 4, metric(t, in, "In transit"))
	require.EqualValues(t, 1, metric(t, in, "Past estimated delivery"))
	require.EqualValues(t, 80.0, metric(t, in, "Carrier on-time rate (%)"))
}

func TestLateShipmentsQuietWhenOnPace(t *testing.T) {
	e := newEnv(t, nil)
	transitHistory(e)
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(time.Hour)})
	e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Status: "in_transit", CreatedAt: ago(day), Estimated: insightstest.At(now.Add(day))})
	found := e.generate(insights.GenerateInput{Types: []string{"prediction"}})
	require.Empty(t, found["late_shipments"])
}

func TestVolumeTrend(t *testing.T) {
	e := newEnv(t, nil)
	for i := 0; i < 10; i++ {
		e.seed.Order("pending", ago(10*day), 10)
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Rate: insightstest.Money(10), CreatedAt: ago(10 * day)})
	}
	for i := 0; i < 20; i++ {
		e.seed.Order("pending", ago(2*day), 10)
	}
	for i := 0; i < 11; i++ {
		e.seed.Shipment(insightstest.Shipment{Carrier: "carrier_a", Rate: insightstest.Money(10), CreatedAt: ago(2 * day)})
	}
	found := e.generate(insights.GenerateInput{Types: []string{"trend"}})
	// Orders doubled; the shipping cost rose 10 %: no trend.
	require.Len(t, found["volume_trend"], 1)
	in := found["volume_trend"][0]
	require.Equal(t, "Orders up 100% week over week", in.Title)
	require.EqualValues(t, 20.0, metric(t, in, "Last 7 days"))
	require.EqualValues(t, 10.0, metric(t, in, "Previous 7 days"))
	require.EqualValues(t, 100.0, metric(t, in, "Change (%)"))
}

func TestAlerts(t *testing.T) {
	e := newEnv(t, nil)
	bad := e.seed.CarrierAccount("carrier_a", "error")
	e.seed.CarrierAccount("carrier_b", "active")
	broken := e.seed.Bridge("error")
	gone := e.seed.Bridge("disconnected")
	fine := e.seed.Bridge("active")
	for i := 0; i < 3; i++ {
		e.seed.FailedTask(fine, ago(time.Duration(i+1)*time.Hour))
	}
	e.seed.FailedTask(fine, ago(3*day)) // outside the window
	disp := e.seed.Dispatcher("to wms", fine, []string{"order_created"})
	for i := 0; i < 2; i++ {
		e.seed.Assignment(disp, e.seed.Order("pending", ago(day), 1), fine, "order_created", "failed", ago(time.Hour))
	}
	found := e.generate(insights.GenerateInput{Types: []string{"alert"}})
	require.Len(t, found["carrier_account_error"], 1)
	require.Equal(t, "POST /api/v1/carrier-accounts/"+bad.String()+"/test", found["carrier_account_error"][0].Actions[0].Command)
	require.Equal(t, "high", found["carrier_account_error"][0].Severity)
	require.Len(t, found["bridge_error"], 2)
	subjects := []string{found["bridge_error"][0].Actions[0].Command, found["bridge_error"][1].Actions[0].Command}
	require.ElementsMatch(t, []string{"GET /api/v1/bridges/" + broken.String(), "GET /api/v1/bridges/" + gone.String()}, subjects)
	require.Len(t, found["failed_syncs"], 1)
	require.EqualValues(t, 3, metric(t, found["failed_syncs"][0], "Failures in the last 24 hours"))
	require.Len(t, found["failed_dispatch"], 1)
	require.EqualValues(t, 2, metric(t, found["failed_dispatch"][0], "Failures in the last 24 hours"))
	require.Equal(t, 1.0, found["failed_dispatch"][0].Confidence)
}

func TestAlertsQuietWhenHealthy(t *testing.T) {
	e := newEnv(t, nil)
	e.seed.CarrierAccount("carrier_a", "active")
	b := e.seed.Bridge("active")
	e.seed.FailedTask(b, ago(2*day))
	found := e.generate(insights.GenerateInput{Types: []string{"alert"}})
	require.Empty(t, found)
}

func TestDispatcherRecommendation(t *testing.T) {
	e := newEnv(t, nil)
	dest := e.seed.Bridge("active")
	manual := e.seed.Dispatcher("by hand", dest, []string{"order_updated"})
	auto := e.seed.Dispatcher("automatic", dest, []string{"order_created"})
	few := e.seed.Dispatcher("rarely", dest, []string{"order_updated"})
	for i := 0; i < 12; i++ {
		e.seed.Assignment(manual, e.seed.Order("pending", ago(2*day), 1), dest, "manual", "completed", ago(2*day))
		e.seed.Assignment(auto, e.seed.Order("pending", ago(2*day), 1), dest, "manual", "completed", ago(2*day))
	}
	for i := 0; i < 5; i++ {
		e.seed.Assignment(few, e.seed.Order("pending", ago(2*day), 1), dest, "manual", "completed", ago(2*day))
	}
	found := e.generate(insights.GenerateInput{Types: []string{"recommendation"}})
	require.Len(t, found["dispatcher_trigger"], 1)
	in := found["dispatcher_trigger"][0]
	require.EqualValues(t, 12, metric(t, in, "Orders dispatched by hand"))
	require.Equal(t, `PATCH /api/v1/dispatchers/`+manual.String()+` {"triggerOn":["order_updated","order_created"]}`, in.Actions[0].Command)
}

func TestGenerateRefreshesInsteadOfPilingUp(t *testing.T) {
	e := newEnv(t, nil)
	e.seed.CarrierAccount("carrier_a", "error")
	first := e.generate(insights.GenerateInput{})["carrier_account_error"][0]
	for i := 0; i < 20; i++ {
		e.generate(insights.GenerateInput{Scope: "organization"})
	}
	again := e.generate(insights.GenerateInput{})["carrier_account_error"][0]
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM insights WHERE organization_id = $1`, e.seed.Org))

	// A dismissal holds for the insight's 24 h, then the finding is new again.
	_, err := e.svc.Acknowledge(context.Background(), e.actor, insights.AcknowledgeInput{InsightID: first.ID, Action: "dismiss"})
	require.NoError(t, err)
	*e.clock = now.Add(time.Hour)
	again = e.generate(insights.GenerateInput{})["carrier_account_error"][0]
	require.Equal(t, "dismissed", again.Status)
	require.True(t, first.ExpiresAt.Equal(again.ExpiresAt))
	*e.clock = now.Add(25 * time.Hour)
	again = e.generate(insights.GenerateInput{})["carrier_account_error"][0]
	require.Equal(t, "new", again.Status)
	require.NotEqual(t, first.ID, again.ID)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM insights WHERE organization_id = $1`, e.seed.Org))
}

func TestGenerateScopedToOrders(t *testing.T) {
	e := newEnv(t, nil)
	costBaseline(e)
	mine := e.seed.Order("pending", ago(2*day), 10)
	other := e.seed.Order("pending", ago(2*day), 10)
	e.seed.Shipment(insightstest.Shipment{Order: &other, Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(95), CreatedAt: ago(2 * day)})
	e.seed.Shipment(insightstest.Shipment{Order: &mine, Carrier: "carrier_a", Service: "ground", Rate: insightstest.Money(10), CreatedAt: ago(2 * day)})
	found := e.generate(insights.GenerateInput{Scope: "orders", OrderIDs: []uuid.UUID{mine}, Types: []string{"anomaly"}})
	require.Empty(t, found["cost_anomaly"])
	found = e.generate(insights.GenerateInput{Scope: "orders", OrderIDs: []uuid.UUID{mine, other}, Types: []string{"anomaly"}})
	require.Len(t, found["cost_anomaly"], 1)
}

func TestGenerateRefusals(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, in := range []insights.GenerateInput{
		{Scope: "galaxy"},
		{Scope: "orders"},
		{Types: []string{"anomaly", "astrology"}},
		{Scope: "orders", OrderIDs: make([]uuid.UUID, insights.MaxOrderIDs+1)},
	} {
		_, err := e.svc.Generate(ctx, e.actor, in)
		require.Equal(t, domain.KindInvalid, domain.KindOf(err), "%+v", in)
	}
	op := uuid.New()
	_, err := e.svc.Generate(ctx, e.actor, insights.GenerateInput{OperationID: &op})
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
	key := e.actor
	key.Kind, key.Scoped, key.Scopes = domain.ActorAPIKey, true, []string{"insights:read"}
	_, err = e.svc.Generate(ctx, key, insights.GenerateInput{})
	require.Equal(t, domain.KindForbidden, domain.KindOf(err))
}

func TestAcknowledge(t *testing.T) {
	e := newEnv(t, nil)
	e.seed.CarrierAccount("carrier_a", "error")
	in := e.generate(insights.GenerateInput{})["carrier_account_error"][0]
	ctx := context.Background()
	note := "on it"
	ack, err := e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Note: &note})
	require.NoError(t, err)
	require.Equal(t, "acknowledge", ack.Action)
	require.Equal(t, "acknowledged", ack.Status)
	require.True(t, now.Equal(ack.AcknowledgedAt), "%s", ack.AcknowledgedAt)
	ack, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Action: "resolve"})
	require.NoError(t, err)
	require.Equal(t, "resolved", ack.Status)
	_, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Action: "dismiss"})
	require.Equal(t, domain.KindConflict, domain.KindOf(err))
	_, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Action: "snooze"})
	require.Equal(t, domain.KindInvalid, domain.KindOf(err))
	long := string(make([]rune, 501))
	_, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Note: &long})
	require.Equal(t, domain.KindInvalid, domain.KindOf(err))
	// Another organization's insight is not found.
	other := e.actor
	other.OrganizationID = insightstest.New(t, e.st).Org
	_, err = e.svc.Acknowledge(ctx, other, insights.AcknowledgeInput{InsightID: in.ID})
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
	// Expired: gone.
	*e.clock = now.Add(25 * time.Hour)
	_, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Action: "resolve"})
	require.Equal(t, domain.KindGone, domain.KindOf(err))
	list, total, err := e.svc.List(ctx, e.actor, insights.ListInput{})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)
}

// The agent's actions waiting for approval that expire within 6 hours
// raise an alert; without the agent area's tables nothing fires.
func TestExpiringPendingActions(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var present bool
	require.NoError(t, e.st.Pool.QueryRow(ctx, `SELECT to_regclass('agent_pending_actions') IS NOT NULL`).Scan(&present))
	if !present {
		require.Empty(t, e.generate(insights.GenerateInput{Types: []string{"alert"}})["pending_actions_expiring"])
		return
	}
	conv, msg := uuid.New(), uuid.New()
	_, err := e.st.Pool.Exec(ctx, `INSERT INTO agent_conversations (id, organization_id, title, actor) VALUES ($1, $2, 't', '{}')`, conv, e.seed.Org)
	require.NoError(t, err)
	_, err = e.st.Pool.Exec(ctx, `INSERT INTO agent_messages (id, organization_id, conversation_id, seq, role, step_key) VALUES ($1, $2, $3, 1, 'assistant', 'k')`, msg, e.seed.Org, conv)
	require.NoError(t, err)
	action := func(i int, status string, expires time.Time) {
		call := uuid.New()
		_, err := e.st.Pool.Exec(ctx, `INSERT INTO agent_tool_calls (id, organization_id, conversation_id, message_id, position, tool_use_id, tool_name)
		  VALUES ($1, $2, $3, $4, $5, $6, 'update_order')`, call, e.seed.Org, conv, msg, i, "tu"+call.String())
		require.NoError(t, err)
		_, err = e.st.Pool.Exec(ctx, `INSERT INTO agent_pending_actions (id, organization_id, conversation_id, tool_call_id, tool_name, description, status, idempotency_key, expires_at)
		  VALUES ($1, $2, $3, $4, 'update_order', 'd', $5, $6, $7)`, uuid.New(), e.seed.Org, conv, call, status, "k"+call.String(), expires)
		require.NoError(t, err)
	}
	action(1, "pending", now.Add(7*time.Hour)) // not yet about to expire
	action(2, "approved", now.Add(time.Hour))  // decided
	action(3, "pending", now.Add(-time.Hour))  // already expired
	require.Empty(t, e.generate(insights.GenerateInput{Types: []string{"alert"}})["pending_actions_expiring"])
	action(4, "pending", now.Add(2*time.Hour))
	action(5, "pending", now.Add(5*time.Hour))
	found := e.generate(insights.GenerateInput{Types: []string{"alert"}})["pending_actions_expiring"]
	require.Len(t, found, 1)
	require.EqualValues(t, 2, metric(t, found[0], "Actions expiring"))
	require.Equal(t, now.Add(2*time.Hour).Format(time.RFC3339), metric(t, found[0], "First expiry"))
}

// Concurrent identical generations share one run and store one row per
// finding.
func TestGenerateConcurrently(t *testing.T) {
	e := newEnv(t, nil)
	e.seed.CarrierAccount("carrier_a", "error")
	ids := make(chan uuid.UUID, 12)
	errs := make(chan error, 12)
	for i := 0; i < 12; i++ {
		go func() {
			res, err := e.svc.Generate(context.Background(), e.actor, insights.GenerateInput{Types: []string{"alert", "trend"}})
			errs <- err
			if err == nil {
				ids <- res.Insights[0].ID
			}
		}()
	}
	var first uuid.UUID
	for i := 0; i < 12; i++ {
		require.NoError(t, <-errs)
		id := <-ids
		if first == uuid.Nil {
			first = id
		}
		require.Equal(t, first, id)
	}
	require.Equal(t, 1, e.count(`SELECT count(*) FROM insights WHERE organization_id = $1`, e.seed.Org))
}
