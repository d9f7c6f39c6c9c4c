package api

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store/storetest"
)

// TestMain: the test binary is its own sandbox process, so
// transformations run in the process pool as in the service.
func TestMain(m *testing.M) {
	sandbox.ServeIfChild()
	os.Setenv("FOS_SANDBOX_MEMORY_MB", "256")
	os.Exit(storetest.Run(m))
}

// testEnv is the real router and middleware over a real database.
type testEnv struct {
	t       testing.TB
	handler http.Handler
	deps    Deps
	mailbox *email.Mailbox
}

// newEnv builds the router; opts may adjust the dependencies (e.g. a
// Temporal client) before it is built.
func newEnv(t testing.TB, opts ...func(*Deps)) *testEnv {
	t.Helper()
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	mb := &email.Mailbox{}
	d := Deps{
		Store:     storetest.New(t),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tokens:    auth.Tokens{Secret: []byte("test-secret-test-secret-test-secret"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost},
		Secrets:   box,
		TaskQueue: "fos-test",
		// Bulk work (rate comparisons) starts on its own queue.
		BulkTaskQueue: "fos-test-bulk",
		Mailer:        mb,
		Mailbox:       mb,
		BaseURL:       "http://fos.test",
		// The connectors as under FOS_SANDBOX=1 (the API never dials them).
		Platforms: platforms.NewAPIRegistry(platforms.SandboxURLs("http://sandbox.test"), nil, nil),
	}
	for _, o := range opts {
		o(&d)
	}
	return &testEnv{t: t, handler: NewRouter(d), deps: d, mailbox: mb}
}

// response is a recorded answer with its decoded JSON body.
type response struct {
	Code   int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// data is body["data"] as an object.
func (r *response) data() map[string]any {
	m, _ := r.Body["data"].(map[string]any)
	return m
}

// list is body["data"] as an array of objects.
func (r *response) list() []map[string]any {
	arr, _ := r.Body["data"].([]any)
	out := make([]map[string]any, 0, len(arr))
	for _, it := range arr {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

// errCode is body.error.code.
func (r *response) errCode() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// caller is a set of credentials.
type caller struct {
	token string // bearer
	org   string // X-Organization-Id (users)
}

// do sends a request. body may be nil, a string (sent raw) or a value to encode.
func (e *testEnv) do(c caller, method, path string, body any, headers ...string) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.org != "" {
		req.Header.Set("X-Organization-Id", c.org)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	req, rctx := withRouteCapture(req)
	e.handler.ServeHTTP(rec, req)
	res := &response{Code: rec.Code, Header: rec.Header(), Raw: rec.Body.Bytes()}
	if len(res.Raw) > 0 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		require.NoError(e.t, json.Unmarshal(res.Raw, &res.Body), "response is not JSON: %s", res.Raw)
	}
	// Every response is checked against api/openapi.yaml.
	validateResponse(e.t, method, rctx.RoutePattern(), res)
	return res
}

// account is a signed-up user with an organization it owns.
type account struct {
	caller
	userID string
	email  string
}

// signup creates a user owning a new organization.
func (e *testEnv) signup() account {
	e.t.Helper()
	mail := "u" + uuid.NewString()[:12] + "@example.com"
	res := e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "Acme " + mail,
	})
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	d := res.data()
	user := d["user"].(map[string]any)
	org := d["organization"].(map[string]any)
	return account{caller: caller{token: d["access_token"].(string), org: org["id"].(string)}, userID: user["id"].(string), email: mail}
}

// signupNoOrg creates a user without an organization.
func (e *testEnv) signupNoOrg() account {
	e.t.Helper()
	mail := "u" + uuid.NewString()[:12] + "@example.com"
	res := e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Grace", "last_name": "Hopper",
	})
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	d := res.data()
	return account{caller: caller{token: d["access_token"].(string)}, userID: d["user"].(map[string]any)["id"].(string), email: mail}
}

// apiKey creates an API key with scopes in the account's organization.
func (e *testEnv) apiKey(owner account, scopes ...string) caller {
	e.t.Helper()
	res := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "test key", "scopes": scopes})
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return caller{token: res.data()["key"].(string)}
}

// requireError asserts the status and error code of a response.
func requireError(t testing.TB, res *response, status int, code string) {
	t.Helper()
	require.Equal(t, status, res.Code, "%s", res.Raw)
	require.Equal(t, code, res.errCode(), "%s", res.Raw)
	e := res.Body["error"].(map[string]any)
	require.NotEmpty(t, e["message"])
}
