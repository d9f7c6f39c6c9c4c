package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// mountTransformations registers the transformation endpoints (spec Part
// 2, Transformations).
func (s *Server) mountTransformations(r chi.Router) {
	if s.sandbox == nil {
		s.sandbox = sandbox.New(sandbox.Limits{})
	}
	read := r.With(s.scope("transformations:read"))
	write := r.With(s.scope("transformations:write"))
	read.Get("/transformations", s.h(s.listTransformations))
	write.Post("/transformations", s.h(s.createTransformation))
	write.Post("/transformations/test", s.h(s.testTransformationCode))
	read.Get("/transformations/{id}", s.h(s.getTransformation))
	write.Patch("/transformations/{id}", s.h(s.updateTransformation))
	write.Delete("/transformations/{id}", s.h(s.deleteTransformation))
	write.Post("/transformations/{id}/test", s.h(s.testTransformation))
}

// Limits of a transformation's fields (the specification gives none; as
// dispatchers': name 1-100, description up to 500, priority 0-1000).
const (
	transformationNameMax = 100
	transformationDescMax = 500
	transformationPrioMax = 1000
)

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

func toTransformationJSON(t store.Transformation) transformationJSON {
	return transformationJSON{
		ID: t.ID, OrganizationID: t.OrganizationID, Name: t.Name, Description: t.Description, TriggerPoint: t.TriggerPoint,
		BridgeID: t.BridgeID, Code: t.Code, IsActive: t.IsActive, Priority: t.Priority, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

func (s *Server) listTransformations(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	trigger, err := queryEnum(r, "triggerPoint", store.TriggerPoints...)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	active, err := queryEnum(r, "isActive", "true", "false")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	f := store.TransformationFilter{TriggerPoint: trigger, BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		f.IsActive = &b
	}
	list, total, err := store.ListTransformations(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, f)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toTransformationJSON), p, total)
	return nil
}

func (s *Server) transformationFromPath(r *http.Request) (store.Transformation, error) {
	return loadByID(s, r, "transformation", store.TransformationByID)
}

func (s *Server) getTransformation(w http.ResponseWriter, r *http.Request) error {
	t, err := s.transformationFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toTransformationJSON(t))
	return nil
}

// transformationCode reads code: a string of at most the sandbox's code
// size (kept as written, not trimmed).
func (s *Server) transformationCode(f bodyFields, required bool) *string {
	raw, ok := f.get("code", required)
	if !ok {
		return nil
	}
	code, isStr := raw.(string)
	switch {
	case !isStr:
		f.v.add("code", "must be a string")
	case len(code) == 0 || len(code) > s.sandbox.Limits().MaxCodeBytes:
		f.v.add("code", fmt.Sprintf("must be 1-%d bytes", s.sandbox.Limits().MaxCodeBytes))
	default:
		return &code
	}
	return nil
}

// checkCode answers 400 invalid_javascript when code does not compile,
// its top level fails, it defines no transform function (CONTRACT 8a), or
// its transform runs out of time or memory over a sample order (an
// exception on the sample is not a reason: the sample is not the
// tenant's data). It runs in the organization's share of the sandbox
// processes.
func (s *Server) checkCode(ctx context.Context, orgID uuid.UUID, code string) error {
	err := s.sandbox.CheckFor(ctx, orgID.String(), code, sandbox.SampleOrder())
	switch {
	case err == nil:
		return nil
	case sandbox.IsKind(err, sandbox.KindCanceled):
		return canceled(ctx, err)
	}
	return invalidJavaScript(err)
}

// canceled is the request context's error (the client went away: nothing
// is answered), or err.
func canceled(ctx context.Context, err error) error {
	if c := ctx.Err(); c != nil {
		return c
	}
	return err
}

// invalidJavaScript is 400 invalid_javascript; the message and the detail
// of field code start with "line L, column C:" when the place is known.
func invalidJavaScript(err error) error {
	var e *sandbox.Error
	if !errors.As(err, &e) {
		return err
	}
	msg := e.Message
	if e.Line > 0 {
		msg = fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return &Error{Status: http.StatusBadRequest, Code: "invalid_javascript", Message: "invalid JavaScript: " + msg,
		Details: []FieldError{{Field: "code", Message: msg}}}
}

// bridgeOfOrg checks that a bridge id names a bridge of the organization;
// another organization's bridge is answered like an unknown one.
func (s *Server) bridgeOfOrg(ctx context.Context, v *validator, orgID uuid.UUID, id *uuid.UUID) error {
	if id == nil {
		return nil
	}
	_, err := store.BridgeByID(ctx, s.store.Pool, orgID, *id)
	if errors.Is(err, store.ErrNotFound) {
		v.add("bridgeId", "must be a bridge of this organization")
		return nil
	}
	return err
}

// uuidField reads an optional UUID string.
func uuidField(f bodyFields, key string) *uuid.UUID {
	str := f.str(key, false, 100)
	if str == nil {
		return nil
	}
	id, err := uuid.Parse(*str)
	if err != nil {
		f.v.add(f.name(key), "must be a UUID")
		return nil
	}
	return &id
}

func (s *Server) createTransformation(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	var v validator
	f := bodyFields{v: &v, m: body}
	t := store.Transformation{ID: uuid.New(), OrganizationID: orgID, IsActive: true}
	t.Name = deref(f.str("name", true, transformationNameMax))
	t.Description = f.str("description", false, transformationDescMax)
	t.TriggerPoint = f.enum("triggerPoint", true, "", store.TriggerPoints)
	t.BridgeID = uuidField(f, "bridgeId")
	code := s.transformationCode(f, true)
	if b := f.boolean("isActive", false); b != nil {
		t.IsActive = *b
	}
	if n := f.number("priority", false, 0, transformationPrioMax, true); n != nil {
		t.Priority = int(*n)
	}
	if err := s.bridgeOfOrg(r.Context(), &v, orgID, t.BridgeID); err != nil {
		return err
	}
	if err := v.err(); err != nil {
		return err
	}
	if err := s.checkCode(r.Context(), orgID, *code); err != nil {
		return err
	}
	t.Code = *code
	out, err := store.CreateTransformation(r.Context(), s.store.Pool, t)
	if errors.Is(err, store.ErrNotFound) {
		// The bridge went away since it was checked.
		return errValidation(FieldError{Field: "bridgeId", Message: "must be a bridge of this organization"})
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toTransformationJSON(out))
	return nil
}

// updateTransformation changes the fields sent. description and bridgeId
// sent as null are cleared (bridgeId null: the transformation becomes
// global); code is checked like on create.
func (s *Server) updateTransformation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "transformation")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	if _, err := store.TransformationByID(r.Context(), s.store.Pool, orgID, id); err != nil {
		return notFoundAs(err, "transformation")
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	sent := func(k string) bool { _, ok := body[k]; return ok }
	var p store.TransformationPatch
	if sent("name") {
		p.Name = f.str("name", true, transformationNameMax)
	}
	if sent("description") {
		p.Description = f.str("description", false, transformationDescMax)
		p.ClearDesc = p.Description == nil && v.ok()
	}
	if sent("triggerPoint") {
		tp := f.enum("triggerPoint", true, "", store.TriggerPoints)
		p.TriggerPoint = &tp
	}
	if sent("bridgeId") {
		p.BridgeID = uuidField(f, "bridgeId")
		p.ClearBridge = p.BridgeID == nil && v.ok()
		if err := s.bridgeOfOrg(r.Context(), &v, orgID, p.BridgeID); err != nil {
			return err
		}
	}
	if sent("code") {
		p.Code = s.transformationCode(f, true)
	}
	if sent("isActive") {
		p.IsActive = f.boolean("isActive", true)
	}
	if sent("priority") {
		if n := f.number("priority", true, 0, transformationPrioMax, true); n != nil {
			prio := int(*n)
			p.Priority = &prio
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	if p.Code != nil {
		if err := s.checkCode(r.Context(), orgID, *p.Code); err != nil {
			return err
		}
	}
	out, err := store.UpdateTransformation(r.Context(), s.store.Pool, orgID, id, p)
	if err != nil {
		return notFoundAs(err, "transformation")
	}
	writeData(w, http.StatusOK, toTransformationJSON(out))
	return nil
}

func (s *Server) deleteTransformation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "transformation")
	if err != nil {
		return err
	}
	if err := store.DeleteTransformation(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id); err != nil {
		return notFoundAs(err, "transformation")
	}
	writeSuccess(w)
	return nil
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

// transformationTestResult is the answer of both test endpoints:
// {success, output, duration_ms}, with error when success is false.
type transformationTestResult struct {
	Success    bool            `json:"success"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error,omitempty"`
	DurationMS float64         `json:"duration_ms"`
}

// sampleData reads sampleData: a required object within the sandbox's
// input limits, as JSON (numbers as written).
func (s *Server) sampleData(f bodyFields) []byte {
	raw := f.rawObject("sampleData", true)
	if raw == nil {
		return nil
	}
	if max := s.sandbox.Limits().MaxInputBytes; len(raw) > max {
		f.v.add("sampleData", fmt.Sprintf("must be at most %d bytes of JSON", max))
		return nil
	}
	return raw
}

// runTest runs code over sample and writes the result: a failure of the
// script is 200 {success: false, error}; code that does not compile is 400
// invalid_javascript.
func (s *Server) runTest(w http.ResponseWriter, r *http.Request, code string, sample []byte) error {
	orgID := mustPrincipal(r).OrganizationID
	if err := s.transformationTestLimit(orgID); err != nil {
		return err
	}
	start := time.Now()
	out, err := s.sandbox.RunFor(r.Context(), orgID.String(), code, sample)
	res := transformationTestResult{DurationMS: transforms.Millis(time.Since(start))}
	switch {
	case err == nil:
		res.Success, res.Output = true, out
	case sandbox.IsKind(err, sandbox.KindSyntax):
		return invalidJavaScript(err)
	case sandbox.IsKind(err, sandbox.KindInput):
		return errValidation(FieldError{Field: "sampleData", Message: err.Error()})
	case sandbox.IsKind(err, sandbox.KindCanceled):
		return canceled(r.Context(), err)
	default:
		msg := err.Error()
		res.Error = &msg
		res.Output = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) testTransformationCode(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	code := s.transformationCode(f, true)
	sample := s.sampleData(f)
	if err := v.err(); err != nil {
		return err
	}
	return s.runTest(w, r, *code, sample)
}

func (s *Server) testTransformation(w http.ResponseWriter, r *http.Request) error {
	t, err := s.transformationFromPath(r)
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	sample := s.sampleData(bodyFields{v: &v, m: body})
	if err := v.err(); err != nil {
		return err
	}
	return s.runTest(w, r, t.Code, sample)
}
