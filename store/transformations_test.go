package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestStoreTransformations(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)
	full := map[string]any{"shopDomain": "a.example.com", "accessToken": "tok"}
	bridge := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "mine", full)
	foreign := bridgeTestCreate(t, s, box, other, platforms.TypeStorefrontA, "theirs", full)

	mk := func(name, trigger string, bridgeID *uuid.UUID, prio int, active bool) store.Transformation {
		t.Helper()
		tr, err := store.CreateTransformation(ctx, s.Pool, store.Transformation{ID: uuid.New(), OrganizationID: org, Name: name,
			TriggerPoint: trigger, BridgeID: bridgeID, Code: "function transform(d) {}", IsActive: active, Priority: prio})
		require.NoError(t, err)
		return tr
	}
	g := mk("global", store.TriggerAfterSync, nil, 10, true)
	b := mk("bridge", store.TriggerAfterSync, &bridge.ID, 20, true)
	off := mk("off", store.TriggerAfterSync, nil, 30, false)
	before := mk("before", store.TriggerBeforeSync, &bridge.ID, 0, true)

	// Another organization's bridge cannot be referenced.
	_, err := store.CreateTransformation(ctx, s.Pool, store.Transformation{ID: uuid.New(), OrganizationID: org, Name: "x",
		TriggerPoint: store.TriggerAfterSync, BridgeID: &foreign.ID, Code: "c", IsActive: true})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.UpdateTransformation(ctx, s.Pool, org, g.ID, store.TransformationPatch{BridgeID: &foreign.ID})
	require.ErrorIs(t, err, store.ErrNotFound)

	// List: priority descending; filters.
	list, total, err := store.ListTransformations(ctx, s.Pool, org, store.TransformationFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, []uuid.UUID{off.ID, b.ID, g.ID, before.ID}, []uuid.UUID{list[0].ID, list[1].ID, list[2].ID, list[3].ID})
	yes := true
	list, total, err = store.ListTransformations(ctx, s.Pool, org, store.TransformationFilter{TriggerPoint: store.TriggerAfterSync, IsActive: &yes, Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, g.ID, list[0].ID)
	_, total, err = store.ListTransformations(ctx, s.Pool, other, store.TransformationFilter{Limit: 10})
	require.NoError(t, err)
	require.Zero(t, total)

	// Active ones of a trigger point: the bridge's and the global ones.
	act, err := store.ActiveTransformations(ctx, s.Pool, org, &bridge.ID, store.TriggerAfterSync)
	require.NoError(t, err)
	require.Len(t, act, 2)
	require.Equal(t, b.ID, act[0].ID)
	act, err = store.ActiveTransformations(ctx, s.Pool, org, nil, store.TriggerAfterSync)
	require.NoError(t, err)
	require.Len(t, act, 1)

	// Update: clear the bridge and the description; other rows untouched.
	desc := "d"
	u, err := store.UpdateTransformation(ctx, s.Pool, org, b.ID, store.TransformationPatch{Description: &desc})
	require.NoError(t, err)
	require.Equal(t, "d", *u.Description)
	u, err = store.UpdateTransformation(ctx, s.Pool, org, b.ID, store.TransformationPatch{ClearBridge: true, ClearDesc: true})
	require.NoError(t, err)
	require.Nil(t, u.BridgeID)
	require.Nil(t, u.Description)
	require.Equal(t, "bridge", u.Name)
	_, err = store.UpdateTransformation(ctx, s.Pool, other, b.ID, store.TransformationPatch{Description: &desc})
	require.ErrorIs(t, err, store.ErrNotFound)

	// The bridge's transformations go with it.
	require.NoError(t, store.DeleteBridge(ctx, s.Pool, org, bridge.ID))
	_, err = store.TransformationByID(ctx, s.Pool, org, before.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	require.ErrorIs(t, store.DeleteTransformation(ctx, s.Pool, other, g.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteTransformation(ctx, s.Pool, org, g.ID))
	require.ErrorIs(t, store.DeleteTransformation(ctx, s.Pool, org, g.ID), store.ErrNotFound)
}
