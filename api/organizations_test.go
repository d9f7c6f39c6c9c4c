package api

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/accounts"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/store"
)

// memberRequireKeys asserts that m has exactly the keys.
func memberRequireKeys(t testing.TB, m map[string]any, keys ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	require.Equal(t, keys, got)
}

// memberInvite invites addr as role (empty: the default) and returns the
// invitation id and the token taken from the e-mailed accept link.
func (e *testEnv) memberInvite(by caller, addr, role string) (id, token string) {
	e.t.Helper()
	body := map[string]any{"email": addr}
	if role != "" {
		body["role"] = role
	}
	before := len(e.mailbox.Messages(addr))
	res := e.do(by, "POST", "/api/v1/organizations/members/invite", body)
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	msgs := e.mailbox.Messages(addr)
	require.Len(e.t, msgs, before+1, "one invitation e-mail")
	return res.data()["id"].(string), memberTokenFromLink(e.t, msgs[0].Links[0])
}

func memberTokenFromLink(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "/invitations/accept", u.Path)
	tok := u.Query().Get("token")
	require.NotEmpty(t, tok)
	return tok
}

func memberAcceptPath(token string) string {
	return "/api/v1/organizations/members/invite/" + token + "/accept"
}

// memberJoin signs up a new user and brings them into owner's organization
// with role through an accepted invitation.
func (e *testEnv) memberJoin(owner account, role string) account {
	e.t.Helper()
	u := e.signupNoOrg()
	_, tok := e.memberInvite(owner.caller, u.email, role)
	res := e.do(caller{token: u.token}, "POST", memberAcceptPath(tok), nil)
	require.Equal(e.t, 200, res.Code, "%s", res.Raw)
	u.org = owner.org
	return u
}

// memberSetRole changes a role in SQL (no endpoint grants admin).
func (e *testEnv) memberSetRole(a account, role string) {
	e.t.Helper()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE memberships SET role = $3 WHERE organization_id = $1 AND user_id = $2`, a.org, a.userID, role)
	require.NoError(e.t, err)
}

func TestInvitationFullFlow(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	invitee := e.signupNoOrg()

	// The owner invites; the address is matched case-insensitively later.
	res := e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": strings.ToUpper(invitee.email), "role": "manager"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	created := res.data()
	memberRequireKeys(t, created, "id", "email", "role", "expiresAt")
	require.Equal(t, "manager", created["role"])
	require.Equal(t, strings.ToUpper(invitee.email), created["email"])
	exp, err := time.Parse(time.RFC3339Nano, created["expiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(7*24*time.Hour), exp, time.Minute, "invitations live 7 days")

	// The mail arrives with the accept link (CONTRACT 2).
	msgs := e.mailbox.Messages(invitee.email)
	require.Len(t, msgs, 1)
	require.Len(t, msgs[0].Links, 1)
	link := msgs[0].Links[0]
	require.True(t, strings.HasPrefix(link, "http://fos.test/invitations/accept?token="), link)
	require.Contains(t, msgs[0].Text, link)
	require.Contains(t, msgs[0].Subject, "Acme")
	token := memberTokenFromLink(t, link)
	require.Len(t, token, 43, "32 random bytes, URL-safe base64")

	// Pending invitations are listed.
	list := e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	items := list.list()
	require.Len(t, items, 1)
	memberRequireKeys(t, items[0], "id", "email", "role", "status", "invited_by", "expires_at", "created_at")
	require.Equal(t, created["id"], items[0]["id"])
	require.Equal(t, "pending", items[0]["status"])
	require.Equal(t, owner.userID, items[0]["invited_by"])
	require.NotContains(t, string(list.Raw), token)

	// The token is not stored: only its hash is.
	var stored []byte
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT token_hash FROM invitations WHERE id = $1`, created["id"]).Scan(&stored))
	require.Equal(t, accounts.InvitationTokenHash(token), stored)

	// Before accepting, the invitee cannot act in the organization.
	requireError(t, e.do(caller{token: invitee.token, org: owner.org}, "GET", "/api/v1/organizations", nil), 403, "forbidden")

	// Accepting needs a user token only, no X-Organization-Id.
	res = e.do(caller{token: invitee.token}, "POST", memberAcceptPath(token), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	memberRequireKeys(t, res.data(), "organizationId", "role")
	require.Equal(t, owner.org, res.data()["organizationId"])
	require.Equal(t, "manager", res.data()["role"])

	// Both are members now.
	members := e.do(owner.caller, "GET", "/api/v1/organizations/members", nil)
	require.Equal(t, 200, members.Code, "%s", members.Raw)
	ms := members.list()
	require.Len(t, ms, 2)
	for _, m := range ms {
		memberRequireKeys(t, m, "id", "first_name", "last_name", "email", "role", "created_at")
	}
	require.Equal(t, map[string]any{"id": owner.userID, "email": owner.email, "role": "owner", "first_name": "Ada", "last_name": "Lovelace"},
		map[string]any{"id": ms[0]["id"], "email": ms[0]["email"], "role": ms[0]["role"], "first_name": ms[0]["first_name"], "last_name": ms[0]["last_name"]})
	require.Equal(t, map[string]any{"id": invitee.userID, "email": invitee.email, "role": "manager", "first_name": "Grace", "last_name": "Hopper"},
		map[string]any{"id": ms[1]["id"], "email": ms[1]["email"], "role": ms[1]["role"], "first_name": ms[1]["first_name"], "last_name": ms[1]["last_name"]})

	// The new member works in the organization with X-Organization-Id.
	member := caller{token: invitee.token, org: owner.org}
	res = e.do(member, "GET", "/api/v1/organizations", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, owner.org, res.data()["id"])
	require.Len(t, e.do(member, "GET", "/api/v1/organizations/members", nil).list(), 2)
	me := e.do(caller{token: invitee.token}, "GET", "/api/v1/auth/me", nil)
	require.Equal(t, owner.org, me.data()["organizations"].([]any)[0].(map[string]any)["id"])

	// The invitation is used: no longer listed, and the link is dead (404).
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list())
	requireError(t, e.do(caller{token: invitee.token}, "POST", memberAcceptPath(token), nil), 404, "not_found")
}

func TestInviteDefaultsAndValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()

	res := e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": "  pat@example.com "})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "member", res.data()["role"], "member is the default role")
	require.Equal(t, "pat@example.com", res.data()["email"])
	res = e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": "om@example.com", "role": "organization_manager"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)

	for _, body := range []any{
		map[string]any{},
		map[string]any{"email": ""},
		map[string]any{"email": "not-an-address"},
		map[string]any{"email": 42},
		map[string]any{"email": "x@example.com", "role": "owner"},
		map[string]any{"email": "x@example.com", "role": "admin"},
		map[string]any{"email": "x@example.com", "role": ""},
		map[string]any{"email": "x@example.com", "role": "Member"},
		map[string]any{"email": "x@example.com", "role": 1},
	} {
		requireError(t, e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", body), 400, "validation_error")
	}
	requireError(t, e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", "{nope"), 400, "invalid_json")
	require.Empty(t, e.mailbox.Messages("x@example.com"))
}

func TestInviteConflicts(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	invite := func(addr string) *response {
		return e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": addr})
	}

	// The e-mail of a member, in any case.
	requireError(t, invite(strings.ToUpper(owner.email)), 409, "conflict")
	joined := e.memberJoin(owner, "member")
	requireError(t, invite(joined.email), 409, "conflict")

	// A pending invitation for the e-mail.
	samAddr := "sam" + uuid.NewString()[:8] + "@example.com"
	firstID, firstTok := e.memberInvite(owner.caller, samAddr, "")
	requireError(t, invite(strings.ToUpper(samAddr)), 409, "conflict")

	// Once it expired it may be replaced; the old link stays dead.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, firstID)
	require.NoError(t, err)
	secondID, secondTok := e.memberInvite(owner.caller, samAddr, "manager")
	require.NotEqual(t, firstID, secondID)
	require.NotEqual(t, firstTok, secondTok)
	items := e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list()
	require.Len(t, items, 1)
	require.Equal(t, secondID, items[0]["id"])

	sam := e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{"email": samAddr, "password": "correct horse", "first_name": "Sam", "last_name": "Doe"})
	require.Equal(t, 201, sam.Code, "%s", sam.Raw)
	samTok := sam.data()["access_token"].(string)
	requireError(t, e.do(caller{token: samTok}, "POST", memberAcceptPath(firstTok), nil), 404, "not_found")
	res := e.do(caller{token: samTok}, "POST", memberAcceptPath(secondTok), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "manager", res.data()["role"])

	// Another organization may invite the same e-mail.
	other := e.signup()
	e.memberInvite(other.caller, "pat@example.com", "")
	e.memberInvite(owner.caller, "pat@example.com", "")
}

func TestAcceptInvitationErrors(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	invitee := e.signupNoOrg()
	stranger := e.signupNoOrg()
	as := func(a account) caller { return caller{token: a.token} }

	// Unknown token.
	requireError(t, e.do(as(invitee), "POST", memberAcceptPath("no-such-token"), nil), 404, "not_found")

	// Credentials: none is 401; an API key is 403.
	id, tok := e.memberInvite(owner.caller, invitee.email, "")
	requireError(t, e.do(caller{}, "POST", memberAcceptPath(tok), nil), 401, "unauthorized")
	key := e.apiKey(owner, "orders:read")
	requireError(t, e.do(key, "POST", memberAcceptPath(tok), nil), 403, "forbidden")

	// Another user's e-mail: 403, and the invitation still works.
	requireError(t, e.do(as(stranger), "POST", memberAcceptPath(tok), nil), 403, "forbidden")

	// Expired: 410.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)
	requireError(t, e.do(as(invitee), "POST", memberAcceptPath(tok), nil), 410, "gone")
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list(), "expired invitations are not listed")

	// Revoked: 404 (the expired one is superseded by a new invitation).
	id, tok = e.memberInvite(owner.caller, invitee.email, "")
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/"+id, nil).Code)
	requireError(t, e.do(as(invitee), "POST", memberAcceptPath(tok), nil), 404, "not_found")

	// Already a member (joined meanwhile by other means): 409, nothing changes.
	_, tok = e.memberInvite(owner.caller, invitee.email, "manager")
	require.NoError(t, store.AddMember(context.Background(), e.deps.Store.Pool, uuid.MustParse(owner.org), uuid.MustParse(invitee.userID), "member"))
	requireError(t, e.do(as(invitee), "POST", memberAcceptPath(tok), nil), 409, "conflict")
	items := e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list()
	require.Len(t, items, 1, "the invitation is still pending")

	// Accepting twice: the second time the token is used (404).
	joiner := e.signupNoOrg()
	_, tok = e.memberInvite(owner.caller, joiner.email, "")
	require.Equal(t, 200, e.do(as(joiner), "POST", memberAcceptPath(tok), nil).Code)
	requireError(t, e.do(as(joiner), "POST", memberAcceptPath(tok), nil), 404, "not_found")
}

func TestMemberEndpointsRefuseAPIKeys(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	joined := e.memberJoin(owner, "member")
	invID, _ := e.memberInvite(owner.caller, "someone@example.com", "")
	key := e.apiKey(owner, "orders:read", "orders:write")
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/organizations/members"},
		{"GET", "/api/v1/organizations/members/invitations"},
		{"POST", "/api/v1/organizations/members/invite"},
		{"DELETE", "/api/v1/organizations/members/invite/" + invID},
		{"DELETE", "/api/v1/organizations/members/" + joined.userID},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"email": "k@example.com"}
		}
		requireError(t, e.do(key, c.method, c.path, body), 403, "forbidden")
	}
	// Nothing happened.
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/organizations/members", nil).list(), 2)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list(), 1)
	// Without credentials: 401.
	requireError(t, e.do(caller{}, "GET", "/api/v1/organizations/members", nil), 401, "unauthorized")
}

func TestMemberRoles(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	member := e.memberJoin(owner, "member")
	manager := e.memberJoin(owner, "manager")
	orgManager := e.memberJoin(owner, "organization_manager")
	admin := e.memberJoin(owner, "member")
	e.memberSetRole(admin, "admin")
	victim := e.memberJoin(owner, "member")

	// A plain member reads but does not manage.
	require.Len(t, e.do(member.caller, "GET", "/api/v1/organizations/members", nil).list(), 6)
	require.Equal(t, 200, e.do(member.caller, "GET", "/api/v1/organizations/members/invitations", nil).Code)
	invID, _ := e.memberInvite(owner.caller, "later@example.com", "")
	requireError(t, e.do(member.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": "x@example.com"}), 403, "forbidden")
	requireError(t, e.do(member.caller, "DELETE", "/api/v1/organizations/members/invite/"+invID, nil), 403, "forbidden")
	requireError(t, e.do(member.caller, "DELETE", "/api/v1/organizations/members/"+victim.userID, nil), 403, "forbidden")

	// Managers invite and remove members, but not an admin (project rule).
	e.memberInvite(manager.caller, "m1@example.com", "manager")
	e.memberInvite(orgManager.caller, "m2@example.com", "")
	requireError(t, e.do(manager.caller, "DELETE", "/api/v1/organizations/members/"+admin.userID, nil), 403, "forbidden")
	requireError(t, e.do(orgManager.caller, "DELETE", "/api/v1/organizations/members/"+admin.userID, nil), 403, "forbidden")
	require.Equal(t, 200, e.do(manager.caller, "DELETE", "/api/v1/organizations/members/invite/"+invID, nil).Code)
	res := e.do(orgManager.caller, "DELETE", "/api/v1/organizations/members/"+victim.userID, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)

	// Nobody removes the owner: 409.
	for _, by := range []account{admin, manager} {
		requireError(t, e.do(by.caller, "DELETE", "/api/v1/organizations/members/"+owner.userID, nil), 409, "conflict")
	}
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+owner.userID, nil), 409, "conflict")

	// An admin removes a manager; the owner removes an admin.
	require.Equal(t, 200, e.do(admin.caller, "DELETE", "/api/v1/organizations/members/"+manager.userID, nil).Code)
	requireError(t, e.do(manager.caller, "GET", "/api/v1/organizations", nil), 403, "forbidden")
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+admin.userID, nil).Code)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/organizations/members", nil).list(), 3)
}

func TestRemoveMember(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	m := e.memberJoin(owner, "member")

	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/not-a-uuid", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+other.userID, nil), 404, "not_found")
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/organizations/members/"+m.userID, nil), 404, "not_found")

	res := e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+m.userID, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(m.caller, "GET", "/api/v1/organizations", nil), 403, "forbidden")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/"+m.userID, nil), 404, "not_found")
	ms := e.do(owner.caller, "GET", "/api/v1/organizations/members", nil).list()
	require.Len(t, ms, 1)
	require.Equal(t, owner.userID, ms[0]["id"])

	// A removed member can be invited again.
	e.memberInvite(owner.caller, m.email, "")
}

func TestRevokeInvitation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	invitee := e.signupNoOrg()
	id, tok := e.memberInvite(owner.caller, invitee.email, "")
	otherID, _ := e.memberInvite(other.caller, invitee.email, "")

	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/"+otherID, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/bogus", nil), 404, "not_found")

	res := e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list())
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/organizations/members/invite/"+id, nil), 404, "not_found")
	requireError(t, e.do(caller{token: invitee.token}, "POST", memberAcceptPath(tok), nil), 404, "not_found")

	// The other organization's invitation is untouched and lists only there.
	items := e.do(other.caller, "GET", "/api/v1/organizations/members/invitations", nil).list()
	require.Len(t, items, 1)
	require.Equal(t, otherID, items[0]["id"])
}

type memberFailingSender struct{}

func (memberFailingSender) Send(context.Context, email.Message) error {
	return errors.New("smtp: 451 try again later")
}

func TestInviteSurvivesMailFailure(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Mailer = memberFailingSender{} })
	owner := e.signup()
	res := e.do(owner.caller, "POST", "/api/v1/organizations/members/invite", map[string]any{"email": "late@example.com"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	items := e.do(owner.caller, "GET", "/api/v1/organizations/members/invitations", nil).list()
	require.Len(t, items, 1)
	require.Equal(t, res.data()["id"], items[0]["id"])
}
