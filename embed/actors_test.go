package embed_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/insights/insightstest"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// fixture is the embed Service over the real database with one
// organization and its managing API key.
type fixture struct {
	t   *testing.T
	st  *store.Store
	svc *embed.Service
	org uuid.UUID
	key domain.Actor
}

func newFixture(t *testing.T) *fixture {
	st := storetest.New(t)
	f := &fixture{t: t, st: st, svc: embed.New(embed.Deps{Store: st, AllowPrivateURLs: true})}
	f.org = f.newOrg()
	f.key = domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.org, Scoped: true, Scopes: []string{embed.ScopeManage}}
	return f
}

// newOrg is another organization (the insights seed's, reused).
func (f *fixture) newOrg() uuid.UUID { return insightstest.New(f.t, f.st).Org }

// session opens a server-side session of the end user ext as the
// organization actor by and answers it with its embed Actor.
func (f *fixture) session(by domain.Actor, ext string, scopes ...string) (embed.SessionResult, domain.Actor) {
	f.t.Helper()
	in := embed.SessionInput{ExternalID: &ext}
	if len(scopes) > 0 {
		in.Scopes = &scopes
	}
	res, err := f.svc.CreateSession(context.Background(), by, in)
	require.NoError(f.t, err)
	a, err := f.svc.Authenticate(context.Background(), res.Token)
	require.NoError(f.t, err)
	return res, a
}

// events are the organization's event log entries of type.
func (f *fixture) events(eventType string) []store.EmbedEvent {
	f.t.Helper()
	list, _, err := f.svc.ListEvents(context.Background(), domain.System(f.org), embed.EventFilter{EventType: eventType, Limit: 100})
	require.NoError(f.t, err)
	return list
}

// The management operations (config, sessions, end users, the event log)
// are the organization's: a user, an API key with embed:manage and the
// system may call them; an API key or an agent without the scope, and an
// embed session, are refused; another organization's ids are not found.
// What each did is in the event log with the session and end user.
func TestEmbedManagementByActorKind(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	user := domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: f.org, Name: "Ada", Role: "owner"}
	reader := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.org, Scoped: true, Scopes: []string{"orders:read"}}
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: f.org, Name: "agent", Scoped: true,
		Scopes: reader.Scopes, OnBehalfOf: &reader}

	active := true
	cfg, err := f.svc.UpsertConfig(ctx, user, embed.ConfigInput{IsActive: &active})
	require.NoError(t, err)
	got, err := f.svc.GetConfig(ctx, f.key)
	require.NoError(t, err)
	require.Equal(t, cfg.PublishableKey, got.PublishableKey)

	res, sess := f.session(f.key, "shopper-1")
	require.Equal(t, domain.ActorEmbed, sess.Kind)
	require.Equal(t, *res.SessionID, sess.ID)
	require.Equal(t, f.org, sess.OrganizationID)
	created := f.events("session.created")
	require.Len(t, created, 1)
	require.Equal(t, res.SessionID, created[0].SessionID)
	require.Equal(t, &res.EndUser.ID, created[0].EndUserID)

	// Refused: without embed:manage (an API key, the agent acting for
	// it), and an embed session on any management operation.
	ext := "shopper-2"
	for _, a := range []domain.Actor{reader, agent} {
		_, err = f.svc.CreateSession(ctx, a, embed.SessionInput{ExternalID: &ext})
		var de *domain.Error
		require.ErrorAs(t, err, &de, "%s", a.Kind)
		require.Equal(t, domain.KindForbidden, de.Kind)
		require.Equal(t, "insufficient_scope", de.Code)
		_, err = f.svc.GetConfig(ctx, a)
		require.ErrorIs(t, err, domain.ErrForbidden)
		_, _, err = f.svc.ListEvents(ctx, a, embed.EventFilter{})
		require.ErrorIs(t, err, domain.ErrForbidden)
	}
	_, err = f.svc.CreateSession(ctx, sess, embed.SessionInput{ExternalID: &ext})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, domain.KindForbidden, de.Kind)
	require.Equal(t, "an embed session cannot manage the embed configuration", de.Message, "refused for its kind, not a scope")
	_, err = f.svc.UpsertConfig(ctx, sess, embed.ConfigInput{IsActive: &active})
	require.ErrorIs(t, err, domain.ErrForbidden)
	_, _, err = f.svc.ListEndUsers(ctx, sess, 10, 0)
	require.ErrorIs(t, err, domain.ErrForbidden)
	require.ErrorIs(t, f.svc.RevokeSession(ctx, sess, sess.ID), domain.ErrForbidden)
	_, _, err = f.svc.ListEvents(ctx, sess, embed.EventFilter{})
	require.ErrorIs(t, err, domain.ErrForbidden)
	require.Len(t, f.events("session.created"), 1, "nothing refused is logged")

	// An actor of no organization is not authenticated.
	_, err = f.svc.GetConfig(ctx, domain.Actor{Kind: domain.ActorAPIKey})
	require.Equal(t, domain.KindUnauthorized, domain.KindOf(err))

	// Another organization's key finds none of these ids.
	otherOrg := f.newOrg()
	other := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: otherOrg, Scoped: true, Scopes: []string{embed.ScopeManage}}
	_, err = f.svc.GetConfig(ctx, other)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = f.svc.GetEndUser(ctx, other, res.EndUser.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, f.svc.RevokeSession(ctx, other, sess.ID), domain.ErrNotFound)
	require.ErrorIs(t, f.svc.DeleteEndUser(ctx, other, res.EndUser.ID), domain.ErrNotFound)
	users, total, err := f.svc.ListEndUsers(ctx, other, 10, 0)
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, users)
	theirs, _, err := f.svc.ListEvents(ctx, other, embed.EventFilter{})
	require.NoError(t, err)
	require.Empty(t, theirs)
	_, err = f.svc.Authenticate(ctx, res.Token)
	require.NoError(t, err, "the other organization's attempts left the session alone")

	// The system (no scopes) reads the end users; the user revokes the
	// session: logged, and its token is refused from then on.
	detail, err := f.svc.GetEndUser(ctx, domain.System(f.org), res.EndUser.ID)
	require.NoError(t, err)
	require.Equal(t, "shopper-1", detail.ExternalID)
	require.NoError(t, f.svc.RevokeSession(ctx, user, sess.ID))
	revoked := f.events("session.revoked")
	require.Len(t, revoked, 1)
	require.Equal(t, &sess.ID, revoked[0].SessionID)
	require.Equal(t, &res.EndUser.ID, revoked[0].EndUserID)
	_, err = f.svc.Authenticate(ctx, res.Token)
	require.Equal(t, domain.KindUnauthorized, domain.KindOf(err))
}

// An embed session reaches only its own end user's webhooks: another end
// user's session, and a session of another organization, do not find
// them; an organization actor is refused on these routes; what a session
// does is logged with it and its end user; a revoked session's actor is
// refused at its next call.
func TestEmbedSessionReachesOnlyItsEndUser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	resA, a := f.session(f.key, "shopper-a")
	_, b := f.session(f.key, "shopper-b")
	otherKey := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.newOrg(), Scoped: true, Scopes: []string{embed.ScopeManage}}
	_, stranger := f.session(otherKey, "shopper-a")

	url, events := "https://hooks.example.com/a", []string{embed.WebhookEventTypes[0]}
	w, err := f.svc.CreateWebhook(ctx, a, embed.WebhookInput{URL: &url, Events: &events})
	require.NoError(t, err)
	logged := f.events("webhook.created")
	require.Len(t, logged, 1)
	require.Equal(t, &a.ID, logged[0].SessionID)
	require.Equal(t, &resA.EndUser.ID, logged[0].EndUserID)
	require.Equal(t, w.ID.String(), *logged[0].ResourceID)

	off := false
	for _, s := range []domain.Actor{b, stranger} {
		list, err := f.svc.ListWebhooks(ctx, s)
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = f.svc.UpdateWebhook(ctx, s, w.ID, embed.WebhookPatch{IsActive: &off})
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.ErrorIs(t, f.svc.DeleteWebhook(ctx, s, w.ID), domain.ErrNotFound)
		_, err = f.svc.ListDeliveries(ctx, s, w.ID)
		require.ErrorIs(t, err, domain.ErrNotFound)
	}

	// Organization actors (user, API key, system, an agent) have no end
	// user: these routes need a session token.
	user := domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: f.org, Role: "owner"}
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: f.org, OnBehalfOf: &user}
	for _, o := range []domain.Actor{user, f.key, domain.System(f.org), agent} {
		_, err = f.svc.ListWebhooks(ctx, o)
		require.ErrorIs(t, err, domain.ErrForbidden, "%s", o.Kind)
		_, err = f.svc.CreateWebhook(ctx, o, embed.WebhookInput{URL: &url, Events: &events})
		require.ErrorIs(t, err, domain.ErrForbidden, "%s", o.Kind)
		_, err = f.svc.ListBridges(ctx, o)
		require.ErrorIs(t, err, domain.ErrForbidden, "%s", o.Kind)
	}

	// A read-only session lists bridges but cannot delete one.
	_, ro := f.session(f.key, "shopper-c", embed.ScopeBridgesRead)
	_, err = f.svc.ListBridges(ctx, ro)
	require.NoError(t, err)
	err = f.svc.DeleteBridge(ctx, ro, uuid.New())
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "insufficient_scope", de.Code)

	// The owner's session changes its webhook; logged with it.
	w, err = f.svc.UpdateWebhook(ctx, a, w.ID, embed.WebhookPatch{IsActive: &off})
	require.NoError(t, err)
	require.False(t, w.IsActive)
	updated := f.events("webhook.updated")
	require.Len(t, updated, 1)
	require.Equal(t, &a.ID, updated[0].SessionID)

	// Revoked: the actor built from its token is refused at its next call.
	require.NoError(t, f.svc.RevokeSession(ctx, f.key, a.ID))
	_, err = f.svc.ListWebhooks(ctx, a)
	require.Equal(t, domain.KindUnauthorized, domain.KindOf(err))
}
