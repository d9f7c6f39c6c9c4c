package api

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/routing"
)

// mountTransformations registers the transformation endpoints (spec Part
// 2, Transformations); the operations are routing.Service's.
func (s *Server) mountTransformations(r chi.Router) {
	read := r.With(s.scope("transformations:read"))
	write := r.With(s.scope("transformations:write"))
	read.Get("/transformations", s.h(s.listTransformations))
	routingCRUD[routing.TransformationInput, routing.Transformation, transformationJSON]{path: "/transformations", noun: "transformation", decode: s.decodeTransformation, toJSON: toTransformationJSON,
		get: s.Routing.GetTransformation, create: s.Routing.CreateTransformation, update: s.Routing.UpdateTransformation, remove: s.Routing.DeleteTransformation}.mount(s, read, write)
	write.Post("/transformations/test", s.h(s.testTransformationCode))
	write.Post("/transformations/{id}/test", s.h(s.testTransformation))
}

// transformationJSON is the Transformation resource (camelCase), code
// included.
type transformationJSON struct {
	ID             uuid.UUID  `json:"id"`
	OrganizationID uuid.UUID  `json:"organizationId"`
	Name           string     `json:"name"`
	Description    *string    `json:"description"`
	TriggerPoint   string     `json:"triggerPoint"`
	BridgeID       *uuid.UUID `json:"bridgeId"`
	Code           string     `json:"code"`
	IsActive       bool       `json:"isActive"`
	Priority       int        `json:"priority"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
}

func toTransformationJSON(t routing.Transformation) transformationJSON {
	return transformationJSON{
		ID: t.ID, OrganizationID: t.OrganizationID, Name: t.Name, Description: t.Description, TriggerPoint: t.TriggerPoint,
		BridgeID: t.BridgeID, Code: t.Code, IsActive: t.IsActive, Priority: t.Priority, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

func (s *Server) listTransformations(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	trigger, err := queryEnum(r, "triggerPoint", routing.TriggerPoints...)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	active, err := queryEnum(r, "isActive", "true", "false")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	in := routing.ListTransformationsInput{TriggerPoint: trigger, BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		in.IsActive = &b
	}
	page, err := s.Routing.ListTransformations(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toTransformationJSON), p, page.Total)
	return nil
}

var transformationFields = []string{"name", "description", "triggerPoint", "bridgeId", "code", "isActive", "priority"}

// decodeTransformation reads a create (every field) or update (the
// fields sent; null isActive or priority is missing) body; the domain
// checks the values.
//
// An update changes the fields sent. description and bridgeId sent as
// null are cleared (bridgeId null: the transformation becomes global);
// code is checked like on create.
func (s *Server) decodeTransformation(r *http.Request, create bool) (routing.TransformationInput, error) {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return routing.TransformationInput{}, err
	}
	sent := func(k string) bool { _, ok := body[k]; return create || ok }
	var in routing.TransformationInput
	in.Name, in.Description = nameDescription(body, create)
	if raw := body["triggerPoint"]; raw != nil {
		tp, _ := raw.(string) // no string is no trigger point: the domain names it
		in.TriggerPoint = &tp
	}
	if sent("bridgeId") {
		in.BridgeIDSet = true
		if id := uuidOf(body["bridgeId"]); id != uuid.Nil {
			in.BridgeID = &id
		}
	}
	if code, ok := body["code"].(string); ok {
		in.Code = &code
	}
	if b, ok := body["isActive"].(bool); ok {
		in.IsActive = &b
	}
	in.Priority = integerOf(body["priority"])
	if v.ok() {
		return in, nil
	}
	return in, validation(v, in.Validate(create, s.Routing.Sandbox().Limits().MaxCodeBytes), transformationFields...)
}

// transformationTestResult is the answer of both test endpoints:
// {success, output, duration_ms}, with error when success is false.
type transformationTestResult struct {
	Success    bool            `json:"success"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error,omitempty"`
	DurationMS float64         `json:"duration_ms"`
}

// transformationTestRate bounds the test runs of one organization: each
// may hold a sandbox process up to its deadline.
var transformationTestRate = config.Rate{Events: 60, Per: time.Minute}

var transformationTestLimiters sync.Map // *Server -> *limiterSet

func (s *Server) transformationTestLimit(orgID uuid.UUID) error {
	v, ok := transformationTestLimiters.Load(s)
	if !ok {
		v, _ = transformationTestLimiters.LoadOrStore(s, newLimiterSet("transformation test runs for this organization", transformationTestRate))
	}
	return v.(*limiterSet).check(orgID.String())
}

func writeTestResult(w http.ResponseWriter, res routing.TestResult) {
	writeJSON(w, http.StatusOK, transformationTestResult{Success: res.Success, Output: res.Output, Error: res.Error, DurationMS: res.DurationMS})
}

// testTransformationCode runs {code, sampleData} (routing.TestCode): a
// failure of the script is 200 {success: false, error}.
func (s *Server) testTransformationCode(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var code *string // TransformationTestRequest: a string or null
	if raw, ok := body["code"].(string); ok {
		code = &raw
	}
	if err := s.transformationTestLimit(mustPrincipal(r).OrganizationID); err != nil {
		return err
	}
	res, err := s.Routing.TestCode(r.Context(), actorOf(r), code, body["sampleData"])
	if err != nil {
		return err
	}
	writeTestResult(w, res)
	return nil
}

func (s *Server) testTransformation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "transformation")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if err := s.transformationTestLimit(mustPrincipal(r).OrganizationID); err != nil {
		return err
	}
	res, err := s.Routing.TestTransformation(r.Context(), actorOf(r), id, body["sampleData"])
	if err != nil {
		return err
	}
	writeTestResult(w, res)
	return nil
}
