package api

// Rate comparisons (spec Part 1, "Rate comparisons"; scopes
// rate-compare:read / rate-compare:write). The specification leaves the
// response bodies open; they are:
//
// Comparison object (every endpoint that answers {data: comparison}):
//
//	{id, organizationId, name, carrierAccountId (null once the account is
//	 deleted), carrier (that account's carrier), sourceCarrier, status
//	 (draft|processing|completed|failed|cancelled), totalItems, pendingItems
//	 (not finished yet: pending, tracking or rating), completedItems,
//	 failedItems, skippedItems, progress (0-100, finished / total),
//	 totalNetCost (net cost of completed items that have one), totalQuotedCost
//	 (quotes of completed items), totalSavings (Σ netCost - quotedPrice over
//	 completed items with a net cost), savingsPercent (totalSavings /
//	 totalNetCost * 100, 2 decimals; null without net cost), error (why it
//	 failed, else null), workflowId, startedAt, completedAt, createdAt,
//	 updatedAt}
//
// The counters and money totals are updated by every batch of the workflow
// (one SQL statement per batch), so polling GET /{id} shows the progress.
//
// Item object (GET /{id}/items):
//
//	{id, comparisonId, position (1-based upload order), trackingNumber,
//	 status (pending|tracking|rating|completed|failed|skipped), netCost,
//	 serviceType (the source service: as uploaded, else as tracked),
//	 serviceLevel (ground|3_day|2_day|overnight|international_economy|
//	 international_priority), origin {city, state, zip, country} | null,
//	 destination {…} | null, weight {value, unit} | null, zone, quotedService
//	 (the target carrier's service code), quotedServiceName, quotedPrice,
//	 currency, transitDays, savings (netCost - quotedPrice; null without a
//	 net cost), error, createdAt, updatedAt}
//
// Summary (GET /{id}/summary), one GROUP BY GROUPING SETS query:
//
//	{data: {comparisonId, status,
//	  totals: {items, pending, completed, failed, skipped, netCost, quotedCost, savings, savingsPercent},
//	  byZone: [{zone, items, netCost, quotedCost, savings, savingsPercent}],
//	  byService: [{serviceType, serviceLevel, quotedService, items, netCost, quotedCost, savings, savingsPercent}]}}
//
// byZone and byService cover completed items (zones in numeric order,
// services by item count); money in the groups follows the totals' rules.
//
// Decisions where the specification is silent:
//
//   - carrierAccountId must name an account of the organization (else 404
//     not_found) that is active and supports rating (else 400
//     validation_error on carrierAccountId).
//   - A tracking number may appear once per comparison (trimmed, compared
//     case-insensitively): a duplicate is 400 validation_error naming both
//     positions. netCost, when given, is 0-1,000,000 and kept to the cent.
//   - POST /{id}/process moves draft → processing, or failed → processing to
//     finish the items that did not finish (pending, tracking, rating);
//     completed and failed items are kept. Any other status is 409. The
//     items are tracked with the comparison's own account when it is of
//     sourceCarrier, else with the organization's oldest active account of
//     sourceCarrier; none is 400 no_active_carrier_account, as is a target
//     account that is no longer active. 202 {data: comparison} at once.
//   - Tracking: a number the source carrier does not know (the sandbox:
//     ending in 0000) makes the item failed ("tracking number unknown to
//     …"). Skipped means "not processed because the comparison was
//     cancelled".
//   - Service mapping: the uploaded serviceType (a carrier service code of
//     any carrier, a level name such as "ground", "2-day", "overnight", or a
//     service name) else the tracked service gives a service level; the
//     target carrier's comparable service for that level is quoted
//     (unknown: ground).
//   - A comparison ends completed, or failed when every item failed
//     (error "every item failed") or when it cannot go on: its account
//     deleted or inactive, credentials refused, a carrier still unavailable
//     after Temporal's retries of a batch. The error says why; unfinished
//     items stay pending for a later process. A carrier failure worth
//     retrying never fails an item by itself.
//   - POST /{id}/cancel (extension; the spec lists status cancelled but no
//     endpoint): processing → cancelled at once, unfinished items skipped,
//     the workflow cancelled; 200 {data: comparison}; another status 409.
//   - DELETE /{id} of a processing comparison cancels its workflow first
//     (best effort: the workflow also stops by itself at its next batch when
//     it finds the comparison gone), then deletes; {success: true}.
//   - Items list: search matches tracking numbers containing the text
//     (case-insensitive); zone and serviceType match exactly.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// Bounds the specification leaves open.
const (
	rateComparisonMaxNetCost    = 1_000_000
	rateComparisonMaxServiceLen = 100
	rateComparisonMaxFilterLen  = 100
	// rateComparisonMaxDetails caps the field errors of one response (a
	// 10,000-item upload could name 10,000 problems).
	rateComparisonMaxDetails = 100
)

// mountRateComparisons registers the rate comparison endpoints.
func (s *Server) mountRateComparisons(r chi.Router) {
	read := r.With(s.scope("rate-compare:read"))
	write := r.With(s.scope("rate-compare:write"))
	read.Get("/rate-comparisons", s.h(s.listRateComparisons))
	write.Post("/rate-comparisons", s.h(s.createRateComparison))
	read.Get("/rate-comparisons/{id}", s.h(s.getRateComparison))
	write.Delete("/rate-comparisons/{id}", s.h(s.deleteRateComparison))
	write.Post("/rate-comparisons/{id}/process", s.h(s.processRateComparison))
	write.Post("/rate-comparisons/{id}/cancel", s.h(s.cancelRateComparison))
	read.Get("/rate-comparisons/{id}/items", s.h(s.listRateComparisonItems))
	read.Get("/rate-comparisons/{id}/summary", s.h(s.rateComparisonSummary))
}

// rateComparisonJSON is the comparison object.
type rateComparisonJSON struct {
	ID               uuid.UUID  `json:"id"`
	OrganizationID   uuid.UUID  `json:"organizationId"`
	Name             string     `json:"name"`
	CarrierAccountID *uuid.UUID `json:"carrierAccountId"`
	Carrier          string     `json:"carrier"`
	SourceCarrier    string     `json:"sourceCarrier"`
	Status           string     `json:"status"`
	TotalItems       int        `json:"totalItems"`
	PendingItems     int        `json:"pendingItems"`
	CompletedItems   int        `json:"completedItems"`
	FailedItems      int        `json:"failedItems"`
	SkippedItems     int        `json:"skippedItems"`
	Progress         float64    `json:"progress"`
	TotalNetCost     float64    `json:"totalNetCost"`
	TotalQuotedCost  float64    `json:"totalQuotedCost"`
	TotalSavings     float64    `json:"totalSavings"`
	SavingsPercent   *float64   `json:"savingsPercent"`
	Error            *string    `json:"error"`
	WorkflowID       *string    `json:"workflowId"`
	StartedAt        *time.Time `json:"startedAt"`
	CompletedAt      *time.Time `json:"completedAt"`
	CreatedAt        time.Time  `json:"createdAt"`
	UpdatedAt        time.Time  `json:"updatedAt"`
}

func toRateComparisonJSON(c store.RateComparison) rateComparisonJSON {
	progress := 100.0
	if c.TotalItems > 0 {
		progress = math.Round(float64(c.TotalItems-c.PendingItems)/float64(c.TotalItems)*10000) / 100
	}
	return rateComparisonJSON{
		ID: c.ID, OrganizationID: c.OrganizationID, Name: c.Name, CarrierAccountID: c.CarrierAccountID, Carrier: c.Carrier,
		SourceCarrier: c.SourceCarrier, Status: c.Status, TotalItems: c.TotalItems, PendingItems: c.PendingItems,
		CompletedItems: c.CompletedItems, FailedItems: c.FailedItems, SkippedItems: c.SkippedItems, Progress: progress,
		TotalNetCost: c.TotalNetCost, TotalQuotedCost: c.TotalQuotedCost, TotalSavings: c.TotalSavings,
		SavingsPercent: c.SavingsPercent(), Error: c.Error, WorkflowID: c.WorkflowID,
		StartedAt: c.StartedAt, CompletedAt: c.CompletedAt, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// rateComparisonPlaceJSON is an item's origin or destination.
type rateComparisonPlaceJSON struct {
	City    *string `json:"city"`
	State   *string `json:"state"`
	Zip     *string `json:"zip"`
	Country *string `json:"country"`
}

type rateComparisonWeightJSON struct {
	Value float64 `json:"value"`
	Unit  *string `json:"unit"`
}

// rateComparisonItemJSON is the item object.
type rateComparisonItemJSON struct {
	ID                uuid.UUID                 `json:"id"`
	ComparisonID      uuid.UUID                 `json:"comparisonId"`
	Position          int                       `json:"position"`
	TrackingNumber    string                    `json:"trackingNumber"`
	Status            string                    `json:"status"`
	NetCost           *float64                  `json:"netCost"`
	ServiceType       *string                   `json:"serviceType"`
	ServiceLevel      *string                   `json:"serviceLevel"`
	Origin            *rateComparisonPlaceJSON  `json:"origin"`
	Destination       *rateComparisonPlaceJSON  `json:"destination"`
	Weight            *rateComparisonWeightJSON `json:"weight"`
	Zone              *string                   `json:"zone"`
	QuotedService     *string                   `json:"quotedService"`
	QuotedServiceName *string                   `json:"quotedServiceName"`
	QuotedPrice       *float64                  `json:"quotedPrice"`
	Currency          *string                   `json:"currency"`
	TransitDays       *int                      `json:"transitDays"`
	Savings           *float64                  `json:"savings"`
	Error             *string                   `json:"error"`
	CreatedAt         time.Time                 `json:"createdAt"`
	UpdatedAt         time.Time                 `json:"updatedAt"`
}

func rateComparisonPlace(city, state, zip, country *string) *rateComparisonPlaceJSON {
	if city == nil && state == nil && zip == nil && country == nil {
		return nil
	}
	return &rateComparisonPlaceJSON{City: city, State: state, Zip: zip, Country: country}
}

func toRateComparisonItemJSON(it store.RateComparisonItem) rateComparisonItemJSON {
	out := rateComparisonItemJSON{
		ID: it.ID, ComparisonID: it.ComparisonID, Position: it.Seq, TrackingNumber: it.TrackingNumber, Status: it.Status,
		NetCost: it.NetCost, ServiceType: it.ServiceType, ServiceLevel: it.ServiceLevel,
		Origin:      rateComparisonPlace(it.OriginCity, it.OriginState, it.OriginZip, it.OriginCountry),
		Destination: rateComparisonPlace(it.DestinationCity, it.DestinationState, it.DestinationZip, it.DestinationCountry),
		Zone:        it.Zone, QuotedService: it.QuotedService, QuotedServiceName: it.QuotedServiceName, QuotedPrice: it.QuotedPrice,
		Currency: it.Currency, TransitDays: it.TransitDays, Savings: it.Savings, Error: it.Error,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}
	if it.WeightValue != nil {
		out.Weight = &rateComparisonWeightJSON{Value: *it.WeightValue, Unit: it.WeightUnit}
	}
	return out
}

// rateComparisonSummaryJSON is the summary.
type rateComparisonSummaryJSON struct {
	ComparisonID uuid.UUID                  `json:"comparisonId"`
	Status       string                     `json:"status"`
	Totals       store.RateSummaryTotals    `json:"totals"`
	ByZone       []store.RateSummaryZone    `json:"byZone"`
	ByService    []store.RateSummaryService `json:"byService"`
}

// --- create ---

type createRateComparisonBody struct {
	Name             *string                  `json:"name"`
	CarrierAccountID *string                  `json:"carrierAccountId"`
	SourceCarrier    *string                  `json:"sourceCarrier"`
	Items            []rateComparisonItemBody `json:"items"`
}

type rateComparisonItemBody struct {
	TrackingNumber *string  `json:"trackingNumber"`
	NetCost        *float64 `json:"netCost"`
	ServiceType    *string  `json:"serviceType"`
}

func (s *Server) createRateComparison(w http.ResponseWriter, r *http.Request) error {
	var body createRateComparisonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	name := strings.TrimSpace(deref(body.Name))
	if v.required("name", body.Name) {
		v.length("name", name, 1, 255)
	}
	var accountID uuid.UUID
	if v.required("carrierAccountId", body.CarrierAccountID) {
		id, err := uuid.Parse(strings.TrimSpace(*body.CarrierAccountID))
		if err != nil {
			v.add("carrierAccountId", "must be a UUID")
		}
		accountID = id
	}
	if v.required("sourceCarrier", body.SourceCarrier) {
		v.oneOf("sourceCarrier", *body.SourceCarrier, carriers.CarrierA, carriers.CarrierB)
	}
	items := parseRateComparisonItems(&v, body.Items)
	if err := v.err(); err != nil {
		return err
	}

	p := mustPrincipal(r)
	acct, err := store.CarrierAccountByID(r.Context(), s.store.Pool, p.OrganizationID, accountID)
	if err != nil {
		return notFoundAs(err, "carrier account")
	}
	if acct.Status != store.CarrierAccountActive || !acct.SupportsRating {
		return errValidation(FieldError{Field: "carrierAccountId", Message: "must be an active carrier account that supports rating"})
	}

	c, err := store.CreateRateComparison(r.Context(), s.store.Pool, store.RateComparison{
		ID: uuid.New(), OrganizationID: p.OrganizationID, Name: name, CarrierAccountID: &acct.ID, Carrier: acct.Carrier,
		SourceCarrier: *body.SourceCarrier,
	}, items)
	if errors.Is(err, store.ErrConflict) {
		// Duplicates were refused above; only a race with another spelling
		// of the same number reaches this.
		return errValidation(FieldError{Field: "items", Message: "contains the same tracking number twice"})
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toRateComparisonJSON(c))
	return nil
}

// parseRateComparisonItems validates the items, naming at most
// rateComparisonMaxDetails problems (and how many more there are).
func parseRateComparisonItems(v *validator, body []rateComparisonItemBody) []store.NewRateComparisonItem {
	switch {
	case body == nil:
		v.add("items", "is required")
		return nil
	case len(body) < 1 || len(body) > store.RateComparisonMaxItems:
		v.add("items", fmt.Sprintf("must have 1-%d items", store.RateComparisonMaxItems))
		return nil
	}
	var details []FieldError
	add := func(field, msg string) { details = append(details, FieldError{Field: field, Message: msg}) }
	out := make([]store.NewRateComparisonItem, len(body))
	seen := make(map[string]int, len(body))
	for i, it := range body {
		field := fmt.Sprintf("items[%d]", i)
		number := strings.TrimSpace(deref(it.TrackingNumber))
		switch n := len([]rune(number)); {
		case n == 0:
			add(field+".trackingNumber", "is required")
		case n > 100:
			add(field+".trackingNumber", "must be 1-100 characters")
		default:
			key := strings.ToUpper(number)
			if j, dup := seen[key]; dup {
				add(field+".trackingNumber", fmt.Sprintf("duplicates items[%d].trackingNumber", j))
			} else {
				seen[key] = i
			}
		}
		out[i].TrackingNumber = number
		if it.NetCost != nil {
			c := *it.NetCost
			if math.IsNaN(c) || c < 0 || c > rateComparisonMaxNetCost {
				add(field+".netCost", fmt.Sprintf("must be a number from 0 to %d", rateComparisonMaxNetCost))
			}
			c = math.Round(c*100) / 100
			out[i].NetCost = &c
		}
		if it.ServiceType != nil {
			svc := strings.TrimSpace(*it.ServiceType)
			if len([]rune(svc)) > rateComparisonMaxServiceLen {
				add(field+".serviceType", fmt.Sprintf("must be at most %d characters", rateComparisonMaxServiceLen))
			}
			if svc != "" {
				out[i].ServiceType = &svc
			}
		}
	}
	if len(details) > rateComparisonMaxDetails {
		more := len(details) - rateComparisonMaxDetails
		details = append(details[:rateComparisonMaxDetails], FieldError{Field: "items", Message: fmt.Sprintf("has %d more problems", more)})
	}
	v.details = append(v.details, details...)
	return out
}

// --- read ---

func (s *Server) listRateComparisons(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	status, err := queryEnum(r, "status", store.RateComparisonStatuses...)
	if err != nil {
		return err
	}
	list, total, err := store.ListRateComparisons(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID,
		store.RateComparisonFilter{Status: status, Limit: page.Limit, Offset: page.Offset()})
	if err != nil {
		return err
	}
	out := make([]rateComparisonJSON, 0, len(list))
	for _, c := range list {
		out = append(out, toRateComparisonJSON(c))
	}
	writeList(w, out, page, total)
	return nil
}

// rateComparisonFromPath loads the organization's comparison named by {id}.
func (s *Server) rateComparisonFromPath(r *http.Request) (store.RateComparison, error) {
	return loadByID(s, r, "rate comparison", store.RateComparisonByID)
}

func (s *Server) getRateComparison(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRateComparisonJSON(c))
	return nil
}

func (s *Server) listRateComparisonItems(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	var details fieldErrors
	page, err := parsePage(r, 50, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", store.RateComparisonItemStatuses...)
	details.collect(err)
	q := r.URL.Query()
	for _, k := range []string{"zone", "serviceType", "search"} {
		if len([]rune(q.Get(k))) > rateComparisonMaxFilterLen {
			details = append(details, FieldError{Field: k, Message: fmt.Sprintf("must be at most %d characters", rateComparisonMaxFilterLen)})
		}
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	items, total, err := store.ListRateComparisonItems(r.Context(), s.store.Pool, c.OrganizationID, c.ID, store.RateComparisonItemFilter{
		Status: status, Zone: strings.TrimSpace(q.Get("zone")), ServiceType: strings.TrimSpace(q.Get("serviceType")),
		Search: strings.TrimSpace(q.Get("search")), Limit: page.Limit, Offset: page.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]rateComparisonItemJSON, 0, len(items))
	for _, it := range items {
		out = append(out, toRateComparisonItemJSON(it))
	}
	writeList(w, out, page, total)
	return nil
}

func (s *Server) rateComparisonSummary(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	sum, err := store.RateComparisonSummary(r.Context(), s.store.Pool, c.OrganizationID, c.ID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, rateComparisonSummaryJSON{
		ComparisonID: c.ID, Status: c.Status, Totals: sum.Totals, ByZone: sum.ByZone, ByService: sum.ByService,
	})
	return nil
}

// --- process, cancel, delete ---

func (s *Server) processRateComparison(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	if c.Status != store.RateComparisonDraft && c.Status != store.RateComparisonFailed {
		return errConflict("the rate comparison is " + c.Status + "; only a draft or failed comparison can be processed")
	}
	if err := s.checkRateComparisonAccounts(r.Context(), c); err != nil {
		return err
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	p := mustPrincipal(r)
	wfID := workflows.RateComparisonWorkflowID(c.ID.String())
	since := time.Now()
	started, prev, err := store.StartRateComparison(r.Context(), s.store.Pool, p.OrganizationID, c.ID, wfID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNotFound("rate comparison")
	case errors.Is(err, store.ErrConflict):
		return errConflict("the rate comparison is " + prev + "; only a draft or failed comparison can be processed")
	case err != nil:
		return err
	}

	in := workflows.NewRateComparisonInput(p.OrganizationID.String(), c.ID.String(),
		workflows.Actor{Type: p.Kind, ID: p.ActorID().String(), Name: p.Name})
	// Bulk work: on its own task queue, never in front of interactive work.
	opts := worker.Start{ID: wfID, TaskQueue: s.bulkTaskQueue, OrganizationID: in.OrganizationID,
		Summary: fmt.Sprintf("Rate comparison %q", c.Name),
		Memo:    map[string]any{"comparisonId": in.ComparisonID, "comparison": c.Name}}.Options()
	// The comparison was draft or failed, so a run with this id that is
	// still open can only be a finished one closing down: replace it.
	// (A start sent again after a lost answer joins instead.)
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	if _, err := s.startStableWorkflow(r, opts, since, workflows.RateComparison, in); err != nil {
		if isStartUnknown(err) {
			// The run may exist: the comparison stays processing. When it
			// does not, the reconciler (Maintenance) starts it.
			s.log.WarnContext(r.Context(), "rate comparison start outcome unknown; left to the reconciler", append(logAttrs(r), "workflow_id", wfID, "error", err.Error())...)
			writeData(w, http.StatusAccepted, toRateComparisonJSON(started))
			return nil
		}
		// Nothing runs: put the comparison back, so that it can be
		// processed again.
		if rerr := store.RevertRateComparisonStart(context.WithoutCancel(r.Context()), s.store.Pool, p.OrganizationID, c.ID, prev); rerr != nil {
			s.log.ErrorContext(r.Context(), "revert rate comparison start", append(logAttrs(r), "comparison_id", c.ID, "error", rerr.Error())...)
		}
		if isTemporalUnavailable(r.Context(), err) {
			s.log.WarnContext(r.Context(), "start workflow", append(logAttrs(r), "workflow_id", wfID, "error", err.Error())...)
			return errTemporalUnavailable()
		}
		return err
	}
	writeData(w, http.StatusAccepted, toRateComparisonJSON(started))
	return nil
}

// checkRateComparisonAccounts refuses to process without an active account
// to rate with and one to track the source carrier with.
func (s *Server) checkRateComparisonAccounts(ctx context.Context, c store.RateComparison) error {
	if c.CarrierAccountID == nil {
		return errBadRequest("no_active_carrier_account", "the comparison's carrier account was deleted; create a new comparison")
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, c.OrganizationID, *c.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return errBadRequest("no_active_carrier_account", "the comparison's carrier account was deleted; create a new comparison")
	}
	if err != nil {
		return err
	}
	if acct.Status != store.CarrierAccountActive || !acct.SupportsRating {
		return errBadRequest("no_active_carrier_account", "the comparison's carrier account \""+acct.Name+"\" is "+acct.Status+"; it must be active and support rating")
	}
	if acct.Carrier == c.SourceCarrier {
		return nil
	}
	src, err := store.ActiveCarrierAccounts(ctx, s.store.Pool, c.OrganizationID, c.SourceCarrier)
	if err != nil {
		return err
	}
	if len(src) == 0 {
		return errBadRequest("no_active_carrier_account", "the organization has no active "+c.SourceCarrier+" account to track the source shipments with")
	}
	return nil
}

// cancelRateComparison (extension) cancels a processing comparison: it is
// closed as cancelled at once (unfinished items skipped; a batch still
// running cannot change them any more), then its workflow is cancelled so
// that running batches stop at their next item. When the close fails the
// workflow is cancelled all the same (it then closes the comparison as
// cancelled itself) and the failure is reported.
func (s *Server) cancelRateComparison(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	if c.Status != store.RateComparisonProcessing {
		return errConflict("the rate comparison is " + c.Status + "; only a processing comparison can be cancelled")
	}
	done, err := store.FinishRateComparison(r.Context(), s.store.Pool, c.OrganizationID, c.ID, store.FinishCancelled, "")
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNotFound("rate comparison")
	case err != nil:
		s.cancelRateComparisonWorkflow(r, c)
		return err
	case done.Status != store.RateComparisonCancelled:
		return errConflict("the rate comparison is " + done.Status + "; only a processing comparison can be cancelled")
	}
	s.cancelRateComparisonWorkflow(r, c)
	writeData(w, http.StatusOK, toRateComparisonJSON(done))
	return nil
}

func (s *Server) deleteRateComparison(w http.ResponseWriter, r *http.Request) error {
	c, err := s.rateComparisonFromPath(r)
	if err != nil {
		return err
	}
	if c.Status == store.RateComparisonProcessing {
		s.cancelRateComparisonWorkflow(r, c)
	}
	err = store.DeleteRateComparison(r.Context(), s.store.Pool, c.OrganizationID, c.ID)
	if err != nil {
		return notFoundAs(err, "rate comparison")
	}
	writeSuccess(w)
	return nil
}

// cancelRateComparisonWorkflow asks Temporal to cancel the comparison's
// workflow. It is best effort: a run that is already closed is fine, and
// when Temporal cannot be reached the workflow still stops at its next
// batch, finding the comparison closed or gone.
func (s *Server) cancelRateComparisonWorkflow(r *http.Request, c store.RateComparison) {
	if s.temporal == nil {
		return
	}
	wfID := workflows.RateComparisonWorkflowID(c.ID.String())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), startWorkflowTimeout)
	defer cancel()
	err := s.temporal.CancelWorkflow(ctx, wfID, "")
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		s.log.WarnContext(r.Context(), "cancel rate comparison workflow", append(logAttrs(r), "workflow_id", wfID, "error", err.Error())...)
	}
}
