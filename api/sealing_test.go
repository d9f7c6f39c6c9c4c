package api

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
)

// sealAccountCreds seals carrier account credentials for the account's row,
// as the API stores them.
func sealAccountCreds(t testing.TB, e *testEnv, orgID, accountID string, creds map[string]any) []byte {
	t.Helper()
	sealed, err := e.deps.Secrets.SealJSON(creds, store.CarrierAccountCredentialsAD(uuid.MustParse(orgID), uuid.MustParse(accountID)))
	require.NoError(t, err)
	return sealed
}

// accountNumberDigest is the stored digest of a carrier account number.
func accountNumberDigest(e *testEnv, number string) []byte {
	return store.CarrierAccountNumberDigest(e.deps.Secrets, number)
}

// Another tenant's sealed credentials copied into one's own account do not
// open: the account's credentials render empty and a test reports them
// unreadable, never the other tenant's secret.
func TestCopiedCiphertextDoesNotOpen(t *testing.T) {
	e := rateTestEnv(t, nil)
	victim, thief := e.signup(), e.signup()
	v := e.do(victim.caller, "POST", "/api/v1/carrier-accounts", map[string]any{"name": "V", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "victim-secret-key"}})
	require.Equal(t, 201, v.Code, "%s", v.Raw)
	th := e.do(thief.caller, "POST", "/api/v1/carrier-accounts", map[string]any{"name": "T", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "thief-key"}})
	require.Equal(t, 201, th.Code, "%s", th.Raw)
	_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE carrier_accounts SET credentials = (SELECT credentials FROM carrier_accounts WHERE id = $1) WHERE id = $2`,
		v.data()["id"], th.data()["id"])
	require.NoError(t, err)

	path := "/api/v1/carrier-accounts/" + th.data()["id"].(string)
	got := e.do(thief.caller, "GET", path, nil)
	require.Equal(t, 200, got.Code, "%s", got.Raw)
	require.Equal(t, map[string]any{}, got.data()["credentials"])
	res := e.do(thief.caller, "POST", path+"/test", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, false, res.Body["valid"])
	require.NotContains(t, string(res.Raw), "victim-secret-key")
}
