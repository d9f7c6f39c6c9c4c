package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func embedTestUser(t *testing.T, s *store.Store, org uuid.UUID, ext string) store.EndUser {
	t.Helper()
	u, err := store.UpsertEndUser(t.Context(), s.Pool, org, uuid.New(), ext, nil, nil, nil)
	require.NoError(t, err)
	return u
}

func embedTestWebhook(t *testing.T, s *store.Store, org, eu uuid.UUID, events ...string) store.EndUserWebhook {
	t.Helper()
	w, err := store.CreateEndUserWebhook(t.Context(), s.Pool, store.EndUserWebhook{ID: uuid.New(), OrganizationID: org, EndUserID: eu,
		URL: "https://example.com/hook", Events: events})
	require.NoError(t, err)
	return w
}

func TestEmbedConfigUpsertKeepsKeyAndSlugIsUnique(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)
	slug := "acme-" + uuid.NewString()[:8]
	c, err := store.UpsertEmbedConfig(ctx, s.Pool, org, uuid.New(), "gen-"+uuid.NewString()[:8], "pk_first", store.EmbedConfigPatch{Slug: &slug})
	require.NoError(t, err)
	require.Equal(t, "pk_first", c.PublishableKey)
	require.Equal(t, slug, c.Slug)
	require.True(t, c.IsActive)

	off := false
	c2, err := store.UpsertEmbedConfig(ctx, s.Pool, org, uuid.New(), "ignored", "pk_second", store.EmbedConfigPatch{IsActive: &off, AllowedOrigins: []string{"https://a.example"}})
	require.NoError(t, err)
	require.Equal(t, c.ID, c2.ID)
	require.Equal(t, "pk_first", c2.PublishableKey, "the publishable key is kept")
	require.Equal(t, slug, c2.Slug)
	require.False(t, c2.IsActive)
	require.Equal(t, []string{"https://a.example"}, c2.AllowedOrigins)

	_, err = store.UpsertEmbedConfig(ctx, s.Pool, other, uuid.New(), "x-"+uuid.NewString()[:8], "pk_other", store.EmbedConfigPatch{Slug: &slug})
	require.ErrorIs(t, err, store.ErrConflict, "a slug is unique across organizations")

	got, err := store.EmbedConfigByPublishableKey(ctx, s.Pool, "pk_first")
	require.NoError(t, err)
	require.Equal(t, org, got.OrganizationID)
}

func TestEndUserDeleteRevokesSessionsAndKeepsBridges(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	u := embedTestUser(t, s, org, "ext-1")
	again := embedTestUser(t, s, org, "ext-1")
	require.Equal(t, u.ID, again.ID, "upserted by external id")

	sess, err := store.CreateEmbedSession(ctx, s.Pool, store.EmbedSession{ID: uuid.New(), OrganizationID: org, EndUserID: u.ID,
		Kind: "manual", Scopes: []string{"bridges:read"}, ExpiresAt: time.Now().Add(time.Hour)}, []byte("hash-"+uuid.NewString()))
	require.NoError(t, err)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "shop", map[string]any{"shopDomain": "a.myshopify.com", "accessToken": "t"})
	require.NoError(t, store.SetBridgeEndUser(ctx, s.Pool, org, b.ID, u.ID))

	list, total, err := store.ListEndUsers(ctx, s.Pool, org, 20, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, 1, list[0].BridgeCount)

	require.ErrorIs(t, store.DeleteEndUser(ctx, s.Pool, bridgeTestOrg(t, s), u.ID), store.ErrNotFound, "another organization's end user")
	require.NoError(t, store.DeleteEndUser(ctx, s.Pool, org, u.ID))
	_, err = store.EmbedSessionByID(ctx, s.Pool, org, sess.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	kept, err := store.BridgeByID(ctx, s.Pool, org, b.ID)
	require.NoError(t, err, "the bridge stays")
	n, err := store.CountEndUserBridges(ctx, s.Pool, org, u.ID)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, b.ID, kept.ID)
}

func TestOAuthStateIsSingleUseAndExpires(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "shop", map[string]any{"shopDomain": "a.myshopify.com"})
	now := time.Now()
	require.NoError(t, store.CreateEmbedOAuthState(ctx, s.Pool, []byte("h1"), store.EmbedOAuthState{OrganizationID: org, BridgeID: b.ID, Shop: "a.myshopify.com", ExpiresAt: now.Add(time.Minute)}))
	require.NoError(t, store.CreateEmbedOAuthState(ctx, s.Pool, []byte("h2"), store.EmbedOAuthState{OrganizationID: org, BridgeID: b.ID, Shop: "a.myshopify.com", ExpiresAt: now.Add(-time.Second)}))
	st, err := store.ConsumeEmbedOAuthState(ctx, s.Pool, []byte("h1"), now)
	require.NoError(t, err)
	require.Equal(t, b.ID, st.BridgeID)
	_, err = store.ConsumeEmbedOAuthState(ctx, s.Pool, []byte("h1"), now)
	require.ErrorIs(t, err, store.ErrNotFound, "used once")
	_, err = store.ConsumeEmbedOAuthState(ctx, s.Pool, []byte("h2"), now)
	require.ErrorIs(t, err, store.ErrNotFound, "expired")
}

func TestEmbedEventsFilterAndPage(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)
	u := embedTestUser(t, s, org, "e")
	for i := range 5 {
		typ := "session.created"
		var eu *uuid.UUID
		if i%2 == 0 {
			typ, eu = "bridge.created", &u.ID
		}
		require.NoError(t, store.InsertEmbedEvent(ctx, s.Pool, store.EmbedEvent{ID: uuid.New(), OrganizationID: org, EndUserID: eu, EventType: typ}))
	}
	require.NoError(t, store.InsertEmbedEvent(ctx, s.Pool, store.EmbedEvent{ID: uuid.New(), OrganizationID: other, EventType: "bridge.created"}))
	list, total, err := store.ListEmbedEvents(ctx, s.Pool, org, store.EmbedEventFilter{EventType: "bridge.created", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Len(t, list, 2)
	_, total, err = store.ListEmbedEvents(ctx, s.Pool, org, store.EmbedEventFilter{EndUserID: &u.ID, Limit: 50})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	future := time.Now().Add(time.Hour)
	_, total, err = store.ListEmbedEvents(ctx, s.Pool, org, store.EmbedEventFilter{From: &future, Limit: 50})
	require.NoError(t, err)
	require.Zero(t, total)
}

// The triggers write an order's and a shipment's events to the outbox in
// the transaction of the change, only for an end user's bridge with a
// subscribed active webhook.
func TestOutboxTriggersAndDeliveryAccounting(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	u := embedTestUser(t, s, org, "owner")
	mine := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "mine", map[string]any{"shopDomain": "m.myshopify.com"})
	plain := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "plain", map[string]any{"shopDomain": "p.myshopify.com"})
	require.NoError(t, store.SetBridgeEndUser(ctx, s.Pool, org, mine.ID, u.ID))
	w := embedTestWebhook(t, s, org, u.ID, "order.created", "order.updated")

	o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, mine.ID, "o1"))
	require.NoError(t, err)
	_, err = store.CreateOrder(ctx, s.Pool, orderTestNew(org, plain.ID, "o2"))
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE orders SET status = 'confirmed' WHERE id = $1`, o.ID)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE orders SET metadata = '{"x":1}' WHERE id = $1`, o.ID)
	require.NoError(t, err)

	pending := pendingOf(t, s, org)
	require.Len(t, pending, 2, "order.created and order.updated of the end user's bridge only")
	require.Equal(t, "order.created", pending[0].Event)
	require.Equal(t, o.ID.String(), pending[0].Data["id"])
	require.Equal(t, "order.updated", pending[1].Event)

	subs, err := store.OutboxSubscribers(ctx, s.Pool, pending)
	require.NoError(t, err)
	require.Len(t, subs[pending[0].ID], 1)

	oid := pending[0].ID
	d := store.WebhookDelivery{ID: uuid.New(), OrganizationID: org, WebhookID: w.ID, EndUserID: u.ID, MessageID: "msg_1", OutboxID: &oid, Event: "order.created", Body: []byte(`{}`)}
	ds, err := store.InsertWebhookDeliveries(ctx, s.Pool, []store.WebhookDelivery{d})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	dup := d
	dup.ID = uuid.New()
	ds, err = store.InsertWebhookDeliveries(ctx, s.Pool, []store.WebhookDelivery{dup})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, d.ID, ds[0].ID, "one delivery per (webhook, event)")

	// Nine failures, a success resets, then ten failures disable.
	code := 500
	attempt := func(id uuid.UUID, n int, ok bool) store.DeliveryOutcome {
		out, err := store.RecordDeliveryAttempt(ctx, s.Pool, store.DeliveryAttempt{DeliveryID: id, Attempt: n, StatusCode: &code, Success: ok})
		require.NoError(t, err)
		return out
	}
	newDelivery := func() uuid.UUID {
		ds, err := store.InsertWebhookDeliveries(ctx, s.Pool, []store.WebhookDelivery{{ID: uuid.New(), OrganizationID: org, WebhookID: w.ID, EndUserID: u.ID, MessageID: "m", Event: "order.updated", Body: []byte(`{}`)}})
		require.NoError(t, err)
		return ds[0].ID
	}
	for range 9 {
		attempt(newDelivery(), 1, false)
	}
	again := attempt(d.ID, 1, false)
	require.False(t, again.WebhookActive, "the tenth consecutive failure disables")
	hook, err := store.EndUserWebhookByID(ctx, s.Pool, org, u.ID, w.ID)
	require.NoError(t, err)
	require.Equal(t, "consecutive_failures", *hook.DisabledReason)
	rerun := attempt(d.ID, 1, false)
	require.False(t, rerun.Recorded, "the same attempt is recorded once")

	on := true
	hook, err = store.UpdateEndUserWebhook(ctx, s.Pool, org, u.ID, w.ID, store.EndUserWebhookPatch{IsActive: &on})
	require.NoError(t, err)
	require.Zero(t, hook.ConsecutiveFailures)
	require.Nil(t, hook.DisabledReason)
	attempt(newDelivery(), 1, false)
	ok := attempt(newDelivery(), 1, true)
	require.True(t, ok.WebhookActive)
	hook, _ = store.EndUserWebhookByID(ctx, s.Pool, org, u.ID, w.ID)
	require.Zero(t, hook.ConsecutiveFailures, "a success resets the count")

	gone := 410
	out, err := store.RecordDeliveryAttempt(ctx, s.Pool, store.DeliveryAttempt{DeliveryID: newDelivery(), Attempt: 1, StatusCode: &gone, Gone: true})
	require.NoError(t, err)
	require.False(t, out.WebhookActive)
	require.Equal(t, store.DeliveryFailed, out.Delivery.Status)
	hook, _ = store.EndUserWebhookByID(ctx, s.Pool, org, u.ID, w.ID)
	require.Equal(t, "gone", *hook.DisabledReason)

	require.NoError(t, store.MarkOutboxDispatched(ctx, s.Pool, []int64{pending[0].ID, pending[1].ID}))
	require.Empty(t, pendingOf(t, s, org))
}

func pendingOf(t *testing.T, s *store.Store, org uuid.UUID) []store.OutboxEvent {
	t.Helper()
	all, err := store.PendingOutbox(context.Background(), s.Pool, 1000)
	require.NoError(t, err)
	var out []store.OutboxEvent
	for _, e := range all {
		if e.OrganizationID == org {
			out = append(out, e)
		}
	}
	return out
}

func TestRecordFirstSuccessesResetsFailuresOnce(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	u := embedTestUser(t, s, org, "batch")
	w := embedTestWebhook(t, s, org, u.ID, "order.created")
	_, err := s.Pool.Exec(ctx, `UPDATE end_user_webhooks SET consecutive_failures = 3 WHERE id = $1`, w.ID)
	require.NoError(t, err)
	ds, err := store.InsertWebhookDeliveries(ctx, s.Pool, []store.WebhookDelivery{
		{ID: uuid.New(), OrganizationID: org, WebhookID: w.ID, EndUserID: u.ID, MessageID: "a", Event: "order.created", Body: []byte(`{}`)},
		{ID: uuid.New(), OrganizationID: org, WebhookID: w.ID, EndUserID: u.ID, MessageID: "b", Event: "order.created", Body: []byte(`{}`)},
	})
	require.NoError(t, err)
	require.NoError(t, store.RecordFirstSuccesses(ctx, s.Pool, []store.FirstAttemptSuccess{{DeliveryID: ds[0].ID, StatusCode: 204, DurationMS: 3}, {DeliveryID: ds[1].ID, StatusCode: 200}}))
	for _, d := range ds {
		got, err := store.WebhookDeliveryByID(ctx, s.Pool, org, d.ID)
		require.NoError(t, err)
		require.True(t, got.Success)
		require.Equal(t, 1, got.Attempt)
		require.Equal(t, store.DeliverySucceeded, got.Status)
	}
	hook, err := store.EndUserWebhookByID(ctx, s.Pool, org, u.ID, w.ID)
	require.NoError(t, err)
	require.Zero(t, hook.ConsecutiveFailures)
	// A repeated record changes nothing (the attempt is recorded).
	code := 500
	out, err := store.RecordDeliveryAttempt(ctx, s.Pool, store.DeliveryAttempt{DeliveryID: ds[0].ID, Attempt: 1, StatusCode: &code})
	require.NoError(t, err)
	require.False(t, out.Recorded)
}

// The embed config's default dispatcher applies to the orders of end
// users' bridges (CONTRACT 12) wherever the routing domain asks which
// dispatchers apply: on order_created and manual runs whatever its
// triggerOn, on other triggers when it lists them; never to other bridges'
// orders, never towards the order's own bridge.
func TestEmbedDefaultDispatcherApplies(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub := dispTestBridge(t, s, org)
	endUserBridge, plain := dispTestBridge(t, s, org), dispTestBridge(t, s, org)
	u := embedTestUser(t, s, org, "ann")
	require.NoError(t, store.SetBridgeEndUser(ctx, s.Pool, org, endUserBridge, u.ID))
	dn := dispTestNew(org, shop, hub, "Default")
	dn.TriggerOn = []string{"manual"}
	d, err := store.CreateDispatcher(ctx, s, dn)
	require.NoError(t, err)
	mine, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, endUserBridge, "m1"))
	require.NoError(t, err)
	theirs, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, plain, "p1"))
	require.NoError(t, err)

	applies := func(o store.Order, trigger string) bool {
		t.Helper()
		ds, err := store.ActiveDispatchersForOrder(ctx, s.Pool, org, o.ID, trigger)
		require.NoError(t, err)
		_, dispatch, err := store.OrderRulesApply(ctx, s.Pool, org, o.ID, trigger)
		require.NoError(t, err)
		require.Equal(t, len(ds) > 0, dispatch, "both questions agree")
		return len(ds) == 1 && ds[0].ID == d.ID
	}
	require.False(t, applies(mine, "order_created"), "no default set")
	_, err = store.UpsertEmbedConfig(ctx, s.Pool, org, uuid.New(), "dflt-"+uuid.NewString()[:8], "pk_"+uuid.NewString(),
		store.EmbedConfigPatch{SetDispatcher: true, DefaultDispatcherID: &d.ID})
	require.NoError(t, err)
	require.True(t, applies(mine, "order_created"))
	require.True(t, applies(mine, ""), "manual evaluation")
	require.False(t, applies(mine, "order_updated"), "not in its triggerOn")
	require.False(t, applies(theirs, "order_created"), "not an end user's bridge")

	// CreateOrderProbeEvents asks the same question with the insert.
	_, probe, err := store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, endUserBridge, "m2"), "order_created", "")
	require.NoError(t, err)
	require.True(t, probe.Dispatch)
	_, probe, err = store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, plain, "p2"), "order_created", "")
	require.NoError(t, err)
	require.False(t, probe.Dispatch)

	// Not towards the order's own bridge; not when inactive.
	_, err = s.Pool.Exec(ctx, `UPDATE dispatchers SET destination_bridge_id = $1 WHERE id = $2`, endUserBridge, d.ID)
	require.NoError(t, err)
	require.False(t, applies(mine, "order_created"))
	_, err = s.Pool.Exec(ctx, `UPDATE dispatchers SET destination_bridge_id = $1, is_active = false WHERE id = $2`, hub, d.ID)
	require.NoError(t, err)
	require.False(t, applies(mine, "order_created"))
}
