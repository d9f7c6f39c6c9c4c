package accounts

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// env is a Service over a database of its own, with a mailbox.
type env struct {
	svc     *Service
	store   *store.Store
	mailbox *email.Mailbox
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := storetest.New(t)
	mb := &email.Mailbox{}
	svc := New(Deps{Store: st, Mailer: mb, BaseURL: "http://fos.test",
		Tokens:    auth.Tokens{Secret: []byte("test-secret-test-secret-test-secret"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost}})
	return &env{svc: svc, store: st, mailbox: mb}
}

// owner signs up a user with an organization and is that user as an
// Actor.
func (e *env) owner(t *testing.T) domain.Actor {
	t.Helper()
	name := "Acme"
	sess, err := e.svc.Signup(t.Context(), SignupInput{Email: "o" + uuid.NewString()[:8] + "@example.com", Password: "correct horse",
		FirstName: " Ada ", LastName: "Lovelace", OrganizationName: &name})
	require.NoError(t, err)
	require.NotNil(t, sess.Organization)
	require.Equal(t, "Ada", sess.User.FirstName, "trimmed")
	return domain.Actor{Kind: domain.ActorUser, ID: sess.User.ID, OrganizationID: sess.Organization.ID, Role: RoleOwner, Name: "Ada Lovelace"}
}

// member signs up another user and makes it a member of actor's
// organization with role, through an invitation.
func (e *env) member(t *testing.T, inviter domain.Actor, role string) domain.Actor {
	t.Helper()
	addr := "m" + uuid.NewString()[:8] + "@example.com"
	sess, err := e.svc.Signup(t.Context(), SignupInput{Email: addr, Password: "correct horse", FirstName: "M", LastName: "M"})
	require.NoError(t, err)
	_, err = e.svc.Invite(t.Context(), inviter, InviteInput{Email: addr, Role: role})
	require.NoError(t, err)
	msgs := e.mailbox.Messages(addr)
	require.Len(t, msgs, 1)
	token := msgs[0].Links[0][strings.Index(msgs[0].Links[0], "token=")+len("token="):]
	inv, err := e.svc.AcceptInvitation(t.Context(), sess.User.ID, token)
	require.NoError(t, err)
	require.Equal(t, role, inv.Role)
	return domain.Actor{Kind: domain.ActorUser, ID: sess.User.ID, OrganizationID: inviter.OrganizationID, Role: role}
}

// apiKey creates a key of the owner's organization and is it as an Actor,
// with its secret.
func (e *env) apiKey(t *testing.T, owner domain.Actor, scopes ...string) (domain.Actor, string) {
	t.Helper()
	k, err := e.svc.CreateAPIKey(t.Context(), owner, NewAPIKey{Name: "k", Scopes: scopes})
	require.NoError(t, err)
	return domain.Actor{Kind: domain.ActorAPIKey, ID: k.ID, OrganizationID: owner.OrganizationID, Scopes: scopes, Scoped: true}, k.Secret
}

func requireKind(t *testing.T, err error, kind domain.Kind) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, kind, domain.KindOf(err), "%v", err)
}

// Members, invitations and API keys are managed by users of the roles the
// specification names, and by the system; an API key, the agent, an
// operation and an embed session are refused, whoever they act for.
func TestOnlyOperatorsManageAccounts(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	owner := e.owner(t)
	member := e.member(t, owner, RoleMember)
	key, _ := e.apiKey(t, owner, "orders:read")
	org := owner.OrganizationID
	refused := []domain.Actor{
		key,
		{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: org, OnBehalfOf: &owner},
		{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: org, OnBehalfOf: &owner},
		{Kind: domain.ActorEmbed, ID: uuid.New(), OrganizationID: org, Scoped: true, Scopes: []string{"orders:read"}},
	}
	for _, a := range refused {
		_, err := e.svc.CreateAPIKey(ctx, a, NewAPIKey{Name: "x", Scopes: []string{"orders:read"}})
		requireKind(t, err, domain.KindForbidden)
		_, err = e.svc.APIKeys(ctx, a)
		requireKind(t, err, domain.KindForbidden)
		_, err = e.svc.Members(ctx, a)
		requireKind(t, err, domain.KindForbidden)
		_, err = e.svc.Invite(ctx, a, InviteInput{Email: "x@example.com", Role: RoleMember})
		requireKind(t, err, domain.KindForbidden)
		requireKind(t, e.svc.RemoveMember(ctx, a, member.ID), domain.KindForbidden)
		_, err = e.svc.UpdateOrganization(ctx, a, OrganizationPatch{})
		requireKind(t, err, domain.KindForbidden)
	}
	// A member reads the members but manages nothing.
	ms, err := e.svc.Members(ctx, member)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	_, err = e.svc.CreateAPIKey(ctx, member, NewAPIKey{Name: "x", Scopes: []string{"orders:read"}})
	requireKind(t, err, domain.KindForbidden)
	require.Contains(t, err.Error(), "requires the role owner, admin; you are member")

	// The system (an admin command, a job) may; the key then has no creator.
	k, err := e.svc.CreateAPIKey(ctx, domain.System(org), NewAPIKey{Name: " sys ", Scopes: []string{"orders:read"}})
	require.NoError(t, err)
	require.Nil(t, k.CreatedBy)
	require.Equal(t, "sys", k.Name)
	keys, err := e.svc.APIKeys(ctx, owner)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	// Every actor reads its own organization.
	for _, a := range append(refused, member, owner) {
		o, err := e.svc.Organization(ctx, a)
		require.NoError(t, err)
		require.Equal(t, org, o.ID)
	}
}

// The owner cannot be removed; only an admin or the owner removes an
// admin; a missing member is not found.
func TestRemoveMember(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	owner := e.owner(t)
	admin := e.member(t, owner, RoleManager)
	// Invitations never grant admin: make one by hand.
	_, err := e.store.Pool.Exec(ctx, `UPDATE memberships SET role = 'admin' WHERE user_id = $1`, admin.ID)
	require.NoError(t, err)
	admin.Role = RoleAdmin
	manager := e.member(t, owner, RoleManager)

	err = e.svc.RemoveMember(ctx, admin, owner.ID)
	requireKind(t, err, domain.KindConflict)
	err = e.svc.RemoveMember(ctx, manager, admin.ID)
	requireKind(t, err, domain.KindForbidden)
	require.Contains(t, err.Error(), "only an admin or the owner can remove an admin")
	requireKind(t, e.svc.RemoveMember(ctx, manager, uuid.New()), domain.KindNotFound)
	require.NoError(t, e.svc.RemoveMember(ctx, domain.System(owner.OrganizationID), admin.ID))
	require.NoError(t, e.svc.RemoveMember(ctx, manager, manager.ID), "anyone allowed may remove themselves")
	ms, err := e.svc.Members(ctx, owner)
	require.NoError(t, err)
	require.Len(t, ms, 1)
}

// An invitation is sent with its link; it is accepted once, by the
// invited e-mail only; a member or a pending invitation is a conflict; a
// revoked one is not found.
func TestInvitations(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	owner := e.owner(t)
	addr := "i" + uuid.NewString()[:8] + "@example.com"
	inv, err := e.svc.Invite(ctx, owner, InviteInput{Email: addr, Role: RoleManager})
	require.NoError(t, err)
	require.Equal(t, &owner.ID, inv.InvitedBy)
	msgs := e.mailbox.Messages(addr)
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0].Text, "Ada Lovelace has invited you to join Acme on fos as manager.")
	link := msgs[0].Links[0]
	require.True(t, strings.HasPrefix(link, "http://fos.test/invitations/accept?token="), link)
	token := link[strings.Index(link, "token=")+len("token="):]

	_, err = e.svc.Invite(ctx, owner, InviteInput{Email: addr, Role: RoleMember})
	requireKind(t, err, domain.KindConflict)

	other, err := e.svc.Signup(ctx, SignupInput{Email: "x" + addr, Password: "correct horse", FirstName: "X", LastName: "X"})
	require.NoError(t, err)
	_, err = e.svc.AcceptInvitation(ctx, other.User.ID, token)
	requireKind(t, err, domain.KindForbidden)
	_, err = e.svc.AcceptInvitation(ctx, uuid.New(), token)
	requireKind(t, err, domain.KindUnauthorized)

	invitee, err := e.svc.Signup(ctx, SignupInput{Email: addr, Password: "correct horse", FirstName: "I", LastName: "I"})
	require.NoError(t, err)
	_, err = e.svc.AcceptInvitation(ctx, invitee.User.ID, token)
	require.NoError(t, err)
	_, err = e.svc.AcceptInvitation(ctx, invitee.User.ID, token)
	requireKind(t, err, domain.KindNotFound)
	m, err := e.svc.MembershipOf(ctx, owner.OrganizationID, invitee.User.ID)
	require.NoError(t, err)
	require.Equal(t, RoleManager, m.Role)
	_, err = e.svc.Invite(ctx, owner, InviteInput{Email: addr, Role: RoleMember})
	requireKind(t, err, domain.KindConflict)

	// A revoked invitation is not found; so is revoking it again.
	inv2, err := e.svc.Invite(ctx, owner, InviteInput{Email: "r" + addr, Role: RoleMember})
	require.NoError(t, err)
	require.NoError(t, e.svc.RevokeInvitation(ctx, owner, inv2.ID))
	requireKind(t, e.svc.RevokeInvitation(ctx, owner, inv2.ID), domain.KindNotFound)
	pending, err := e.svc.Invitations(ctx, owner)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// Invite asks the limit before anything is written, and returns its
// refusal as is.
func TestInviteLimit(t *testing.T) {
	e := newEnv(t)
	owner := e.owner(t)
	limited := &domain.Error{Kind: domain.KindRateLimited, Message: "too many"}
	var asked []string
	e.svc.inviteLim = func(key string) error { asked = append(asked, key); return limited }
	_, err := e.svc.Invite(t.Context(), owner, InviteInput{Email: "l@example.com", Role: RoleMember})
	require.Same(t, limited, err)
	require.Equal(t, []string{owner.OrganizationID.String()}, asked)
	require.Empty(t, e.mailbox.Messages("l@example.com"))
}

// Sign-up, login and the session's user.
func TestSignupAndLogin(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	addr := "s" + uuid.NewString()[:8] + "@example.com"
	sess, err := e.svc.Signup(ctx, SignupInput{Email: " " + addr + " ", Password: "correct horse", FirstName: "S", LastName: "S"})
	require.NoError(t, err)
	require.Nil(t, sess.Organization)
	require.Equal(t, addr, sess.User.Email)
	id, err := e.svc.VerifyToken(sess.Token)
	require.NoError(t, err)
	require.Equal(t, sess.User.ID, id)
	_, err = e.svc.VerifyToken("nope")
	requireKind(t, err, domain.KindUnauthorized)

	_, err = e.svc.Signup(ctx, SignupInput{Email: addr, Password: "correct horse", FirstName: "S", LastName: "S"})
	requireKind(t, err, domain.KindConflict)

	_, err = e.svc.Login(ctx, addr, "wrong horse")
	requireKind(t, err, domain.KindUnauthorized)
	_, err = e.svc.Login(ctx, "nobody-"+addr, "correct horse")
	requireKind(t, err, domain.KindUnauthorized)
	require.Equal(t, "wrong e-mail or password", err.(*domain.Error).Message, "the same answer for both")

	o, err := e.svc.CreateOrganization(ctx, sess.User.ID, "  Beta ")
	require.NoError(t, err)
	require.Equal(t, "Beta", o.Name)
	login, err := e.svc.Login(ctx, addr, "correct horse")
	require.NoError(t, err)
	require.Len(t, login.Organizations, 1)
	require.Equal(t, RoleOwner, login.Organizations[0].Role)
	user, orgs, err := e.svc.Me(ctx, sess.User.ID)
	require.NoError(t, err)
	require.Equal(t, addr, user.Email)
	require.Len(t, orgs, 1)
	_, _, err = e.svc.Me(ctx, uuid.New())
	requireKind(t, err, domain.KindUnauthorized)
	_, err = e.svc.CreateOrganization(ctx, uuid.New(), "Ghost")
	requireKind(t, err, domain.KindUnauthorized)

	_, err = e.svc.MembershipOf(ctx, o.ID, uuid.New())
	requireKind(t, err, domain.KindForbidden)
}

// A key authenticates until it is revoked or expires; an unknown secret
// does not; the answer is the same for all three.
func TestAuthenticateAPIKey(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	owner := e.owner(t)
	key, secret := e.apiKey(t, owner, "orders:read", "orders:write")
	k, err := e.svc.AuthenticateAPIKey(ctx, secret)
	require.NoError(t, err)
	require.Equal(t, key.ID, k.ID)
	require.Equal(t, owner.OrganizationID, k.OrganizationID)
	require.Equal(t, []string{"orders:read", "orders:write"}, k.Scopes)

	_, err = e.svc.AuthenticateAPIKey(ctx, secret+"x")
	requireKind(t, err, domain.KindUnauthorized)
	past := time.Now().Add(-time.Second)
	_, err = e.store.Pool.Exec(ctx, `UPDATE api_keys SET expires_at = $2 WHERE id = $1`, key.ID, past)
	require.NoError(t, err)
	_, err = e.svc.AuthenticateAPIKey(ctx, secret)
	requireKind(t, err, domain.KindUnauthorized)

	other, secret2 := e.apiKey(t, owner, "orders:read")
	require.NoError(t, e.svc.RevokeAPIKey(ctx, owner, other.ID))
	_, err = e.svc.AuthenticateAPIKey(ctx, secret2)
	requireKind(t, err, domain.KindUnauthorized)
	require.Equal(t, "invalid, revoked or expired API key", err.(*domain.Error).Message)
	requireKind(t, e.svc.RevokeAPIKey(ctx, owner, uuid.New()), domain.KindNotFound)

	// Another organization's owner cannot revoke the key.
	stranger := e.owner(t)
	_, secret3 := e.apiKey(t, owner, "orders:read")
	k3, err := e.svc.AuthenticateAPIKey(ctx, secret3)
	require.NoError(t, err)
	requireKind(t, e.svc.RevokeAPIKey(ctx, stranger, k3.ID), domain.KindNotFound)
}

// An Idempotency-Key is scoped to its actor: two API keys of one
// organization using the same key with the same request each run it, and
// each gets only its own stored response replayed. The same key with
// another request, or while the first runs, is a conflict; a released
// key can be claimed again.
func TestIdempotencyKeyScopedToActor(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	owner := e.owner(t)
	writer, _ := e.apiKey(t, owner, "orders:write")
	reader, _ := e.apiKey(t, owner, "orders:read")
	hash := []byte("POST /api/v1/orders?\n{}")

	claim, stored, err := e.svc.ClaimIdempotencyKey(ctx, writer, "k1", hash)
	require.NoError(t, err)
	require.Nil(t, stored)
	_, _, err = e.svc.ClaimIdempotencyKey(ctx, writer, "k1", hash)
	requireKind(t, err, domain.KindConflict)
	require.Contains(t, err.Error(), "still in progress")
	require.NoError(t, e.svc.CompleteIdempotencyKey(ctx, *claim, IdempotentResponse{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"w":1}`)}))

	// The reader's same key is its own: not the writer's 201.
	rclaim, rstored, err := e.svc.ClaimIdempotencyKey(ctx, reader, "k1", hash)
	require.NoError(t, err)
	require.Nil(t, rstored, "another actor's response is never replayed")
	require.NotNil(t, rclaim)
	// So is the owner's.
	oclaim, ostored, err := e.svc.ClaimIdempotencyKey(ctx, owner, "k1", hash)
	require.NoError(t, err)
	require.Nil(t, ostored)

	_, stored, err = e.svc.ClaimIdempotencyKey(ctx, writer, "k1", hash)
	require.NoError(t, err)
	require.Equal(t, 201, stored.StatusCode)
	require.Equal(t, `{"w":1}`, string(stored.Body))
	_, _, err = e.svc.ClaimIdempotencyKey(ctx, writer, "k1", []byte("another request"))
	requireKind(t, err, domain.KindConflict)
	require.Contains(t, err.Error(), "already used with a different request")

	// A released key (the request failed with a 5xx) runs again.
	require.NoError(t, e.svc.ReleaseIdempotencyKey(ctx, *oclaim))
	again, stored, err := e.svc.ClaimIdempotencyKey(ctx, owner, "k1", hash)
	require.NoError(t, err)
	require.Nil(t, stored)
	require.NotEqual(t, oclaim.ID, again.ID)
}

// A live request renews its claim, so a handler running longer than the
// lease keeps its key; once it stops renewing, the lease runs out.
func TestKeepClaimRenewsWhileRequestRuns(t *testing.T) {
	e := newEnv(t)
	// Long enough that a renewal (every lease/3, each bounded by lease/3)
	// delayed by a loaded machine still lands inside the lease.
	const lease = time.Second
	e.svc.lease = lease
	owner := e.owner(t)
	ctx := context.Background()

	claim, _, err := e.svc.ClaimIdempotencyKey(ctx, owner, "slow", []byte("h"))
	require.NoError(t, err)
	stop := e.svc.KeepClaim(ctx, *claim)
	time.Sleep(4 * lease)
	_, _, err = e.svc.ClaimIdempotencyKey(ctx, owner, "slow", []byte("h"))
	requireKind(t, err, domain.KindConflict)

	stop()
	time.Sleep(2 * lease)
	next, _, err := e.svc.ClaimIdempotencyKey(ctx, owner, "slow", []byte("h"))
	require.NoError(t, err, "not renewed any more: the lease ran out")
	require.NotNil(t, next)
}
