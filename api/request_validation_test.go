package api

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestRequestSchemasCompile: every operation's own request schema
// compiles (NewRouter would stop the process otherwise), and the order
// create body is among them.
func TestRequestSchemasCompile(t *testing.T) {
	v, err := compiledRequestSchemas()
	require.NoError(t, err)
	require.Contains(t, v, "POST /api/v1/orders")
	require.Contains(t, v, "PATCH /api/v1/orders/{id}")
	require.NotContains(t, v, "POST /api/v1/orders/{id}/resync", "generic bodies are not compiled")
}

// TestRequestValidationByDocument: a body the document refuses is the
// contract's 400 with one detail per failing field path, in the
// handlers' wording; scopes are checked first; what is not a JSON object
// is left to the handler.
func TestRequestValidationByDocument(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")

	body := orderTestBody(bridge, "rv-1")
	li := body["line_items"].([]any)[0].(map[string]any)
	delete(li, "sku")
	li["quantity"] = 0
	body["tags"] = []any{"ok", 7}
	body["currency"] = "usd"
	res := e.do(owner.caller, "POST", "/api/v1/orders", body)
	requireError(t, res, 400, "validation_error")
	var got []FieldError
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		m := d.(map[string]any)
		got = append(got, FieldError{Field: m["field"].(string), Message: m["message"].(string)})
	}
	require.ElementsMatch(t, []FieldError{
		{Field: "currency", Message: "must be an ISO 4217 code (3 uppercase letters)"},
		{Field: "line_items[0].quantity", Message: "must be a positive integer (at most 1000000)"},
		{Field: "line_items[0].sku", Message: "is required"},
		{Field: "tags[1]", Message: "must be a string"},
	}, got)

	// Scopes before bodies: a key without orders:write gets 403.
	reader := e.apiKey(owner, "orders:read")
	requireError(t, e.do(reader, "POST", "/api/v1/orders", body), 403, "insufficient_scope")

	// Not an object: the handler answers as before.
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders", "[1]"), 400, "invalid_json")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders", "{nope"), 400, "invalid_json")

	// A valid body still reaches the handler (which reads the body the
	// validator decoded).
	ok := e.do(owner.caller, "POST", "/api/v1/orders", orderTestBody(bridge, "rv-2"))
	require.Equal(t, 201, ok.Code, "%s", ok.Raw)
	require.Equal(t, "rv-2", ok.data()["externalId"])
}

// BenchmarkValidateOrderBody is what the document's check of one order
// create body costs (read, decode, validate), without the database.
func BenchmarkValidateOrderBody(b *testing.B) {
	s := &Server{requestSchemas: mustRequestValidators()}
	body := orderTestBody(uuid.NewString(), "EXT")
	body["tags"] = []string{"web"}
	raw := orderJSONOf(body)
	rctx := chi.NewRouteContext()
	rctx.RoutePatterns = []string{"/api/v1/orders"}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/api/v1/orders", bytes.NewReader(raw))
		req = req.WithContext(context.WithValue(req.Context(), chi.RouteCtxKey, rctx))
		if _, err := s.validateRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
