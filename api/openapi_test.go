package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

// route is one method+pattern the chi router serves.
type route struct{ Method, Path string }

func (r route) String() string { return r.Method + " " + r.Path }

// routerRoutes walks the chi router: every method+pattern it serves.
func routerRoutes(t testing.TB, h http.Handler) []route {
	t.Helper()
	mux, ok := h.(chi.Routes)
	require.True(t, ok, "NewRouter must return a chi router")
	seen := map[route]bool{}
	var out []route
	require.NoError(t, chi.Walk(mux, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		// chi reports sub-router patterns with "/*" joins ("/api/v1/*/x"
		// does not occur, but "//" can when a group mounts "/").
		pattern = strings.ReplaceAll(pattern, "/*/", "/")
		if len(pattern) > 1 {
			pattern = strings.TrimSuffix(pattern, "/")
		}
		rt := route{Method: strings.ToUpper(method), Path: pattern}
		if !seen[rt] {
			seen[rt] = true
			out = append(out, rt)
		}
		return nil
	}))
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// documentedRoutes are the document's operations with their x-scope.
func documentedRoutes(t testing.TB) map[route]string {
	t.Helper()
	doc := openAPIDoc()
	paths, _ := doc["paths"].(map[string]any)
	out := map[route]string{}
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for m, op := range ops {
			if !slices.Contains(httpMethods, m) {
				continue
			}
			o, _ := op.(map[string]any)
			sc, _ := o["x-scope"].(string)
			out[route{Method: strings.ToUpper(m), Path: p}] = sc
		}
	}
	return out
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

var pathParam = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// probePath fills every path parameter with a value that names nothing.
func probePath(p string) string {
	return pathParam.ReplaceAllString(p, "00000000-0000-4000-8000-000000000000")
}

// probeScope learns what a route requires by calling it: without
// credentials, then with two API keys holding one unrelated scope each.
// An API key scope is read from the 403 insufficient_scope answer.
func probeScope(e *testEnv, keyA, keyB caller, rt route) string {
	path := probePath(rt.Path)
	var body any
	if rt.Method == "POST" || rt.Method == "PATCH" || rt.Method == "PUT" {
		body = map[string]any{}
	}
	for _, k := range []caller{keyA, keyB} {
		res := e.do(k, rt.Method, path, body)
		if res.Code == 403 && res.errCode() == "insufficient_scope" {
			e, _ := res.Body["error"].(map[string]any)
			ds, _ := e["details"].([]any)
			if len(ds) > 0 {
				d, _ := ds[0].(map[string]any)
				if m, _ := d["message"].(string); m != "" {
					return m
				}
			}
		}
		if res.Code == 403 && res.errCode() == "forbidden" {
			return "user"
		}
	}
	return ""
}

// probePaginated tells a paginated list: page=0 is refused naming page.
func probePaginated(e *testEnv, c caller, rt route) bool {
	if rt.Method != "GET" {
		return false
	}
	res := e.do(c, "GET", probePath(rt.Path)+"?page=0", nil)
	if res.Code != 400 {
		return false
	}
	er, _ := res.Body["error"].(map[string]any)
	ds, _ := er["details"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["field"] == "page" {
			return true
		}
	}
	return false
}

// yamlStub is a route as a ready-to-paste entry of api/openapi.yaml
// (under paths:, merged into the path's entry when it exists).
func yamlStub(rt route, scope string, paginated bool) string {
	if scope == "" {
		scope = defaultScope(rt)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "    %s:\n", strings.ToLower(rt.Method))
	fmt.Fprintf(&b, "      operationId: %s\n", docOperationID(rt))
	fmt.Fprintf(&b, "      summary: %s\n", docSummary(rt))
	fmt.Fprintf(&b, "      tags: [%s]\n", tagOf(rt.Path))
	fmt.Fprintf(&b, "      x-scope: %s\n", scope)
	var params []string
	for _, p := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
		params = append(params, fmt.Sprintf("        - {name: %s, in: path, required: true, schema: {type: string}}\n", p[1]))
	}
	if paginated {
		params = append(params, "        - $ref: '#/components/parameters/page'\n", "        - $ref: '#/components/parameters/limit'\n")
	}
	if len(params) > 0 {
		b.WriteString("      parameters:\n" + strings.Join(params, ""))
	}
	if rt.Method == "POST" || rt.Method == "PATCH" || rt.Method == "PUT" {
		b.WriteString("      requestBody: {$ref: '#/components/requestBodies/Object'}\n")
	}
	b.WriteString("      responses:\n")
	if paginated {
		b.WriteString("        '200': {$ref: '#/components/responses/List'}\n")
	} else {
		b.WriteString("        '2XX': {$ref: '#/components/responses/Data'}\n")
	}
	b.WriteString("        '400': {$ref: '#/components/responses/BadRequest'}\n")
	if scope != "public" {
		b.WriteString("        '401': {$ref: '#/components/responses/Unauthorized'}\n        '403': {$ref: '#/components/responses/Forbidden'}\n")
	}
	b.WriteString("        '404': {$ref: '#/components/responses/NotFound'}\n        '429': {$ref: '#/components/responses/RateLimited'}\n        '500': {$ref: '#/components/responses/Internal'}\n")
	return b.String()
}

// defaultScope names the credential of a route no API key scope gates.
func defaultScope(rt route) string {
	p := strings.TrimPrefix(strings.TrimPrefix(rt.Path, "/api/v1"), "/api")
	switch {
	case rt.Method == "OPTIONS", strings.HasPrefix(p, "/auth/"), p == "/openapi.json", p == "/docs",
		p == "/healthz", p == "/readyz", p == "/dev/mailbox", strings.HasPrefix(rt.Path, "/embed/"),
		p == "/embed/config" && rt.Method == "GET", p == "/embed/sessions/auto", strings.HasPrefix(p, "/embed/oauth/"):
		return "public"
	case strings.HasPrefix(p, "/embed/"):
		return "embed_session"
	case strings.HasPrefix(p, "/webhooks/"):
		return "bridge_secret"
	}
	return "authenticated"
}

// docSummary is a first summary from method and path.
func docSummary(rt route) string {
	segs := strings.Split(strings.Trim(strings.TrimPrefix(strings.TrimPrefix(rt.Path, "/api/v1"), "/api"), "/"), "/")
	last := segs[len(segs)-1]
	isParam := strings.HasPrefix(last, "{")
	noun := last
	if isParam && len(segs) > 1 {
		noun = segs[len(segs)-2]
	}
	noun = strings.ReplaceAll(strings.ReplaceAll(noun, "-", " "), "_", " ")
	switch {
	case rt.Method == "GET" && !isParam:
		return "List or read " + noun
	case rt.Method == "GET":
		return "Get one of " + noun
	case rt.Method == "POST" && !isParam && len(segs) > 1 && strings.HasPrefix(segs[len(segs)-2], "{"):
		return upperFirst(noun) + " (" + strings.Join(segs[:len(segs)-1], "/") + ")"
	case rt.Method == "POST":
		return "Create " + noun
	case rt.Method == "PATCH" || rt.Method == "PUT":
		return "Update " + noun
	case rt.Method == "DELETE":
		return "Delete " + noun
	}
	return upperFirst(strings.ToLower(rt.Method)) + " " + noun
}

// docOperationID derives a camelCase id from method and path.
func docOperationID(rt route) string {
	verb := map[string]string{"GET": "get", "POST": "post", "PATCH": "update", "PUT": "put", "DELETE": "delete", "OPTIONS": "options"}[rt.Method]
	var parts []string
	for _, seg := range strings.Split(strings.TrimPrefix(rt.Path, "/api/v1"), "/") {
		switch {
		case seg == "" || seg == "api":
		case seg == "*":
			parts = append(parts, "Any")
		case strings.HasPrefix(seg, "{"):
			parts = append(parts, "By"+upperFirst(strings.Trim(seg, "{}")))
		default:
			for _, w := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
				parts = append(parts, upperFirst(w))
			}
		}
	}
	id := verb + strings.Join(parts, "")
	if strings.HasPrefix(rt.Path, "/api/") && !strings.HasPrefix(rt.Path, "/api/v1/") {
		id += "Unversioned"
	}
	return id
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func tagOf(p string) string {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "/api/v1"), "/api")
	seg := strings.Split(strings.TrimPrefix(p, "/"), "/")[0]
	if seg == "" {
		return "service"
	}
	return seg
}

// TestOpenAPISkeleton prints every route as a YAML stub with its probed
// scope (FOS_OPENAPI_SKELETON=1); a tool for writing the document.
func TestOpenAPISkeleton(t *testing.T) {
	if os.Getenv("FOS_OPENAPI_SKELETON") == "" {
		t.Skip("set FOS_OPENAPI_SKELETON=1 to print the route stubs")
	}
	e := newEnv(t)
	owner := e.signup()
	keyA, keyB := e.apiKey(owner, "orders:read"), e.apiKey(owner, "bridges:read")
	var b strings.Builder
	last := ""
	for _, rt := range routerRoutes(t, e.handler) {
		if rt.Path != last {
			fmt.Fprintf(&b, "  %s:\n", rt.Path)
			last = rt.Path
		}
		b.WriteString(yamlStub(rt, probeScope(e, keyA, keyB, rt), probePaginated(e, owner.caller, rt)))
	}
	require.NoError(t, os.WriteFile(os.Getenv("FOS_OPENAPI_SKELETON"), []byte(b.String()), 0o644))
}

// TestOpenAPIDocumentMatchesRouter: every route the router serves is
// documented, every documented operation is routed, every operation has
// an operationId (unique), a summary and an x-scope, and each x-scope that
// names an API key scope (or "user") is what the route really enforces.
func TestOpenAPIDocumentMatchesRouter(t *testing.T) {
	e := newEnv(t)
	routes := routerRoutes(t, e.handler)
	documented := documentedRoutes(t)
	owner := e.signup()
	keyA, keyB := e.apiKey(owner, "orders:read"), e.apiKey(owner, "bridges:read")

	var missing []route
	routed := map[route]bool{}
	for _, rt := range routes {
		routed[rt] = true
		if _, ok := documented[rt]; !ok {
			missing = append(missing, rt)
		}
	}
	if len(missing) > 0 {
		var b strings.Builder
		last := ""
		for _, rt := range missing {
			if rt.Path != last {
				fmt.Fprintf(&b, "  %s:\n", rt.Path)
				last = rt.Path
			}
			b.WriteString(yamlStub(rt, probeScope(e, keyA, keyB, rt), probePaginated(e, owner.caller, rt)))
		}
		t.Errorf("%d routes are not in api/openapi.yaml; add them under paths: (merge into an existing path entry; "+
			"set x-scope to the scope the route checks and fix summary/responses):\n%s", len(missing), b.String())
	}
	for rt := range documented {
		if !routed[rt] {
			t.Errorf("api/openapi.yaml documents %s but the router does not serve it", rt)
		}
	}

	// Operation fields.
	ids := map[string]route{}
	doc := openAPIDoc()
	for p, item := range doc["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			if !slices.Contains(httpMethods, m) {
				continue
			}
			rt := route{Method: strings.ToUpper(m), Path: p}
			o := op.(map[string]any)
			id, _ := o["operationId"].(string)
			if id == "" {
				t.Errorf("%s has no operationId", rt)
			} else if prev, dup := ids[id]; dup {
				t.Errorf("operationId %s is used by %s and %s", id, prev, rt)
			}
			ids[id] = rt
			if s, _ := o["summary"].(string); s == "" {
				t.Errorf("%s has no summary", rt)
			}
			if documented[rt] == "" {
				t.Errorf("%s has no x-scope", rt)
			}
			if _, ok := o["responses"].(map[string]any); !ok {
				t.Errorf("%s has no responses", rt)
			}
		}
	}

	// The scopes are the ones enforced: probe each route with API keys.
	for _, rt := range routes {
		want, ok := documented[rt]
		if !ok {
			continue
		}
		got := probeScope(e, keyA, keyB, rt)
		apiScope := strings.Contains(want, ":")
		switch {
		case apiScope && got != want:
			t.Errorf("%s: x-scope %q but an API key without it gets %q", rt, want, got)
		case !apiScope && strings.Contains(got, ":"):
			t.Errorf("%s: x-scope %q but the route checks the API key scope %q", rt, want, got)
		case want == "user" && got != "user":
			t.Errorf("%s: x-scope user but an API key is not refused (probe: %q)", rt, got)
		}
	}
}

// TestOpenAPIServed: the document is public JSON and the reference page
// renders from it.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	res := e.do(caller{}, "GET", "/api/v1/openapi.json", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "3.1.0", res.Body["openapi"])
	var doc map[string]any
	require.NoError(t, json.Unmarshal(res.Raw, &doc))
	require.NotEmpty(t, doc["paths"])

	page := e.do(caller{}, "GET", "/docs", nil)
	require.Equal(t, 200, page.Code)
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")
	html := string(page.Raw)
	require.Contains(t, html, "/api/v1/orders")
	require.Contains(t, html, "orders:write")
	require.NotContains(t, html, "<script")
}
