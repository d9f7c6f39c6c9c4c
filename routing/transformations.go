package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// Transformation is a tenant's JavaScript run on orders at a trigger
// point (store row).
type Transformation = store.Transformation

// Bounds of a transformation's fields (the specification gives none; as
// dispatchers': name 1-100, description up to 500, priority 0-1000). The
// code's bounds are the sandbox's.
const (
	TransformationNameMax = 100
	TransformationDescMax = 500
	TransformationPrioMax = 1000
)

// Scopes of transformations (Part 2).
const (
	ScopeTransformationsRead  = "transformations:read"
	ScopeTransformationsWrite = "transformations:write"
)

// TriggerPoints are the trigger points, in the specification's order.
var TriggerPoints = store.TriggerPoints

// Sandbox is the sandbox the Service runs transformation code in.
func (s *Service) Sandbox() *sandbox.Sandbox { return s.sandbox }

// ListTransformationsInput filters a transformation list.
type ListTransformationsInput struct {
	TriggerPoint  string
	BridgeID      *uuid.UUID
	IsActive      *bool
	Limit, Offset int
}

// ListTransformations lists the organization's transformations. The actor
// needs transformations:read.
func (s *Service) ListTransformations(ctx context.Context, actor domain.Actor, in ListTransformationsInput) (Page[Transformation], error) {
	org, err := orgOf(actor, ScopeTransformationsRead)
	if err != nil {
		return Page[Transformation]{}, err
	}
	list, total, err := store.ListTransformations(ctx, s.store.Pool, org, store.TransformationFilter{
		TriggerPoint: in.TriggerPoint, BridgeID: in.BridgeID, IsActive: in.IsActive, Limit: in.Limit, Offset: in.Offset})
	return Page[Transformation]{Items: list, Total: total}, err
}

// GetTransformation is one transformation of the organization. The actor
// needs transformations:read.
func (s *Service) GetTransformation(ctx context.Context, actor domain.Actor, id uuid.UUID) (Transformation, error) {
	org, err := orgOf(actor, ScopeTransformationsRead)
	if err != nil {
		return Transformation{}, err
	}
	return s.transformation(ctx, org, id)
}

func (s *Service) transformation(ctx context.Context, org, id uuid.UUID) (Transformation, error) {
	t, err := store.TransformationByID(ctx, s.store.Pool, org, id)
	return t, notFound(err, "transformation")
}

// TransformationInput creates or changes a transformation. A nil field (a
// false BridgeIDSet) is not sent: on create Name, TriggerPoint and Code are
// then missing, on update they stay.
type TransformationInput struct {
	// Name is trimmed; "" is missing.
	Name *string
	// Description: "" clears it.
	Description *string
	// TriggerPoint is one of TriggerPoints.
	TriggerPoint *string
	// BridgeIDSet: BridgeID is the bridge whose orders it transforms (nil:
	// every bridge's, a global transformation).
	BridgeIDSet bool
	BridgeID    *uuid.UUID
	// Code is JavaScript defining transform(order), kept as written.
	Code     *string
	IsActive *bool
	// Priority is 0-1000.
	Priority *int
}

// Validate names the input's problems that need neither the database
// nor the sandbox.
func (in TransformationInput) Validate(create bool, maxCode int) domain.FieldErrors {
	_, v := in.patch(create, maxCode)
	return v
}

func (in TransformationInput) patch(create bool, maxCode int) (store.TransformationPatch, domain.FieldErrors) {
	var p store.TransformationPatch
	var v domain.FieldErrors
	if name, ok := requiredName(&v, "name", in.Name, create, TransformationNameMax); ok {
		p.Name = &name
	}
	if desc, ok := optionalText(&v, "description", in.Description, create, TransformationDescMax); ok {
		p.Description, p.ClearDesc = desc, desc == nil
	}
	if create || in.TriggerPoint != nil {
		switch {
		case in.TriggerPoint == nil:
			v.Add("triggerPoint", "is required")
		case !slices.Contains(TriggerPoints, *in.TriggerPoint):
			v.Add("triggerPoint", "must be one of "+strings.Join(TriggerPoints, ", "))
		default:
			p.TriggerPoint = in.TriggerPoint
		}
	}
	if create || in.BridgeIDSet {
		p.BridgeID, p.ClearBridge = in.BridgeID, in.BridgeID == nil
	}
	if create || in.Code != nil {
		if in.Code == nil {
			v.Add("code", "is required")
		} else if code := *in.Code; len(code) == 0 || len(code) > maxCode {
			v.Add("code", fmt.Sprintf("must be 1-%d bytes", maxCode))
		} else {
			p.Code = &code
		}
	}
	p.IsActive = in.IsActive
	if prio, ok := priority(&v, in.Priority, TransformationPrioMax); ok {
		p.Priority = &prio
	}
	return p, v
}

// checked validates the input: its fields, its bridge (another
// organization's is named like an unknown one) and then its code, which
// must compile, run its top level and define transform (400
// invalid_javascript, CONTRACT 8a).
func (s *Service) checked(ctx context.Context, org uuid.UUID, in TransformationInput, create bool) (store.TransformationPatch, error) {
	p, v := in.patch(create, s.sandbox.Limits().MaxCodeBytes)
	if p.BridgeID != nil {
		if _, err := store.BridgeByID(ctx, s.store.Pool, org, *p.BridgeID); errors.Is(err, store.ErrNotFound) {
			v.Add("bridgeId", "must be a bridge of this organization")
		} else if err != nil {
			return p, err
		}
	}
	if err := v.Err(); err != nil {
		return p, err
	}
	if p.Code != nil {
		// The save check runs transform over a sample order within the
		// organization's share of the sandbox processes, not only the top
		// level: code that overruns or blows up on an order is refused.
		if err := s.sandbox.CheckFor(ctx, org.String(), *p.Code, sandbox.SampleOrder()); err != nil {
			if sandbox.IsKind(err, sandbox.KindCanceled) {
				return p, canceled(ctx, err)
			}
			return p, invalidJavaScript(err)
		}
	}
	return p, nil
}

// CreateTransformation creates a transformation (active unless IsActive
// says otherwise). The actor needs transformations:write.
func (s *Service) CreateTransformation(ctx context.Context, actor domain.Actor, in TransformationInput) (Transformation, error) {
	org, err := orgOf(actor, ScopeTransformationsWrite)
	if err != nil {
		return Transformation{}, err
	}
	p, err := s.checked(ctx, org, in, true)
	if err != nil {
		return Transformation{}, err
	}
	t := Transformation{ID: uuid.New(), OrganizationID: org, IsActive: true, Name: *p.Name, Description: p.Description,
		TriggerPoint: *p.TriggerPoint, BridgeID: p.BridgeID, Code: *p.Code}
	if p.IsActive != nil {
		t.IsActive = *p.IsActive
	}
	if p.Priority != nil {
		t.Priority = *p.Priority
	}
	out, err := store.CreateTransformation(ctx, s.store.Pool, t)
	if errors.Is(err, store.ErrNotFound) { // the bridge went away since it was checked
		return Transformation{}, domain.InvalidField("bridgeId", "must be a bridge of this organization")
	}
	return out, err
}

// UpdateTransformation changes the fields sent (code checked as on
// create). The actor needs transformations:write.
func (s *Service) UpdateTransformation(ctx context.Context, actor domain.Actor, id uuid.UUID, in TransformationInput) (Transformation, error) {
	org, err := orgOf(actor, ScopeTransformationsWrite)
	if err != nil {
		return Transformation{}, err
	}
	if _, err := s.transformation(ctx, org, id); err != nil {
		return Transformation{}, err
	}
	p, err := s.checked(ctx, org, in, false)
	if err != nil {
		return Transformation{}, err
	}
	out, err := store.UpdateTransformation(ctx, s.store.Pool, org, id, p)
	return out, notFound(err, "transformation")
}

// DeleteTransformation deletes a transformation. The actor needs
// transformations:write.
func (s *Service) DeleteTransformation(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	org, err := orgOf(actor, ScopeTransformationsWrite)
	if err != nil {
		return err
	}
	return notFound(store.DeleteTransformation(ctx, s.store.Pool, org, id), "transformation")
}

// TestResult is a dry run of code over sample data: Output when it
// succeeded, Error (the script's failure) when not.
type TestResult struct {
	Success    bool
	Output     json.RawMessage
	Error      *string
	DurationMS float64
}

// TestCode runs code over sample data (a JSON object: map[string]any or
// its JSON), writing nothing. A failure of the script is a TestResult
// with Success false; code that does not compile is invalid_javascript.
// The actor needs transformations:write.
func (s *Service) TestCode(ctx context.Context, actor domain.Actor, code *string, sample any) (TestResult, error) {
	org, err := orgOf(actor, ScopeTransformationsWrite)
	if err != nil {
		return TestResult{}, err
	}
	in := TransformationInput{Code: code}
	var v domain.FieldErrors
	if code == nil {
		v.Add("code", "is required")
	} else {
		_, v = in.patch(false, s.sandbox.Limits().MaxCodeBytes)
	}
	raw := s.sampleData(&v, sample)
	if err := v.Err(); err != nil {
		return TestResult{}, err
	}
	return s.run(ctx, org, *code, raw)
}

// TestTransformation runs a transformation's code over sample data (see
// TestCode). The actor needs transformations:write.
func (s *Service) TestTransformation(ctx context.Context, actor domain.Actor, id uuid.UUID, sample any) (TestResult, error) {
	org, err := orgOf(actor, ScopeTransformationsWrite)
	if err != nil {
		return TestResult{}, err
	}
	t, err := s.transformation(ctx, org, id)
	if err != nil {
		return TestResult{}, err
	}
	var v domain.FieldErrors
	raw := s.sampleData(&v, sample)
	if err := v.Err(); err != nil {
		return TestResult{}, err
	}
	return s.run(ctx, org, t.Code, raw)
}

// sampleData is a required JSON object within the sandbox's input limits.
func (s *Service) sampleData(v *domain.FieldErrors, sample any) []byte {
	var raw []byte
	switch x := sample.(type) {
	case nil:
		v.Add("sampleData", "is required")
		return nil
	case json.RawMessage:
		raw = x
	case map[string]any:
		raw, _ = json.Marshal(x)
	default:
		v.Add("sampleData", "must be an object")
		return nil
	}
	if hi := s.sandbox.Limits().MaxInputBytes; len(raw) > hi {
		v.Add("sampleData", fmt.Sprintf("must be at most %d bytes of JSON", hi))
		return nil
	}
	return raw
}

func (s *Service) run(ctx context.Context, org uuid.UUID, code string, sample []byte) (TestResult, error) {
	start := time.Now()
	out, err := s.sandbox.RunFor(ctx, org.String(), code, sample)
	res := TestResult{DurationMS: transforms.Millis(time.Since(start))}
	switch {
	case err == nil:
		res.Success, res.Output = true, out
	case sandbox.IsKind(err, sandbox.KindSyntax):
		return res, invalidJavaScript(err)
	case sandbox.IsKind(err, sandbox.KindInput):
		return res, domain.InvalidField("sampleData", err.Error())
	case sandbox.IsKind(err, sandbox.KindCanceled):
		return res, canceled(ctx, err)
	default:
		msg := err.Error()
		res.Error, res.Output = &msg, json.RawMessage("null")
	}
	return res, nil
}

// canceled is ctx's error when the caller went away, or err.
func canceled(ctx context.Context, err error) error {
	if c := ctx.Err(); c != nil {
		return c
	}
	return err
}

// invalidJavaScript is Invalid invalid_javascript; the message and the
// detail of field code start with "line L, column C:" when the place is
// known.
func invalidJavaScript(err error) error {
	var e *sandbox.Error
	if !errors.As(err, &e) {
		return err
	}
	msg := e.Message
	if e.Line > 0 {
		msg = fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return &domain.Error{Kind: domain.KindInvalid, Code: "invalid_javascript", Message: "invalid JavaScript: " + msg,
		Fields: []domain.FieldError{{Field: "code", Message: msg}}, Err: err}
}
