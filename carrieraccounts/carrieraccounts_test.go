package carrieraccounts_test

import (
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carrieraccounts"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

func org(t *testing.T, s *store.Store) uuid.UUID {
	t.Helper()
	u, err := store.CreateUser(t.Context(), s.Pool, store.User{ID: uuid.New(), Email: "c" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "C"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(t.Context(), s, "Carriers "+u.Email, u.ID)
	require.NoError(t, err)
	return o.ID
}

func ptr(s string) *string { return &s }

// The agent manages carrier accounts as the API does: credentials checked
// against the carrier's schema and never shown, masked values ignored on
// update, another organization's account not found, a read-only caller
// refused, and a carrier_a registration without workflows unavailable
// (leaving no pending account behind).
func TestCarrierAccountsAsAgent(t *testing.T) {
	s := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	svc := carrieraccounts.New(carrieraccounts.Deps{Store: s, Secrets: box, Carriers: carriers.NewRegistry(carriers.Config{Sandbox: true})})
	ctx := t.Context()
	orgID := org(t, s)
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: orgID, Scoped: true,
		Scopes: []string{carrieraccounts.ScopeRead, carrieraccounts.ScopeWrite}}

	_, err = svc.Create(ctx, agent, carrieraccounts.CreateInput{Name: ptr("X"), Carrier: ptr(carriers.CarrierC), Credentials: map[string]any{"apiKey": carrieraccounts.CredentialMask}})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "credentials.apiKey", de.Fields[0].Field)
	_, err = svc.Create(ctx, agent, carrieraccounts.CreateInput{Name: ptr("FX"), Carrier: ptr(carriers.CarrierA), Credentials: map[string]any{}})
	require.ErrorAs(t, err, &de)
	require.Contains(t, de.Message, "carrier_a/register")

	a, err := svc.Create(ctx, agent, carrieraccounts.CreateInput{Name: ptr(" Main "), Carrier: ptr(carriers.CarrierC), Credentials: map[string]any{"apiKey": "k1"}})
	require.NoError(t, err)
	require.Equal(t, "Main", a.Name)
	require.Equal(t, carrieraccounts.StatusActive, a.Status)
	require.Equal(t, []string{"apiKey"}, svc.CredentialKeys(ctx, a))

	// The mask sent back changes nothing; a new value replaces the key.
	a, err = svc.Update(ctx, agent, a.ID, carrieraccounts.UpdateInput{Credentials: map[string]any{"apiKey": carrieraccounts.CredentialMask}})
	require.NoError(t, err)
	acct, err := store.AdapterAccount(box, a)
	require.NoError(t, err)
	require.Equal(t, "k1", acct.Credentials["apiKey"])
	_, err = svc.Update(ctx, agent, a.ID, carrieraccounts.UpdateInput{Status: ptr("error")})
	require.ErrorIs(t, err, domain.ErrInvalid)

	reader := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: orgID, Scoped: true, Scopes: []string{carrieraccounts.ScopeRead}}
	require.ErrorIs(t, svc.Delete(ctx, reader, a.ID), domain.ErrForbidden)
	page, err := svc.List(ctx, reader, carrieraccounts.Filter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: org(t, s)}
	_, err = svc.Get(ctx, other, a.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.Test(ctx, other, a.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)

	// Registration needs its workflow: without one, nothing is left pending.
	_, err = svc.Register(ctx, agent, carrieraccounts.RegisterInput{AccountNumber: ptr("123"), CustomerName: ptr("C")})
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "accountNumber", Message: "must be a 9-digit account number"}, {Field: "address", Message: "is required"}}, de.Fields)
	_, err = svc.Register(ctx, agent, carrieraccounts.RegisterInput{AccountNumber: ptr("451134221"), CustomerName: ptr("C"),
		Address: &carrieraccounts.AddressInput{StreetLines: []string{"1 Main"}, City: ptr("Austin"), PostalCode: ptr("73301"), CountryCode: ptr("us")}})
	require.ErrorIs(t, err, domain.ErrUnavailable)
	page, err = svc.List(ctx, agent, carrieraccounts.Filter{Status: carrieraccounts.StatusPending, Limit: 10})
	require.NoError(t, err)
	require.Zero(t, page.Total)
	_, err = svc.VerifyPIN(ctx, agent, ptr(a.ID.String()), ptr("123456"))
	require.ErrorIs(t, err, domain.ErrConflict, "an account not pending registration has no PIN to verify")

	require.NoError(t, svc.Delete(ctx, agent, a.ID))
	_, err = svc.Get(ctx, agent, a.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
}
