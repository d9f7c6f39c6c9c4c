package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Request validation by the document (issue 17): every operation of
// api/openapi.yaml whose request body has its own JSON schema (not the
// generic components/requestBodies/Object) has its JSON object bodies
// checked against that schema before the handler runs, after
// authentication, scopes and roles (s.h calls it). A body the schema
// refuses is the contract's 400 validation_error with one details entry
// per failing field path (line_items[0].sku). Anything that is not a JSON
// object (empty, malformed, null, an array, too large, NUL escapes) is
// left to the handler, which answers it as before.
//
// Messages follow the handlers' wording ("is required", "must be a
// string", "must be one of a, b"); a schema node may name its own with the
// extension keyword x-message.

const openAPIBase = "mem://openapi.json"

// requestValidators are the compiled request schemas by "METHOD pattern".
type requestValidators map[string]requestSchema

// requestSchema is one operation's request schema. merge (the operation's
// x-merge-domain-errors) leaves a refusal to the handler, which answers it
// together with the domain's own findings (checks of several fields or of
// the database), so that one response still names every problem; a
// handler that reads its body with decodeJSON answers the schema's
// details alone.
//
// camel (x-camel-case-aliases) copies the camelCase fields of camelAliases
// to their snake_case names before the body is checked, as the handler
// reads them (acceptCamelCase).
type requestSchema struct {
	sch   *jsonschema.Schema
	merge bool
	camel bool
}

var compiledRequestSchemas = sync.OnceValues(func() (requestValidators, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIJSON()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range requestFormats {
		c.RegisterFormat(f)
	}
	if err := c.AddResource(openAPIBase, doc); err != nil {
		return nil, err
	}
	out := requestValidators{}
	for p, item := range doc.(map[string]any)["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			rb, ok := o["requestBody"].(map[string]any)
			if !ok {
				continue
			}
			if _, isRef := rb["$ref"]; isRef {
				// components/requestBodies/Object: any JSON object.
				continue
			}
			ct, _ := rb["content"].(map[string]any)
			if _, ok := ct["application/json"]; !ok {
				continue
			}
			ptr := "/paths/" + escapePointerToken(p) + "/" + m + "/requestBody/content/application~1json/schema"
			sch, err := c.Compile(openAPIBase + "#" + ptr)
			if err != nil {
				return nil, fmt.Errorf("%s %s request schema: %w", strings.ToUpper(m), p, err)
			}
			merge, _ := o["x-merge-domain-errors"].(bool)
			camel, _ := o["x-camel-case-aliases"].(bool)
			out[strings.ToUpper(m)+" "+p] = requestSchema{sch: sch, merge: merge, camel: camel}
		}
	}
	return out, nil
})

// mustRequestValidators compiles the request schemas (once, at start-up:
// NewRouter calls it, so a broken document stops the process there).
func mustRequestValidators() requestValidators {
	v, err := compiledRequestSchemas()
	if err != nil {
		panic("api/openapi.yaml: " + err.Error())
	}
	return v
}

func escapePointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// parsedBodyKey carries the body the validator decoded to decodeBody, so
// a validated object is not parsed twice.
type parsedBodyKey struct{}

// parsedBody is a body validateRequest decoded, and the schema's details
// the handler is to answer (x-merge-domain-errors).
type parsedBody struct {
	m    map[string]any
	errs []FieldError
}

// validateRequest checks r's JSON object body against its operation's
// request schema. It returns the request the handler should read (its
// body restored) and the 400 when the schema refuses the body.
func (s *Server) validateRequest(r *http.Request) (*http.Request, error) {
	if len(s.requestSchemas) == 0 || r.Body == nil || r.Body == http.NoBody {
		return r, nil
	}
	rctx := chi.RouteContext(r.Context())
	if rctx == nil {
		return r, nil
	}
	rs, ok := s.requestSchemas[r.Method+" "+rctx.RoutePattern()]
	if !ok {
		return r, nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		// Too large or unreadable: the handler reads the same error.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), errReader{err}))
		return r, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if hasNULEscape(raw) {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil || len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return r, nil
	}
	if rs.camel {
		acceptCamelCase(m)
	}
	pb := &parsedBody{m: m}
	if err := rs.sch.Validate(m); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return r, err
		}
		if pb.errs = validationDetails(ve, m); !rs.merge {
			return r, errValidation(pb.errs...)
		}
	}
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok {
		ri.body = pb
		return r, nil
	}
	return r.WithContext(context.WithValue(r.Context(), parsedBodyKey{}, pb)), nil
}

// validationDetails turns a schema validation error into one detail per
// failing field (the first problem found for each), sorted by field.
func validationDetails(ve *jsonschema.ValidationError, body any) []FieldError {
	var out []FieldError
	seen := map[string]bool{}
	add := func(field, msg string) {
		if field == "" {
			field = "body"
		}
		if !seen[field] {
			seen[field] = true
			out = append(out, FieldError{Field: field, Message: msg})
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, p := range k.Missing {
				add(fieldPath(append(slices.Clone(e.InstanceLocation), p), body), "is required")
			}
			return
		case *kind.DependentRequired:
			for _, p := range k.Missing {
				add(fieldPath(append(slices.Clone(e.InstanceLocation), p), body), "is required with "+k.Prop)
			}
			return
		case *kind.AnyOf, *kind.OneOf:
			// "X or null": the value is not null, so X's own errors
			// name the fields. Otherwise one message for the
			// alternatives, not each branch's.
			var rest []*jsonschema.ValidationError
			for _, c := range e.Causes {
				if t, ok := c.ErrorKind.(*kind.Type); ok && len(c.Causes) == 0 && slices.Equal(t.Want, []string{"null"}) {
					continue
				}
				rest = append(rest, c)
			}
			if len(rest) == 1 && len(rest) < len(e.Causes) {
				walk(rest[0])
				return
			}
			add(fieldPath(e.InstanceLocation, body), detailMessage(e, body))
			return
		}
		if len(e.Causes) == 0 {
			add(fieldPath(e.InstanceLocation, body), detailMessage(e, body))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// fieldPath writes an instance location as line_items[0].sku.
func fieldPath(loc []string, body any) string {
	var b strings.Builder
	cur := body
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			fmt.Fprintf(&b, "[%d]", i)
			if i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			if m, ok := v.(map[string]any); ok {
				cur = m[tok]
			} else {
				cur = nil
			}
		}
	}
	return b.String()
}

// instanceAt is the value at an instance location.
func instanceAt(loc []string, body any) any {
	cur := body
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		case map[string]any:
			cur = v[tok]
		default:
			return nil
		}
	}
	return cur
}

// decodeValidatedJSON is decodeJSON into a jsonBody that takes the object
// validateRequest decoded without reading the body again (decodeBody reads
// and scans it before it looks for the decoded one): the hot create paths
// (POST /orders) read their body once.
func decodeValidatedJSON(r *http.Request, body *jsonBody) error {
	if pb, ok := preParsedBody(r); ok {
		if len(pb.errs) > 0 {
			return errValidation(pb.errs...)
		}
		*body = pb.m
		return nil
	}
	return decodeJSON(r, body)
}

// decodeCheckedJSON is decodeJSON for the operations whose schema leaves
// its refusal to the handler (x-merge-domain-errors): it returns the
// schema's details in a validator, to which the handler adds what only
// it or the domain can find (validation). The body's values are then
// not all of their schema's types: the handler reads them leniently.
func decodeCheckedJSON(r *http.Request, body *jsonBody) (*validator, error) {
	if pb, ok := preParsedBody(r); ok {
		*body = pb.m
		return &validator{details: pb.errs}, nil
	}
	return &validator{}, decodeJSON(r, body)
}

// preParsedBody is the object validateRequest decoded, if any (taken: a
// second call finds none).
func preParsedBody(r *http.Request) (*parsedBody, bool) {
	if ri, ok := r.Context().Value(reqInfoKey).(*reqInfo); ok && ri.body != nil {
		pb := ri.body
		ri.body = nil
		return pb, true
	}
	pb, ok := r.Context().Value(parsedBodyKey{}).(*parsedBody)
	return pb, ok
}
