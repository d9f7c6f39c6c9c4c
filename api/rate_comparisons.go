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
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/ratecomparisons"
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

func toRateComparisonJSON(c ratecomparisons.Comparison) rateComparisonJSON {
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

func toRateComparisonItemJSON(it ratecomparisons.Item) rateComparisonItemJSON {
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
	ComparisonID uuid.UUID                        `json:"comparisonId"`
	Status       string                           `json:"status"`
	Totals       ratecomparisons.SummaryTotals    `json:"totals"`
	ByZone       []ratecomparisons.SummaryZone    `json:"byZone"`
	ByService    []ratecomparisons.SummaryService `json:"byService"`
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
	in := ratecomparisons.CreateInput{Name: body.Name, CarrierAccountID: body.CarrierAccountID, SourceCarrier: body.SourceCarrier}
	if body.Items != nil {
		in.Items = make([]ratecomparisons.NewItem, len(body.Items))
		for i, it := range body.Items {
			in.Items[i] = ratecomparisons.NewItem{TrackingNumber: it.TrackingNumber, NetCost: it.NetCost, ServiceType: it.ServiceType}
		}
	}
	c, err := s.RateComparisons.Create(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toRateComparisonJSON(c))
	return nil
}

// --- read ---

func (s *Server) listRateComparisons(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	status, err := queryEnum(r, "status", ratecomparisons.Statuses...)
	if err != nil {
		return err
	}
	res, err := s.RateComparisons.List(r.Context(), actorOf(r), status, page.Limit, page.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(res.Items, toRateComparisonJSON), page, res.Total)
	return nil
}

func (s *Server) getRateComparison(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	c, err := s.RateComparisons.Get(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRateComparisonJSON(c))
	return nil
}

func (s *Server) listRateComparisonItems(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	// The comparison is found before the parameters are checked.
	if _, err := s.RateComparisons.Get(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	var details fieldErrors
	page, err := parsePage(r, 50, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", ratecomparisons.ItemStatuses...)
	details.collect(err)
	q := r.URL.Query()
	for _, k := range []string{"zone", "serviceType", "search"} {
		if len([]rune(q.Get(k))) > ratecomparisons.MaxFilterLen {
			details = append(details, FieldError{Field: k, Message: fmt.Sprintf("must be at most %d characters", ratecomparisons.MaxFilterLen)})
		}
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	res, err := s.RateComparisons.Items(r.Context(), actorOf(r), id, ratecomparisons.ItemFilter{
		Status: status, Zone: strings.TrimSpace(q.Get("zone")), ServiceType: strings.TrimSpace(q.Get("serviceType")),
		Search: strings.TrimSpace(q.Get("search")), Limit: page.Limit, Offset: page.Offset(),
	})
	if err != nil {
		return err
	}
	writeList(w, mapSlice(res.Items, toRateComparisonItemJSON), page, res.Total)
	return nil
}

func (s *Server) rateComparisonSummary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	c, sum, err := s.RateComparisons.Summarize(r.Context(), actorOf(r), id)
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
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	c, err := s.RateComparisons.Process(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, toRateComparisonJSON(c))
	return nil
}

// cancelRateComparison (extension) cancels a processing comparison
// (ratecomparisons.Service.Cancel).
func (s *Server) cancelRateComparison(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	c, err := s.RateComparisons.Cancel(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRateComparisonJSON(c))
	return nil
}

func (s *Server) deleteRateComparison(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate comparison")
	if err != nil {
		return err
	}
	if err := s.RateComparisons.Delete(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
