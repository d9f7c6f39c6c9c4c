package bridgetasks_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store/storetest"
)

// An inbound delivery as the system receives it: the bridge is found by
// its id alone, its webhook secret opened, the event stored once per
// dedupe key, and a bridge no longer active takes none.
func TestInboundWebhookAsSystem(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	o := newOrganization(t, s, "Inbound")
	box := newBox(t)
	svc := bridgetasks.New(bridgetasks.Deps{Store: s, Secrets: box})
	sys := domain.System(o.ID)
	str := func(s string) *string { return &s }
	b, err := svc.CreateBridge(ctx, domain.Actor{Kind: domain.ActorOperation, OrganizationID: o.ID}, bridgetasks.BridgeInput{
		Type: str("storefront_a"), Name: str("Shop"),
		Config: map[string]any{"shopDomain": "a.myshopify.com", "accessToken": "shpat_x", platforms.ConfigWebhookSecret: "hook-secret"}})
	require.NoError(t, err)

	_, err = svc.InboundBridge(ctx, uuid.New())
	require.ErrorIs(t, err, domain.ErrNotFound)
	got, err := svc.InboundBridge(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, sys.OrganizationID, got.OrganizationID)
	sec, err := svc.WebhookSecret(got)
	require.NoError(t, err)
	require.Equal(t, "hook-secret", sec)

	ev := bridgetasks.WebhookEvent{ID: uuid.New(), OrganizationID: o.ID, BridgeID: b.ID, Topic: "orders/create",
		DedupeKey: "evt-1", Payload: json.RawMessage(`{"id": 1}`)}
	id, inserted, err := svc.RecordWebhookEvent(ctx, ev)
	require.NoError(t, err)
	require.True(t, inserted)
	ev.ID = uuid.New()
	again, inserted, err := svc.RecordWebhookEvent(ctx, ev)
	require.NoError(t, err)
	require.False(t, inserted, "one event per dedupe key")
	require.Equal(t, id, again)

	paused := "paused"
	_, err = svc.UpdateBridge(ctx, domain.Actor{Kind: domain.ActorOperation, OrganizationID: o.ID}, b.ID, bridgetasks.BridgeChange{Status: &paused})
	require.NoError(t, err)
	ev.ID, ev.DedupeKey = uuid.New(), "evt-2"
	_, _, err = svc.RecordWebhookEvent(ctx, ev)
	require.ErrorIs(t, err, domain.ErrNotFound, "a paused bridge takes no event")
}
