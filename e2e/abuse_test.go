package e2e

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/workflows"
)

// Wrong PINs are counted by the CarrierRegistration workflow, not by an
// API process: guesses spread over two API instances still meet the cap,
// the registration fails and the account is set to error.
func TestCarrierRegistrationWrongPINCapAcrossInstances(t *testing.T) {
	s := startWithCarriers(t)
	// A second API instance over the same database and Temporal.
	second := httptest.NewServer(api.NewRouter(api.Deps{
		Store: s.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tokens:    auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost}, Secrets: s.box, Carriers: s.reg,
		Temporal: s.temporal, TaskQueue: taskQueue, BaseURL: "http://fos.test",
	}))
	t.Cleanup(second.Close)
	first := s.api
	on := func(srv *httptest.Server) { s.api = srv }
	defer on(first)

	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "pin-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "L", "organization_name": "PIN cap",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"carrier-accounts:read", "carrier-accounts:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	reg := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/register", regBody("451134225", false))
	acctID := reg["accountId"].(string)
	verify := map[string]any{"accountId": acctID, "pin": sandboxapi.WrongPIN}
	for i := range workflows.DefaultMaxWrongPINs - 1 {
		on([]*httptest.Server{first, second}[i%2])
		res := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", verify)
		require.Equal(t, false, res["verified"])
		require.NotEqual(t, workflows.TooManyWrongPINsMessage, res["error"])
	}
	on(second)
	res := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", verify)
	require.Equal(t, map[string]any{"verified": false, "error": workflows.TooManyWrongPINsMessage}, res)

	acct := data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+acctID, nil))
	require.Equal(t, "error", acct["status"])
	require.Equal(t, workflows.TooManyWrongPINsMessage, acct["lastError"])
	// No more guesses, with the right PIN either, on either instance.
	for _, srv := range []*httptest.Server{first, second} {
		on(srv)
		code, out := s.call(key, "", "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", map[string]any{"accountId": acctID, "pin": "123456"})
		require.Equal(t, 409, code, "%v", out)
	}
}
