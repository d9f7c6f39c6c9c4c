package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// responseSchemas are the document's JSON response schemas, compiled once
// with one compiler: key "METHOD path status" (status as written in the
// document: "201", "2XX", "default").
var responseSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	const loc = "mem://openapi.json"
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIJSON()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	out := map[string]*jsonschema.Schema{}
	for p, item := range doc.(map[string]any)["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			rs, _ := o["responses"].(map[string]any)
			for code := range rs {
				ptr := "/paths/" + escapePointer(p) + "/" + m + "/responses/" + code
				if !hasJSONSchema(doc, rs[code]) {
					continue
				}
				sch, err := c.Compile(loc + "#" + ptr + "/content/application~1json/schema")
				if err != nil {
					// A $ref'd response: compile the component's schema.
					ref, _ := rs[code].(map[string]any)["$ref"].(string)
					sch, err = c.Compile(loc + ref + "/content/application~1json/schema")
					if err != nil {
						return nil, err
					}
				}
				out[strings.ToUpper(m)+" "+p+" "+code] = sch
			}
		}
	}
	return out, nil
})

// hasJSONSchema: the response (or the component it refers to) has an
// application/json schema.
func hasJSONSchema(doc any, resp any) bool {
	r, _ := resp.(map[string]any)
	if ref, _ := r["$ref"].(string); ref != "" {
		name := ref[strings.LastIndex(ref, "/")+1:]
		r, _ = doc.(map[string]any)["components"].(map[string]any)["responses"].(map[string]any)[name].(map[string]any)
	}
	ct, _ := r["content"].(map[string]any)
	_, ok := ct["application/json"]
	return ok
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// withRouteCapture puts a chi route context on the request so the route
// pattern chi matched can be read after ServeHTTP.
func withRouteCapture(req *http.Request) (*http.Request, *chi.Context) {
	rctx := chi.NewRouteContext()
	return req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rctx)), rctx
}

// validateResponse checks a JSON response against the document's schema
// for its operation and status (exact status, then "4XX"-style range,
// then default). Responses of routes or statuses the document gives no
// JSON schema for are not checked; an undocumented route fails the
// router/document test instead.
func validateResponse(t testing.TB, method, pattern string, res *response) {
	t.Helper()
	if len(res.Raw) == 0 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || pattern == "" {
		return
	}
	if err := checkResponse(method, pattern, res.Code, res.Raw); err != nil {
		t.Errorf("%s %s answered %d with a body api/openapi.yaml does not allow: %v\nbody: %s", method, pattern, res.Code, err, res.Raw)
	}
}

// checkResponse validates one JSON body; nil when the document has no
// schema for it.
func checkResponse(method, pattern string, code int, raw []byte) error {
	schemas, err := responseSchemas()
	if err != nil {
		return fmt.Errorf("compile the document's response schemas: %w", err)
	}
	status := strconv.Itoa(code)
	var sch *jsonschema.Schema
	for _, k := range []string{status, status[:1] + "XX", "default"} {
		if s, ok := schemas[method+" "+pattern+" "+k]; ok {
			sch = s
			break
		}
	}
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestResponseValidationCatchesDrift: a dropped or renamed field, or an
// error body off the contract's shape, fails validation.
func TestResponseValidationCatchesDrift(t *testing.T) {
	const ok = `{"data":{"id":"6f1c1c3e-6c53-4a8e-9d7e-1a2b3c4d5e6f","name":"Dock","street":null,"city":"Memphis","province":null,"zip":null,"country":"US","bridgeId":null,"externalId":null,"createdAt":"2026-11-27T10:00:00Z","updatedAt":"2026-11-27T10:00:00Z"}}`
	require.NoError(t, checkResponse("GET", "/api/v1/locations/{id}", 200, []byte(ok)))
	dropped := strings.Replace(ok, `"street":null,`, "", 1)
	require.Error(t, checkResponse("GET", "/api/v1/locations/{id}", 200, []byte(dropped)))
	renamed := strings.Replace(ok, `"bridgeId"`, `"bridge_id"`, 1)
	require.Error(t, checkResponse("GET", "/api/v1/locations/{id}", 200, []byte(renamed)))
	require.NoError(t, checkResponse("GET", "/api/v1/locations/{id}", 404, []byte(`{"error":{"code":"not_found","message":"location not found"}}`)))
	require.Error(t, checkResponse("GET", "/api/v1/locations/{id}", 404, []byte(`{"message":"not found"}`)))
}
