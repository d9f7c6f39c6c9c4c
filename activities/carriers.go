package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Error types (temporal.ApplicationError.Type) of the carrier_a
// registration activities. All but ErrTypeRegistrationCarrierUnavailable
// are permanent (non-retryable).
const (
	// ErrTypeRegistrationAccountNotFound: the carrier does not know the
	// account number.
	ErrTypeRegistrationAccountNotFound = "RegistrationAccountNotFound"
	// ErrTypeRegistrationAddressInvalid: the address does not match the
	// carrier's records for the account.
	ErrTypeRegistrationAddressInvalid = "RegistrationAddressInvalid"
	// ErrTypeRegistrationRefused: the carrier refused the request as
	// invalid.
	ErrTypeRegistrationRefused = "RegistrationRefused"
	// ErrTypeRegistrationSessionExpired: the carrier's registration session
	// expired or is missing; the account must be registered again.
	ErrTypeRegistrationSessionExpired = "RegistrationSessionExpired"
	// ErrTypeRegistrationCarrierUnavailable: the carrier could not be used:
	// a failure worth retrying (network, timeout, 429, 5xx), or, not
	// retried, the service's own carrier_a API credentials refused or
	// missing.
	ErrTypeRegistrationCarrierUnavailable = "RegistrationCarrierUnavailable"
	// ErrTypeRegistrationAccountGone: the carrier account was deleted, is
	// not a carrier_a account, or its credentials cannot be opened.
	ErrTypeRegistrationAccountGone = "RegistrationAccountGone"
)

// PermanentRegistrationErrorTypes are the non-retryable error types of the
// registration activities, for retry policies.
var PermanentRegistrationErrorTypes = []string{
	ErrTypeRegistrationAccountNotFound, ErrTypeRegistrationAddressInvalid, ErrTypeRegistrationRefused,
	ErrTypeRegistrationSessionExpired, ErrTypeRegistrationAccountGone, ErrTypeInvalidInput,
}

// CarrierAccountActivities are the activities of carrier_a account
// registration (the CarrierRegistration workflow). The carrier's
// registration session (a bearer token) and the issued child credentials
// never leave them: the session is kept sealed in carrier_registrations and
// the credentials sealed on the account, so neither enters workflow
// history. Inputs and results carry only ids, the masked MFA options and
// outcomes.
type CarrierAccountActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
}

// RegisterCarrierAccountInput is the input of RegisterCarrierAccount. The
// account number is read from the account's sealed credentials.
type RegisterCarrierAccountInput struct {
	OrganizationID string                       `json:"organizationId"`
	AccountID      string                       `json:"accountId"`
	CustomerName   string                       `json:"customerName"`
	Address        carriers.RegistrationAddress `json:"address"`
	IsTest         bool                         `json:"isTest"`
	// RunID is the workflow run that owns the registration session (the
	// activity's own run when empty).
	RunID string `json:"runId"`
}

// RegisterCarrierAccountResult is the result of RegisterCarrierAccount.
type RegisterCarrierAccountResult struct {
	// Active: the carrier issued the account's keys at once (test-mode
	// bypass); the account is active and nothing is left to verify.
	Active         bool `json:"active"`
	TestModeBypass bool `json:"testModeBypass"`
	MFARequired    bool `json:"mfaRequired"`
	// Options are the offered second factors, e-mail and phone masked.
	Options carriers.MFAOptions `json:"options"`
}

// RegisterCarrierAccount sends the account number, customer name and
// address to carrier_a. When the carrier asks for MFA the account becomes
// pending and the sealed session is stored for the run; when it issues
// keys at once (isTest) they are stored sealed and the account becomes
// active. Carrier refusals are non-retryable errors carrying the carrier's
// message.
func (a *CarrierAccountActivities) RegisterCarrierAccount(ctx context.Context, in RegisterCarrierAccountInput) (RegisterCarrierAccountResult, error) {
	orgID, acctID, err := registrationIDs(in.OrganizationID, in.AccountID)
	if err != nil {
		return RegisterCarrierAccountResult{}, err
	}
	runID, err := registrationRun(ctx, in.RunID)
	if err != nil {
		return RegisterCarrierAccountResult{}, err
	}
	acct, number, err := a.registrationAccount(ctx, orgID, acctID)
	if err != nil {
		return RegisterCarrierAccountResult{}, err
	}
	reg, err := a.registrar()
	if err != nil {
		return RegisterCarrierAccountResult{}, err
	}
	res, err := reg.RegisterAddress(ctx, carriers.RegistrationRequest{
		AccountNumber: number, CustomerName: in.CustomerName, Address: in.Address, IsTest: in.IsTest,
	})
	if err != nil {
		return RegisterCarrierAccountResult{}, registrationError(err)
	}
	if res.Credentials != nil {
		if err := a.complete(ctx, acct, number, *res.Credentials, in.IsTest); err != nil {
			return RegisterCarrierAccountResult{}, err
		}
		a.log().InfoContext(ctx, "carrier account registered without MFA", "organization_id", orgID, "carrier_account_id", acctID, "test_mode_bypass", res.TestModeBypass)
		return RegisterCarrierAccountResult{Active: true, TestModeBypass: res.TestModeBypass}, nil
	}
	raw, err := json.Marshal(res.State)
	if err != nil {
		return RegisterCarrierAccountResult{}, err
	}
	if err := store.SaveCarrierRegistration(ctx, a.Store.Pool, orgID, acctID, runID, a.Secrets.Seal(raw, store.CarrierRegistrationStateAD(orgID, acctID)), in.IsTest); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return RegisterCarrierAccountResult{}, accountGone(in.AccountID)
		}
		return RegisterCarrierAccountResult{}, fmt.Errorf("save registration of carrier account %s: %w", in.AccountID, err)
	}
	opts := res.Options
	opts.Email, opts.Phone = MaskEmail(opts.Email), MaskPhone(opts.Phone)
	if opts.SecureCode == nil {
		opts.SecureCode = []string{}
	}
	return RegisterCarrierAccountResult{MFARequired: res.MFARequired, Options: opts}, nil
}

// RequestCarrierPINInput is the input of RequestCarrierPIN.
type RequestCarrierPINInput struct {
	OrganizationID string `json:"organizationId"`
	AccountID      string `json:"accountId"`
	// Option is SMS, CALL or EMAIL.
	Option string `json:"option"`
	RunID  string `json:"runId"`
}

// RequestCarrierPINResult is the result of RequestCarrierPIN.
type RequestCarrierPINResult struct {
	// Message is the carrier's status message.
	Message string `json:"message"`
}

// RequestCarrierPIN asks carrier_a to send a one-time PIN over the chosen
// channel, with the run's sealed session.
func (a *CarrierAccountActivities) RequestCarrierPIN(ctx context.Context, in RequestCarrierPINInput) (RequestCarrierPINResult, error) {
	st, err := a.session(ctx, in.OrganizationID, in.AccountID, in.RunID)
	if err != nil {
		return RequestCarrierPINResult{}, err
	}
	reg, err := a.registrar()
	if err != nil {
		return RequestCarrierPINResult{}, err
	}
	msg, err := reg.RequestPIN(ctx, st.state, in.Option)
	if err != nil {
		return RequestCarrierPINResult{}, registrationError(err)
	}
	return RequestCarrierPINResult{Message: msg}, nil
}

// VerifyCarrierPINInput is the input of VerifyCarrierPIN.
type VerifyCarrierPINInput struct {
	OrganizationID string `json:"organizationId"`
	AccountID      string `json:"accountId"`
	PIN            string `json:"pin"`
	RunID          string `json:"runId"`
}

// VerifyCarrierInvoiceInput is the input of VerifyCarrierInvoice.
type VerifyCarrierInvoiceInput struct {
	OrganizationID string           `json:"organizationId"`
	AccountID      string           `json:"accountId"`
	Invoice        carriers.Invoice `json:"invoice"`
	RunID          string           `json:"runId"`
}

// VerifyCarrierResult is the result of VerifyCarrierPIN and
// VerifyCarrierInvoice.
type VerifyCarrierResult struct {
	// Verified: the carrier issued the keys; they are stored sealed and the
	// account is active.
	Verified bool `json:"verified"`
	// Error is the carrier's message when it refused the PIN or invoice
	// (the same session may try again).
	Error string `json:"error,omitempty"`
}

// VerifyCarrierPIN sends the PIN the account holder received. A wrong PIN
// is a result (Verified false, the carrier's message), not an error.
func (a *CarrierAccountActivities) VerifyCarrierPIN(ctx context.Context, in VerifyCarrierPINInput) (VerifyCarrierResult, error) {
	return a.verify(ctx, in.OrganizationID, in.AccountID, in.RunID, func(reg carriers.Registrar, st carriers.RegistrationState) (*carriers.ChildCredentials, error) {
		return reg.VerifyPIN(ctx, st, in.PIN)
	})
}

// VerifyCarrierInvoice sends a recent invoice of the account. An invoice
// the carrier cannot match is a result (Verified false), not an error.
func (a *CarrierAccountActivities) VerifyCarrierInvoice(ctx context.Context, in VerifyCarrierInvoiceInput) (VerifyCarrierResult, error) {
	return a.verify(ctx, in.OrganizationID, in.AccountID, in.RunID, func(reg carriers.Registrar, st carriers.RegistrationState) (*carriers.ChildCredentials, error) {
		return reg.VerifyInvoice(ctx, st, in.Invoice)
	})
}

// EndCarrierRegistrationInput is the input of EndCarrierRegistration.
type EndCarrierRegistrationInput struct {
	OrganizationID string `json:"organizationId"`
	AccountID      string `json:"accountId"`
	// DeleteAccount removes the account, when still pending: it was created
	// for this registration and the carrier never accepted it.
	DeleteAccount bool `json:"deleteAccount"`
	// Message becomes the account's last_error (status error) otherwise.
	Message string `json:"message"`
	RunID   string `json:"runId"`
}

// EndCarrierRegistrationResult is the result of EndCarrierRegistration.
type EndCarrierRegistrationResult struct {
	// Changed: the account was deleted or set to error (false when it was
	// gone or no longer pending).
	Changed bool `json:"changed"`
}

// EndCarrierRegistration closes a registration that did not complete:
// the run's session is dropped and the pending account is deleted
// (DeleteAccount) or set to error with Message.
func (a *CarrierAccountActivities) EndCarrierRegistration(ctx context.Context, in EndCarrierRegistrationInput) (EndCarrierRegistrationResult, error) {
	orgID, acctID, err := registrationIDs(in.OrganizationID, in.AccountID)
	if err != nil {
		return EndCarrierRegistrationResult{}, err
	}
	runID, err := registrationRun(ctx, in.RunID)
	if err != nil {
		return EndCarrierRegistrationResult{}, err
	}
	var changed bool
	if in.DeleteAccount {
		changed, err = store.DeletePendingCarrierAccount(ctx, a.Store.Pool, orgID, acctID)
	} else {
		changed, err = store.EndCarrierRegistration(ctx, a.Store.Pool, orgID, acctID, runID, TenantText(in.Message))
	}
	if err != nil {
		return EndCarrierRegistrationResult{}, fmt.Errorf("end registration of carrier account %s: %w", in.AccountID, err)
	}
	a.log().InfoContext(ctx, "carrier registration ended", "organization_id", orgID, "carrier_account_id", acctID,
		"deleted", in.DeleteAccount && changed, "message", in.Message)
	return EndCarrierRegistrationResult{Changed: changed}, nil
}

// ---- helpers ----

type registrationSession struct {
	acct   store.CarrierAccount
	number string
	state  carriers.RegistrationState
}

// session loads the account and the run's sealed registration session.
// A missing session (completed, expired, superseded) is
// ErrTypeRegistrationSessionExpired.
func (a *CarrierAccountActivities) session(ctx context.Context, orgIDs, acctIDs, runIDIn string) (registrationSession, error) {
	orgID, acctID, err := registrationIDs(orgIDs, acctIDs)
	if err != nil {
		return registrationSession{}, err
	}
	runID, err := registrationRun(ctx, runIDIn)
	if err != nil {
		return registrationSession{}, err
	}
	acct, number, err := a.registrationAccount(ctx, orgID, acctID)
	if err != nil {
		return registrationSession{}, err
	}
	sealed, err := store.CarrierRegistrationState(ctx, a.Store.Pool, orgID, acctID, runID)
	if errors.Is(err, store.ErrNotFound) {
		return registrationSession{acct: acct, number: number}, errNoSession
	}
	if err != nil {
		return registrationSession{}, fmt.Errorf("read registration of carrier account %s: %w", acctIDs, err)
	}
	raw, err := a.Secrets.Open(sealed, store.CarrierRegistrationStateAD(orgID, acctID))
	if err != nil {
		return registrationSession{}, temporal.NewNonRetryableApplicationError("the registration session cannot be opened (encryption key changed); register the account again", ErrTypeRegistrationSessionExpired, nil)
	}
	var st carriers.RegistrationState
	if err := json.Unmarshal(raw, &st); err != nil {
		return registrationSession{}, temporal.NewNonRetryableApplicationError("the registration session is unreadable; register the account again", ErrTypeRegistrationSessionExpired, nil)
	}
	return registrationSession{acct: acct, number: number, state: st}, nil
}

var errNoSession = temporal.NewNonRetryableApplicationError("no registration session is pending for this account; register it again", ErrTypeRegistrationSessionExpired, nil)

func (a *CarrierAccountActivities) verify(ctx context.Context, orgID, acctID, runID string,
	call func(carriers.Registrar, carriers.RegistrationState) (*carriers.ChildCredentials, error)) (VerifyCarrierResult, error) {
	sess, err := a.session(ctx, orgID, acctID, runID)
	if errors.Is(err, errNoSession) && sess.acct.Status == store.CarrierAccountActive {
		// An earlier attempt of this activity verified and stored the keys
		// (completion drops the session and activates in one statement).
		return VerifyCarrierResult{Verified: true}, nil
	}
	if err != nil {
		return VerifyCarrierResult{}, err
	}
	reg, err := a.registrar()
	if err != nil {
		return VerifyCarrierResult{}, err
	}
	creds, err := call(reg, sess.state)
	if errors.Is(err, carriers.ErrVerificationFailed) {
		return VerifyCarrierResult{Verified: false, Error: carrierMessage(err)}, nil
	}
	if err != nil {
		return VerifyCarrierResult{}, registrationError(err)
	}
	if err := a.complete(ctx, sess.acct, sess.number, *creds, sess.state.IsTest); err != nil {
		return VerifyCarrierResult{}, err
	}
	a.log().InfoContext(ctx, "carrier account verified", "organization_id", orgID, "carrier_account_id", acctID)
	return VerifyCarrierResult{Verified: true}, nil
}

// complete stores the issued keys sealed and activates the account.
func (a *CarrierAccountActivities) complete(ctx context.Context, acct store.CarrierAccount, number string, creds carriers.ChildCredentials, isTest bool) error {
	sealed, err := a.Secrets.SealJSON(creds.AccountCredentials(number), store.CarrierAccountCredentialsAD(acct.OrganizationID, acct.ID))
	if err != nil {
		return err
	}
	if _, err := store.CompleteCarrierRegistration(ctx, a.Store.Pool, acct.OrganizationID, acct.ID, sealed, isTest); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return accountGone(acct.ID.String())
		}
		return fmt.Errorf("store credentials of carrier account %s: %w", acct.ID, err)
	}
	return nil
}

// registrationAccount loads a carrier_a account and its account number.
func (a *CarrierAccountActivities) registrationAccount(ctx context.Context, orgID, acctID uuid.UUID) (store.CarrierAccount, string, error) {
	acct, err := store.CarrierAccountByID(ctx, a.Store.Pool, orgID, acctID)
	if errors.Is(err, store.ErrNotFound) {
		return acct, "", accountGone(acctID.String())
	}
	if err != nil {
		return acct, "", fmt.Errorf("read carrier account %s: %w", acctID, err)
	}
	if acct.Carrier != carriers.CarrierA {
		return acct, "", temporal.NewNonRetryableApplicationError("carrier account "+acctID.String()+" is not a carrier_a account", ErrTypeRegistrationAccountGone, nil)
	}
	if a.Secrets == nil || len(acct.Credentials) == 0 {
		return acct, "", temporal.NewNonRetryableApplicationError("carrier account "+acctID.String()+" has no account number", ErrTypeRegistrationAccountGone, nil)
	}
	creds, err := a.Secrets.OpenJSON(acct.Credentials, store.CarrierAccountCredentialsAD(orgID, acctID))
	if err != nil {
		return acct, "", temporal.NewNonRetryableApplicationError("the credentials of carrier account "+acctID.String()+" cannot be opened", ErrTypeRegistrationAccountGone, nil)
	}
	number, _ := creds["accountNumber"].(string)
	if strings.TrimSpace(number) == "" {
		return acct, "", temporal.NewNonRetryableApplicationError("carrier account "+acctID.String()+" has no account number", ErrTypeRegistrationAccountGone, nil)
	}
	return acct, strings.TrimSpace(number), nil
}

func (a *CarrierAccountActivities) registrar() (carriers.Registrar, error) {
	if a.Carriers == nil {
		return nil, temporal.NewNonRetryableApplicationError("no carrier adapters are configured on this worker", ErrTypeRegistrationCarrierUnavailable, nil)
	}
	reg, err := a.Carriers.Registrar(carriers.CarrierA)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(TenantMessage(err), ErrTypeRegistrationCarrierUnavailable, nil)
	}
	return reg, nil
}

// registrationError maps a registrar error to an application error whose
// message is the carrier's (never a credential).
func registrationError(err error) error {
	msg := carrierMessage(err)
	switch {
	case errors.Is(err, carriers.ErrAccountNotFound):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeRegistrationAccountNotFound, nil)
	case errors.Is(err, carriers.ErrAddressInvalid):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeRegistrationAddressInvalid, nil)
	case errors.Is(err, carriers.ErrSessionExpired):
		return temporal.NewNonRetryableApplicationError("the carrier's registration session expired; register the account again ("+msg+")", ErrTypeRegistrationSessionExpired, nil)
	case errors.Is(err, carriers.ErrUnauthorized), errors.Is(err, carriers.ErrNotConfigured):
		// The service's own carrier_a project credentials: an upstream
		// problem, not the account holder's.
		return temporal.NewNonRetryableApplicationError("carrier_a refused the service's API credentials: "+msg, ErrTypeRegistrationCarrierUnavailable, nil)
	case carriers.IsRetryable(err):
		return temporal.NewApplicationError("carrier_a is unavailable: "+msg, ErrTypeRegistrationCarrierUnavailable)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeRegistrationRefused, nil)
}

// carrierMessage is the carrier's own message of an adapter error.
// Network and decoding failures, and anything that is not a carrier's
// answer, become TenantMessage's stable sentence.
func carrierMessage(err error) string {
	if ce, ok := carriers.AsError(err); ok && ce.Message != "" && ce.Code != carriers.ErrCodeNetwork && ce.Code != carriers.ErrCodeBadResponse {
		return TenantText(ce.Message)
	}
	return TenantMessage(err)
}

func accountGone(id string) error {
	return temporal.NewNonRetryableApplicationError("carrier account "+id+" no longer exists", ErrTypeRegistrationAccountGone, nil)
}

func registrationIDs(orgID, acctID string) (uuid.UUID, uuid.UUID, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	acct, err := uuid.Parse(acctID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("accountId is not a UUID", ErrTypeInvalidInput, nil)
	}
	return org, acct, nil
}

// registrationRun is the input's run id, else the activity's own run.
func registrationRun(ctx context.Context, runID string) (string, error) {
	if runID == "" && activity.IsActivity(ctx) {
		runID = activity.GetInfo(ctx).WorkflowExecution.RunID
	}
	if runID == "" {
		return "", temporal.NewNonRetryableApplicationError("runId is required", ErrTypeInvalidInput, nil)
	}
	return runID, nil
}

// MaskEmail masks an e-mail address the carrier did not mask already
// ("pat@example.com" → "PA***@E***.COM"); "" stays "".
func MaskEmail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.Contains(s, "*") {
		return s
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok {
		return maskKeep(s, 2)
	}
	tld := ""
	if i := strings.LastIndex(domain, "."); i > 0 {
		tld = domain[i:]
	}
	return strings.ToUpper(maskKeep(local, 2) + "@" + maskKeep(strings.TrimSuffix(domain, tld), 1) + tld)
}

// MaskPhone masks a phone number the carrier did not mask already,
// keeping its last four digits ("***-***-4222"); "" stays "".
func MaskPhone(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.Contains(s, "*") {
		return s
	}
	var digits []rune
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits = append(digits, r)
		}
	}
	if len(digits) < 4 {
		return "***"
	}
	return "***-***-" + string(digits[len(digits)-4:])
}

func maskKeep(s string, keep int) string {
	r := []rune(s)
	if len(r) < keep {
		keep = len(r)
	}
	return string(r[:keep]) + "***"
}

func (a *CarrierAccountActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}
