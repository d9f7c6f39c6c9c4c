package store_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// digestTestBox keys the account-number digests of the store tests.
var digestTestBox = func() *secrets.Box {
	b, err := secrets.NewBox(secrets.NewKey())
	if err != nil {
		panic(err)
	}
	return b
}()

// The digest is keyed: a bare SHA-256 of the 9 digits is not it, and a
// different key gives a different digest.
func TestCarrierAccountNumberDigestIsKeyed(t *testing.T) {
	d := store.CarrierAccountNumberDigest(digestTestBox, "451134221")
	require.Len(t, d, 32)
	other, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	require.NotEqual(t, d, store.CarrierAccountNumberDigest(other, "451134221"))
	s := storetest.New(t)
	var plain []byte
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT sha256('451134221')`).Scan(&plain))
	require.NotEqual(t, plain, d)
}

// legacySeal seals as the service did before associated data (secrets
// format 0): nonce || AES-GCM(plaintext), with the same key.
func legacySeal(t *testing.T, key string, plaintext []byte) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err)
	block, err := aes.NewCipher(raw)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, plaintext, nil)
}

// Rows written before this change (unbound ciphertexts, bare SHA-256
// digests) are re-sealed and re-hashed by UpgradeSecrets, still open, and
// a second run changes nothing. A ciphertext copied to another tenant's
// row does not open there.
func TestUpgradeSecrets(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	key := secrets.NewKey()
	box, err := secrets.NewBox(key)
	require.NoError(t, err)
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)

	// Old-format rows, as the previous release wrote them.
	acctID, bridgeID := uuid.New(), uuid.New()
	creds, _ := json.Marshal(map[string]any{"accountNumber": "451134221", "childKey": "k", "childSecret": "s"})
	_, err = s.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, account_number_digest, status)
VALUES ($1, $2, 'FX', 'carrier_a', $3, sha256('451134221'), 'pending')`, acctID, org, legacySeal(t, key, creds))
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `INSERT INTO carrier_registrations (carrier_account_id, organization_id, workflow_run_id, state)
VALUES ($1, $2, 'run-1', $3)`, acctID, org, legacySeal(t, key, []byte(`{"accountAuthToken":"tok"}`)))
	require.NoError(t, err)
	bcreds, _ := json.Marshal(map[string]any{"accessToken": "shpat_x"})
	_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config, credentials)
VALUES ($1, $2, 'storefront_a', 'Shop', '{}', $3)`, bridgeID, org, legacySeal(t, key, bcreds))
	require.NoError(t, err)
	// A row sealed under another key is left alone and reported.
	stranger, _ := secrets.NewBox(secrets.NewKey())
	strangerID := uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config, credentials)
VALUES ($1, $2, 'storefront_a', 'Other key', '{}', $3)`, strangerID, org, stranger.Seal(bcreds, store.BridgeCredentialsAD(org, strangerID)))
	require.NoError(t, err)

	// Before the upgrade, Open refuses the unbound values.
	acct, err := store.CarrierAccountByID(ctx, s.Pool, org, acctID)
	require.NoError(t, err)
	_, err = store.AdapterAccount(box, acct)
	require.ErrorIs(t, err, secrets.ErrOpen)

	// (The package's other tests share the database: their rows, sealed
	// under other keys, count as unreadable.)
	rep, err := store.UpgradeSecrets(ctx, s, box, nil)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Resealed)
	require.Equal(t, 1, rep.Rehashed)
	require.GreaterOrEqual(t, rep.Unreadable, 1)
	unreadable := rep.Unreadable

	acct, err = store.CarrierAccountByID(ctx, s.Pool, org, acctID)
	require.NoError(t, err)
	a, err := store.AdapterAccount(box, acct)
	require.NoError(t, err)
	require.Equal(t, "451134221", a.Credentials["accountNumber"])
	require.Equal(t, store.CarrierAccountNumberDigest(box, "451134221"), acct.AccountNumberDigest)
	// The registration finds the account by its new digest.
	ra, err := store.UpsertRegistrationAccount(ctx, s.Pool, store.CarrierAccount{ID: uuid.New(), OrganizationID: org, Name: "FX", Carrier: "carrier_a",
		Credentials: []byte("x"), AccountNumberDigest: store.CarrierAccountNumberDigest(box, " 451134221 ")}, false)
	require.NoError(t, err)
	require.False(t, ra.Created)
	require.Equal(t, acctID, ra.Account.ID)

	state, err := store.CarrierRegistrationState(ctx, s.Pool, org, acctID, "run-1")
	require.NoError(t, err)
	raw, err := box.Open(state, store.CarrierRegistrationStateAD(org, acctID))
	require.NoError(t, err)
	require.JSONEq(t, `{"accountAuthToken":"tok"}`, string(raw))
	b, err := store.BridgeByID(ctx, s.Pool, org, bridgeID)
	require.NoError(t, err)
	full, err := store.BridgeFullConfig(box, b)
	require.NoError(t, err)
	require.Equal(t, "shpat_x", full["accessToken"])

	// Idempotent.
	rep, err = store.UpgradeSecrets(ctx, s, box, nil)
	require.NoError(t, err)
	require.Equal(t, store.SecretsUpgrade{Unreadable: unreadable}, rep)

	// The account's ciphertext copied into another tenant's account.
	copied := uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, status)
SELECT $1, $2, 'Stolen', carrier, credentials, 'active' FROM carrier_accounts WHERE id = $3`, copied, other, acctID)
	require.NoError(t, err)
	stolen, err := store.CarrierAccountByID(ctx, s.Pool, other, copied)
	require.NoError(t, err)
	_, err = store.AdapterAccount(box, stolen)
	require.ErrorIs(t, err, secrets.ErrOpen)
	// ... and the upgrade does not "repair" it (it is not an old value).
	rep, err = store.UpgradeSecrets(context.Background(), s, box, nil)
	require.NoError(t, err)
	require.Equal(t, store.SecretsUpgrade{Unreadable: unreadable + 1}, rep)
}
