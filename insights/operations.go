package insights

import (
	"context"
	"math"
	"sort"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// OperationInsights is GET /insights/operations/:operationId.
type OperationInsights struct {
	OperationID   uuid.UUID
	OperationName string
	Summary       OperationSummary
	CostBreakdown CostBreakdown
	RiskAnalysis  RiskAnalysis
	// Optimizations, Anomalies and Insights are the operation's stored,
	// unexpired insights (POST /insights/generate with its operationId),
	// split by category: optimization, anomaly, and every other.
	Optimizations []Insight
	Anomalies     []Insight
	Insights      []Insight
}

// OperationSummary sums the operation's items.
type OperationSummary struct {
	TotalOrders int
	// EstimatedCost: the assigned snapshots' total price. EstimatedSavings:
	// against the cheapest quote of the same request with the same or fewer
	// transit days. AverageTransitDays: of the assigned snapshots that state
	// it (nil: none). RiskScore: the share of high-risk orders, 0-1.
	EstimatedCost      float64
	EstimatedSavings   float64
	AverageTransitDays *float64
	RiskScore          float64
}

// CostShare is one carrier's or service's part of the estimated cost.
type CostShare struct {
	Name       string
	Amount     float64
	Percentage float64
}

// CostBreakdown splits the estimated cost by carrier and by service;
// each list's percentages sum to 100 (when there is a cost).
type CostBreakdown struct {
	ByCarrier []CostShare
	ByService []CostShare
}

// RiskAnalysis is what may go wrong with the operation.
type RiskAnalysis struct {
	// HighRiskOrders: orders with nothing to buy a label with (no rate, no
	// carrier override), an expired quote, a carrier account that is not
	// active, or a carrier whose on-time rate is under OnTimeRisk.
	HighRiskOrders int
	// DelayRisk: the share of the rated items expected late from their
	// carriers' on-time rates over the last 90 days (nil: no history).
	DelayRisk *float64
	// WeatherImpact is always nil: the service has no weather source.
	WeatherImpact *string
	// CarrierCapacityIssues: carriers the items would buy with whose
	// account is not active.
	CarrierCapacityIssues []CapacityIssue
}

// CapacityIssue is a carrier that cannot take the items assigned to it.
type CapacityIssue struct {
	Carrier string `json:"carrier"`
	Items   int    `json:"items"`
	Reason  string `json:"reason"`
}

// OnTimeRisk is the on-time rate under which a carrier makes its items
// high-risk; OnTimeMinSamples deliveries with an estimate make the rate.
const (
	OnTimeRisk       = 0.8
	OnTimeMinSamples = 10
)

// opTotals are an operation's items summed.
type opTotals struct {
	items, orders, savingItems, transitItems int
	amount, savings, transitDays             float64
}

func summarize(groups []store.OperationItemGroup) opTotals {
	var t opTotals
	for _, g := range groups {
		t.items += g.Items
		t.orders += g.Orders
		t.amount += g.Amount
		t.savings += g.Savings
		t.savingItems += g.SavingItems
		t.transitDays += g.TransitDays
		t.transitItems += g.TransitItems
	}
	return t
}

// OperationInsights computes the operation's summary, cost breakdown and
// risks from its items and answers its stored insights. The actor needs
// insights:read; an operation of another organization is not found.
func (s *Service) OperationInsights(ctx context.Context, actor domain.Actor, operationID uuid.UUID) (OperationInsights, error) {
	if err := actor.RequireScope("insights:read"); err != nil {
		return OperationInsights{}, err
	}
	orgID := actor.OrganizationID
	op, items, err := s.operation(ctx, orgID, operationID)
	if err != nil {
		return OperationInsights{}, err
	}
	now := s.now().UTC()
	// The item groups, the carriers' on-time rates and the stored insights
	// are independent reads: they run at once, each in its own read.
	var groups []store.OperationItemGroup
	var perf []store.CarrierPerformanceRow
	var stored []store.Insight
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return store.InsightRead(gctx, s.store.Pool, func(db store.DBTX) error {
			var err error
			groups, err = store.OperationItemGroups(gctx, db, orgID, items, now)
			return err
		})
	})
	g.Go(func() error {
		return store.InsightRead(gctx, s.store.Pool, func(db store.DBTX) error {
			var err error
			perf, err = store.CarrierPerformance(gctx, db, orgID, now.Add(-Baseline), now)
			return err
		})
	})
	g.Go(func() error {
		var err error
		stored, _, err = store.ListInsights(gctx, s.store.Pool, orgID, store.InsightFilter{OperationID: &op.ID, Now: now, Limit: 100})
		return err
	})
	if err := g.Wait(); err != nil {
		return OperationInsights{}, err
	}
	onTime := map[string]float64{}
	for _, p := range perf {
		if p.WithEstimate >= OnTimeMinSamples {
			onTime[p.Carrier] = float64(p.OnTime) / float64(p.WithEstimate)
		}
	}
	t := summarize(groups)
	out := OperationInsights{OperationID: op.ID, OperationName: op.Name}
	out.Summary = OperationSummary{TotalOrders: t.orders, EstimatedCost: round2(t.amount), EstimatedSavings: round2(t.savings)}
	if t.transitItems > 0 {
		avg := round2(t.transitDays / float64(t.transitItems))
		out.Summary.AverageTransitDays = &avg
	}
	byCarrier, byService := map[string]float64{}, map[string]float64{}
	capacity := map[string]int{}
	var late, rated float64
	for _, g := range groups {
		risky := g.Carrier == nil && !g.HasOverride || g.Expired || g.AccountActive != nil && !*g.AccountActive
		if g.Carrier != nil {
			byCarrier[*g.Carrier] += g.Amount
			byService[deref(g.Service)] += g.Amount
			if r, ok := onTime[*g.Carrier]; ok {
				late += (1 - r) * float64(g.Items)
				rated += float64(g.Items)
				if r < OnTimeRisk {
					risky = true
				}
			}
			if g.AccountActive != nil && !*g.AccountActive {
				capacity[*g.Carrier] += g.Items
			}
		}
		if risky {
			out.RiskAnalysis.HighRiskOrders += g.Orders
		}
	}
	if t.orders > 0 {
		out.Summary.RiskScore = round3(float64(out.RiskAnalysis.HighRiskOrders) / float64(t.orders))
	}
	if rated > 0 {
		d := round3(late / rated)
		out.RiskAnalysis.DelayRisk = &d
	}
	out.RiskAnalysis.CarrierCapacityIssues = []CapacityIssue{}
	for _, c := range sortedKeys(capacity) {
		out.RiskAnalysis.CarrierCapacityIssues = append(out.RiskAnalysis.CarrierCapacityIssues,
			CapacityIssue{Carrier: c, Items: capacity[c], Reason: "the carrier account is not active or was deleted"})
	}
	out.CostBreakdown = CostBreakdown{ByCarrier: shares(byCarrier), ByService: shares(byService)}

	out.Optimizations, out.Anomalies, out.Insights = []Insight{}, []Insight{}, []Insight{}
	for _, r := range stored {
		in := fromStore(r)
		switch in.Category {
		case CategoryOptimization:
			out.Optimizations = append(out.Optimizations, in)
		case CategoryAnomaly:
			out.Anomalies = append(out.Anomalies, in)
		default:
			out.Insights = append(out.Insights, in)
		}
	}
	return out, nil
}

// shares are the amounts with percentages of their total, largest first,
// rounded to two decimals so that they sum to exactly 100 (largest
// remainder).
func shares(m map[string]float64) []CostShare {
	out := make([]CostShare, 0, len(m))
	var total float64
	for k, v := range m {
		out = append(out, CostShare{Name: k, Amount: round2(v)})
		total += v
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Amount != out[j].Amount {
			return out[i].Amount > out[j].Amount
		}
		return out[i].Name < out[j].Name
	})
	if total <= 0 {
		return out
	}
	// Percentages in hundredths of a percent: floor each, then hand the
	// remaining hundredths to the largest remainders.
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, len(out))
	left := 10000
	for i := range out {
		exact := m[out[i].Name] / total * 10000
		fl := math.Floor(exact)
		out[i].Percentage = fl
		left -= int(fl)
		rems[i] = rem{i, exact - fl}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; k < left && k < len(rems); k++ {
		out[rems[k].i].Percentage++
	}
	for i := range out {
		out[i].Percentage /= 100
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
