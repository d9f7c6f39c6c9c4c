package carriers_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

func regReq(account string, isTest bool) carriers.RegistrationRequest {
	return carriers.RegistrationRequest{
		AccountNumber: account, CustomerName: "George",
		Address: carriers.RegistrationAddress{StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE",
			StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US", Residential: true},
		IsTest: isTest,
	}
}

func registrar(t *testing.T, sb *sandbox) carriers.Registrar {
	t.Helper()
	r, err := sb.registry().Registrar("carrier_a")
	require.NoError(t, err)
	return r
}

func TestRegistrationPINPath(t *testing.T) {
	sb := newSandbox(t)
	r := registrar(t, sb)
	ctx := context.Background()

	res, err := r.RegisterAddress(ctx, regReq("451134221", false))
	require.NoError(t, err)
	assert.True(t, res.MFARequired)
	assert.False(t, res.TestModeBypass)
	assert.Nil(t, res.Credentials)
	assert.True(t, res.Options.Invoice)
	assert.Equal(t, []string{"SMS", "CALL", "EMAIL"}, res.Options.SecureCode)
	assert.Regexp(t, `^[A-Z]{2}\*\*\*@[A-Z]\*\*\*\.COM$`, res.Options.Email)
	assert.Equal(t, "***-***-4221", res.Options.Phone)
	assert.NotEmpty(t, res.State.AccountAuthToken)
	assert.Equal(t, "451134221", res.State.AccountNumber)

	// The state survives a JSON round trip (a workflow keeps it).
	raw, err := json.Marshal(res.State)
	require.NoError(t, err)
	var st carriers.RegistrationState
	require.NoError(t, json.Unmarshal(raw, &st))

	msg, err := r.RequestPIN(ctx, st, "sms")
	require.NoError(t, err)
	assert.Equal(t, "sent secured Pin", msg)
	_, err = r.RequestPIN(ctx, st, "PIGEON")
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	_, err = r.VerifyPIN(ctx, st, "000000")
	require.Error(t, err)
	assert.ErrorIs(t, err, carriers.ErrVerificationFailed)
	ce, _ := carriers.AsError(err)
	assert.Equal(t, "PIN.OPTION.INVALIDEXPIRED", ce.Code)
	assert.False(t, ce.Retryable)

	creds, err := r.VerifyPIN(ctx, st, "123456")
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f-]{36}$`, creds.ChildKey)
	assert.Len(t, creds.ChildSecret, 25)

	// The issued keys work for account calls.
	acct := carriers.Account{ID: "new", Carrier: "carrier_a", Credentials: creds.AccountCredentials("451134221")}
	c := get(t, sb.registry(), "carrier_a")
	assert.Empty(t, c.ValidateCredentials(acct.Credentials))
	require.NoError(t, c.TestCredentials(ctx, acct))
}

func TestRegistrationInvoicePath(t *testing.T) {
	r := registrar(t, newSandbox(t))
	ctx := context.Background()
	res, err := r.RegisterAddress(ctx, regReq("451134221", false))
	require.NoError(t, err)

	_, err = r.VerifyInvoice(ctx, res.State, carriers.Invoice{Number: "0", Date: "2026-10-09", Amount: 2323.2})
	assert.ErrorIs(t, err, carriers.ErrVerificationFailed)
	ce, _ := carriers.AsError(err)
	assert.Equal(t, 404, ce.StatusCode)
	assert.Equal(t, "INVOICEDETAILS.NUMBER.NOTEXIST", ce.Code)

	_, err = r.VerifyInvoice(ctx, res.State, carriers.Invoice{Number: "293235673", Date: "10/09/2026", Amount: 1})
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	creds, err := r.VerifyInvoice(ctx, res.State, carriers.Invoice{Number: "293235673", Date: "2026-10-09", Amount: 2323.2})
	require.NoError(t, err)
	assert.NotEmpty(t, creds.ChildKey)
	assert.NotEmpty(t, creds.ChildSecret)
}

func TestRegistrationFailures(t *testing.T) {
	r := registrar(t, newSandbox(t))
	ctx := context.Background()

	_, err := r.RegisterAddress(ctx, regReq("012345678", false))
	require.Error(t, err)
	assert.ErrorIs(t, err, carriers.ErrAccountNotFound)
	ce, _ := carriers.AsError(err)
	assert.Equal(t, "ACCOUNT.NUMBER.NOTFOUND", ce.Code)

	_, err = r.RegisterAddress(ctx, regReq("12345", false))
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest, "not 9 digits: refused locally")
	bad := regReq("451134221", false)
	bad.Address.StreetLines = nil
	_, err = r.RegisterAddress(ctx, bad)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	// No state, or a forged one.
	_, err = r.VerifyPIN(ctx, carriers.RegistrationState{AccountNumber: "451134221"}, "123456")
	assert.ErrorIs(t, err, carriers.ErrSessionExpired)
	_, err = r.VerifyPIN(ctx, carriers.RegistrationState{AccountNumber: "451134221", AccountAuthToken: "a.b.c"}, "123456")
	assert.ErrorIs(t, err, carriers.ErrSessionExpired)
}

func TestRegistrationTestModeBypass(t *testing.T) {
	sb := newSandbox(t)
	r := registrar(t, sb)
	res, err := r.RegisterAddress(context.Background(), regReq("451134221", true))
	require.NoError(t, err)
	assert.False(t, res.MFARequired)
	assert.True(t, res.TestModeBypass)
	require.NotNil(t, res.Credentials)
	assert.NotEmpty(t, res.Credentials.ChildKey)

	acct := carriers.Account{ID: "t", Carrier: "carrier_a", IsTest: true, Credentials: res.Credentials.AccountCredentials("451134221")}
	require.NoError(t, get(t, sb.registry(), "carrier_a").TestCredentials(context.Background(), acct))

	// Unknown accounts are unknown in the test environment too.
	_, err = r.RegisterAddress(context.Background(), regReq("000000001", true))
	assert.ErrorIs(t, err, carriers.ErrAccountNotFound)
}
