// Package insights holds the insights domain (spec Part 3, CONTRACT 11):
// findings computed from the organization's own data — orders,
// shipments, rate snapshots and comparisons, tracking checkpoints,
// dispatch assignments, task executions and operations — never from a
// template or a random generator.
//
// Each detector (detectors.go) is one small function over one store
// aggregate (store/insight_queries.go: SQL that aggregates on indexes, not
// Go loops over rows) that turns the numbers into insights with metrics,
// a confidence and actions whose command is the API call that acts on it.
// Generate runs them and stores what they found (one row per finding,
// refreshed on every run, 24 h of life); the question engine (ask.go)
// answers plain questions from queries; carrier performance and operation
// insights are aggregates of their own.
//
// Generation is answered within the request (a handful of aggregate
// statements, well under a second), so it is not a workflow (CONTRACT 5
// names no insights job).
package insights

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Categories of insights (spec Part 3).
const (
	CategoryAnomaly        = "anomaly"
	CategoryOptimization   = "optimization"
	CategoryPrediction     = "prediction"
	CategoryTrend          = "trend"
	CategoryAlert          = "alert"
	CategoryRecommendation = "recommendation"
)

// Categories lists every category.
var Categories = []string{CategoryAnomaly, CategoryOptimization, CategoryPrediction, CategoryTrend, CategoryAlert, CategoryRecommendation}

// Severities (CONTRACT 11).
const (
	SeverityInfo     = "info"
	SeverityLow      = "low"
	SeverityMedium   = "medium"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// Statuses (CONTRACT 11).
var Statuses = []string{store.InsightNew, store.InsightAcknowledged, store.InsightResolved, store.InsightDismissed}

// SourceRules marks an insight computed from data; SourceModel one a model
// worded.
const (
	SourceRules = "rules"
	SourceModel = "model"
)

// Lifetime is how long a generated insight lives (CONTRACT 11).
const Lifetime = 24 * time.Hour

// Metric is one figure of an insight.
type Metric struct {
	Label string `json:"label"`
	Value any    `json:"value"`
}

// Action is a suggested next step: Type "api" (Command is the method and
// path, with a JSON body when it needs one) or "agent" (Command is the
// agent command that does it).
type Action struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Type    string `json:"type"`
	Command string `json:"command"`
}

// Insight is an insight as the domain shows it.
type Insight struct {
	ID          uuid.UUID
	Category    string
	Severity    string
	Status      string
	Title       string
	Summary     string
	Metrics     []Metric
	Actions     []Action
	Confidence  float64
	Tags        []string
	DetectedAt  time.Time
	ExpiresAt   time.Time
	Source      string
	Detector    string
	OperationID *uuid.UUID
	// AcknowledgedAt and Note: the last acknowledgement.
	AcknowledgedAt *time.Time
	Note           *string
}

// OperationSource is the port through which the insights read an
// operation and its items; the operations area implements it. Operation
// answers domain.NotFound for an operation that is not the organization's.
type OperationSource interface {
	Operation(ctx context.Context, orgID, operationID uuid.UUID) (OperationRef, []store.OperationItemRef, error)
}

// StoreOperations reads operations from the operations area's tables
// (store.OperationItemRefs): the OperationSource the service runs with.
type StoreOperations struct{ Store *store.Store }

// Operation implements OperationSource.
func (o StoreOperations) Operation(ctx context.Context, orgID, operationID uuid.UUID) (OperationRef, []store.OperationItemRef, error) {
	name, items, err := store.OperationItemRefs(ctx, o.Store.Pool, orgID, operationID)
	if errors.Is(err, store.ErrNotFound) {
		return OperationRef{}, nil, domain.NotFound("operation")
	}
	if err != nil {
		return OperationRef{}, nil, err
	}
	return OperationRef{ID: operationID, Name: name}, items, nil
}

// OperationRef names an operation.
type OperationRef struct {
	ID   uuid.UUID
	Name string
}

// Wording is an optional model that words the answer of a question from
// the facts the question engine computed (CONTRACT 9: a model only words
// the answer). It answers the text and the tokens it used.
type Wording interface {
	Word(ctx context.Context, question string, facts Answer) (text string, tokens int, err error)
}

// Deps are the Service's dependencies.
type Deps struct {
	Store *store.Store
	// Operations reads operations; nil: no operation is found.
	Operations OperationSource
	// Wording words answers; nil: the engine's own deterministic text.
	Wording Wording
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Parallel bounds how many detector statements run at once (0: the
	// cores this process may use, 2 to 4: the statements are CPU work of
	// the database, and more of them than cores only queue; measured on 2
	// cores, 3 at once gave generate p50 310 ms / p99 592 ms, 2 gave 257 /
	// 511 ms).
	Parallel int
}

// Service is the insights domain's operations.
type Service struct {
	store      *store.Store
	operations OperationSource
	wording    Wording
	now        func() time.Time
	parallel   int
	// flight shares one run among concurrent identical generations of an
	// organization (a flood of generate calls runs the detectors once).
	flight singleflight.Group
}

// New builds the Service.
func New(d Deps) *Service {
	s := &Service{store: d.Store, operations: d.Operations, wording: d.Wording, now: d.Now, parallel: d.Parallel}
	if s.now == nil {
		s.now = time.Now
	}
	if s.parallel <= 0 {
		s.parallel = min(max(runtime.GOMAXPROCS(0), 2), 4)
	}
	return s
}

// operation reads an operation through the port; none configured: not
// found.
func (s *Service) operation(ctx context.Context, orgID, id uuid.UUID) (OperationRef, []store.OperationItemRef, error) {
	if s.operations == nil {
		return OperationRef{}, nil, domain.NotFound("operation")
	}
	return s.operations.Operation(ctx, orgID, id)
}

func fromStore(r store.Insight) Insight {
	in := Insight{ID: r.ID, Category: r.Category, Severity: r.Severity, Status: r.Status, Title: r.Title, Summary: r.Summary,
		Confidence: r.Confidence, Tags: r.Tags, DetectedAt: r.DetectedAt, ExpiresAt: r.ExpiresAt, Source: r.Source,
		Detector: r.Detector, OperationID: r.OperationID, AcknowledgedAt: r.AcknowledgedAt, Note: r.Note}
	_ = json.Unmarshal(r.Metrics, &in.Metrics)
	_ = json.Unmarshal(r.Actions, &in.Actions)
	if in.Metrics == nil {
		in.Metrics = []Metric{}
	}
	if in.Actions == nil {
		in.Actions = []Action{}
	}
	if in.Tags == nil {
		in.Tags = []string{}
	}
	return in
}
