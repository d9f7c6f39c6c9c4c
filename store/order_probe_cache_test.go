package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/arrival"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// CreateOrderProbed answers from memory once it knows an organization's
// answers, and every change of a rule, dispatcher, standing order, the
// embed default dispatcher or a bridge's end user, made by any process
// (here plain SQL on other connections), is seen by the next create; the
// rules' counters do not make it forget.
func TestCreateOrderProbedSeesEveryChange(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub := uuid.New()
	_, err := s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Hub')`, hub, org)
	require.NoError(t, err)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	create := func() store.OrderProbe {
		t.Helper()
		o := orderTestNew(org, shop, "probe-"+uuid.NewString())
		got, p, err := store.CreateOrderProbed(ctx, s.Pool, o, "order_created", "on_order_created")
		require.NoError(t, err)
		require.Equal(t, o.ID, got.ID)
		return p
	}
	// requireKept creates an order and checks its answer, then that the
	// answer is kept and that the next create (answered from it) agrees.
	requireKept := func(want store.OrderProbe, msg string) {
		t.Helper()
		require.Equal(t, want, create(), msg)
		kept, _ := store.OrderProbeKept(s.Pool, org)
		require.True(t, kept, "%s: kept", msg)
		require.Equal(t, want, create(), "%s (from memory)", msg)
	}
	require.Eventually(t, func() bool {
		create()
		kept, _ := store.OrderProbeKept(s.Pool, org)
		return kept
	}, 10*time.Second, 10*time.Millisecond, "once the listener is up the answer is kept")
	requireKept(store.OrderProbe{}, "nothing applies")

	// A dispatcher of the shop, its counters, its deactivation.
	disp := uuid.New()
	exec(`INSERT INTO dispatchers (id, organization_id, name, source_bridge_ids, destination_bridge_id, conditions)
 VALUES ($1, $2, 'All', ARRAY[$3::uuid], $4, '[]')`, disp, org, shop, hub)
	requireKept(store.OrderProbe{Dispatch: true}, "dispatcher created")
	_, seq := store.OrderProbeKept(s.Pool, org)
	exec(`UPDATE dispatchers SET orders_assigned = orders_assigned + 1, last_assigned_at = now() WHERE id = $1`, disp)
	require.Equal(t, store.OrderProbe{Dispatch: true}, create())
	kept, seqAfter := store.OrderProbeKept(s.Pool, org)
	require.True(t, kept)
	require.Equal(t, seq, seqAfter, "a counter does not make it forget")
	exec(`UPDATE dispatchers SET trigger_on = '{manual}' WHERE id = $1`, disp)
	requireKept(store.OrderProbe{}, "dispatcher of another trigger")
	exec(`UPDATE dispatchers SET trigger_on = '{order_created}' WHERE id = $1`, disp)
	requireKept(store.OrderProbe{Dispatch: true}, "dispatcher of the trigger again")
	exec(`UPDATE dispatchers SET is_active = false WHERE id = $1`, disp)
	requireKept(store.OrderProbe{}, "dispatcher deactivated")

	// The embed default dispatcher applies to an end user's bridge.
	exec(`UPDATE dispatchers SET is_active = true, source_bridge_ids = '{}' WHERE id = $1`, disp)
	requireKept(store.OrderProbe{}, "dispatcher of no source")
	exec(`INSERT INTO embed_configs (id, organization_id, slug, publishable_key, default_dispatcher_id) VALUES ($1, $2, $3, $4, $5)`,
		uuid.New(), org, "probe-"+org.String(), "pk-"+org.String(), disp)
	requireKept(store.OrderProbe{}, "embed default, the shop has no end user")
	endUser := uuid.New()
	exec(`INSERT INTO end_users (id, organization_id, external_id) VALUES ($1, $2, 'u1')`, endUser, org)
	exec(`UPDATE bridges SET end_user_id = $3 WHERE organization_id = $1 AND id = $2`, org, shop, endUser)
	requireKept(store.OrderProbe{Dispatch: true}, "embed default, the shop is an end user's")
	exec(`UPDATE embed_configs SET default_dispatcher_id = NULL WHERE organization_id = $1`, org)
	requireKept(store.OrderProbe{}, "no embed default")
	exec(`DELETE FROM dispatchers WHERE id = $1`, disp)

	// Split rules: of the bridge, of another, of all.
	rule := uuid.New()
	exec(`INSERT INTO split_rules (id, organization_id, name, method, group_field, bridge_id) VALUES ($1, $2, 'R', 'field_group', 'vendor', $3)`, rule, org, shop)
	requireKept(store.OrderProbe{Split: true}, "split rule of the bridge")
	exec(`UPDATE split_rules SET orders_split = orders_split + 1, last_split_at = now() WHERE id = $1`, rule)
	require.Equal(t, store.OrderProbe{Split: true}, create())
	exec(`UPDATE split_rules SET bridge_id = $2 WHERE id = $1`, rule, hub)
	requireKept(store.OrderProbe{}, "split rule of another bridge")
	exec(`UPDATE split_rules SET bridge_id = NULL WHERE id = $1`, rule)
	requireKept(store.OrderProbe{Split: true}, "split rule of every bridge")
	exec(`UPDATE split_rules SET is_active = false WHERE id = $1`, rule)
	requireKept(store.OrderProbe{}, "split rule deactivated")

	// Standing orders of the event.
	so := uuid.New()
	exec(`INSERT INTO agent_standing_orders (id, organization_id, name, natural_language, trigger_type) VALUES ($1, $2, 'S', 'do it', 'on_order_created')`, so, org)
	requireKept(store.OrderProbe{Standing: true}, "standing order of the event")
	exec(`UPDATE agent_standing_orders SET trigger_type = 'on_order_updated' WHERE id = $1`, so)
	requireKept(store.OrderProbe{}, "standing order of another event")
	exec(`UPDATE agent_standing_orders SET trigger_type = 'on_order_created' WHERE id = $1`, so)
	requireKept(store.OrderProbe{Standing: true}, "standing order of the event again")
	exec(`DELETE FROM agent_standing_orders WHERE id = $1`, so)
	requireKept(store.OrderProbe{}, "standing order deleted")

	// Errors are the insert's, from memory too.
	o := orderTestNew(org, shop, "dup")
	_, _, err = store.CreateOrderProbed(ctx, s.Pool, o, "order_created", "on_order_created")
	require.NoError(t, err)
	o.ID = uuid.New()
	_, _, err = store.CreateOrderProbed(ctx, s.Pool, o, "order_created", "on_order_created")
	require.ErrorIs(t, err, store.ErrConflict)
	foreign := uuid.New()
	o = orderTestNew(org, foreign, "foreign")
	_, _, err = store.CreateOrderProbed(ctx, s.Pool, o, "order_created", "on_order_created")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A request that already waited for a round trip of the listener that
// began after it arrived (its API key's) does not wait for another.
func TestListenerFreshSharesTheRequestsRoundTrip(t *testing.T) {
	s := storetest.New(t)
	l := store.ListenerOf(s.Pool)
	ctx := context.Background()
	org, shop := orderTestOrg(t, s)
	require.Eventually(t, func() bool { // the listener is up once a subscriber is
		_, _, err := store.CreateOrderProbed(ctx, s.Pool, orderTestNew(org, shop, uuid.NewString()), "order_created", "")
		require.NoError(t, err)
		return store.OrderProbeLive(s.Pool)
	}, 10*time.Second, 10*time.Millisecond)

	req := arrival.With(ctx, time.Now())
	before := store.ListenerRounds(s.Pool)
	fresh, err := l.Fresh(req)
	require.NoError(t, err)
	require.True(t, fresh)
	require.Greater(t, store.ListenerRounds(s.Pool), before, "a round trip that began after the arrival")
	after := store.ListenerRounds(s.Pool)
	for range 3 {
		fresh, err = l.Fresh(req)
		require.NoError(t, err)
		require.True(t, fresh)
	}
	require.Equal(t, after, store.ListenerRounds(s.Pool), "the same request does not wait again")
	// A request that arrives later does.
	fresh, err = l.Fresh(arrival.With(ctx, time.Now()))
	require.NoError(t, err)
	require.True(t, fresh)
	require.Greater(t, store.ListenerRounds(s.Pool), after)
}

// Without every trigger that announces the changes, the answers are never
// kept: every create asks.
func TestCreateOrderProbedOffWithoutTriggers(t *testing.T) {
	s := storetest.New(t)
	ctx := context.Background()
	org, shop := orderTestOrg(t, s)
	_, err := s.Pool.Exec(ctx, `ALTER TABLE bridges DISABLE TRIGGER bridges_notify_order_rules`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := s.Pool.Exec(ctx, `ALTER TABLE bridges ENABLE TRIGGER bridges_notify_order_rules`)
		require.NoError(t, err)
	})
	other, err := store.Open(ctx, storetest.URL()) // a cache of its own
	require.NoError(t, err)
	defer other.Close()
	for i := range 3 {
		_, p, err := store.CreateOrderProbed(ctx, other.Pool, orderTestNew(org, shop, uuid.NewString()), "order_created", "on_order_created")
		require.NoError(t, err)
		require.Equal(t, store.OrderProbe{}, p, "create %d", i)
	}
	require.False(t, store.OrderProbeLive(other.Pool))
	kept, _ := store.OrderProbeKept(other.Pool, org)
	require.False(t, kept)
}
