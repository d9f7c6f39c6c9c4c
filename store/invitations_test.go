package store_test

import (
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// invTestUser creates a user with a fresh e-mail.
func invTestUser(t *testing.T, s *store.Store) store.User {
	t.Helper()
	u, err := store.CreateUser(t.Context(), s.Pool, store.User{ID: uuid.New(), Email: "i" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "I", LastName: "N"})
	require.NoError(t, err)
	return u
}

// invTestOrg creates an organization owned by a new user.
func invTestOrg(t *testing.T, s *store.Store) (store.Organization, store.User) {
	t.Helper()
	owner := invTestUser(t, s)
	org, err := store.CreateOrganization(t.Context(), s, "Invitations "+owner.Email, owner.ID)
	require.NoError(t, err)
	return org, owner
}

func invTestCreate(t *testing.T, s *store.Store, orgID, by uuid.UUID, addr, role string) (store.Invitation, error) {
	t.Helper()
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	return store.CreateInvitation(t.Context(), s, store.Invitation{ID: uuid.New(), OrganizationID: orgID, Email: addr, Role: role, TokenHash: hash, InvitedBy: &by})
}

func invTestExpire(t *testing.T, s *store.Store, id uuid.UUID) {
	t.Helper()
	_, err := s.Pool.Exec(t.Context(), `UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)
}

func TestCreateInvitation(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, owner := invTestOrg(t, s)

	inv, err := invTestCreate(t, s, org.ID, owner.ID, "Kim@Example.com", store.RoleManager)
	require.NoError(t, err)
	require.Equal(t, store.InvitationPending, inv.Status)
	require.Equal(t, "Kim@Example.com", inv.Email)
	require.Equal(t, owner.ID, *inv.InvitedBy)
	require.WithinDuration(t, time.Now().Add(store.InvitationLifetime), inv.ExpiresAt, time.Minute)

	got, err := store.InvitationByTokenHash(ctx, s.Pool, inv.TokenHash)
	require.NoError(t, err)
	require.Equal(t, inv.ID, got.ID)
	_, err = store.InvitationByTokenHash(ctx, s.Pool, []byte("nope"))
	require.ErrorIs(t, err, store.ErrNotFound)

	// A live pending invitation for the e-mail, in any case.
	_, err = invTestCreate(t, s, org.ID, owner.ID, "kim@example.COM", store.RoleMember)
	require.ErrorIs(t, err, store.ErrInvitationPending)
	require.ErrorIs(t, err, store.ErrConflict)

	// A member's e-mail.
	_, err = invTestCreate(t, s, org.ID, owner.ID, strings.ToUpper(owner.Email), store.RoleMember)
	require.ErrorIs(t, err, store.ErrAlreadyMember)
	require.ErrorIs(t, err, store.ErrConflict)

	// An expired one is retired (revoked) and replaced.
	invTestExpire(t, s, inv.ID)
	next, err := invTestCreate(t, s, org.ID, owner.ID, "kim@example.com", store.RoleMember)
	require.NoError(t, err)
	old, err := store.InvitationByTokenHash(ctx, s.Pool, inv.TokenHash)
	require.NoError(t, err)
	require.Equal(t, store.InvitationRevoked, old.Status)
	list, err := store.ListPendingInvitations(ctx, s.Pool, org.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, next.ID, list[0].ID)
}

func TestConcurrentInvitationsForOneEmail(t *testing.T) {
	s := storetest.New(t)
	org, owner := invTestOrg(t, s)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = invTestCreate(t, s, org.ID, owner.ID, "race@example.com", store.RoleMember)
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, store.ErrInvitationPending)
	}
	require.Equal(t, 1, ok)
}

func TestAcceptInvitationRace(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	for round := range 10 {
		org, owner := invTestOrg(t, s)
		invitee := invTestUser(t, s)
		inv, err := invTestCreate(t, s, org.ID, owner.ID, invitee.Email, store.RoleOrganizationManager)
		require.NoError(t, err)

		// Two accepts of the same invitation at once (the same user twice,
		// e.g. a double click): exactly one wins.
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = store.AcceptInvitation(ctx, s, inv.ID, invitee.ID)
			}()
		}
		close(start)
		wg.Wait()
		won, lost := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrNotFound):
				lost++
			default:
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		require.Equal(t, 1, won, "round %d", round)
		require.Equal(t, 1, lost, "round %d", round)

		got, err := store.InvitationByTokenHash(ctx, s.Pool, inv.TokenHash)
		require.NoError(t, err)
		require.Equal(t, store.InvitationAccepted, got.Status)
		require.NotNil(t, got.AcceptedAt)
		m, err := store.MembershipOf(ctx, s.Pool, org.ID, invitee.ID)
		require.NoError(t, err)
		require.Equal(t, store.RoleOrganizationManager, m.Role)
		members, err := store.ListMembers(ctx, s.Pool, org.ID)
		require.NoError(t, err)
		require.Len(t, members, 2)
	}
}

func TestAcceptInvitationRefusals(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, owner := invTestOrg(t, s)
	invitee := invTestUser(t, s)

	// Already a member: ErrConflict, and the invitation stays pending.
	inv, err := invTestCreate(t, s, org.ID, owner.ID, invitee.Email, store.RoleMember)
	require.NoError(t, err)
	require.NoError(t, store.AddMember(ctx, s.Pool, org.ID, invitee.ID, store.RoleMember))
	_, err = store.AcceptInvitation(ctx, s, inv.ID, invitee.ID)
	require.ErrorIs(t, err, store.ErrConflict)
	got, err := store.InvitationByTokenHash(ctx, s.Pool, inv.TokenHash)
	require.NoError(t, err)
	require.Equal(t, store.InvitationPending, got.Status, "rolled back")

	// Expired, revoked or unknown: ErrNotFound.
	other := invTestUser(t, s)
	exp, err := invTestCreate(t, s, org.ID, owner.ID, other.Email, store.RoleMember)
	require.NoError(t, err)
	invTestExpire(t, s, exp.ID)
	_, err = store.AcceptInvitation(ctx, s, exp.ID, other.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	rev, err := invTestCreate(t, s, org.ID, owner.ID, other.Email, store.RoleMember)
	require.NoError(t, err)
	require.NoError(t, store.RevokeInvitation(ctx, s.Pool, org.ID, rev.ID))
	_, err = store.AcceptInvitation(ctx, s, rev.ID, other.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.AcceptInvitation(ctx, s, uuid.New(), other.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.MembershipOf(ctx, s.Pool, org.ID, other.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestListAndRevokeInvitations(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, owner := invTestOrg(t, s)
	otherOrg, otherOwner := invTestOrg(t, s)

	a, err := invTestCreate(t, s, org.ID, owner.ID, "a@example.com", store.RoleMember)
	require.NoError(t, err)
	b, err := invTestCreate(t, s, org.ID, owner.ID, "b@example.com", store.RoleManager)
	require.NoError(t, err)
	c, err := invTestCreate(t, s, org.ID, owner.ID, "c@example.com", store.RoleMember)
	require.NoError(t, err)
	theirs, err := invTestCreate(t, s, otherOrg.ID, otherOwner.ID, "a@example.com", store.RoleMember)
	require.NoError(t, err)
	invTestExpire(t, s, c.ID)

	list, err := store.ListPendingInvitations(ctx, s.Pool, org.ID)
	require.NoError(t, err)
	require.Len(t, list, 2, "expired left out")
	require.Equal(t, []uuid.UUID{b.ID, a.ID}, []uuid.UUID{list[0].ID, list[1].ID}, "newest first")

	require.ErrorIs(t, store.RevokeInvitation(ctx, s.Pool, org.ID, theirs.ID), store.ErrNotFound, "another organization's")
	require.NoError(t, store.RevokeInvitation(ctx, s.Pool, org.ID, a.ID))
	require.ErrorIs(t, store.RevokeInvitation(ctx, s.Pool, org.ID, a.ID), store.ErrNotFound, "no longer pending")
	list, err = store.ListPendingInvitations(ctx, s.Pool, org.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, b.ID, list[0].ID)
}

func TestMembers(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, owner := invTestOrg(t, s)
	u := invTestUser(t, s)
	require.NoError(t, store.AddMember(ctx, s.Pool, org.ID, u.ID, store.RoleManager))

	members, err := store.ListMembers(ctx, s.Pool, org.ID)
	require.NoError(t, err)
	require.Len(t, members, 2)
	require.Equal(t, owner.ID, members[0].ID)
	require.Equal(t, store.RoleOwner, members[0].Role)
	require.Equal(t, owner.Email, members[0].Email)
	require.Equal(t, u.ID, members[1].ID)
	require.Equal(t, store.RoleManager, members[1].Role)

	ok, err := store.IsMemberEmail(ctx, s.Pool, org.ID, strings.ToUpper(u.Email))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = store.IsMemberEmail(ctx, s.Pool, org.ID, "nobody@example.com")
	require.NoError(t, err)
	require.False(t, ok)

	require.ErrorIs(t, store.RemoveMember(ctx, s.Pool, org.ID, owner.ID), store.ErrNotFound, "the owner is never removed")
	require.NoError(t, store.RemoveMember(ctx, s.Pool, org.ID, u.ID))
	require.ErrorIs(t, store.RemoveMember(ctx, s.Pool, org.ID, u.ID), store.ErrNotFound)
	members, err = store.ListMembers(ctx, s.Pool, org.ID)
	require.NoError(t, err)
	require.Len(t, members, 1)
}
