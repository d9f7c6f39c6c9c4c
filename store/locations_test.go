package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func locTestStr(s string) *string { return &s }

func locTestCreate(t *testing.T, s *store.Store, orgID uuid.UUID, name string, bridgeID *uuid.UUID) store.Location {
	t.Helper()
	l, err := store.CreateLocation(t.Context(), s.Pool, store.Location{
		ID: uuid.New(), OrganizationID: orgID, Name: name, Street: locTestStr("1 Dock Rd"), City: locTestStr("Memphis"),
		Province: locTestStr("TN"), Zip: locTestStr("38118"), Country: locTestStr("US"), BridgeID: bridgeID,
	})
	require.NoError(t, err)
	return l
}

func TestStoreLocationCRUD(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	other := bridgeTestOrg(t, s)

	a := locTestCreate(t, s, org, "A", nil)
	require.Equal(t, "A", a.Name)
	require.Nil(t, a.BridgeID)
	require.Nil(t, a.ExternalID)
	require.False(t, a.CreatedAt.IsZero())

	got, err := store.LocationByID(ctx, s.Pool, org, a.ID)
	require.NoError(t, err)
	require.Equal(t, a, got)
	_, err = store.LocationByID(ctx, s.Pool, other, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "another organization's location")

	// A bridge of another organization is refused.
	foreign := bridgeTestCreate(t, s, bridgeTestBox(t), other, platforms.TypeStorefrontA, "X", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	_, err = store.CreateLocation(ctx, s.Pool, store.Location{ID: uuid.New(), OrganizationID: org, Name: "bad", BridgeID: &foreign.ID})
	require.ErrorIs(t, err, store.ErrNotFound)

	// Patch: name changed, city cleared, zip set, the rest untouched.
	up, err := store.UpdateLocation(ctx, s.Pool, org, a.ID, store.LocationPatch{
		Name: locTestStr("A2"), City: store.LocationField{Set: true}, Zip: store.LocationField{Set: true, Value: locTestStr("10001")},
	})
	require.NoError(t, err)
	require.Equal(t, "A2", up.Name)
	require.Nil(t, up.City)
	require.Equal(t, "10001", *up.Zip)
	require.Equal(t, "1 Dock Rd", *up.Street)
	require.True(t, up.UpdatedAt.After(a.UpdatedAt) || up.UpdatedAt.Equal(a.UpdatedAt))
	_, err = store.UpdateLocation(ctx, s.Pool, other, a.ID, store.LocationPatch{Name: locTestStr("x")})
	require.ErrorIs(t, err, store.ErrNotFound)

	// List, newest first; filter by bridge.
	b := locTestCreate(t, s, org, "B", nil)
	list, total, err := store.ListLocations(ctx, s.Pool, org, store.LocationFilter{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, b.ID, list[0].ID)
	list, total, err = store.ListLocations(ctx, s.Pool, org, store.LocationFilter{Limit: 10, Offset: 1})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, list, 1)
	require.Equal(t, a.ID, list[0].ID)
	bridge := uuid.New()
	list, total, err = store.ListLocations(ctx, s.Pool, org, store.LocationFilter{BridgeID: &bridge, Limit: 10})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)

	require.ErrorIs(t, store.DeleteLocation(ctx, s.Pool, other, a.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteLocation(ctx, s.Pool, org, a.ID))
	require.ErrorIs(t, store.DeleteLocation(ctx, s.Pool, org, a.ID), store.ErrNotFound)
}

func TestStoreOriginLocation(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	box := bridgeTestBox(t)
	bridge := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "a.example.com", "accessToken": "t"})
	bare := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Bare", map[string]any{"shopDomain": "b.example.com", "accessToken": "t"})

	_, _, err := store.OriginLocation(ctx, s.Pool, org, &bridge.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "no location at all")

	manual1 := locTestCreate(t, s, org, "manual 1", nil)
	manual2 := locTestCreate(t, s, org, "manual 2", nil)
	ofBridge := locTestCreate(t, s, org, "bridge wh", &bridge.ID)

	l, origin, err := store.OriginLocation(ctx, s.Pool, org, &bridge.ID)
	require.NoError(t, err)
	require.Equal(t, ofBridge.ID, l.ID)
	require.Equal(t, store.OriginBridge, origin)

	// A bridge without locations, or no bridge: the oldest manual location.
	for _, b := range []*uuid.UUID{&bare.ID, nil} {
		l, origin, err = store.OriginLocation(ctx, s.Pool, org, b)
		require.NoError(t, err)
		require.Equal(t, manual1.ID, l.ID)
		require.Equal(t, store.OriginManual, origin)
	}

	// The organization's default location wins over the oldest manual one
	// (it may even be a bridge's location).
	for _, def := range []store.Location{manual2, ofBridge} {
		_, err = store.UpdateOrganization(ctx, s.Pool, org, store.OrganizationPatch{Settings: map[string]any{"default_location_id": def.ID.String()}})
		require.NoError(t, err)
		l, origin, err = store.OriginLocation(ctx, s.Pool, org, &bare.ID)
		require.NoError(t, err)
		require.Equal(t, def.ID, l.ID)
		require.Equal(t, store.OriginDefault, origin)
	}
	// A default that names nothing (deleted, garbage) is ignored.
	_, err = store.UpdateOrganization(ctx, s.Pool, org, store.OrganizationPatch{Settings: map[string]any{"default_location_id": "not-a-uuid"}})
	require.NoError(t, err)
	l, _, err = store.OriginLocation(ctx, s.Pool, org, nil)
	require.NoError(t, err)
	require.Equal(t, manual1.ID, l.ID)

	// Another organization's default id is not followed.
	other := bridgeTestOrg(t, s)
	_, err = store.UpdateOrganization(ctx, s.Pool, other, store.OrganizationPatch{Settings: map[string]any{"default_location_id": manual1.ID.String()}})
	require.NoError(t, err)
	_, _, err = store.OriginLocation(ctx, s.Pool, other, nil)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Deleting the bridge deletes its locations.
	_, err = s.Pool.Exec(ctx, `DELETE FROM bridges WHERE id = $1`, bridge.ID)
	require.NoError(t, err)
	_, err = store.LocationByID(ctx, s.Pool, org, ofBridge.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}
