package insights

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// MaxQuery bounds a question (spec Part 3: 1-1,000 characters).
const MaxQuery = 1000

// DefaultAskRange is the time range of a question that names none.
const DefaultAskRange = 30 * 24 * time.Hour

// AskInput is POST /insights/ask.
type AskInput struct {
	Query   string
	Context AskContext
}

// AskContext narrows a question.
type AskContext struct {
	OperationID *uuid.UUID
	OrderIDs    []uuid.UUID
	// Start and End bound the time range when the question names none.
	Start, End *time.Time
	// IncludeOrders (default true) lists the referenced orders.
	IncludeOrders *bool
}

// Answer is the question engine's answer.
type Answer struct {
	Answer           string
	Insights         []Insight
	SuggestedQueries []string
	// Understood: the engine answered the question (else Answer says it
	// cannot and SuggestedQueries are forms it can).
	Understood bool
	// Facts are the figures the answer states, for a model to word.
	Facts          []Metric
	Orders         []uuid.UUID
	Start, End     time.Time
	ProcessingTime time.Duration
	TokensUsed     int
	Source         string
}

// SuggestedQueries are question forms the engine answers.
var SuggestedQueries = []string{
	"How many orders shipped last week?",
	"How many orders are pending?",
	"How many shipments are in transit?",
	"Which carrier was cheapest to CA last month?",
	"What was the total shipping cost this month?",
	"What was the average shipping cost by carrier last 30 days?",
	"What is the average transit time by carrier?",
	"Top 3 carriers by shipments this year",
	"What is the average order value this week?",
}

var (
	reLastNDays = regexp.MustCompile(`\b(?:last|past|previous)\s+(\d{1,3})\s+days?\b`)
	reTopN      = regexp.MustCompile(`\btop\s+(\d{1,2})\s+carriers?\s+by\s+(shipments|volume|cost|spend|spending)\b`)
	reDest      = regexp.MustCompile(`\bto\s+([a-z]{2})\b`)
	reWhich     = regexp.MustCompile(`\bwhich\s+carrier\b.*\b(cheapest|least expensive|most expensive|fastest|slowest|most used|used most|busiest)\b`)
)

// orderStatusWords map question words to order statuses.
var orderStatusWords = []struct{ word, status string }{
	{"on hold", "on_hold"}, {"pending", "pending"}, {"confirmed", "confirmed"}, {"processing", "processing"},
	{"delivered", "delivered"}, {"cancelled", "cancelled"}, {"canceled", "cancelled"}, {"refunded", "refunded"},
}

// shipmentStatusWords map question words to shipment statuses.
var shipmentStatusWords = []struct{ word, status string }{
	{"label created", "label_created"}, {"in transit", "in_transit"}, {"out for delivery", "out_for_delivery"},
	{"delivered", "delivered"}, {"exception", "exception"}, {"pending", "pending"},
}

// Ask answers a question about the organization's data from queries: how
// many orders or shipments (by status), orders shipped, total and
// average shipping cost (by carrier), which carrier was cheapest, most
// expensive, fastest, slowest or most used (to a destination), top N
// carriers by shipments or cost, average transit time and order value,
// each in a time range the question names ("today", "yesterday", "this
// week", "last week", "this month", "last month", "this year", "last N
// days"; else the context's, else the last 30 days). A question it cannot
// answer says so with questions it can. The actor needs insights:read.
func (s *Service) Ask(ctx context.Context, actor domain.Actor, in AskInput) (Answer, error) {
	began := time.Now()
	if err := actor.RequireScope("insights:read"); err != nil {
		return Answer{}, err
	}
	var f domain.FieldErrors
	q := strings.TrimSpace(in.Query)
	switch n := utf8.RuneCountInString(in.Query); {
	case q == "":
		f.Add("query", "is required")
	case n > MaxQuery:
		f.Add("query", fmt.Sprintf("must be at most %d characters", MaxQuery))
	}
	if len(in.Context.OrderIDs) > MaxOrderIDs {
		f.Add("context.orderIds", fmt.Sprintf("must have at most %d ids", MaxOrderIDs))
	}
	if in.Context.Start != nil && in.Context.End != nil && !in.Context.End.After(*in.Context.Start) {
		f.Add("context.dateRange.end", "must be after start")
	}
	if err := f.Err(); err != nil {
		return Answer{}, err
	}
	orgID := actor.OrganizationID
	now := s.now().UTC()
	r := store.AskRange{OrderIDs: nil}
	if len(in.Context.OrderIDs) > 0 {
		r.OrderIDs = dedupe(in.Context.OrderIDs)
	}
	if in.Context.OperationID != nil {
		_, items, err := s.operation(ctx, orgID, *in.Context.OperationID)
		if err != nil {
			return Answer{}, err
		}
		ids := orderIDsOf(items)
		if r.OrderIDs != nil {
			ids = intersect(ids, r.OrderIDs)
		}
		r.OrderIDs = ids
	}
	text := strings.ToLower(strings.Join(strings.Fields(q), " "))
	var named bool
	r.Start, r.End, named = timeRange(text, now)
	if !named {
		r.Start, r.End = now.Add(-DefaultAskRange), now
		if in.Context.Start != nil {
			r.Start = *in.Context.Start
		}
		if in.Context.End != nil {
			r.End = *in.Context.End
		}
	}
	var a Answer
	err := store.InsightRead(ctx, s.store.Pool, func(db store.DBTX) error {
		var err error
		a, err = s.answer(ctx, db, orgID, text, r)
		return err
	})
	if err != nil {
		return Answer{}, err
	}
	a.Start, a.End, a.Source = r.Start, r.End, SourceRules
	if in.Context.IncludeOrders != nil && !*in.Context.IncludeOrders || a.Orders == nil {
		a.Orders = []uuid.UUID{}
	}
	a.SuggestedQueries = suggestions(text)
	a.Insights = []Insight{}
	if a.Understood {
		if a.Insights, err = s.relatedInsights(ctx, orgID, a.Facts, now); err != nil {
			return Answer{}, err
		}
	}
	if s.wording != nil && a.Understood {
		if worded, tokens, err := s.wording.Word(ctx, q, a); err == nil && strings.TrimSpace(worded) != "" {
			a.Answer, a.TokensUsed, a.Source = worded, tokens, SourceModel
		}
	}
	a.ProcessingTime = time.Since(began)
	return a, nil
}

// answer recognizes the question and computes its answer.
func (s *Service) answer(ctx context.Context, db store.DBTX, orgID uuid.UUID, text string, r store.AskRange) (Answer, error) {
	period := periodText(r)
	dest := ""
	if m := reDest.FindStringSubmatch(text); m != nil {
		dest = strings.ToUpper(m[1])
	}
	switch {
	case reWhich.MatchString(text) || reTopN.MatchString(text):
		list, err := store.AskCarriers(ctx, db, orgID, r, "", dest)
		if err != nil {
			return Answer{}, err
		}
		return carrierAnswer(text, dest, period, list), nil

	case has(text, "how many", "number of", "count") && has(text, "order") && has(text, "shipped"):
		n, ids, err := store.ShippedOrders(ctx, db, orgID, r)
		if err != nil {
			return Answer{}, err
		}
		return Answer{Understood: true, Orders: ids,
			Answer: fmt.Sprintf("%d %s shipped %s (orders with a shipment created in that time).", n, plural(n, "order was", "orders were"), period),
			Facts:  []Metric{{"Orders shipped", n}}}, nil

	case has(text, "how many", "number of", "count") && has(text, "shipment", "package", "parcel"):
		status, label := statusOf(text, shipmentStatusWords)
		list, err := store.AskCarriers(ctx, db, orgID, r, status, dest)
		if err != nil {
			return Answer{}, err
		}
		n, ids := 0, []uuid.UUID{}
		for _, c := range list {
			n += c.Shipments
			ids = append(ids, c.OrderIDs...)
		}
		return Answer{Understood: true, Orders: firstN(ids, 20),
			Answer: fmt.Sprintf("%d %s%s%s created %s.", n, plural(n, "shipment", "shipments"), label, destText(dest), period),
			Facts:  []Metric{{"Shipments", n}}}, nil

	case has(text, "how many", "number of", "count") && has(text, "order"):
		status, label := statusOf(text, orderStatusWords)
		o, err := store.AskOrders(ctx, db, orgID, r, status)
		if err != nil {
			return Answer{}, err
		}
		return Answer{Understood: true, Orders: o.IDs,
			Answer: fmt.Sprintf("%d %s%s created %s.", o.Count, plural(o.Count, "order", "orders"), label, period),
			Facts:  []Metric{{"Orders", o.Count}}}, nil

	case has(text, "order value", "order total", "revenue", "sales"):
		o, err := store.AskOrders(ctx, db, orgID, r, "")
		if err != nil {
			return Answer{}, err
		}
		if o.Count == 0 {
			return Answer{Understood: true, Answer: fmt.Sprintf("There were no orders %s.", period), Facts: []Metric{{"Orders", 0}}}, nil
		}
		cur := deref(o.Currency)
		avg := 0.0
		if o.Average != nil {
			avg = *o.Average
		}
		other := ""
		if o.CurrencyOrders < o.Count {
			other = fmt.Sprintf(" (%d orders in other currencies are not included)", o.Count-o.CurrencyOrders)
		}
		return Answer{Understood: true, Orders: o.IDs,
			Answer: fmt.Sprintf("%d orders %s totalled %.2f %s, %.2f %s on average%s.", o.CurrencyOrders, period, o.Total, cur, avg, cur, other),
			Facts:  []Metric{{"Orders", o.CurrencyOrders}, {"Total order value", round2(o.Total)}, {"Average order value", round2(avg)}, {"Currency", cur}}}, nil

	case has(text, "transit"):
		list, err := store.AskCarriers(ctx, db, orgID, r, "", dest)
		if err != nil {
			return Answer{}, err
		}
		return transitAnswer(text, dest, period, list), nil

	case has(text, "cost", "spend", "spent", "shipping", "label"):
		list, err := store.AskCarriers(ctx, db, orgID, r, "", dest)
		if err != nil {
			return Answer{}, err
		}
		return costAnswer(text, dest, period, list), nil
	}
	return Answer{Answer: "I cannot answer that question from the organization's data yet. I can count orders and shipments, sum and average shipping costs, compare carriers and give transit times and order values over a time range; try one of the suggested questions."}, nil
}

// timeRange finds a time range the question names.
func timeRange(text string, now time.Time) (time.Time, time.Time, bool) {
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	monday := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	year := time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	if m := reLastNDays.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n >= 1 {
			return now.AddDate(0, 0, -n), now, true
		}
	}
	switch {
	case has(text, "yesterday"):
		return day.AddDate(0, 0, -1), day, true
	case has(text, "today"):
		return day, now, true
	case has(text, "last week", "previous week", "past week"):
		return monday.AddDate(0, 0, -7), monday, true
	case has(text, "this week"):
		return monday, now, true
	case has(text, "last month", "previous month", "past month"):
		return month.AddDate(0, -1, 0), month, true
	case has(text, "this month"):
		return month, now, true
	case has(text, "last year", "previous year", "past year"):
		return year.AddDate(-1, 0, 0), year, true
	case has(text, "this year"):
		return year, now, true
	}
	return time.Time{}, time.Time{}, false
}

func periodText(r store.AskRange) string {
	return fmt.Sprintf("between %s and %s", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339))
}

func has(text string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

func statusOf(text string, words []struct{ word, status string }) (string, string) {
	for _, w := range words {
		if strings.Contains(text, w.word) {
			return w.status, " " + w.word
		}
	}
	return "", ""
}

func destText(dest string) string {
	if dest == "" {
		return ""
	}
	return " to " + dest
}

func firstN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func intersect(a, b []uuid.UUID) []uuid.UUID {
	out := []uuid.UUID{}
	for _, id := range a {
		if slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

func carrierOrders(list []store.CarrierFigures) []uuid.UUID {
	var ids []uuid.UUID
	for _, c := range list {
		ids = append(ids, c.OrderIDs...)
	}
	return firstN(ids, 20)
}

// carrierAnswer: which carrier was cheapest (…), top N carriers by ….
func carrierAnswer(text, dest, period string, list []store.CarrierFigures) Answer {
	if len(list) == 0 {
		return Answer{Understood: true, Answer: fmt.Sprintf("No shipments%s were created %s.", destText(dest), period), Facts: []Metric{{"Shipments", 0}}}
	}
	if m := reTopN.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		byCost := m[2] == "cost" || m[2] == "spend" || m[2] == "spending"
		sorted := slices.Clone(list)
		sort.SliceStable(sorted, func(i, j int) bool {
			if byCost {
				return sorted[i].TotalCost > sorted[j].TotalCost
			}
			return sorted[i].Shipments > sorted[j].Shipments
		})
		sorted = firstN(sorted, max(n, 1))
		parts := make([]string, len(sorted))
		facts := make([]Metric, len(sorted))
		for i, c := range sorted {
			if byCost {
				parts[i] = fmt.Sprintf("%d. %s (%.2f)", i+1, carrierName(c.Carrier), c.TotalCost)
				facts[i] = Metric{carrierName(c.Carrier), round2(c.TotalCost)}
			} else {
				parts[i] = fmt.Sprintf("%d. %s (%d shipments)", i+1, carrierName(c.Carrier), c.Shipments)
				facts[i] = Metric{carrierName(c.Carrier), c.Shipments}
			}
		}
		what := "shipments"
		if byCost {
			what = "shipping cost"
		}
		return Answer{Understood: true, Orders: carrierOrders(sorted), Facts: facts,
			Answer: fmt.Sprintf("Top %d %s by %s%s %s: %s.", len(sorted), plural(len(sorted), "carrier", "carriers"), what, destText(dest), period, strings.Join(parts, "; "))}
	}
	m := reWhich.FindStringSubmatch(text)
	kind := m[1]
	type cand struct {
		c store.CarrierFigures
		v float64
	}
	var cands []cand
	for _, c := range list {
		switch kind {
		case "cheapest", "least expensive", "most expensive":
			if c.AverageCost != nil {
				cands = append(cands, cand{c, *c.AverageCost})
			}
		case "fastest", "slowest":
			if c.AverageTransitDays != nil {
				cands = append(cands, cand{c, *c.AverageTransitDays})
			}
		default:
			cands = append(cands, cand{c, float64(c.Shipments)})
		}
	}
	if len(cands) == 0 {
		return Answer{Understood: true, Answer: fmt.Sprintf("No shipment%s %s has the figures to compare carriers.", destText(dest), period)}
	}
	descending := kind == "most expensive" || kind == "slowest" || kind == "most used" || kind == "used most" || kind == "busiest"
	sort.SliceStable(cands, func(i, j int) bool {
		if descending {
			return cands[i].v > cands[j].v
		}
		return cands[i].v < cands[j].v
	})
	best := cands[0]
	var detail string
	var facts []Metric
	switch kind {
	case "fastest", "slowest":
		detail = fmt.Sprintf("%.1f days in transit on average over %d delivered shipments", best.v, best.c.Delivered)
		facts = []Metric{{"Carrier", carrierName(best.c.Carrier)}, {"Average transit days", round2(best.v)}, {"Delivered shipments", best.c.Delivered}}
	case "cheapest", "least expensive", "most expensive":
		detail = fmt.Sprintf("%.2f per label on average over %d shipments", best.v, best.c.Priced)
		facts = []Metric{{"Carrier", carrierName(best.c.Carrier)}, {"Average label cost", round2(best.v)}, {"Shipments", best.c.Priced}}
	default:
		detail = fmt.Sprintf("%d shipments", best.c.Shipments)
		facts = []Metric{{"Carrier", carrierName(best.c.Carrier)}, {"Shipments", best.c.Shipments}}
	}
	others := make([]string, 0, len(cands)-1)
	for _, c := range cands[1:] {
		others = append(others, fmt.Sprintf("%s %.2f", carrierName(c.c.Carrier), c.v))
	}
	tail := ""
	if len(others) > 0 {
		tail = " Others: " + strings.Join(others, ", ") + "."
	}
	return Answer{Understood: true, Orders: firstN(best.c.OrderIDs, 20), Facts: facts,
		Answer: fmt.Sprintf("%s was the %s carrier%s %s: %s.%s", carrierName(best.c.Carrier), kind, destText(dest), period, detail, tail)}
}

// costAnswer: total or average shipping cost, by carrier when asked.
func costAnswer(text, dest, period string, list []store.CarrierFigures) Answer {
	var total float64
	var priced int
	for _, c := range list {
		total += c.TotalCost
		priced += c.Priced
	}
	avg := 0.0
	if priced > 0 {
		avg = total / float64(priced)
	}
	average := has(text, "average", "avg", "mean", "per label", "per shipment", "per package")
	facts := []Metric{{"Shipments with a label cost", priced}, {"Total shipping cost", round2(total)}, {"Average label cost", round2(avg)}}
	var b strings.Builder
	if average {
		fmt.Fprintf(&b, "The average label cost%s %s was %.2f over %d shipments.", destText(dest), period, avg, priced)
	} else {
		fmt.Fprintf(&b, "The total shipping cost%s %s was %.2f over %d shipments.", destText(dest), period, total, priced)
	}
	if has(text, "by carrier", "per carrier", "each carrier") {
		for _, c := range list {
			if average && c.AverageCost != nil {
				fmt.Fprintf(&b, " %s: %.2f.", carrierName(c.Carrier), *c.AverageCost)
				facts = append(facts, Metric{carrierName(c.Carrier), round2(*c.AverageCost)})
			} else if !average {
				fmt.Fprintf(&b, " %s: %.2f.", carrierName(c.Carrier), c.TotalCost)
				facts = append(facts, Metric{carrierName(c.Carrier), round2(c.TotalCost)})
			}
		}
	}
	return Answer{Understood: true, Orders: carrierOrders(list), Facts: facts, Answer: b.String()}
}

// transitAnswer: the average days from label creation to delivery, by
// carrier when asked.
func transitAnswer(text, dest, period string, list []store.CarrierFigures) Answer {
	var days float64
	var delivered int
	for _, c := range list {
		if c.AverageTransitDays != nil {
			days += *c.AverageTransitDays * float64(c.Delivered)
			delivered += c.Delivered
		}
	}
	if delivered == 0 {
		return Answer{Understood: true, Answer: fmt.Sprintf("No shipment%s created %s has been delivered yet.", destText(dest), period), Facts: []Metric{{"Delivered shipments", 0}}}
	}
	avg := days / float64(delivered)
	facts := []Metric{{"Delivered shipments", delivered}, {"Average transit days", round2(avg)}}
	var b strings.Builder
	fmt.Fprintf(&b, "Shipments%s created %s took %.1f days from label to delivery on average (%d delivered).", destText(dest), period, avg, delivered)
	if has(text, "by carrier", "per carrier", "each carrier") {
		for _, c := range list {
			if c.AverageTransitDays != nil {
				fmt.Fprintf(&b, " %s: %.1f days.", carrierName(c.Carrier), *c.AverageTransitDays)
				facts = append(facts, Metric{carrierName(c.Carrier), round2(*c.AverageTransitDays)})
			}
		}
	}
	return Answer{Understood: true, Orders: carrierOrders(list), Facts: facts, Answer: b.String()}
}

// suggestions are three question forms, the ones sharing a word with the
// question first.
func suggestions(text string) []string {
	out := make([]string, 0, 3)
	for _, q := range SuggestedQueries {
		for _, w := range []string{"order", "shipment", "carrier", "cost", "transit"} {
			if strings.Contains(text, w) && strings.Contains(strings.ToLower(q), w) && !slices.Contains(out, q) {
				out = append(out, q)
				break
			}
		}
		if len(out) == 3 {
			return out
		}
	}
	for _, q := range SuggestedQueries {
		if len(out) == 3 {
			break
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// relatedInsights are up to 5 stored, unexpired insights whose tags name
// a carrier the answer states.
func (s *Service) relatedInsights(ctx context.Context, orgID uuid.UUID, facts []Metric, now time.Time) ([]Insight, error) {
	var carriers []string
	for _, f := range facts {
		if v, ok := f.Value.(string); ok && f.Label == "Carrier" {
			carriers = append(carriers, strings.ReplaceAll(strings.ToLower(v), " ", "_"))
		}
	}
	if len(carriers) == 0 {
		return []Insight{}, nil
	}
	rows, _, err := store.ListInsights(ctx, s.store.Pool, orgID, store.InsightFilter{Now: now, Limit: 100})
	if err != nil {
		return nil, err
	}
	out := []Insight{}
	for _, r := range rows {
		if len(out) == 5 {
			break
		}
		for _, t := range r.Tags {
			if slices.Contains(carriers, t) {
				out = append(out, fromStore(r))
				break
			}
		}
	}
	return out, nil
}
