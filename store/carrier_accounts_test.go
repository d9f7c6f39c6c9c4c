package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func carrierTestAccount(orgID uuid.UUID, carrier, name string) store.CarrierAccount {
	return store.CarrierAccount{ID: uuid.New(), OrganizationID: orgID, Name: name, Carrier: carrier, Credentials: []byte("sealed"), SupportsRating: true}
}

func TestCarrierAccountsCRUD(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	other := bridgeTestOrg(t, s)

	a, err := store.CreateCarrierAccount(ctx, s.Pool, carrierTestAccount(org, "carrier_c", "Rates"))
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountActive, a.Status)
	require.JSONEq(t, `{}`, string(a.Metadata))
	b := carrierTestAccount(org, "carrier_b", "UPS")
	b.Status = store.CarrierAccountInactive
	b.Metadata = json.RawMessage(`{"team":"east"}`)
	b, err = store.CreateCarrierAccount(ctx, s.Pool, b)
	require.NoError(t, err)
	_, err = store.CreateCarrierAccount(ctx, s.Pool, carrierTestAccount(other, "carrier_c", "Theirs"))
	require.NoError(t, err)

	// List: the organization's only, newest first, with filters.
	list, total, err := store.ListCarrierAccounts(ctx, s.Pool, org, store.CarrierAccountFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []uuid.UUID{b.ID, a.ID}, []uuid.UUID{list[0].ID, list[1].ID})
	list, total, err = store.ListCarrierAccounts(ctx, s.Pool, org, store.CarrierAccountFilter{Carrier: "carrier_c", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, a.ID, list[0].ID)
	_, total, err = store.ListCarrierAccounts(ctx, s.Pool, org, store.CarrierAccountFilter{Status: "inactive", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	list, total, err = store.ListCarrierAccounts(ctx, s.Pool, org, store.CarrierAccountFilter{Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, list, 1)

	// Another organization's account is not found.
	_, err = store.CarrierAccountByID(ctx, s.Pool, other, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Update.
	name, status := "Renamed", "inactive"
	u, err := store.UpdateCarrierAccount(ctx, s.Pool, org, a.ID, store.CarrierAccountPatch{Name: &name, Status: &status, Metadata: json.RawMessage(`{"k":1}`), Credentials: []byte("resealed")})
	require.NoError(t, err)
	require.Equal(t, "Renamed", u.Name)
	require.Equal(t, "inactive", u.Status)
	require.JSONEq(t, `{"k":1}`, string(u.Metadata))
	require.Equal(t, []byte("resealed"), u.Credentials)
	require.True(t, u.UpdatedAt.After(a.UpdatedAt) || u.UpdatedAt.Equal(a.UpdatedAt))
	u, err = store.UpdateCarrierAccount(ctx, s.Pool, org, a.ID, store.CarrierAccountPatch{})
	require.NoError(t, err)
	require.Equal(t, "Renamed", u.Name)
	require.Equal(t, []byte("resealed"), u.Credentials)
	_, err = store.UpdateCarrierAccount(ctx, s.Pool, other, a.ID, store.CarrierAccountPatch{Name: &name})
	require.ErrorIs(t, err, store.ErrNotFound)

	// Test results.
	msg := "refused"
	u, err = store.RecordCarrierAccountTest(ctx, s.Pool, org, a.ID, &msg)
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountError, u.Status)
	require.Equal(t, "refused", *u.LastError)
	u, err = store.RecordCarrierAccountTest(ctx, s.Pool, org, a.ID, nil)
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountActive, u.Status)
	require.Nil(t, u.LastError)

	// Delete leaves the account's shipments, without the account.
	shipID := uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service) VALUES ($1, $2, $3, 'carrier_c', 'ground')`, shipID, org, a.ID)
	require.NoError(t, err)
	_, err = store.DeleteCarrierAccount(ctx, s.Pool, other, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	del, err := store.DeleteCarrierAccount(ctx, s.Pool, org, a.ID)
	require.NoError(t, err)
	require.Equal(t, a.ID, del.ID)
	var acctID *uuid.UUID
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT carrier_account_id FROM shipments WHERE id = $1`, shipID).Scan(&acctID))
	require.Nil(t, acctID)
	_, err = store.DeleteCarrierAccount(ctx, s.Pool, org, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestUpsertRegistrationAccount(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	other := bridgeTestOrg(t, s)
	digest := store.CarrierAccountNumberDigest(digestTestBox, " 451134221 ")
	require.Equal(t, store.CarrierAccountNumberDigest(digestTestBox, "451134221"), digest)

	acct := carrierTestAccount(org, "carrier_a", "George")
	acct.AccountNumberDigest = digest
	first, err := store.UpsertRegistrationAccount(ctx, s.Pool, acct, false)
	require.NoError(t, err)
	require.True(t, first.Created)
	require.Equal(t, store.CarrierAccountPending, first.Account.Status)

	// The same number again: the same account, renamed only when asked.
	again := carrierTestAccount(org, "carrier_a", "Other name")
	again.AccountNumberDigest = digest
	second, err := store.UpsertRegistrationAccount(ctx, s.Pool, again, false)
	require.NoError(t, err)
	require.False(t, second.Created)
	require.Equal(t, first.Account.ID, second.Account.ID)
	require.Equal(t, "George", second.Account.Name)
	third, err := store.UpsertRegistrationAccount(ctx, s.Pool, again, true)
	require.NoError(t, err)
	require.Equal(t, first.Account.ID, third.Account.ID)
	require.Equal(t, "Other name", third.Account.Name)

	// Another organization has its own.
	theirs := carrierTestAccount(other, "carrier_a", "George")
	theirs.AccountNumberDigest = digest
	r, err := store.UpsertRegistrationAccount(ctx, s.Pool, theirs, false)
	require.NoError(t, err)
	require.True(t, r.Created)

	// A duplicate number through an update is a conflict.
	b := carrierTestAccount(org, "carrier_a", "Second")
	b.AccountNumberDigest = store.CarrierAccountNumberDigest(digestTestBox, "451134222")
	b, err = store.CreateCarrierAccount(ctx, s.Pool, b)
	require.NoError(t, err)
	_, err = store.UpdateCarrierAccount(ctx, s.Pool, org, b.ID, store.CarrierAccountPatch{AccountNumberDigest: digest})
	require.ErrorIs(t, err, store.ErrConflict)

	// Concurrent registrations of a new number end on one row.
	num := store.CarrierAccountNumberDigest(digestTestBox, "451134299")
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, 8)
	created := make([]bool, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			a := carrierTestAccount(org, "carrier_a", "Race")
			a.AccountNumberDigest = num
			r, err := store.UpsertRegistrationAccount(context.Background(), s.Pool, a, false)
			ids[i], created[i], errs[i] = r.Account.ID, r.Created, err
		})
	}
	wg.Wait()
	n := 0
	for i := range ids {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], ids[i])
		if created[i] {
			n++
		}
	}
	require.Equal(t, 1, n)
}

func TestCarrierRegistrationState(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	acct := carrierTestAccount(org, "carrier_a", "George")
	acct.AccountNumberDigest = store.CarrierAccountNumberDigest(digestTestBox, "451134221")
	acct.Status = store.CarrierAccountError
	acct, err := store.CreateCarrierAccount(ctx, s.Pool, acct)
	require.NoError(t, err)

	// Saving a session makes the account pending and replaces an older one.
	require.NoError(t, store.SaveCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-1", []byte("s1"), true))
	require.NoError(t, store.SaveCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-1", []byte("s2"), true))
	got, err := store.CarrierAccountByID(ctx, s.Pool, org, acct.ID)
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountPending, got.Status)
	require.True(t, got.IsTest)
	st, err := store.CarrierRegistrationState(ctx, s.Pool, org, acct.ID, "run-1")
	require.NoError(t, err)
	require.Equal(t, []byte("s2"), st)
	_, err = store.CarrierRegistrationState(ctx, s.Pool, org, acct.ID, "run-2")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, store.SaveCarrierRegistration(ctx, s.Pool, org, uuid.New(), "run-1", []byte("x"), false), store.ErrNotFound)

	// A test credentials call leaves a pending account alone.
	_, err = store.RecordCarrierAccountTest(ctx, s.Pool, org, acct.ID, nil)
	require.ErrorIs(t, err, store.ErrConflict)

	// Completion stores the keys and drops the session.
	done, err := store.CompleteCarrierRegistration(ctx, s.Pool, org, acct.ID, []byte("keys"), false)
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountActive, done.Status)
	require.Equal(t, []byte("keys"), done.Credentials)
	require.False(t, done.IsTest)
	_, err = store.CarrierRegistrationState(ctx, s.Pool, org, acct.ID, "run-1")
	require.ErrorIs(t, err, store.ErrNotFound)

	// Ending leaves an account that is no longer pending alone.
	changed, err := store.EndCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-1", "registration expired")
	require.NoError(t, err)
	require.False(t, changed)
	require.NoError(t, store.SaveCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-3", []byte("s3"), false))
	changed, err = store.EndCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-3", "registration expired")
	require.NoError(t, err)
	require.True(t, changed)
	got, err = store.CarrierAccountByID(ctx, s.Pool, org, acct.ID)
	require.NoError(t, err)
	require.Equal(t, store.CarrierAccountError, got.Status)
	require.Equal(t, "registration expired", *got.LastError)

	// Only a pending account is deleted as unregistered.
	deleted, err := store.DeletePendingCarrierAccount(ctx, s.Pool, org, acct.ID)
	require.NoError(t, err)
	require.False(t, deleted)
	require.NoError(t, store.SaveCarrierRegistration(ctx, s.Pool, org, acct.ID, "run-4", []byte("s4"), false))
	deleted, err = store.DeletePendingCarrierAccount(ctx, s.Pool, org, acct.ID)
	require.NoError(t, err)
	require.True(t, deleted)
	var n int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM carrier_registrations WHERE carrier_account_id = $1`, acct.ID).Scan(&n))
	require.Zero(t, n)
}
