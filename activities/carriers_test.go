package activities

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// regFixture is an organization with a pending carrier_a account on the
// sandbox carriers.
type regFixture struct {
	t      *testing.T
	st     *store.Store
	box    *secrets.Box
	acts   *CarrierAccountActivities
	orgID  uuid.UUID
	acctID uuid.UUID
	runID  string
}

func newRegFixture(t *testing.T, number string) *regFixture {
	t.Helper()
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	return newRegFixtureAt(t, number, sb.URL)
}

func newRegFixtureAt(t *testing.T, number, sandboxURL string) *regFixture {
	t.Helper()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	f := &regFixture{
		t: t, st: st, box: box,
		acts:   &CarrierAccountActivities{Store: st, Secrets: box, Carriers: carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sandboxURL})},
		orgID:  uuid.New(),
		acctID: uuid.New(),
		runID:  "run-" + uuid.NewString()[:8],
	}
	ctx := context.Background()
	_, err = st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, f.orgID, "acme-"+f.orgID.String())
	require.NoError(t, err)
	sealed, err := box.SealJSON(map[string]any{"accountNumber": number}, store.CarrierAccountCredentialsAD(f.orgID, f.acctID))
	require.NoError(t, err)
	_, err = store.CreateCarrierAccount(ctx, st.Pool, store.CarrierAccount{
		ID: f.acctID, OrganizationID: f.orgID, Name: "George", Carrier: carriers.CarrierA, Credentials: sealed,
		AccountNumberDigest: store.CarrierAccountNumberDigest(box, number), Status: store.CarrierAccountPending,
		SupportsRating: true, SupportsLabels: true, SupportsPickup: true,
	})
	require.NoError(t, err)
	return f
}

func (f *regFixture) registerInput(isTest bool) RegisterCarrierAccountInput {
	return RegisterCarrierAccountInput{
		OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), CustomerName: "George",
		Address: carriers.RegistrationAddress{StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE",
			StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US"},
		IsTest: isTest, RunID: f.runID,
	}
}

func (f *regFixture) account() store.CarrierAccount {
	f.t.Helper()
	a, err := store.CarrierAccountByID(context.Background(), f.st.Pool, f.orgID, f.acctID)
	require.NoError(f.t, err)
	return a
}

func (f *regFixture) credentials() map[string]any {
	f.t.Helper()
	creds, err := f.box.OpenJSON(f.account().Credentials, store.CarrierAccountCredentialsAD(f.orgID, f.acctID))
	require.NoError(f.t, err)
	return creds
}

func requireAppErr(t *testing.T, err error, typ string, nonRetryable bool) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, typ, appErr.Type(), "%v", err)
	require.Equal(t, nonRetryable, appErr.NonRetryable(), "%v", err)
	return appErr
}

func TestCarrierRegistrationActivitiesPINPath(t *testing.T) {
	f := newRegFixture(t, "451134221")
	ctx := context.Background()

	res, err := f.acts.RegisterCarrierAccount(ctx, f.registerInput(false))
	require.NoError(t, err)
	require.False(t, res.Active)
	require.True(t, res.MFARequired)
	require.True(t, res.Options.Invoice)
	require.Equal(t, []string{"SMS", "CALL", "EMAIL"}, res.Options.SecureCode)
	require.Regexp(t, `^[A-Z]{2}\*\*\*@[A-Z]\*\*\*\.COM$`, res.Options.Email)
	require.Equal(t, "***-***-4221", res.Options.Phone)
	require.Equal(t, store.CarrierAccountPending, f.account().Status)

	// The session is stored sealed: no token in clear.
	sealed, err := store.CarrierRegistrationState(ctx, f.st.Pool, f.orgID, f.acctID, f.runID)
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, []byte("accountAuthToken")))
	require.False(t, bytes.Contains(sealed, []byte("451134221")))
	// Another run cannot use it.
	_, err = f.acts.RequestCarrierPIN(ctx, RequestCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), Option: "SMS", RunID: "other-run"})
	requireAppErr(t, err, ErrTypeRegistrationSessionExpired, true)

	pin, err := f.acts.RequestCarrierPIN(ctx, RequestCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), Option: "SMS", RunID: f.runID})
	require.NoError(t, err)
	require.Equal(t, "sent secured Pin", pin.Message)
	_, err = f.acts.RequestCarrierPIN(ctx, RequestCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), Option: "PIGEON", RunID: f.runID})
	requireAppErr(t, err, ErrTypeRegistrationRefused, true)

	wrong, err := f.acts.VerifyCarrierPIN(ctx, VerifyCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), PIN: sandboxapi.WrongPIN, RunID: f.runID})
	require.NoError(t, err)
	require.False(t, wrong.Verified)
	require.Contains(t, wrong.Error, "invalid or expired")
	require.Equal(t, store.CarrierAccountPending, f.account().Status)

	right, err := f.acts.VerifyCarrierPIN(ctx, VerifyCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), PIN: "123456", RunID: f.runID})
	require.NoError(t, err)
	require.True(t, right.Verified)
	a := f.account()
	require.Equal(t, store.CarrierAccountActive, a.Status)
	require.Nil(t, a.LastError)
	creds := f.credentials()
	require.Equal(t, "451134221", creds["accountNumber"])
	require.NotEmpty(t, creds["childKey"])
	require.NotEmpty(t, creds["childSecret"])
	_, err = store.CarrierRegistrationState(ctx, f.st.Pool, f.orgID, f.acctID, f.runID)
	require.ErrorIs(t, err, store.ErrNotFound)

	// The stored keys work.
	c, err := f.acts.Carriers.Get(carriers.CarrierA)
	require.NoError(t, err)
	acct, err := store.AdapterAccount(f.box, a)
	require.NoError(t, err)
	require.NoError(t, c.TestCredentials(ctx, acct))

	// A retried verification (the first attempt's answer was lost) is
	// answered from the account without calling the carrier again.
	again, err := f.acts.VerifyCarrierPIN(ctx, VerifyCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), PIN: "123456", RunID: f.runID})
	require.NoError(t, err)
	require.True(t, again.Verified)
}

func TestCarrierRegistrationActivitiesInvoicePath(t *testing.T) {
	f := newRegFixture(t, "451134222")
	ctx := context.Background()
	_, err := f.acts.RegisterCarrierAccount(ctx, f.registerInput(false))
	require.NoError(t, err)

	bad, err := f.acts.VerifyCarrierInvoice(ctx, VerifyCarrierInvoiceInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), RunID: f.runID,
		Invoice: carriers.Invoice{Number: sandboxapi.WrongInvoiceNumber, Date: "2026-01-09", Amount: 10, Currency: "USD"}})
	require.NoError(t, err)
	require.False(t, bad.Verified)
	require.Contains(t, bad.Error, "Invoice does not exist")

	good, err := f.acts.VerifyCarrierInvoice(ctx, VerifyCarrierInvoiceInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), RunID: f.runID,
		Invoice: carriers.Invoice{Number: "293235673", Date: "2026-01-09", Amount: 2323.2, Currency: "USD"}})
	require.NoError(t, err)
	require.True(t, good.Verified)
	require.Equal(t, store.CarrierAccountActive, f.account().Status)
	require.NotEmpty(t, f.credentials()["childSecret"])
}

func TestCarrierRegistrationActivitiesTestModeBypass(t *testing.T) {
	f := newRegFixture(t, "451134223")
	res, err := f.acts.RegisterCarrierAccount(context.Background(), f.registerInput(true))
	require.NoError(t, err)
	require.True(t, res.Active)
	require.True(t, res.TestModeBypass)
	require.False(t, res.MFARequired)
	a := f.account()
	require.Equal(t, store.CarrierAccountActive, a.Status)
	require.True(t, a.IsTest)
	require.NotEmpty(t, f.credentials()["childKey"])
}

func TestCarrierRegistrationActivitiesFailures(t *testing.T) {
	ctx := context.Background()

	// An account number the carrier does not know.
	f := newRegFixture(t, "012345678")
	_, err := f.acts.RegisterCarrierAccount(ctx, f.registerInput(false))
	appErr := requireAppErr(t, err, ErrTypeRegistrationAccountNotFound, true)
	require.Contains(t, appErr.Message(), "Account Number not in database")
	require.Equal(t, store.CarrierAccountPending, f.account().Status, "the workflow decides what happens to the account")

	// A step without a registration session.
	_, err = f.acts.VerifyCarrierPIN(ctx, VerifyCarrierPINInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), PIN: "123456", RunID: f.runID})
	requireAppErr(t, err, ErrTypeRegistrationSessionExpired, true)

	// An account that is gone, or not carrier_a.
	_, err = f.acts.RegisterCarrierAccount(ctx, RegisterCarrierAccountInput{OrganizationID: f.orgID.String(), AccountID: uuid.NewString(), CustomerName: "X", RunID: "r"})
	requireAppErr(t, err, ErrTypeRegistrationAccountGone, true)
	_, err = f.acts.RegisterCarrierAccount(ctx, RegisterCarrierAccountInput{OrganizationID: "nope", AccountID: uuid.NewString(), RunID: "r"})
	requireAppErr(t, err, ErrTypeInvalidInput, true)

	// The carrier cannot be reached: retryable.
	down := httptest.NewServer(sandboxapi.NewHandler())
	down.Close()
	g := newRegFixtureAt(t, "451134224", down.URL)
	_, err = g.acts.RegisterCarrierAccount(ctx, g.registerInput(false))
	requireAppErr(t, err, ErrTypeRegistrationCarrierUnavailable, false)
}

func TestEndCarrierRegistration(t *testing.T) {
	ctx := context.Background()
	f := newRegFixture(t, "451134225")
	_, err := f.acts.RegisterCarrierAccount(ctx, f.registerInput(false))
	require.NoError(t, err)

	// Expiry: the pending account becomes error, the session is dropped.
	res, err := f.acts.EndCarrierRegistration(ctx, EndCarrierRegistrationInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), Message: "registration expired", RunID: f.runID})
	require.NoError(t, err)
	require.True(t, res.Changed)
	a := f.account()
	require.Equal(t, store.CarrierAccountError, a.Status)
	require.Equal(t, "registration expired", *a.LastError)
	_, err = store.CarrierRegistrationState(ctx, f.st.Pool, f.orgID, f.acctID, f.runID)
	require.ErrorIs(t, err, store.ErrNotFound)
	// Idempotent; and deletion only takes a pending account.
	res, err = f.acts.EndCarrierRegistration(ctx, EndCarrierRegistrationInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), Message: "registration expired", RunID: f.runID})
	require.NoError(t, err)
	require.False(t, res.Changed)
	res, err = f.acts.EndCarrierRegistration(ctx, EndCarrierRegistrationInput{OrganizationID: f.orgID.String(), AccountID: f.acctID.String(), DeleteAccount: true, RunID: f.runID})
	require.NoError(t, err)
	require.False(t, res.Changed)

	// A refused new account is deleted.
	g := newRegFixture(t, "012345679")
	res, err = g.acts.EndCarrierRegistration(ctx, EndCarrierRegistrationInput{OrganizationID: g.orgID.String(), AccountID: g.acctID.String(), DeleteAccount: true, RunID: g.runID})
	require.NoError(t, err)
	require.True(t, res.Changed)
	_, err = store.CarrierAccountByID(ctx, g.st.Pool, g.orgID, g.acctID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestMaskContact(t *testing.T) {
	require.Equal(t, "PU***@S***.COM", MaskEmail("PU***@S***.COM"))
	require.Equal(t, "PA***@E***.COM", MaskEmail("pat@example.com"))
	require.Equal(t, "", MaskEmail(""))
	require.Equal(t, "***-***-4222", MaskPhone("+1 (901) 555-4222"))
	require.Equal(t, "***-***-4222", MaskPhone("***-***-4222"))
	require.Equal(t, "***", MaskPhone("12"))
}
