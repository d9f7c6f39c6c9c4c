package insights

import (
	"context"
	"time"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Bounds of the carrier performance window (days).
const (
	DefaultPerformanceDays = 30
	MaxPerformanceDays     = 365
	// TrendChange is the relative change between the window's halves
	// beyond which a trend is not stable (CONTRACT 11: over 5 %).
	TrendChange = 0.05
)

// CarrierPerformance is one carrier's entry (spec Part 3, CONTRACT 11).
type CarrierPerformance struct {
	CarrierID   string
	CarrierName string
	// OnTimeRate: the share of delivered shipments (with an estimated
	// delivery) delivered by their estimated day; nil when none had one.
	OnTimeRate *float64
	// AverageTransitDays: label creation to delivery; nil when none was
	// delivered.
	AverageTransitDays *float64
	// CostPerPackage: the average label cost; nil when no label has one.
	CostPerPackage *float64
	TotalShipments int
	DeliveredCount int
	OnTimeTrend    string
	CostTrend      string
	Start, End     time.Time
}

// CarrierPerformance aggregates, per carrier, the organization's
// shipments created in the last days (1-365, 0: 30). The actor needs
// insights:read.
func (s *Service) CarrierPerformance(ctx context.Context, actor domain.Actor, days int) ([]CarrierPerformance, error) {
	if err := actor.RequireScope("insights:read"); err != nil {
		return nil, err
	}
	if days == 0 {
		days = DefaultPerformanceDays
	}
	if days < 1 || days > MaxPerformanceDays {
		return nil, domain.InvalidField("days", "must be between 1 and 365")
	}
	end := s.now().UTC().Truncate(time.Microsecond)
	start := end.AddDate(0, 0, -days)
	var rows []store.CarrierPerformanceRow
	err := store.InsightRead(ctx, s.store.Pool, func(db store.DBTX) error {
		var err error
		rows, err = store.CarrierPerformance(ctx, db, actor.OrganizationID, start, end)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]CarrierPerformance, 0, len(rows))
	for _, r := range rows {
		p := CarrierPerformance{CarrierID: r.Carrier, CarrierName: carrierName(r.Carrier), TotalShipments: r.Total,
			DeliveredCount: r.Delivered, Start: start, End: end}
		if r.WithEstimate > 0 {
			v := round3(float64(r.OnTime) / float64(r.WithEstimate))
			p.OnTimeRate = &v
		}
		if r.TransitDays != nil {
			v := round2(*r.TransitDays)
			p.AverageTransitDays = &v
		}
		if r.CostPerLabel != nil {
			v := round2(*r.CostPerLabel)
			p.CostPerPackage = &v
		}
		p.OnTimeTrend = trend(rate(r.FirstOnTime, r.FirstWithEstimate), rate(r.SecondOnTime, r.SecondWithEstimate), "improving", "declining")
		p.CostTrend = trend(r.FirstCost, r.SecondCost, "up", "down")
		out = append(out, p)
	}
	return out, nil
}

func rate(n, d int) *float64 {
	if d == 0 {
		return nil
	}
	v := float64(n) / float64(d)
	return &v
}

// trend compares the second half of a window with the first: a relative
// change over TrendChange is rising or falling, else (or without both
// halves) stable.
func trend(first, second *float64, rising, falling string) string {
	if first == nil || second == nil || *first == 0 {
		return "stable"
	}
	change := (*second - *first) / *first
	switch {
	case change > TrendChange:
		return rising
	case change < -TrendChange:
		return falling
	}
	return "stable"
}
