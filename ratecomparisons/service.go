// Package ratecomparisons holds the rate comparisons domain: an upload of
// shipped tracking numbers (with what they cost) rated again with another
// carrier account, item by item, by the RateComparison workflow on the bulk
// task queue (behind the Runs port; its Temporal adapter is
// worker.TemporalRateComparisons). The API's handlers call the Service;
// api/rate_comparisons.go documents the resources and the decisions where
// the specification is silent.
package ratecomparisons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Scopes of rate comparisons (Part 1).
const (
	ScopeRead  = "rate-compare:read"
	ScopeWrite = "rate-compare:write"
)

// The domain's model (store rows).
type (
	Comparison = store.RateComparison
	Item       = store.RateComparisonItem
	Summary    = store.RateSummary
	ItemFilter = store.RateComparisonItemFilter
)

// Statuses of a comparison and of an item.
var (
	Statuses     = store.RateComparisonStatuses
	ItemStatuses = store.RateComparisonItemStatuses
)

// Bounds the specification leaves open.
const (
	MaxItems      = store.RateComparisonMaxItems
	MaxNetCost    = 1_000_000
	MaxServiceLen = 100
	MaxFilterLen  = 100
	// MaxDetails caps the field errors of one refusal (a 10,000-item
	// upload could name 10,000 problems).
	MaxDetails = 100
)

// Run is a comparison's workflow to start.
type Run struct {
	OrganizationID uuid.UUID
	ComparisonID   uuid.UUID
	WorkflowID     string
	RequestedBy    domain.Actor
}

// Runs runs the comparisons' workflows. Start's error is a domain error:
// unavailable and domain.ErrRunMayExist when the run may exist;
// otherwise nothing runs.
type Runs interface {
	// WorkflowID is the comparison's stable workflow id.
	WorkflowID(comparisonID uuid.UUID) string
	Start(ctx context.Context, in Run) error
	// Cancel asks the comparison's run to stop (none running is fine).
	Cancel(ctx context.Context, comparisonID uuid.UUID) error
}

// Deps are the Service's dependencies.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	// Runs runs the workflows; nil: processing answers that workflows are
	// unavailable.
	Runs Runs
}

// Service is the rate comparisons domain's operations.
type Service struct {
	store *store.Store
	log   *slog.Logger
	runs  Runs
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{store: d.Store, log: log, runs: d.Runs}
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("rate comparison")
	}
	return err
}

// NewItem is an uploaded item; nil is missing.
type NewItem struct {
	TrackingNumber *string
	NetCost        *float64
	ServiceType    *string
}

// CreateInput creates a comparison; nil is missing.
type CreateInput struct {
	Name             *string
	CarrierAccountID *string
	SourceCarrier    *string
	Items            []NewItem
}

// Create creates a draft comparison rated with an active carrier account
// of the organization that supports rating. A tracking number may appear
// once (trimmed, compared case-insensitively). The actor needs
// rate-compare:write.
func (s *Service) Create(ctx context.Context, actor domain.Actor, in CreateInput) (Comparison, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Comparison{}, err
	}
	var v domain.FieldErrors
	name := strings.TrimSpace(deref(in.Name))
	if v.Required("name", in.Name) {
		if n := len([]rune(name)); n > 255 {
			v.Add("name", "must be 1-255 characters")
		}
	}
	var accountID uuid.UUID
	if v.Required("carrierAccountId", in.CarrierAccountID) {
		id, err := uuid.Parse(strings.TrimSpace(*in.CarrierAccountID))
		if err != nil {
			v.Add("carrierAccountId", "must be a UUID")
		}
		accountID = id
	}
	if v.Required("sourceCarrier", in.SourceCarrier) {
		if c := *in.SourceCarrier; c != carriers.CarrierA && c != carriers.CarrierB {
			v.Add("sourceCarrier", "must be one of "+carriers.CarrierA+", "+carriers.CarrierB)
		}
	}
	items := parseItems(&v, in.Items)
	if err := v.Err(); err != nil {
		return Comparison{}, err
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, actor.OrganizationID, accountID)
	if errors.Is(err, store.ErrNotFound) {
		return Comparison{}, domain.NotFound("carrier account")
	}
	if err != nil {
		return Comparison{}, err
	}
	if acct.Status != store.CarrierAccountActive || !acct.SupportsRating {
		return Comparison{}, domain.InvalidField("carrierAccountId", "must be an active carrier account that supports rating")
	}
	c, err := store.CreateRateComparison(ctx, s.store.Pool, store.RateComparison{
		ID: uuid.New(), OrganizationID: actor.OrganizationID, Name: name, CarrierAccountID: &acct.ID, Carrier: acct.Carrier,
		SourceCarrier: *in.SourceCarrier,
	}, items)
	if errors.Is(err, store.ErrConflict) {
		// Duplicates were refused above; only a race with another spelling
		// of the same number reaches this.
		return Comparison{}, domain.InvalidField("items", "contains the same tracking number twice")
	}
	return c, err
}

// parseItems validates the items, naming at most MaxDetails problems (and
// how many more there are).
func parseItems(v *domain.FieldErrors, in []NewItem) []store.NewRateComparisonItem {
	switch {
	case in == nil:
		v.Add("items", "is required")
		return nil
	case len(in) < 1 || len(in) > MaxItems:
		v.Add("items", fmt.Sprintf("must have 1-%d items", MaxItems))
		return nil
	}
	var details domain.FieldErrors
	out := make([]store.NewRateComparisonItem, len(in))
	seen := make(map[string]int, len(in))
	for i, it := range in {
		field := fmt.Sprintf("items[%d]", i)
		number := strings.TrimSpace(deref(it.TrackingNumber))
		switch n := len([]rune(number)); {
		case n == 0:
			details.Add(field+".trackingNumber", "is required")
		case n > 100:
			details.Add(field+".trackingNumber", "must be 1-100 characters")
		default:
			key := strings.ToUpper(number)
			if j, dup := seen[key]; dup {
				details.Add(field+".trackingNumber", fmt.Sprintf("duplicates items[%d].trackingNumber", j))
			} else {
				seen[key] = i
			}
		}
		out[i].TrackingNumber = number
		if it.NetCost != nil {
			c := *it.NetCost
			if math.IsNaN(c) || c < 0 || c > MaxNetCost {
				details.Add(field+".netCost", fmt.Sprintf("must be a number from 0 to %d", MaxNetCost))
			}
			c = math.Round(c*100) / 100
			out[i].NetCost = &c
		}
		if it.ServiceType != nil {
			svc := strings.TrimSpace(*it.ServiceType)
			if len([]rune(svc)) > MaxServiceLen {
				details.Add(field+".serviceType", fmt.Sprintf("must be at most %d characters", MaxServiceLen))
			}
			if svc != "" {
				out[i].ServiceType = &svc
			}
		}
	}
	if len(details) > MaxDetails {
		more := len(details) - MaxDetails
		details = append(details[:MaxDetails], domain.FieldError{Field: "items", Message: fmt.Sprintf("has %d more problems", more)})
	}
	*v = append(*v, details...)
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The summary's parts.
type (
	SummaryTotals  = store.RateSummaryTotals
	SummaryZone    = store.RateSummaryZone
	SummaryService = store.RateSummaryService
)
