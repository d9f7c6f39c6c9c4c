package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/insights"
)

// mountInsights registers the insights endpoints (spec Part 3, CONTRACT
// 11): HTTP over insights.Service (Generate, List, OperationInsights,
// Ask, Acknowledge, CarrierPerformance). Reads, the question engine
// included, need insights:read; generating (which stores) and
// acknowledging need insights:write.
func (s *Server) mountInsights(r chi.Router) {
	read := r.With(s.scope("insights:read"))
	write := r.With(s.scope("insights:write"))
	read.Get("/insights", s.h(s.listInsights))
	write.Post("/insights/generate", s.h(s.generateInsights))
	read.Get("/insights/operations/{operationId}", s.h(s.operationInsights))
	read.Post("/insights/ask", s.h(s.askInsights))
	read.Get("/insights/carriers/performance", s.h(s.carrierPerformance))
	write.Post("/insights/{insightId}/acknowledge", s.h(s.acknowledgeInsight))
}

// insightJSON is an insight (spec Part 3) with the extension fields
// expiresAt and operationId.
type insightJSON struct {
	ID          uuid.UUID         `json:"id"`
	Category    string            `json:"category"`
	Severity    string            `json:"severity"`
	Status      string            `json:"status"`
	Title       string            `json:"title"`
	Summary     string            `json:"summary"`
	Metrics     []insights.Metric `json:"metrics"`
	Actions     []insights.Action `json:"actions"`
	Confidence  float64           `json:"confidence"`
	Tags        []string          `json:"tags"`
	DetectedAt  time.Time         `json:"detectedAt"`
	Source      string            `json:"source"`
	ExpiresAt   time.Time         `json:"expiresAt"`
	OperationID *uuid.UUID        `json:"operationId"`
}

func toInsightJSON(in insights.Insight) insightJSON {
	return insightJSON{ID: in.ID, Category: in.Category, Severity: in.Severity, Status: in.Status, Title: in.Title,
		Summary: in.Summary, Metrics: in.Metrics, Actions: in.Actions, Confidence: in.Confidence, Tags: in.Tags,
		DetectedAt: in.DetectedAt, Source: in.Source, ExpiresAt: in.ExpiresAt, OperationID: in.OperationID}
}

// parseIDs reads a list of UUIDs of a body field (at most max; the count
// is checked before the ids so a huge list costs one answer; at most 20
// malformed ids are named).
func parseIDs(v *validator, field string, raw []string, max int) []uuid.UUID {
	if len(raw) > max {
		v.add(field, fmt.Sprintf("must have at most %d ids", max))
		return nil
	}
	out := make([]uuid.UUID, 0, len(raw))
	bad := 0
	for i, s := range raw {
		id, err := uuid.Parse(s)
		if err != nil {
			if bad++; bad <= 20 { // a long list of bad ids answers the first ones
				v.add(fmt.Sprintf("%s[%d]", field, i), "must be a UUID")
			}
			continue
		}
		out = append(out, id)
	}
	return out
}

// idList is parseIDs for a body whose one list is the whole question: its
// ids, or the 400 naming the bad ones.
func idList(field string, raw []string, max int) ([]uuid.UUID, error) {
	var v validator
	ids := parseIDs(&v, field, raw, max)
	return ids, v.err()
}

// nonNilIDs is ids, empty rather than nil (as parseIDs answered).
func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

// --- generate and list ---

// generateInsightsBody is InsightsGenerateRequest (api/openapi.yaml
// checks the ids).
type generateInsightsBody struct {
	Scope       *string     `json:"scope"`
	OperationID *uuid.UUID  `json:"operationId"`
	OrderIDs    []uuid.UUID `json:"orderIds"`
	Types       []string    `json:"types"`
}

func (s *Server) generateInsights(w http.ResponseWriter, r *http.Request) error {
	var body generateInsightsBody
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	in := insights.GenerateInput{Scope: deref(body.Scope), Types: body.Types, OperationID: body.OperationID, OrderIDs: nonNilIDs(body.OrderIDs)}
	res, err := s.Insights.Generate(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{
		"insights": mapSlice(res.Insights, toInsightJSON), "generatedAt": res.GeneratedAt, "expiresAt": res.ExpiresAt,
	})
	return nil
}

func (s *Server) listInsights(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", insights.Statuses...)
	details.collect(err)
	category, err := queryEnum(r, "category", insights.Categories...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := s.Insights.List(r.Context(), actorOf(r), insights.ListInput{Status: status, Category: category, Limit: page.Limit, Offset: page.Offset()})
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toInsightJSON), page, total)
	return nil
}

// --- operation insights ---

func (s *Server) operationInsights(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "operationId", "operation")
	if err != nil {
		return err
	}
	o, err := s.Insights.OperationInsights(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	byCarrier := make([]map[string]any, 0, len(o.CostBreakdown.ByCarrier))
	for _, c := range o.CostBreakdown.ByCarrier {
		byCarrier = append(byCarrier, map[string]any{"carrier": c.Name, "amount": c.Amount, "percentage": c.Percentage})
	}
	byService := make([]map[string]any, 0, len(o.CostBreakdown.ByService))
	for _, c := range o.CostBreakdown.ByService {
		byService = append(byService, map[string]any{"service": c.Name, "amount": c.Amount, "percentage": c.Percentage})
	}
	writeData(w, http.StatusOK, map[string]any{
		"operationId": o.OperationID, "operationName": o.OperationName,
		"summary": map[string]any{
			"totalOrders": o.Summary.TotalOrders, "estimatedCost": o.Summary.EstimatedCost, "estimatedSavings": o.Summary.EstimatedSavings,
			"averageTransitDays": o.Summary.AverageTransitDays, "riskScore": o.Summary.RiskScore,
		},
		"costBreakdown": map[string]any{"byCarrier": byCarrier, "byService": byService},
		"riskAnalysis": map[string]any{
			"highRiskOrders": o.RiskAnalysis.HighRiskOrders, "delayRisk": o.RiskAnalysis.DelayRisk,
			"weatherImpact": o.RiskAnalysis.WeatherImpact, "carrierCapacityIssues": o.RiskAnalysis.CarrierCapacityIssues,
		},
		"optimizations": mapSlice(o.Optimizations, toInsightJSON),
		"anomalies":     mapSlice(o.Anomalies, toInsightJSON),
		"insights":      mapSlice(o.Insights, toInsightJSON),
	})
	return nil
}

// --- ask ---

type askBody struct {
	Query   *string `json:"query"`
	Context *struct {
		OperationID *uuid.UUID  `json:"operationId"`
		OrderIDs    []uuid.UUID `json:"orderIds"`
		DateRange   *struct {
			Start *time.Time `json:"start"`
			End   *time.Time `json:"end"`
		} `json:"dateRange"`
		IncludeOrders    *bool `json:"includeOrders"`
		IncludeShipments *bool `json:"includeShipments"`
		IncludeCarriers  *bool `json:"includeCarriers"`
		IncludeRates     *bool `json:"includeRates"`
	} `json:"context"`
}

func (s *Server) askInsights(w http.ResponseWriter, r *http.Request) error {
	var body askBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in := insights.AskInput{Query: deref(body.Query)} // required by InsightAskRequest
	if c := body.Context; c != nil {
		in.Context.OperationID, in.Context.OrderIDs = c.OperationID, nonNilIDs(c.OrderIDs)
		if c.DateRange != nil {
			in.Context.Start, in.Context.End = c.DateRange.Start, c.DateRange.End
		}
		in.Context.IncludeOrders = c.IncludeOrders
	}
	a, err := s.Insights.Ask(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{
		"response": map[string]any{
			"answer": a.Answer, "insights": mapSlice(a.Insights, toInsightJSON), "suggestedQueries": a.SuggestedQueries,
			"referencedData": map[string]any{
				"orders":    a.Orders,
				"timeRange": map[string]any{"start": a.Start, "end": a.End},
			},
			// Milliseconds, with microsecond precision.
			"processingTime": float64(a.ProcessingTime.Microseconds()) / 1000,
			"tokensUsed":     a.TokensUsed,
		},
		"generatedAt": time.Now().UTC(),
	})
	return nil
}

// --- acknowledge ---

type acknowledgeBody struct {
	Action *string `json:"action"`
	Note   *string `json:"note"`
}

func (s *Server) acknowledgeInsight(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "insightId", "insight")
	if err != nil {
		return err
	}
	var body acknowledgeBody
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	ack, err := s.Insights.Acknowledge(r.Context(), actorOf(r), insights.AcknowledgeInput{InsightID: id, Action: deref(body.Action), Note: body.Note})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{
		"insightId": ack.InsightID, "action": ack.Action, "status": ack.Status, "acknowledgedAt": ack.AcknowledgedAt, "note": ack.Note,
	})
	return nil
}

// --- carrier performance ---

func (s *Server) carrierPerformance(w http.ResponseWriter, r *http.Request) error {
	days := insights.DefaultPerformanceDays
	if raw := r.URL.Query().Get("days"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > insights.MaxPerformanceDays {
			return errValidation(FieldError{Field: "days", Message: "must be an integer between 1 and 365"})
		}
		days = n
	}
	list, err := s.Insights.CarrierPerformance(r.Context(), actorOf(r), days)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, p := range list {
		out = append(out, map[string]any{
			"carrierId": p.CarrierID, "carrierName": p.CarrierName, "onTimeRate": p.OnTimeRate,
			"averageTransitDays": p.AverageTransitDays, "costPerPackage": p.CostPerPackage,
			"totalShipments": p.TotalShipments, "deliveredCount": p.DeliveredCount,
			"onTimeTrend": p.OnTimeTrend, "costTrend": p.CostTrend,
			"dateRange": map[string]any{"start": p.Start, "end": p.End},
		})
	}
	writeData(w, http.StatusOK, out)
	return nil
}
