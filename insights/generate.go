package insights

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Generation scopes (spec Part 3).
const (
	ScopeOperation    = "operation"
	ScopeOrganization = "organization"
	ScopeOrders       = "orders"
)

// Scopes lists the generation scopes.
var Scopes = []string{ScopeOperation, ScopeOrganization, ScopeOrders}

// MaxOrderIDs bounds orderIds of a request (generate, ask).
const MaxOrderIDs = 1000

// GenerateInput is POST /insights/generate.
type GenerateInput struct {
	// Scope: operation (default; organization-wide without OperationID),
	// organization, or orders (OrderIDs required).
	Scope       string
	OperationID *uuid.UUID
	OrderIDs    []uuid.UUID
	// Types keeps the detectors of these categories (none: all).
	Types []string
}

// Validate checks the input.
func (in GenerateInput) Validate() error {
	var f domain.FieldErrors
	if in.Scope != "" && !slices.Contains(Scopes, in.Scope) {
		f.Add("scope", "must be one of operation, organization, orders")
	}
	if in.Scope == ScopeOrders && len(in.OrderIDs) == 0 {
		f.Add("orderIds", "is required with scope orders")
	}
	if in.Scope == ScopeOrganization && in.OperationID != nil {
		f.Add("operationId", "is not allowed with scope organization")
	}
	if in.Scope == ScopeOrders && in.OperationID != nil {
		f.Add("operationId", "is not allowed with scope orders")
	}
	if len(in.OrderIDs) > MaxOrderIDs {
		f.Add("orderIds", fmt.Sprintf("must have at most %d ids", MaxOrderIDs))
	}
	for i, t := range in.Types {
		if !slices.Contains(Categories, t) {
			f.Add(fmt.Sprintf("types[%d]", i), "must be one of "+strings.Join(Categories, ", "))
		}
	}
	return f.Err()
}

// GenerateResult is what a generation found and stored.
type GenerateResult struct {
	Insights    []Insight
	GeneratedAt time.Time
	ExpiresAt   time.Time
}

// Generate runs the detectors over the scope, stores what they found and
// answers it. The actor needs insights:write.
func (s *Service) Generate(ctx context.Context, actor domain.Actor, in GenerateInput) (GenerateResult, error) {
	if err := actor.RequireScope("insights:write"); err != nil {
		return GenerateResult{}, err
	}
	if err := in.Validate(); err != nil {
		return GenerateResult{}, err
	}
	orgID := actor.OrganizationID
	now := s.now().UTC().Truncate(time.Microsecond)
	env := detectEnv{orgID: orgID, scope: store.InsightScope{Now: now}}
	scopeKey := "org"
	switch {
	case in.OperationID != nil:
		op, items, err := s.operation(ctx, orgID, *in.OperationID)
		if err != nil {
			return GenerateResult{}, err
		}
		env.operation, env.items = &op, items
		env.scope.OrderIDs = orderIDsOf(items)
		scopeKey = "operation:" + op.ID.String()
	case in.Scope == ScopeOrders:
		env.scope.OrderIDs = dedupe(in.OrderIDs)
		scopeKey = "orders:" + idsKey(env.scope.OrderIDs)
	}
	types := slices.Clone(in.Types)
	slices.Sort(types)
	key := orgID.String() + "|" + scopeKey + "|" + strings.Join(slices.Compact(types), ",")
	res, err, _ := s.flight.Do(key, func() (any, error) {
		// The run is shared: it must not end with the first caller.
		runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return s.generate(runCtx, env, in.Types, scopeKey, now)
	})
	if err != nil {
		return GenerateResult{}, err
	}
	return res.(GenerateResult), nil
}

// generate runs the detectors and stores their findings.
func (s *Service) generate(ctx context.Context, env detectEnv, types []string, scopeKey string, now time.Time) (GenerateResult, error) {
	orgID := env.orgID
	drafts, err := s.detect(ctx, env, types)
	if err != nil {
		return GenerateResult{}, err
	}
	rows := make([]store.Insight, 0, len(drafts))
	seen := map[string]bool{}
	for _, d := range drafts {
		fp := d.Detector + ":" + d.Subject + "@" + scopeKey
		if seen[fp] {
			continue
		}
		seen[fp] = true
		metrics, _ := json.Marshal(nonNilSlice(d.Metrics))
		actions, _ := json.Marshal(nonNilSlice(d.Actions))
		r := store.Insight{ID: uuid.New(), OrganizationID: orgID, Fingerprint: fp, Detector: d.Detector, Category: d.Category,
			Severity: d.Severity, Title: d.Title, Summary: d.Summary, Metrics: metrics, Actions: actions,
			Confidence: round3(d.Confidence), Tags: d.Tags, Source: SourceRules, DetectedAt: now, ExpiresAt: now.Add(Lifetime)}
		if env.operation != nil {
			id := env.operation.ID
			r.OperationID = &id
		}
		rows = append(rows, r)
	}
	if _, err := store.DeleteExpiredInsights(ctx, s.store.Pool, orgID, now); err != nil {
		return GenerateResult{}, err
	}
	stored, err := store.UpsertInsights(ctx, s.store.Pool, orgID, rows)
	if err != nil {
		return GenerateResult{}, err
	}
	out := GenerateResult{Insights: make([]Insight, 0, len(stored)), GeneratedAt: now, ExpiresAt: now.Add(Lifetime)}
	for _, r := range stored {
		out.Insights = append(out.Insights, fromStore(r))
	}
	return out, nil
}

// detectorStartOrder is the order detect starts the detectors in: the
// longest first, so the short ones run beside the long ones instead of
// after them. On 100,000 orders (BenchmarkDetectorStatements, each alone,
// at load ~12 on 2 cores): late_shipments ~150 ms, cost_anomaly ~100,
// weight_anomaly ~70, cheaper_quotes ~50, stuck_orders ~50, the rest under
// 20.
var detectorStartOrder = func() []int {
	first := []string{"late_shipments", "cost_anomaly", "weight_anomaly", "cheaper_quotes", "stuck_orders"}
	order := make([]int, 0, len(detectors))
	for _, name := range first {
		if i := slices.IndexFunc(detectors, func(d detector) bool { return d.name == name }); i >= 0 {
			order = append(order, i)
		}
	}
	for i := range detectors {
		if !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	return order
}()

// detect runs the detectors of the categories (none: all), a few at a
// time (the longest first, detectorStartOrder), and answers their findings
// in the detectors' order.
func (s *Service) detect(ctx context.Context, env detectEnv, categories []string) ([]Draft, error) {
	results := make([][]Draft, len(detectors))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel)
	for _, i := range detectorStartOrder {
		d := detectors[i]
		if len(categories) > 0 && !slices.Contains(categories, d.category) {
			continue
		}
		g.Go(func() error {
			err := store.InsightRead(gctx, s.store.Pool, func(db store.DBTX) error {
				e := env
				e.db = db
				found, err := d.run(gctx, e)
				results[i] = found
				return err
			})
			if err != nil {
				return fmt.Errorf("insights detector %s: %w", d.name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, err
	}
	var out []Draft
	for _, r := range results {
		out = append(out, r...)
	}
	return out, nil
}

func orderIDsOf(items []store.OperationItemRef) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.OrderID)
	}
	return dedupe(ids)
}

func dedupe(ids []uuid.UUID) []uuid.UUID {
	out := slices.Clone(ids)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return slices.Compact(out)
}

// idsKey is a short stable key of a sorted id set.
func idsKey(ids []uuid.UUID) string {
	h := sha256.New()
	for _, id := range ids {
		h.Write(id[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func round3(v float64) float64 { return float64(int(v*1000+0.5)) / 1000 }

// ListInput filters GET /insights.
type ListInput struct {
	Status, Category string
	Limit, Offset    int
}

// List lists the organization's stored, unexpired insights, newest
// first. The actor needs insights:read.
func (s *Service) List(ctx context.Context, actor domain.Actor, in ListInput) ([]Insight, int, error) {
	if err := actor.RequireScope("insights:read"); err != nil {
		return nil, 0, err
	}
	var f domain.FieldErrors
	if in.Status != "" && !slices.Contains(Statuses, in.Status) {
		f.Add("status", "must be one of "+strings.Join(Statuses, ", "))
	}
	if in.Category != "" && !slices.Contains(Categories, in.Category) {
		f.Add("category", "must be one of "+strings.Join(Categories, ", "))
	}
	if err := f.Err(); err != nil {
		return nil, 0, err
	}
	rows, total, err := store.ListInsights(ctx, s.store.Pool, actor.OrganizationID, store.InsightFilter{
		Status: in.Status, Category: in.Category, Now: s.now(), Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Insight, 0, len(rows))
	for _, r := range rows {
		out = append(out, fromStore(r))
	}
	return out, total, nil
}

// Acknowledge actions (spec Part 3) and the status each leads to.
var ackStatus = map[string]string{
	"acknowledge": store.InsightAcknowledged,
	"resolve":     store.InsightResolved,
	"dismiss":     store.InsightDismissed,
}

// AckActions lists the acknowledge actions.
var AckActions = []string{"acknowledge", "resolve", "dismiss"}

// MaxNote bounds an acknowledgement's note.
const MaxNote = 500

// AcknowledgeInput is POST /insights/:id/acknowledge.
type AcknowledgeInput struct {
	InsightID uuid.UUID
	// Action: acknowledge (default), resolve or dismiss.
	Action string
	Note   *string
}

// Acknowledgement is the answer of Acknowledge.
type Acknowledgement struct {
	InsightID      uuid.UUID
	Action         string
	Status         string
	AcknowledgedAt time.Time
	Note           *string
}

// Acknowledge moves an unexpired insight of the organization to the
// action's status: a new insight to any; an acknowledged one to resolved
// or dismissed (or acknowledged again); a resolved or dismissed one only
// to the same status again (409 otherwise). An expired insight is gone
// (410); one of another organization is not found. The actor needs
// insights:write.
func (s *Service) Acknowledge(ctx context.Context, actor domain.Actor, in AcknowledgeInput) (Acknowledgement, error) {
	if err := actor.RequireScope("insights:write"); err != nil {
		return Acknowledgement{}, err
	}
	if in.Action == "" {
		in.Action = "acknowledge"
	}
	var f domain.FieldErrors
	status, ok := ackStatus[in.Action]
	if !ok {
		f.Add("action", "must be one of acknowledge, resolve, dismiss")
	}
	if in.Note != nil {
		f.MaxLen("note", *in.Note, MaxNote)
	}
	if err := f.Err(); err != nil {
		return Acknowledgement{}, err
	}
	orgID := actor.OrganizationID
	cur, err := store.InsightByID(ctx, s.store.Pool, orgID, in.InsightID)
	if errors.Is(err, store.ErrNotFound) {
		return Acknowledgement{}, domain.NotFound("insight")
	}
	if err != nil {
		return Acknowledgement{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	if !cur.ExpiresAt.After(now) {
		return Acknowledgement{}, domain.Gone("the insight has expired; generate insights again")
	}
	from := allowedFrom(status)
	if !slices.Contains(from, cur.Status) {
		return Acknowledgement{}, domain.Conflict(fmt.Sprintf("the insight is %s; it cannot be moved to %s", cur.Status, status))
	}
	kind, id, name := actor.Attribution()
	by, _ := json.Marshal(map[string]any{"type": kind, "id": id, "name": name})
	row, err := store.SetInsightStatus(ctx, s.store.Pool, orgID, in.InsightID, from, status, by, in.Note, now)
	if errors.Is(err, store.ErrNotFound) {
		// Changed or expired between the read and the write.
		return Acknowledgement{}, domain.Conflict("the insight changed meanwhile; read it again")
	}
	if err != nil {
		return Acknowledgement{}, err
	}
	return Acknowledgement{InsightID: row.ID, Action: in.Action, Status: row.Status, AcknowledgedAt: *row.AcknowledgedAt, Note: row.Note}, nil
}

// allowedFrom is the statuses an insight may move to status from.
func allowedFrom(status string) []string {
	switch status {
	case store.InsightAcknowledged:
		return []string{store.InsightNew, store.InsightAcknowledged}
	case store.InsightResolved:
		return []string{store.InsightNew, store.InsightAcknowledged, store.InsightResolved}
	default: // dismissed
		return []string{store.InsightNew, store.InsightAcknowledged, store.InsightDismissed}
	}
}
