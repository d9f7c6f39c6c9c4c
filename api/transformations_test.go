package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/sandbox"
)

const transformIdentity = "function transform(data) {\n  data.touched = true;\n  return data;\n}"

func (e *testEnv) transformationCreate(c caller, body map[string]any) map[string]any {
	e.t.Helper()
	res := e.do(c, "POST", "/api/v1/transformations", body)
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

func TestTransformationCRUD(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := e.bridgeStorefrontA(owner.caller, "shop", "shpat_x")

	// Create: defaults, every field present.
	g := e.transformationCreate(owner.caller, map[string]any{"name": "Global", "triggerPoint": "after_sync", "code": transformIdentity})
	require.Equal(t, "Global", g["name"])
	require.Equal(t, "after_sync", g["triggerPoint"])
	require.Equal(t, true, g["isActive"])
	require.Equal(t, 0.0, g["priority"])
	require.Equal(t, transformIdentity, g["code"])
	require.Equal(t, owner.org, g["organizationId"])
	for _, k := range []string{"id", "description", "bridgeId", "createdAt", "updatedAt"} {
		require.Contains(t, g, k)
	}
	require.Nil(t, g["bridgeId"])
	require.Nil(t, g["description"])

	b := e.transformationCreate(owner.caller, map[string]any{"name": "Shop", "triggerPoint": "before_sync", "code": transformIdentity,
		"description": "normalize", "bridgeId": bridge["id"], "isActive": false, "priority": 500})
	require.Equal(t, bridge["id"], b["bridgeId"])
	require.Equal(t, false, b["isActive"])
	require.Equal(t, 500.0, b["priority"])
	require.Equal(t, "normalize", b["description"])

	// Get.
	res := e.do(owner.caller, "GET", "/api/v1/transformations/"+b["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, transformIdentity, res.data()["code"])

	// List: priority descending; filters.
	res = e.do(owner.caller, "GET", "/api/v1/transformations", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.list()
	require.Len(t, list, 2)
	require.Equal(t, b["id"], list[0]["id"])
	require.Equal(t, 2.0, res.Body["pagination"].(map[string]any)["total"])
	for q, want := range map[string]string{
		"triggerPoint=after_sync":           g["id"].(string),
		"bridgeId=" + bridge["id"].(string): b["id"].(string),
		"isActive=false":                    b["id"].(string),
		"isActive=true":                     g["id"].(string),
	} {
		res = e.do(owner.caller, "GET", "/api/v1/transformations?"+q, nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Len(t, res.list(), 1, q)
		require.Equal(t, want, res.list()[0]["id"], q)
	}
	res = e.do(owner.caller, "GET", "/api/v1/transformations?limit=500&page=1", nil)
	require.Equal(t, 100.0, res.Body["pagination"].(map[string]any)["limit"])
	for _, q := range []string{"triggerPoint=soon", "bridgeId=x", "isActive=yes", "page=0"} {
		requireError(t, e.do(owner.caller, "GET", "/api/v1/transformations?"+q, nil), 400, "validation_error")
	}

	// Update: fields sent only; bridgeId null makes it global; code checked.
	res = e.do(owner.caller, "PATCH", "/api/v1/transformations/"+b["id"].(string), map[string]any{
		"name": "Renamed", "priority": 7, "isActive": true, "bridgeId": nil, "description": nil, "triggerPoint": "after_operation"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	u := res.data()
	require.Equal(t, "Renamed", u["name"])
	require.Equal(t, 7.0, u["priority"])
	require.Equal(t, true, u["isActive"])
	require.Nil(t, u["bridgeId"])
	require.Nil(t, u["description"])
	require.Equal(t, "after_operation", u["triggerPoint"])
	require.Equal(t, transformIdentity, u["code"])

	res = e.do(owner.caller, "PATCH", "/api/v1/transformations/"+b["id"].(string), map[string]any{"code": "function transform(d) {\n  return {x: 1}\n}"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Contains(t, res.data()["code"], "x: 1")
	res = e.do(owner.caller, "PATCH", "/api/v1/transformations/"+b["id"].(string), map[string]any{"code": "function transform(d) {\n\n  return d +;\n}"})
	requireError(t, res, 400, "invalid_javascript")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "line 3")
	// A refused update changes nothing.
	res = e.do(owner.caller, "GET", "/api/v1/transformations/"+b["id"].(string), nil)
	require.Contains(t, res.data()["code"], "x: 1")

	// Delete.
	res = e.do(owner.caller, "DELETE", "/api/v1/transformations/"+b["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, true, res.Body["success"])
	requireError(t, e.do(owner.caller, "GET", "/api/v1/transformations/"+b["id"].(string), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/transformations/"+b["id"].(string), nil), 404, "not_found")
}

func TestTransformationValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	post := func(body map[string]any) *response {
		return e.do(owner.caller, "POST", "/api/v1/transformations", body)
	}

	res := post(map[string]any{})
	requireError(t, res, 400, "validation_error")
	require.ElementsMatch(t, []string{"name", "triggerPoint", "code"}, bridgeErrFields(t, res))

	res = post(map[string]any{"name": strings.Repeat("n", 101), "triggerPoint": "on_sync", "code": 5, "priority": 1001,
		"isActive": "yes", "bridgeId": "nope", "description": strings.Repeat("d", 501)})
	requireError(t, res, 400, "validation_error")
	require.ElementsMatch(t, []string{"name", "triggerPoint", "code", "priority", "isActive", "bridgeId", "description"}, bridgeErrFields(t, res))
	res = post(map[string]any{"name": "n", "triggerPoint": "after_sync", "code": transformIdentity, "priority": 1.5})
	require.Equal(t, []string{"priority"}, bridgeErrFields(t, res))

	// Syntax errors carry the line.
	res = post(map[string]any{"name": "n", "triggerPoint": "after_sync", "code": "function transform(data) {\n  if (data. {\n}\n"})
	requireError(t, res, 400, "invalid_javascript")
	msg := res.Body["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "line 2", msg)
	require.Equal(t, []string{"code"}, bridgeErrFields(t, res))
	// No transform function; a top level that throws.
	for _, code := range []string{"function transformer(d) { return d }", "var transform = 1", "throw new Error('x'); function transform(d) {}"} {
		requireError(t, post(map[string]any{"name": "n", "triggerPoint": "after_sync", "code": code}), 400, "invalid_javascript")
	}
	res = e.do(owner.caller, "GET", "/api/v1/transformations", nil)
	require.Empty(t, res.list())
}

func TestTransformationAcrossOrganizations(t *testing.T) {
	e := newEnv(t)
	a, b := e.signup(), e.signup()
	bridgeB := e.bridgeStorefrontA(b.caller, "b shop", "shpat_b")
	tr := e.transformationCreate(a.caller, map[string]any{"name": "A", "triggerPoint": "after_sync", "code": transformIdentity})
	id := tr["id"].(string)

	requireError(t, e.do(b.caller, "GET", "/api/v1/transformations/"+id, nil), 404, "not_found")
	requireError(t, e.do(b.caller, "PATCH", "/api/v1/transformations/"+id, map[string]any{"name": "x"}), 404, "not_found")
	requireError(t, e.do(b.caller, "DELETE", "/api/v1/transformations/"+id, nil), 404, "not_found")
	requireError(t, e.do(b.caller, "POST", "/api/v1/transformations/"+id+"/test", map[string]any{"sampleData": map[string]any{}}), 404, "not_found")
	requireError(t, e.do(a.caller, "GET", "/api/v1/transformations/not-a-uuid", nil), 404, "not_found")
	require.Empty(t, e.do(b.caller, "GET", "/api/v1/transformations", nil).list())

	// Another organization's bridge is refused like an unknown one.
	for _, bid := range []string{bridgeB["id"].(string), uuid.NewString()} {
		res := e.do(a.caller, "POST", "/api/v1/transformations", map[string]any{"name": "x", "triggerPoint": "after_sync", "code": transformIdentity, "bridgeId": bid})
		requireError(t, res, 400, "validation_error")
		require.Equal(t, []string{"bridgeId"}, bridgeErrFields(t, res))
		res = e.do(a.caller, "PATCH", "/api/v1/transformations/"+id, map[string]any{"bridgeId": bid})
		requireError(t, res, 400, "validation_error")
	}
	res := e.do(a.caller, "GET", "/api/v1/transformations/"+id, nil)
	require.Nil(t, res.data()["bridgeId"])
}

func TestTransformationScopes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	tr := e.transformationCreate(owner.caller, map[string]any{"name": "A", "triggerPoint": "after_sync", "code": transformIdentity})
	id := tr["id"].(string)
	reader := e.apiKey(owner, "transformations:read")
	writer := e.apiKey(owner, "transformations:write")
	other := e.apiKey(owner, "orders:read")

	reads := [][2]string{{"GET", "/api/v1/transformations"}, {"GET", "/api/v1/transformations/" + id}}
	writes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/transformations", map[string]any{"name": "B", "triggerPoint": "before_sync", "code": transformIdentity}},
		{"POST", "/api/v1/transformations/test", map[string]any{"code": transformIdentity, "sampleData": map[string]any{}}},
		{"POST", "/api/v1/transformations/" + id + "/test", map[string]any{"sampleData": map[string]any{}}},
		{"PATCH", "/api/v1/transformations/" + id, map[string]any{"name": "C"}},
		{"DELETE", "/api/v1/transformations/" + id, nil},
	}
	for _, r := range reads {
		require.Equal(t, 200, e.do(reader, r[0], r[1], nil).Code, r[1])
		requireError(t, e.do(writer, r[0], r[1], nil), 403, "insufficient_scope")
		requireError(t, e.do(other, r[0], r[1], nil), 403, "insufficient_scope")
	}
	for _, w := range writes {
		requireError(t, e.do(reader, w.method, w.path, w.body), 403, "insufficient_scope")
		res := e.do(writer, w.method, w.path, w.body)
		require.Contains(t, []int{200, 201}, res.Code, "%s %s: %s", w.method, w.path, res.Raw)
	}
}

func TestTransformationTestEndpoints(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Sandbox = sandbox.New(sandbox.Limits{Timeout: 200 * time.Millisecond}) })
	owner := e.signup()
	test := func(body map[string]any) *response {
		return e.do(owner.caller, "POST", "/api/v1/transformations/test", body)
	}

	// Success: output and duration_ms; numbers kept as written.
	res := test(map[string]any{"code": "function transform(o) { o.total = o.total * 2; o.tags.push('x') }",
		"sampleData": map[string]any{"total": 10.5, "tags": []any{}, "id": 1234567890123}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, true, res.Body["success"])
	require.Equal(t, map[string]any{"total": 21.0, "tags": []any{"x"}, "id": 1234567890123.0}, res.Body["output"])
	require.Contains(t, res.Body, "duration_ms")
	require.GreaterOrEqual(t, res.Body["duration_ms"].(float64), 0.0)

	// A failing script: 200 {success: false, error}.
	for code, want := range map[string]string{
		"function transform(o) { throw new Error('nope') }": "nope",
		"function transform(o) { while (true) {} }":         "deadline",
		"function transform(o) { return 5 }":                "must return an object",
		"function transform(o) { return o.a.b }":            "TypeError",
	} {
		start := time.Now()
		res = test(map[string]any{"code": code, "sampleData": map[string]any{}})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Equal(t, false, res.Body["success"], code)
		require.Contains(t, res.Body["error"], want, code)
		require.Nil(t, res.Body["output"])
		require.Contains(t, res.Body, "duration_ms")
		require.Less(t, time.Since(start), 2*time.Second)
	}

	// Invalid code is 400 invalid_javascript; bad bodies name the field.
	res = test(map[string]any{"code": "function transform(o) {\n  return o +\n}", "sampleData": map[string]any{}})
	requireError(t, res, 400, "invalid_javascript")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "line 3")
	res = test(map[string]any{})
	requireError(t, res, 400, "validation_error")
	require.ElementsMatch(t, []string{"code", "sampleData"}, bridgeErrFields(t, res))
	res = test(map[string]any{"code": transformIdentity, "sampleData": []any{1}})
	require.Equal(t, []string{"sampleData"}, bridgeErrFields(t, res))
	res = test(map[string]any{"code": transformIdentity, "sampleData": map[string]any{"big": strings.Repeat("x", 2<<20)}})
	require.Equal(t, []string{"sampleData"}, bridgeErrFields(t, res))

	// The saved code's test.
	tr := e.transformationCreate(owner.caller, map[string]any{"name": "A", "triggerPoint": "after_sync",
		"code": "function transform(o) { return {n: o.n + 1} }"})
	res = e.do(owner.caller, "POST", fmt.Sprintf("/api/v1/transformations/%s/test", tr["id"]), map[string]any{"sampleData": map[string]any{"n": 1}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, true, res.Body["success"])
	require.Equal(t, map[string]any{"n": 2.0}, res.Body["output"])
	requireError(t, e.do(owner.caller, "POST", fmt.Sprintf("/api/v1/transformations/%s/test", tr["id"]), map[string]any{}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/transformations/"+uuid.NewString()+"/test", map[string]any{"sampleData": map[string]any{}}), 404, "not_found")
}
