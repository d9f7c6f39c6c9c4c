package store_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// TestMain is the store package's only TestMain: store tests in other files
// rely on it (storetest.Run drops the package database afterwards).
func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

func bridgeTestBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	return box
}

// bridgeTestOrg creates a user and an organization it owns.
func bridgeTestOrg(t *testing.T, s *store.Store) uuid.UUID {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "b" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "B"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Bridges "+u.Email, u.ID)
	require.NoError(t, err)
	return org.ID
}

func bridgeTestCreate(t *testing.T, s *store.Store, box *secrets.Box, orgID uuid.UUID, typ, name string, full map[string]any) store.Bridge {
	t.Helper()
	id := uuid.New()
	cfg, creds, err := store.SplitBridgeConfig(box, store.BridgeCredentialsAD(orgID, id), typ, full)
	require.NoError(t, err)
	b, err := store.CreateBridge(t.Context(), s.Pool, store.Bridge{ID: id, OrganizationID: orgID, Type: typ, Name: name, Config: cfg, Credentials: creds})
	require.NoError(t, err)
	return b
}

func TestSplitAndFullBridgeConfig(t *testing.T) {
	box := bridgeTestBox(t)
	full := map[string]any{
		"shopDomain": "a.example.com", "accessToken": "tok", "apiVersion": "2025-01",
		"webhookSecret": "", "locationId": nil, "enabledWebhooks": []string{"orders/create"},
		"registeredWebhooks": map[string]any{"orders/create": float64(12)},
	}
	org, id := uuid.New(), uuid.New()
	ad := store.BridgeCredentialsAD(org, id)
	cfg, creds, err := store.SplitBridgeConfig(box, ad, platforms.TypeStorefrontA, full)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"shopDomain": "a.example.com", "apiVersion": "2025-01",
		"enabledWebhooks": []string{"orders/create"}, "registeredWebhooks": map[string]any{"orders/create": float64(12)},
	}, cfg, "no secret, no null; empty secrets are dropped")
	require.NotEmpty(t, creds)
	require.NotContains(t, string(creds), "tok")

	got, err := store.BridgeFullConfig(box, store.Bridge{ID: id, OrganizationID: org, Type: platforms.TypeStorefrontA, Config: cfg, Credentials: creds})
	require.NoError(t, err)
	require.Equal(t, "tok", got["accessToken"])
	require.Equal(t, "a.example.com", got["shopDomain"])
	require.Len(t, got, 5)

	// The result is a copy.
	got["shopDomain"] = "changed"
	require.Equal(t, "a.example.com", cfg["shopDomain"])

	// No secrets: nil credentials, and no box needed to read them back.
	cfg, creds, err = store.SplitBridgeConfig(box, ad, platforms.TypeStorefrontA, map[string]any{"shopDomain": "x"})
	require.NoError(t, err)
	require.Nil(t, creds)
	got, err = store.BridgeFullConfig(nil, store.Bridge{Config: cfg})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"shopDomain": "x"}, got)

	// Empty input still gives a non-nil config.
	cfg, _, err = store.SplitBridgeConfig(box, ad, platforms.TypeStorefrontA, nil)
	require.NoError(t, err)
	require.NotNil(t, cfg)

	// Another key cannot open the credentials.
	_, creds, err = store.SplitBridgeConfig(box, ad, platforms.TypeStorefrontA, full)
	require.NoError(t, err)
	_, err = store.BridgeFullConfig(bridgeTestBox(t), store.Bridge{ID: id, OrganizationID: org, Credentials: creds})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "tok")
	// Nor can another bridge's row, of this or another organization.
	_, err = store.BridgeFullConfig(box, store.Bridge{ID: uuid.New(), OrganizationID: org, Credentials: creds})
	require.ErrorIs(t, err, secrets.ErrOpen)
	_, err = store.BridgeFullConfig(box, store.Bridge{ID: id, OrganizationID: uuid.New(), Credentials: creds})
	require.ErrorIs(t, err, secrets.ErrOpen)

	pb, err := store.PlatformBridge(box, store.Bridge{ID: id, OrganizationID: org, Type: platforms.TypeStorefrontA, Config: map[string]any{}, Credentials: creds})
	require.NoError(t, err)
	require.Equal(t, "tok", pb.Config["accessToken"])
	require.Equal(t, platforms.TypeStorefrontA, pb.Type)
}

func TestBridgeCRUD(t *testing.T) {
	s := storetest.New(t)
	box := bridgeTestBox(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	otherOrg := bridgeTestOrg(t, s)

	b := bridgeTestCreate(t, s, box, org, platforms.TypeShippingHubA, "hub", map[string]any{"apiKey": "k1", "apiSecret": "s1", "storeId": "7"})
	require.Equal(t, store.BridgeActive, b.Status)
	require.Nil(t, b.LastSyncAt)
	require.Equal(t, map[string]any{"storeId": "7"}, b.Config)

	got, err := store.BridgeByID(ctx, s.Pool, org, b.ID)
	require.NoError(t, err)
	require.Equal(t, b.ID, got.ID)
	full, err := store.BridgeFullConfig(box, got)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"apiKey": "k1", "apiSecret": "s1", "storeId": "7"}, full)

	_, err = store.BridgeByID(ctx, s.Pool, otherOrg, b.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.BridgeByID(ctx, s.Pool, org, uuid.New())
	require.ErrorIs(t, err, store.ErrNotFound)
	anyOrg, err := store.BridgeByIDAnyOrganization(ctx, s.Pool, b.ID)
	require.NoError(t, err)
	require.Equal(t, org, anyOrg.OrganizationID)

	// Update: name and status only keep config and credentials.
	name, status := "renamed", store.BridgePaused
	up, err := store.UpdateBridge(ctx, s.Pool, org, b.ID, store.BridgePatch{Name: &name, Status: &status})
	require.NoError(t, err)
	require.Equal(t, "renamed", up.Name)
	require.Equal(t, store.BridgePaused, up.Status)
	require.Equal(t, b.Config, up.Config)
	require.Equal(t, b.Credentials, up.Credentials)
	require.True(t, up.UpdatedAt.After(b.UpdatedAt) || up.UpdatedAt.Equal(b.UpdatedAt))

	// Update: a new config replaces both parts.
	cfg, creds, err := store.SplitBridgeConfig(box, store.BridgeCredentialsAD(org, b.ID), up.Type, map[string]any{"apiKey": "k2", "apiSecret": "s2"})
	require.NoError(t, err)
	up, err = store.UpdateBridge(ctx, s.Pool, org, b.ID, store.BridgePatch{Config: cfg, Credentials: creds})
	require.NoError(t, err)
	require.Equal(t, map[string]any{}, up.Config)
	full, err = store.BridgeFullConfig(box, up)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"apiKey": "k2", "apiSecret": "s2"}, full)

	_, err = store.UpdateBridge(ctx, s.Pool, otherOrg, b.ID, store.BridgePatch{Name: &name})
	require.ErrorIs(t, err, store.ErrNotFound)
	bad := "gone"
	_, err = store.UpdateBridge(ctx, s.Pool, org, b.ID, store.BridgePatch{Status: &bad})
	require.Error(t, err, "the CHECK constraint refuses unknown statuses")

	// Merge non-secret keys; secret keys are refused.
	up, err = store.MergeBridgeConfig(ctx, s.Pool, org, b.ID, map[string]any{
		"enabledWebhooks": []string{"SHIP_NOTIFY"}, "registeredWebhooks": map[string]any{"SHIP_NOTIFY": 99},
	})
	require.NoError(t, err)
	require.Equal(t, []any{"SHIP_NOTIFY"}, up.Config["enabledWebhooks"])
	require.Equal(t, map[string]any{"SHIP_NOTIFY": float64(99)}, up.Config["registeredWebhooks"])
	up, err = store.MergeBridgeConfig(ctx, s.Pool, org, b.ID, map[string]any{"enabledWebhooks": nil, "storeId": "8"})
	require.NoError(t, err)
	require.NotContains(t, up.Config, "enabledWebhooks")
	require.Equal(t, "8", up.Config["storeId"])
	require.Contains(t, up.Config, "registeredWebhooks")
	_, err = store.MergeBridgeConfig(ctx, s.Pool, org, b.ID, map[string]any{"apiSecret": "plain"})
	require.Error(t, err)
	_, err = store.MergeBridgeConfig(ctx, s.Pool, otherOrg, b.ID, map[string]any{"storeId": "9"})
	require.ErrorIs(t, err, store.ErrNotFound)

	// Sync time only moves forward.
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	require.NoError(t, store.MarkBridgeSynced(ctx, s.Pool, org, b.ID, at))
	require.NoError(t, store.MarkBridgeSynced(ctx, s.Pool, org, b.ID, at.Add(-time.Hour)))
	got, err = store.BridgeByID(ctx, s.Pool, org, b.ID)
	require.NoError(t, err)
	require.True(t, at.Equal(*got.LastSyncAt))
	require.ErrorIs(t, store.MarkBridgeSynced(ctx, s.Pool, otherOrg, b.ID, time.Now()), store.ErrNotFound)

	// Locking inside a transaction.
	require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) error {
		_, err := store.LockBridge(ctx, tx, org, b.ID)
		return err
	}))

	// Delete.
	require.ErrorIs(t, store.DeleteBridge(ctx, s.Pool, otherOrg, b.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteBridge(ctx, s.Pool, org, b.ID))
	require.ErrorIs(t, store.DeleteBridge(ctx, s.Pool, org, b.ID), store.ErrNotFound)
	_, err = store.BridgeByID(ctx, s.Pool, org, b.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestListBridgesAndByIDs(t *testing.T) {
	s := storetest.New(t)
	box := bridgeTestBox(t)
	ctx := context.Background()
	org := bridgeTestOrg(t, s)
	otherOrg := bridgeTestOrg(t, s)

	var made []store.Bridge
	for i := range 4 {
		typ := platforms.TypeStorefrontA
		if i%2 == 1 {
			typ = platforms.TypeStorefrontC
		}
		full := map[string]any{"shopDomain": "a.example.com", "storeHash": "h", "accessToken": "t"}
		made = append(made, bridgeTestCreate(t, s, box, org, typ, "b", full))
	}
	foreign := bridgeTestCreate(t, s, box, otherOrg, platforms.TypeStorefrontA, "x", map[string]any{"shopDomain": "x", "accessToken": "t"})
	paused := store.BridgePaused
	_, err := store.UpdateBridge(ctx, s.Pool, org, made[0].ID, store.BridgePatch{Status: &paused})
	require.NoError(t, err)

	list, total, err := store.ListBridges(ctx, s.Pool, org, store.BridgeFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, made[3].ID, list[0].ID, "newest first")
	require.Equal(t, made[0].ID, list[3].ID)

	list, total, err = store.ListBridges(ctx, s.Pool, org, store.BridgeFilter{Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Len(t, list, 1)
	require.Equal(t, made[2].ID, list[0].ID)

	list, total, err = store.ListBridges(ctx, s.Pool, org, store.BridgeFilter{Type: platforms.TypeStorefrontC, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, list, 2)

	list, total, err = store.ListBridges(ctx, s.Pool, org, store.BridgeFilter{Type: platforms.TypeStorefrontA, Status: store.BridgePaused, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, made[0].ID, list[0].ID)

	list, total, err = store.ListBridges(ctx, s.Pool, org, store.BridgeFilter{Limit: 10, Offset: 100})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Empty(t, list)

	byID, err := store.BridgesByIDs(ctx, s.Pool, org, []uuid.UUID{made[1].ID, made[2].ID, foreign.ID, uuid.New()})
	require.NoError(t, err)
	require.Len(t, byID, 2)
	require.Contains(t, byID, made[1].ID)
	require.NotContains(t, byID, foreign.ID)
	byID, err = store.BridgesByIDs(ctx, s.Pool, org, nil)
	require.NoError(t, err)
	require.Empty(t, byID)
}
