package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// Settled events lose their payload after the event retention and their
// row (the dedupe key) after the longer key retention; events still
// waiting are kept whatever their age.
func TestPurgeWebhookEvents(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "a.example.com", "accessToken": "t"})
	insert := func(key, status string, age time.Duration) {
		e := webhookTestEvent(org, b.ID, key)
		_, inserted, err := store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, e)
		require.NoError(t, err)
		require.True(t, inserted)
		_, err = s.Pool.Exec(ctx, `UPDATE webhook_events SET status = $2, created_at = now() - make_interval(secs => $3) WHERE id = $1`,
			e.ID, status, age.Seconds())
		require.NoError(t, err)
	}
	day := 24 * time.Hour
	insert("fresh", store.WebhookEventProcessed, time.Hour)
	insert("old", store.WebhookEventProcessed, 40*day)
	insert("old-failed", store.WebhookEventFailed, 40*day)
	insert("ancient", store.WebhookEventProcessed, 100*day)
	insert("waiting", store.WebhookEventReceived, 100*day)

	emptied, deleted, err := store.PurgeWebhookEvents(ctx, s.Pool, 30*day, 90*day, 100)
	require.NoError(t, err)
	require.EqualValues(t, 3, emptied) // old, old-failed, ancient
	require.EqualValues(t, 1, deleted) // ancient
	rows := map[string]string{}
	r, err := s.Pool.Query(ctx, `SELECT dedupe_key, payload::text FROM webhook_events WHERE bridge_id = $1`, b.ID)
	require.NoError(t, err)
	for r.Next() {
		var k, p string
		require.NoError(t, r.Scan(&k, &p))
		rows[k] = p
	}
	require.NoError(t, r.Err())
	require.Equal(t, map[string]string{"fresh": `{"id": 1}`, "old": `{}`, "old-failed": `{}`, "waiting": `{"id": 1}`}, rows)

	// A replay of a purged event is still recognized by its key.
	_, inserted, err := store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, webhookTestEvent(org, b.ID, "old"))
	require.NoError(t, err)
	require.False(t, inserted)
	// Idempotent.
	emptied, deleted, err = store.PurgeWebhookEvents(ctx, s.Pool, 30*day, 90*day, 100)
	require.NoError(t, err)
	require.Zero(t, emptied+deleted)
}
