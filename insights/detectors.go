package insights

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/store"
)

// Draft is what a detector found, before it is stored.
type Draft struct {
	Detector string
	// Subject is what the finding is about within its detector (a carrier
	// and service, a bridge id…); with the detector and the scope it makes
	// the stored row's fingerprint.
	Subject    string
	Category   string
	Severity   string
	Title      string
	Summary    string
	Metrics    []Metric
	Actions    []Action
	Confidence float64
	Tags       []string
}

// Thresholds and windows of the detectors. They are the rules the
// insights are computed by; changing one changes what fires.
const (
	// Baseline is the history an anomaly or prediction is measured against.
	Baseline = 90 * 24 * time.Hour
	// Recent is the window whose shipments and orders are checked against
	// the baseline, and the window of week-over-week comparisons.
	Recent = 7 * 24 * time.Hour
	// AlertWindow is how far back failed syncs and dispatch assignments count.
	AlertWindow = 24 * time.Hour
	// ActionExpiryWarning: an agent action waiting for approval is about
	// to expire when it expires within this time.
	ActionExpiryWarning = 6 * time.Hour
	// RecommendationWindow is the window of manual dispatch runs.
	RecommendationWindow = 30 * 24 * time.Hour

	// OutlierZ is the robust z-score beyond which a value is an outlier
	// (Iglewicz and Hoaglin), with OutlierMinSamples in the baseline.
	OutlierZ          = 3.5
	OutlierMinSamples = 8
	// StuckMinSamples status changes make a status's usual time; an order
	// is never stuck before StuckMinimum.
	StuckMinSamples = 5
	StuckMinimum    = time.Hour
	// ExceptionMinShipments per window; the rate must rise by
	// ExceptionMinRise (absolute) with a two-proportion z of ExceptionZ.
	ExceptionMinShipments = 10
	ExceptionMinRise      = 0.05
	ExceptionZ            = 1.96
	// LateMinSamples deliveries of a carrier and service make its transit
	// history; a moving shipment is likely late once it has been in transit
	// longer than LateShare of them took.
	LateMinSamples = 5
	LateShare      = 0.8
	// TrendMinBase items in the previous window, and TrendMinChange
	// relative change, make a trend.
	TrendMinBase   = 5
	TrendMinChange = 0.2
	// RecommendMinOrders orders dispatched by hand make a recommendation.
	RecommendMinOrders = 10
)

// stuckStatuses are the open order statuses an order can be stuck in.
var stuckStatuses = []string{"pending", "confirmed", "processing", "on_hold"}

// detectEnv is one run of the detectors.
type detectEnv struct {
	// db is the detector's read-only transaction (store.InsightRead).
	db    store.DBTX
	orgID uuid.UUID
	scope store.InsightScope
	// operation: the run is for an operation's items.
	operation *OperationRef
	items     []store.OperationItemRef
}

// detector is one detector: its name, its category and its run.
type detector struct {
	name     string
	category string
	run      func(ctx context.Context, e detectEnv) ([]Draft, error)
}

// detectors are every detector, in the order their findings are listed.
var detectors = []detector{
	{"alerts", CategoryAlert, detectAlerts},
	{"pending_actions_expiring", CategoryAlert, detectExpiringActions},
	{"cost_anomaly", CategoryAnomaly, detectOutliers(store.OutlierCost)},
	{"weight_anomaly", CategoryAnomaly, detectOutliers(store.OutlierWeight)},
	{"stuck_orders", CategoryAnomaly, detectStuckOrders},
	{"exception_rate", CategoryAnomaly, detectExceptionRates},
	{"cheaper_quotes", CategoryOptimization, detectCheaperQuotes},
	{"operation_savings", CategoryOptimization, detectOperationSavings},
	{"late_shipments", CategoryPrediction, detectLateShipments},
	{"volume_trend", CategoryTrend, detectVolumeTrend},
	{"dispatcher_trigger", CategoryRecommendation, detectManualDispatch},
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func pct(v float64) float64 { return math.Round(v*1000) / 10 }

// sizeConfidence grows with the number of observations behind a finding.
func sizeConfidence(n int, half float64) float64 {
	return clamp(float64(n)/(float64(n)+half), 0.5, 0.95)
}

// sizeSeverity grades a finding by how many things it is about: medium
// from medium, high from high, else low.
func sizeSeverity(n, medium, high int) string {
	switch {
	case n >= high:
		return SeverityHigh
	case n >= medium:
		return SeverityMedium
	}
	return SeverityLow
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func idList(ids []uuid.UUID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ",")
}

func carrierName(code string) string {
	if code == "" {
		return "unknown carrier"
	}
	parts := strings.Split(code, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, " ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// detectOutliers: label costs (or weights) far outside the organization's
// usual range for the same carrier and service.
func detectOutliers(metric string) func(context.Context, detectEnv) ([]Draft, error) {
	return func(ctx context.Context, e detectEnv) ([]Draft, error) {
		groups, err := store.OutlierGroups(ctx, e.db, e.orgID, metric, e.scope, Baseline, Recent, OutlierMinSamples, OutlierZ)
		if err != nil {
			return nil, err
		}
		what, unit := "label cost", ""
		if metric == store.OutlierWeight {
			what, unit = "weight", " lb"
		}
		out := make([]Draft, 0, len(groups))
		for _, g := range groups {
			sev := sizeSeverity(g.Outliers, 3, 10)
			metrics := []Metric{
				{"Shipments outside the usual range", g.Outliers},
				{"Above the median", g.High},
				{"Usual " + what + " (median)" + unit, round2(g.Median)},
				{"Median absolute deviation" + unit, round2(g.MAD)},
				{"Highest" + unit, round2(g.Highest)},
				{"Lowest" + unit, round2(g.Lowest)},
				{"Baseline shipments", g.Samples},
			}
			if metric == store.OutlierCost {
				metrics = append(metrics, Metric{"Excess over the median", round2(g.Excess)})
			}
			out = append(out, Draft{
				Detector: metric + "_anomaly", Subject: g.Carrier + "/" + g.Service, Category: CategoryAnomaly, Severity: sev,
				Title: fmt.Sprintf("Unusual %s on %s %s", what, carrierName(g.Carrier), g.Service),
				Summary: fmt.Sprintf("%d %s of %s %s in the last 7 days had a %s far from the usual %.2f%s (robust z-score over %.1f against %d shipments of the last 90 days).",
					g.Outliers, plural(g.Outliers, "shipment", "shipments"), carrierName(g.Carrier), g.Service, what, g.Median, unit, OutlierZ, g.Samples),
				Metrics:    metrics,
				Actions:    []Action{{ID: "review-shipments", Label: "Review the shipments", Type: "api", Command: "GET /api/v1/shipments?carrier=" + g.Carrier}},
				Confidence: sizeConfidence(g.Samples, 10),
				Tags:       []string{metric, g.Carrier, g.Service},
			})
		}
		return out, nil
	}
}

// detectStuckOrders: orders stuck in a status longer than the
// organization's usual time.
func detectStuckOrders(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.StuckOrders(ctx, e.db, e.orgID, e.scope, stuckStatuses, Baseline, StuckMinSamples, StuckMinimum)
	if err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(list))
	for _, s := range list {
		sev := sizeSeverity(s.Stuck, 10, 50)
		out = append(out, Draft{
			Detector: "stuck_orders", Subject: s.Status, Category: CategoryAnomaly, Severity: sev,
			Title: fmt.Sprintf("%d %s stuck in %s", s.Stuck, plural(s.Stuck, "order", "orders"), s.Status),
			Summary: fmt.Sprintf("%d %s in %s for longer than %s; orders usually leave %s after %s (median of %d status changes in the last 90 days).",
				s.Stuck, plural(s.Stuck, "order has been", "orders have been"), s.Status, hours(s.ThresholdSeconds), s.Status, hours(s.MedianSeconds), s.Samples),
			Metrics: []Metric{
				{"Stuck orders", s.Stuck},
				{"Usual hours in " + s.Status, round2(s.MedianSeconds / 3600)},
				{"Stuck after hours", round2(s.ThresholdSeconds / 3600)},
				{"Longest hours in " + s.Status, round2(s.OldestSeconds / 3600)},
				{"Status changes measured", s.Samples},
				{"Order ids (up to 20)", idList(s.IDs)},
			},
			Actions:    []Action{{ID: "list-orders", Label: "List the " + s.Status + " orders", Type: "api", Command: "GET /api/v1/orders?status=" + s.Status}},
			Confidence: sizeConfidence(s.Samples, 10),
			Tags:       []string{"orders", s.Status},
		})
	}
	return out, nil
}

func hours(secs float64) string {
	h := secs / 3600
	if h < 48 {
		return fmt.Sprintf("%.1f hours", h)
	}
	return fmt.Sprintf("%.1f days", h/24)
}

// detectExceptionRates: a carrier whose exception rate rose against the
// previous window.
func detectExceptionRates(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.ExceptionRates(ctx, e.db, e.orgID, e.scope, Recent)
	if err != nil {
		return nil, err
	}
	var out []Draft
	for _, r := range list {
		if r.Current < ExceptionMinShipments || r.Previous < ExceptionMinShipments {
			continue
		}
		cur, prev := float64(r.CurrentEx)/float64(r.Current), float64(r.PreviousEx)/float64(r.Previous)
		z := twoProportionZ(r.CurrentEx, r.Current, r.PreviousEx, r.Previous)
		if cur-prev < ExceptionMinRise || z < ExceptionZ {
			continue
		}
		sev := SeverityMedium
		if cur >= 0.15 {
			sev = SeverityHigh
		}
		out = append(out, Draft{
			Detector: "exception_rate", Subject: r.Carrier, Category: CategoryAnomaly, Severity: sev,
			Title:   fmt.Sprintf("%s exceptions rose to %.1f%%", carrierName(r.Carrier), pct(cur)),
			Summary: fmt.Sprintf("%d of %d %s shipments of the last 7 days had an exception (%.1f%%), against %d of %d (%.1f%%) the 7 days before.", r.CurrentEx, r.Current, carrierName(r.Carrier), pct(cur), r.PreviousEx, r.Previous, pct(prev)),
			Metrics: []Metric{
				{"Exception rate (%)", pct(cur)}, {"Previous exception rate (%)", pct(prev)},
				{"Exceptions", r.CurrentEx}, {"Shipments", r.Current},
				{"Previous exceptions", r.PreviousEx}, {"Previous shipments", r.Previous},
			},
			Actions:    []Action{{ID: "list-exceptions", Label: "List the exceptions", Type: "api", Command: "GET /api/v1/shipments?carrier=" + r.Carrier + "&status=exception"}},
			Confidence: clamp(normalCDF(z), 0.5, 0.99),
			Tags:       []string{"exceptions", r.Carrier},
		})
	}
	return out, nil
}

// twoProportionZ is the z statistic of p1 > p2 (pooled standard error).
func twoProportionZ(x1, n1, x2, n2 int) float64 {
	p := float64(x1+x2) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	if se == 0 {
		return 0
	}
	return (float64(x1)/float64(n1) - float64(x2)/float64(n2)) / se
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// detectCheaperQuotes: delivered shipments whose rate comparison quote was
// cheaper with the same or fewer transit days.
func detectCheaperQuotes(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.CheaperQuotes(ctx, e.db, e.orgID, e.scope, Baseline)
	if err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(list))
	for _, g := range list {
		sev := SeverityLow
		if g.Savings >= 100 {
			sev = SeverityMedium
		}
		out = append(out, Draft{
			Detector: "cheaper_quotes", Subject: g.Carrier + "/" + g.Service, Category: CategoryOptimization, Severity: sev,
			Title: fmt.Sprintf("%s %s would have saved %.2f", carrierName(g.Carrier), g.Service, g.Savings),
			Summary: fmt.Sprintf("%d delivered %s of the last 90 days had a cheaper %s %s quote in a rate comparison that took no more transit days than the shipment did: %.2f of %.2f spent.",
				g.Shipments, plural(g.Shipments, "shipment", "shipments"), carrierName(g.Carrier), g.Service, g.Savings, g.Spent),
			Metrics: []Metric{
				{"Shipments", g.Shipments}, {"Spent", round2(g.Spent)}, {"Savings", round2(g.Savings)},
				{"Savings (%)", pct(g.Savings / g.Spent)}, {"Shipment ids (up to 20)", idList(g.IDs)},
			},
			Actions:    []Action{{ID: "compare-rates", Label: "Compare rates on the next shipments", Type: "api", Command: "GET /api/v1/rate-comparisons"}},
			Confidence: sizeConfidence(g.Shipments, 5),
			Tags:       []string{"savings", g.Carrier},
		})
	}
	return out, nil
}

// detectOperationSavings: an operation's items whose assigned quote had a
// cheaper quote of the same request with the same or fewer transit days.
func detectOperationSavings(ctx context.Context, e detectEnv) ([]Draft, error) {
	if e.operation == nil {
		return nil, nil
	}
	groups, err := store.OperationItemGroups(ctx, e.db, e.orgID, e.items, e.scope.Now)
	if err != nil {
		return nil, err
	}
	sum := summarize(groups)
	if sum.savingItems == 0 {
		return nil, nil
	}
	sev := SeverityLow
	if sum.savings >= 100 {
		sev = SeverityMedium
	}
	op := e.operation
	return []Draft{{
		Detector: "operation_savings", Subject: op.ID.String(), Category: CategoryOptimization, Severity: sev,
		Title: fmt.Sprintf("%.2f cheaper with other quotes in %s", sum.savings, op.Name),
		Summary: fmt.Sprintf("%d %s of operation %s %s a cheaper quote for the same shipment with the same or fewer transit days; choosing them saves %.2f of %.2f.",
			sum.savingItems, plural(sum.savingItems, "item", "items"), op.Name, plural(sum.savingItems, "has", "have"), sum.savings, sum.amount),
		Metrics: []Metric{
			{"Items with a cheaper quote", sum.savingItems}, {"Estimated cost", round2(sum.amount)}, {"Estimated savings", round2(sum.savings)},
		},
		Actions:    []Action{{ID: "review-items", Label: "Review the operation's rates", Type: "api", Command: "GET /api/v1/operations/" + op.ID.String() + "/items?hasRate=true"}},
		Confidence: 0.9,
		Tags:       []string{"operation", "savings"},
	}}, nil
}

// detectLateShipments: shipments in transit likely to be late.
func detectLateShipments(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.LateRisks(ctx, e.db, e.orgID, e.scope, Baseline, LateMinSamples, LateShare)
	if err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(list))
	for _, r := range list {
		sev := sizeSeverity(r.Late, 5, 20)
		onTime := any(nil)
		if r.WithEstimate > 0 {
			onTime = pct(float64(r.OnTime) / float64(r.WithEstimate))
		}
		slower := r.Late - r.PastEstimate
		// Past its estimate: late unless delivered today; slower than most:
		// the share of deliveries that were quicker.
		conf := (float64(r.PastEstimate)*0.95 + float64(slower)*r.SlowerThan) / float64(r.Late)
		out = append(out, Draft{
			Detector: "late_shipments", Subject: r.Carrier, Category: CategoryPrediction, Severity: sev,
			Title: fmt.Sprintf("%d %s %s likely to be late", r.Late, carrierName(r.Carrier), plural(r.Late, "shipment is", "shipments are")),
			Summary: fmt.Sprintf("%d of %d %s shipments in transit are likely late: %d past their estimated delivery day, %d in transit longer than %.0f%% of the carrier's deliveries of the same service took.",
				r.Late, r.InTransit, carrierName(r.Carrier), r.PastEstimate, slower, LateShare*100),
			Metrics: []Metric{
				{"Likely late", r.Late}, {"In transit", r.InTransit}, {"Past estimated delivery", r.PastEstimate},
				{"Carrier on-time rate (%)", onTime}, {"Deliveries measured", r.Delivered}, {"Shipment ids (up to 20)", idList(r.IDs)},
			},
			Actions:    []Action{{ID: "list-in-transit", Label: "List the shipments in transit", Type: "api", Command: "GET /api/v1/shipments?carrier=" + r.Carrier + "&status=in_transit"}},
			Confidence: clamp(conf, 0.5, 0.95),
			Tags:       []string{"delivery", r.Carrier},
		})
	}
	return out, nil
}

// detectVolumeTrend: order and shipping-cost volume week over week.
func detectVolumeTrend(ctx context.Context, e detectEnv) ([]Draft, error) {
	v, err := store.VolumeTrends(ctx, e.db, e.orgID, e.scope, Recent)
	if err != nil {
		return nil, err
	}
	var out []Draft
	add := func(subject, what string, cur, prev float64, n int, money bool, cmd string) {
		if n < TrendMinBase || prev <= 0 {
			return
		}
		change := (cur - prev) / prev
		if math.Abs(change) < TrendMinChange {
			return
		}
		dir, sev := "up", SeverityInfo
		if change < 0 {
			dir = "down"
		}
		if math.Abs(change) >= 0.5 {
			sev = SeverityLow
		}
		format := "%.0f"
		if money {
			format = "%.2f"
		}
		out = append(out, Draft{
			Detector: "volume_trend", Subject: subject, Category: CategoryTrend, Severity: sev,
			Title:   fmt.Sprintf("%s %s %.0f%% week over week", what, dir, math.Abs(change)*100),
			Summary: fmt.Sprintf("%s in the last 7 days: "+format+", against "+format+" the 7 days before (%+.1f%%).", what, cur, prev, change*100),
			Metrics: []Metric{
				{"Last 7 days", round2(cur)}, {"Previous 7 days", round2(prev)}, {"Change (%)", pct(change)},
			},
			Actions:    []Action{{ID: "view", Label: "View " + strings.ToLower(what), Type: "api", Command: cmd}},
			Confidence: sizeConfidence(n, 20),
			Tags:       []string{"trend", subject},
		})
	}
	since := e.scope.Now.Add(-Recent).UTC().Format(time.RFC3339)
	add("orders", "Orders", float64(v.Orders), float64(v.PreviousOrders), v.PreviousOrders, false, "GET /api/v1/orders?since="+since)
	add("shipping_cost", "Shipping cost", v.Cost, v.PreviousCost, v.PreviousShipments, true, "GET /api/v1/shipments")
	return out, nil
}

// detectAlerts: carrier accounts in error, bridges in error or
// disconnected, failed syncs and failed dispatch assignments in the last
// 24 hours. Alerts are about the organization, whatever the scope.
func detectAlerts(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.Alerts(ctx, e.db, e.orgID, e.scope.Now, AlertWindow)
	if err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(list))
	for _, a := range list {
		id := ""
		if a.ID != nil {
			id = a.ID.String()
		}
		reason := ""
		if a.Error != nil && *a.Error != "" {
			reason = " Last error: " + *a.Error
		}
		d := Draft{Subject: id, Category: CategoryAlert, Confidence: 1}
		switch a.Kind {
		case "carrier_account":
			d.Detector, d.Severity = "carrier_account_error", SeverityHigh
			d.Title = fmt.Sprintf("Carrier account %s is in error", a.Name)
			d.Summary = fmt.Sprintf("Carrier account %s cannot be used for rates or labels until it works again.%s", a.Name, reason)
			d.Actions = []Action{{ID: "test-account", Label: "Test the carrier account", Type: "api", Command: "POST /api/v1/carrier-accounts/" + id + "/test"}}
			d.Tags = []string{"carrier_account"}
		case "bridge":
			d.Detector, d.Severity = "bridge_error", SeverityHigh
			if a.Status == "disconnected" {
				d.Severity = SeverityMedium
			}
			d.Title = fmt.Sprintf("Bridge %s is %s", a.Name, a.Status)
			d.Summary = fmt.Sprintf("Bridge %s is %s: its orders and shipments do not sync.%s", a.Name, a.Status, reason)
			d.Actions = []Action{{ID: "view-bridge", Label: "View the bridge", Type: "api", Command: "GET /api/v1/bridges/" + id}}
			d.Tags = []string{"bridge", a.Status}
		case "failed_syncs":
			d.Detector, d.Severity = "failed_syncs", SeverityMedium
			if a.Count >= 10 {
				d.Severity = SeverityHigh
			}
			d.Title = fmt.Sprintf("%d failed %s of bridge %s", a.Count, plural(a.Count, "sync", "syncs"), a.Name)
			d.Summary = fmt.Sprintf("%d task %s of bridge %s failed in the last 24 hours.%s", a.Count, plural(a.Count, "run", "runs"), a.Name, reason)
			d.Actions = []Action{{ID: "view-tasks", Label: "View the bridge's task runs", Type: "api", Command: "GET /api/v1/bridges/" + id + "/tasks"}}
			d.Tags = []string{"bridge", "sync"}
		case "failed_dispatch":
			d.Detector, d.Severity = "failed_dispatch", SeverityMedium
			if a.Count >= 10 {
				d.Severity = SeverityHigh
			}
			d.Title = fmt.Sprintf("%d failed dispatch %s to %s", a.Count, plural(a.Count, "assignment", "assignments"), a.Name)
			d.Summary = fmt.Sprintf("%d orders could not be dispatched to bridge %s in the last 24 hours.%s", a.Count, a.Name, reason)
			d.Actions = []Action{{ID: "retry-assignments", Label: "Retry the failed assignments", Type: "api", Command: "POST /api/v1/dispatchers/assignments/retry"}}
			d.Tags = []string{"dispatch"}
		default:
			continue
		}
		if a.Count > 0 {
			d.Metrics = append(d.Metrics, Metric{"Failures in the last 24 hours", a.Count})
		}
		d.Metrics = append(d.Metrics, Metric{"Status", a.Status})
		if a.Last != nil {
			d.Metrics = append(d.Metrics, Metric{"Since", a.Last.UTC().Format(time.RFC3339)})
		}
		out = append(out, d)
	}
	return out, nil
}

// detectManualDispatch: a dispatcher run by hand for many orders would
// have assigned them by itself on order creation.
func detectManualDispatch(ctx context.Context, e detectEnv) ([]Draft, error) {
	list, err := store.ManualDispatchRuns(ctx, e.db, e.orgID, e.scope, RecommendationWindow, RecommendMinOrders)
	if err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(list))
	for _, r := range list {
		triggers := append(slices.Clone(r.TriggerOn), "order_created")
		body := `{"triggerOn":["` + strings.Join(triggers, `","`) + `"]}`
		out = append(out, Draft{
			Detector: "dispatcher_trigger", Subject: r.DispatcherID.String(), Category: CategoryRecommendation, Severity: SeverityLow,
			Title:   fmt.Sprintf("Run dispatcher %s on new orders", r.Name),
			Summary: fmt.Sprintf("Dispatcher %s was run by hand for %d orders in the last 30 days; with the order_created trigger it would have assigned them as they arrived.", r.Name, r.Orders),
			Metrics: []Metric{{"Orders dispatched by hand", r.Orders}, {"Manual assignments", r.Assignments}},
			Actions: []Action{{ID: "add-trigger", Label: "Add the order_created trigger", Type: "api",
				Command: "PATCH /api/v1/dispatchers/" + r.DispatcherID.String() + " " + body}},
			Confidence: sizeConfidence(r.Orders, 10),
			Tags:       []string{"dispatch", "automation"},
		})
	}
	return out, nil
}

// detectExpiringActions: the agent's actions waiting for approval that
// expire within ActionExpiryWarning (they never run if nobody decides).
func detectExpiringActions(ctx context.Context, e detectEnv) ([]Draft, error) {
	a, err := store.ExpiringPendingActions(ctx, e.db, e.orgID, e.scope.Now, ActionExpiryWarning)
	if err != nil || a.Count == 0 {
		return nil, err
	}
	metrics := []Metric{{"Actions expiring", a.Count}, {"Tools", strings.Join(a.Tools, ", ")}}
	if a.Soonest != nil {
		metrics = append(metrics, Metric{"First expiry", a.Soonest.UTC().Format(time.RFC3339)})
	}
	return []Draft{{
		Detector: "pending_actions_expiring", Subject: "agent", Category: CategoryAlert, Severity: sizeSeverity(a.Count, 1, 10),
		Title:      fmt.Sprintf("%d agent %s awaiting approval expire soon", a.Count, plural(a.Count, "action", "actions")),
		Summary:    fmt.Sprintf("%d %s the agent proposed will expire unexecuted within %.0f hours unless approved or rejected.", a.Count, plural(a.Count, "action", "actions"), ActionExpiryWarning.Hours()),
		Metrics:    metrics,
		Actions:    []Action{{ID: "review-actions", Label: "Review the pending actions", Type: "api", Command: "GET /api/v1/agent/pending-actions?status=pending"}},
		Confidence: 1,
		Tags:       []string{"agent", "approval"},
	}}, nil
}
