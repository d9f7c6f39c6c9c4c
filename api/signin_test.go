package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSignupLoginMe(t *testing.T) {
	e := newEnv(t)
	a := e.signup()

	res := e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": strings.ToUpper(a.email), "password": "correct horse"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.NotEmpty(t, d["access_token"])
	require.NotEmpty(t, d["expires_at"])
	orgs := d["organizations"].([]any)
	require.Len(t, orgs, 1)
	require.Equal(t, "owner", orgs[0].(map[string]any)["role"])
	require.Equal(t, a.org, orgs[0].(map[string]any)["id"])
	user := d["user"].(map[string]any)
	for _, f := range []string{"id", "email", "first_name", "last_name", "created_at"} {
		require.Contains(t, user, f)
	}
	require.NotContains(t, user, "password_hash")

	me := e.do(caller{token: a.token}, "GET", "/api/v1/auth/me", nil)
	require.Equal(t, 200, me.Code, "%s", me.Raw)
	require.Equal(t, a.userID, me.data()["user"].(map[string]any)["id"])
}

func TestSignupValidationAndConflict(t *testing.T) {
	e := newEnv(t)
	res := e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{"email": "nope", "password": "short"})
	requireError(t, res, 400, "validation_error")
	fields := map[string]bool{}
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		fields[d.(map[string]any)["field"].(string)] = true
	}
	require.Equal(t, map[string]bool{"email": true, "password": true, "first_name": true, "last_name": true}, fields)

	a := e.signup()
	res = e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{"email": a.email, "password": "whatever1", "first_name": "A", "last_name": "B"})
	requireError(t, res, 409, "conflict")

	noOrg := e.signupNoOrg()
	me := e.do(noOrg.caller, "GET", "/api/v1/auth/me", nil)
	require.Equal(t, 200, me.Code)
	require.Empty(t, me.data()["organizations"])
}

func TestLoginFailuresLookAlike(t *testing.T) {
	e := newEnv(t)
	a := e.signup()
	wrongPw := e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": a.email, "password": "wrong password"})
	unknown := e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": "nobody@example.com", "password": "wrong password"})
	requireError(t, wrongPw, 401, "unauthorized")
	requireError(t, unknown, 401, "unauthorized")
	require.Equal(t, wrongPw.Body["error"], unknown.Body["error"])
}

func TestOrganizationHeaderRules(t *testing.T) {
	e := newEnv(t)
	a := e.signup()
	b := e.signup()
	requireError(t, e.do(caller{token: a.token}, "GET", "/api/v1/organizations", nil), 400, "organization_required")
	requireError(t, e.do(caller{token: a.token, org: b.org}, "GET", "/api/v1/organizations", nil), 403, "forbidden")
	requireError(t, e.do(caller{}, "GET", "/api/v1/organizations", nil), 401, "unauthorized")
	requireError(t, e.do(caller{token: "garbage.token.value", org: a.org}, "GET", "/api/v1/organizations", nil), 401, "unauthorized")
}

func TestCreateOrganizationMakesCallerOwner(t *testing.T) {
	e := newEnv(t)
	u := e.signupNoOrg()
	res := e.do(u.caller, "POST", "/api/v1/organizations", map[string]any{"name": "Second Shop"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	org := res.data()
	require.True(t, strings.HasPrefix(org["slug"].(string), "second-shop"))
	for _, f := range []string{"id", "name", "slug", "plan", "settings", "created_at"} {
		require.Contains(t, org, f)
	}
	me := e.do(u.caller, "GET", "/api/v1/auth/me", nil)
	require.Equal(t, "owner", me.data()["organizations"].([]any)[0].(map[string]any)["role"])

	requireError(t, e.do(u.caller, "POST", "/api/v1/organizations", map[string]any{}), 400, "validation_error")
	key := e.apiKey(e.signup(), "orders:read")
	requireError(t, e.do(key, "POST", "/api/v1/organizations", map[string]any{"name": "x"}), 403, "forbidden")
}

func TestLogPathHidesInvitationToken(t *testing.T) {
	require.Equal(t, "/api/v1/organizations/members/invite/[token]/accept", logPath("/api/v1/organizations/members/invite/s3cr3t-token/accept"))
	require.Equal(t, "/api/v1/orders/123", logPath("/api/v1/orders/123"))
	require.Equal(t, "/api/v1/organizations/members/invite/123", logPath("/api/v1/organizations/members/invite/123"))
}
