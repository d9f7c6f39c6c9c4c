package workflows

import (
	"errors"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
)

// CarrierRegistrationWorkflowType is the registered name of
// CarrierRegistration.
const CarrierRegistrationWorkflowType = "CarrierRegistration"

// CarrierRegistrationWorkflowID is the stable workflow ID of an account's
// carrier_a registration (CONTRACT section 5).
func CarrierRegistrationWorkflowID(accountID string) string {
	return "carrier-registration/" + accountID
}

// Update names of CarrierRegistration. The API sends "register" with the
// start (update-with-start); the other three while the run waits.
const (
	RegistrationUpdateRegister      = "register"
	RegistrationUpdateRequestPIN    = "request-pin"
	RegistrationUpdateVerifyPIN     = "verify-pin"
	RegistrationUpdateVerifyInvoice = "verify-invoice"
	// RegistrationQueryStatus answers RegistrationStatus.
	RegistrationQueryStatus = "status"
)

// Error types of the updates' own refusals (validators and handlers); the
// carrier's refusals keep the activities' types
// (activities.ErrTypeRegistration*).
const (
	// ErrTypeRegistrationNotWaiting: the registration is not waiting for
	// this step (not registered yet, already verified, failed or expired).
	ErrTypeRegistrationNotWaiting = "RegistrationNotWaiting"
	// ErrTypeRegistrationOptionNotOffered: the PIN channel or the invoice
	// verification is not among the options the carrier offered.
	ErrTypeRegistrationOptionNotOffered = "RegistrationOptionNotOffered"
	// ErrTypeRegistrationInvalid: an update argument is malformed.
	ErrTypeRegistrationInvalid = "RegistrationInvalid"
	// ErrTypeRegistrationExpired: the registration expired (bounded wait, or
	// the carrier's session ended); the account must be registered again.
	ErrTypeRegistrationExpired = "RegistrationExpired"
)

// DefaultRegistrationTimeout bounds the wait for verification after a
// registration.
const DefaultRegistrationTimeout = 24 * time.Hour

// RegistrationExpiredMessage is the account's last_error after the bounded
// wait ran out.
const RegistrationExpiredMessage = "registration expired"

// Phases of a registration (RegistrationStatus.Phase,
// CarrierRegistrationResult.Status).
const (
	RegistrationPhaseNew       = "new"       // waiting for the first register
	RegistrationPhaseWaiting   = "waiting"   // MFA options offered, waiting for verification
	RegistrationPhaseCompleted = "completed" // keys stored, account active
	RegistrationPhaseFailed    = "failed"    // the carrier refused the registration
	RegistrationPhaseExpired   = "expired"   // the bounded wait or the carrier session ran out
)

// CarrierRegistrationInput is the input of CarrierRegistration.
type CarrierRegistrationInput struct {
	OrganizationID string `json:"organizationId"`
	AccountID      string `json:"accountId"`
	// Timeout bounds the wait for verification, counted from the latest
	// successful register (and from the start until the first one); zero
	// means DefaultRegistrationTimeout.
	Timeout time.Duration `json:"timeout"`
}

// RegisterArgs is the argument of the register update. The account number
// is not in it: the activity reads it from the account's sealed
// credentials.
type RegisterArgs struct {
	CustomerName string                       `json:"customerName"`
	Address      carriers.RegistrationAddress `json:"address"`
	IsTest       bool                         `json:"isTest"`
	// NewAccount: the account was created for this registration; it is
	// deleted again when the carrier refuses the first register of the run.
	NewAccount  bool  `json:"newAccount"`
	RequestedBy Actor `json:"requestedBy"`
	// MaxWrongPINs is how many wrong PINs the run accepts before the
	// registration fails (zero: DefaultMaxWrongPINs). The count lives in
	// the workflow, so it holds across API instances and re-registers.
	MaxWrongPINs int `json:"maxWrongPins,omitempty"`
}

// DefaultMaxWrongPINs is the wrong-PIN cap when RegisterArgs names none.
const DefaultMaxWrongPINs = 5

// TooManyWrongPINsMessage is the account's last_error (and the answer of the
// PIN that reached the cap) when a registration fails for wrong PINs.
const TooManyWrongPINsMessage = "too many wrong PINs; register the account again"

// MFAOptionsResult is mfaOptions of the register response.
type MFAOptionsResult struct {
	MFARequired bool   `json:"mfaRequired"`
	Email       string `json:"email"`
	PhoneNumber string `json:"phoneNumber"`
	Options     struct {
		Invoice    bool     `json:"invoice"`
		SecureCode []string `json:"secureCode"`
	} `json:"options"`
}

// RegisterResult is the result of the register update.
type RegisterResult struct {
	AccountID      string           `json:"accountId"`
	MFAOptions     MFAOptionsResult `json:"mfaOptions"`
	TestModeBypass bool             `json:"testModeBypass"`
}

// RequestPINArgs is the argument of the request-pin update.
type RequestPINArgs struct {
	// Option is SMS, CALL or EMAIL.
	Option string `json:"option"`
}

// RequestPINResult is the result of the request-pin update.
type RequestPINResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// VerifyPINArgs is the argument of the verify-pin update.
type VerifyPINArgs struct {
	PIN string `json:"pin"`
}

// VerifyInvoiceArgs is the argument of the verify-invoice update.
type VerifyInvoiceArgs struct {
	Invoice carriers.Invoice `json:"invoiceInfo"`
}

// VerifyResult is the result of the verify-pin and verify-invoice updates.
type VerifyResult struct {
	Verified bool `json:"verified"`
	// Error is the carrier's message when it refused the PIN or invoice.
	Error string `json:"error,omitempty"`
}

// RegistrationStatus is the answer of the status query.
type RegistrationStatus struct {
	Phase      string           `json:"phase"`
	MFAOptions MFAOptionsResult `json:"mfaOptions"`
	ExpiresAt  time.Time        `json:"expiresAt"`
	Failure    string           `json:"failure,omitempty"`
}

// CarrierRegistrationResult is the result of CarrierRegistration.
type CarrierRegistrationResult struct {
	AccountID string `json:"accountId"`
	// Status is RegistrationPhaseCompleted, RegistrationPhaseFailed or
	// RegistrationPhaseExpired.
	Status string `json:"status"`
	// Method is how the account was verified: pin, invoice or
	// test_mode_bypass ("" unless completed).
	Method string `json:"method,omitempty"`
	// Failure is why the registration did not complete.
	Failure string `json:"failure,omitempty"`
}

// Activity options of CarrierRegistration.
var (
	// registrationCallOptions: one carrier call (plus a write) that a
	// client waits for synchronously; transient failures get a few quick
	// retries, carrier refusals none.
	registrationCallOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 75 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        500 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: activities.PermanentRegistrationErrorTypes,
		},
	}
	// pinRequestOptions: RequestCarrierPIN makes the carrier send an SMS
	// or a call through the service's carrier project: one attempt, since
	// a retry after a timeout may send a second message; the client asks
	// again (pinRequestOnceVersion).
	pinRequestOptions = workflow.ActivityOptions{
		StartToCloseTimeout: registrationCallOptions.StartToCloseTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// registrationEndOptions: one write, retried longer (it is the only
	// trace of an expiry).
	registrationEndOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        20,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

// CarrierRegistration is a carrier_a account registration with
// multi-factor verification. It is driven by updates: register (sent with
// the start) calls the carrier and answers the MFA options; request-pin,
// verify-pin and verify-invoice follow while the run waits. A successful
// verification (or the test-mode bypass) stores the issued keys and
// completes the run; a carrier refusal of the first register ends it
// (deleting an account created for it); the bounded wait, or the carrier's
// session, running out sets the account to error ("registration
// expired"). Later updates are refused. The carrier's session token never
// enters the history: activities keep it sealed in the database.
func CarrierRegistration(ctx workflow.Context, in CarrierRegistrationInput) (CarrierRegistrationResult, error) {
	r := &registration{in: in, phase: RegistrationPhaseNew, mu: workflow.NewMutex(ctx)}
	if r.in.Timeout <= 0 {
		r.in.Timeout = DefaultRegistrationTimeout
	}
	r.deadline = workflow.Now(ctx).Add(r.in.Timeout)
	r.runID = workflow.GetInfo(ctx).WorkflowExecution.RunID
	if err := r.setHandlers(ctx); err != nil {
		return CarrierRegistrationResult{}, err
	}
	log := workflow.GetLogger(ctx)

	for !r.terminal() {
		remaining := r.deadline.Sub(workflow.Now(ctx))
		if remaining <= 0 {
			// Let a step in flight finish first: it may verify.
			if err := workflow.Await(ctx, func() bool { return !r.busy }); err != nil {
				return r.result(), err
			}
			if r.terminal() || r.deadline.After(workflow.Now(ctx)) {
				continue
			}
			r.end(ctx, RegistrationPhaseExpired, RegistrationExpiredMessage, false)
			log.Info("carrier registration expired", "AccountId", in.AccountID)
			break
		}
		version := r.deadlineVersion
		if _, err := workflow.AwaitWithTimeout(ctx, remaining, func() bool {
			return r.terminal() || r.deadlineVersion != version
		}); err != nil {
			return r.result(), err
		}
	}
	// Answer every update in flight before completing.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.result(), err
	}
	return r.result(), r.outcomeError(ctx)
}

// Error types of a CarrierRegistration run that ended without a verified
// account (the run fails, so the Temporal UI shows it failed).
const (
	// ErrTypeRegistrationFailed: the carrier refused the registration, or
	// the account was deleted while it waited.
	ErrTypeRegistrationFailed = "RegistrationFailed"
)

// outcomeError fails a run whose registration failed or expired (types
// ErrTypeRegistrationFailed, ErrTypeRegistrationExpired; the result is the
// error's details). Runs recorded before this change complete as they did
// (workflow.GetVersion).
func (r *registration) outcomeError(ctx workflow.Context) error {
	var typ string
	switch r.phase {
	case RegistrationPhaseFailed:
		typ = ErrTypeRegistrationFailed
	case RegistrationPhaseExpired:
		typ = ErrTypeRegistrationExpired
	default:
		return nil
	}
	if workflow.GetVersion(ctx, versionFailedOutcomeFailsRun, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return temporal.NewNonRetryableApplicationError("carrier registration "+r.phase+": "+r.failure, typ, nil, r.result())
}

// versionFailedOutcomeFailsRun is the change id of "a run whose business
// outcome failed ends failed" (CarrierRegistration, RateComparison).
const versionFailedOutcomeFailsRun = "failed-outcome-fails-run"

type registration struct {
	in    CarrierRegistrationInput
	runID string
	mu    workflow.Mutex
	// busy: an update is calling the carrier.
	busy bool

	phase    string
	options  MFAOptionsResult
	method   string
	failure  string
	deadline time.Time
	// deadlineVersion changes when the deadline moves (a new register).
	deadlineVersion int
	// registered: a register of this run was accepted by the carrier.
	registered bool
	// wrongPINs counts the PINs the carrier refused; maxWrongPINs is the cap.
	wrongPINs, maxWrongPINs int
}

func (r *registration) terminal() bool {
	switch r.phase {
	case RegistrationPhaseCompleted, RegistrationPhaseFailed, RegistrationPhaseExpired:
		return true
	}
	return false
}

func (r *registration) result() CarrierRegistrationResult {
	return CarrierRegistrationResult{AccountID: r.in.AccountID, Status: r.phase, Method: r.method, Failure: r.failure}
}

func (r *registration) setHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, RegistrationQueryStatus, func() (RegistrationStatus, error) {
		return RegistrationStatus{Phase: r.phase, MFAOptions: r.options, ExpiresAt: r.deadline, Failure: r.failure}, nil
	}); err != nil {
		return err
	}
	for _, h := range []struct {
		name      string
		handler   any
		validator any
	}{
		{RegistrationUpdateRegister, r.register, r.validateRegister},
		{RegistrationUpdateRequestPIN, r.requestPIN, r.validateRequestPIN},
		{RegistrationUpdateVerifyPIN, r.verifyPIN, r.validateVerifyPIN},
		{RegistrationUpdateVerifyInvoice, r.verifyInvoice, r.validateVerifyInvoice},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler, workflow.UpdateHandlerOptions{Validator: h.validator}); err != nil {
			return err
		}
	}
	return nil
}

// ---- validators (read-only; a rejection leaves no trace in history) ----

func (r *registration) notWaiting() error {
	switch r.phase {
	case RegistrationPhaseNew:
		return temporal.NewApplicationError("the account is not registered yet", ErrTypeRegistrationNotWaiting)
	case RegistrationPhaseCompleted:
		return temporal.NewApplicationError("the account is already verified", ErrTypeRegistrationNotWaiting)
	case RegistrationPhaseExpired:
		return temporal.NewApplicationError("the registration expired; register the account again", ErrTypeRegistrationExpired)
	case RegistrationPhaseFailed:
		return temporal.NewApplicationError("the registration failed: "+r.failure, ErrTypeRegistrationNotWaiting)
	}
	return nil
}

func (r *registration) validateRegister(_ workflow.Context, args RegisterArgs) error {
	if r.terminal() {
		return r.notWaiting()
	}
	if strings.TrimSpace(args.CustomerName) == "" {
		return temporal.NewApplicationError("customerName is required", ErrTypeRegistrationInvalid)
	}
	return nil
}

func (r *registration) validateRequestPIN(_ workflow.Context, args RequestPINArgs) error {
	if err := r.notWaiting(); err != nil {
		return err
	}
	opt := strings.ToUpper(strings.TrimSpace(args.Option))
	if !slices.Contains(r.options.Options.SecureCode, opt) {
		offered := "none"
		if len(r.options.Options.SecureCode) > 0 {
			offered = strings.Join(r.options.Options.SecureCode, ", ")
		}
		return temporal.NewApplicationError("option "+args.Option+" is not offered for this account (offered: "+offered+")", ErrTypeRegistrationOptionNotOffered)
	}
	return nil
}

func (r *registration) validateVerifyPIN(_ workflow.Context, args VerifyPINArgs) error {
	if err := r.notWaiting(); err != nil {
		return err
	}
	if strings.TrimSpace(args.PIN) == "" {
		return temporal.NewApplicationError("pin is required", ErrTypeRegistrationInvalid)
	}
	return nil
}

func (r *registration) validateVerifyInvoice(_ workflow.Context, _ VerifyInvoiceArgs) error {
	if err := r.notWaiting(); err != nil {
		return err
	}
	if !r.options.Options.Invoice {
		return temporal.NewApplicationError("invoice verification is not offered for this account", ErrTypeRegistrationOptionNotOffered)
	}
	return nil
}

// ---- handlers ----

// lock serializes the steps (each calls the carrier with the one session)
// and re-checks the phase the validator saw.
func (r *registration) lock(ctx workflow.Context, check func() error) (func(), error) {
	if err := r.mu.Lock(ctx); err != nil {
		return nil, err
	}
	if err := check(); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.busy = true
	return func() { r.busy = false; r.mu.Unlock() }, nil
}

func (r *registration) register(ctx workflow.Context, args RegisterArgs) (RegisterResult, error) {
	unlock, err := r.lock(ctx, func() error {
		if r.terminal() {
			return r.notWaiting()
		}
		return nil
	})
	if err != nil {
		return RegisterResult{}, err
	}
	defer unlock()
	if args.MaxWrongPINs > 0 {
		r.maxWrongPINs = args.MaxWrongPINs
	}

	var a *activities.CarrierAccountActivities
	var res activities.RegisterCarrierAccountResult
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, registrationCallOptions), a.RegisterCarrierAccount, activities.RegisterCarrierAccountInput{
		OrganizationID: r.in.OrganizationID,
		AccountID:      r.in.AccountID,
		CustomerName:   args.CustomerName,
		Address:        args.Address,
		IsTest:         args.IsTest,
		RunID:          r.runID,
	}).Get(ctx, &res)
	if err != nil {
		appErr := updateError(err)
		// A refused re-register leaves the pending registration as it was.
		if !r.registered {
			r.end(ctx, RegistrationPhaseFailed, appErr.Error(), args.NewAccount)
		}
		return RegisterResult{}, appErr
	}
	r.registered = true
	out := RegisterResult{AccountID: r.in.AccountID, TestModeBypass: res.TestModeBypass}
	out.MFAOptions.MFARequired = res.MFARequired
	out.MFAOptions.Options.SecureCode = []string{}
	if res.Active {
		r.phase, r.method = RegistrationPhaseCompleted, "test_mode_bypass"
		r.options = out.MFAOptions
		return out, nil
	}
	out.MFAOptions.Email = res.Options.Email
	out.MFAOptions.PhoneNumber = res.Options.Phone
	out.MFAOptions.Options.Invoice = res.Options.Invoice
	for _, c := range res.Options.SecureCode {
		out.MFAOptions.Options.SecureCode = append(out.MFAOptions.Options.SecureCode, strings.ToUpper(c))
	}
	r.phase, r.options = RegistrationPhaseWaiting, out.MFAOptions
	r.deadline = workflow.Now(ctx).Add(r.in.Timeout)
	r.deadlineVersion++
	return out, nil
}

// pinRequestOnceVersion made the PIN request a single attempt
// (pinRequestOptions); runs recorded before it keep their retries.
const pinRequestOnceVersion = "pin-request-once"

func (r *registration) requestPIN(ctx workflow.Context, args RequestPINArgs) (RequestPINResult, error) {
	unlock, err := r.lock(ctx, r.notWaiting)
	if err != nil {
		return RequestPINResult{}, err
	}
	defer unlock()
	var a *activities.CarrierAccountActivities
	var res activities.RequestCarrierPINResult
	opts := registrationCallOptions
	if workflow.GetVersion(ctx, pinRequestOnceVersion, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		opts = pinRequestOptions
	}
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.RequestCarrierPIN, activities.RequestCarrierPINInput{
		OrganizationID: r.in.OrganizationID,
		AccountID:      r.in.AccountID,
		Option:         strings.ToUpper(strings.TrimSpace(args.Option)),
		RunID:          r.runID,
	}).Get(ctx, &res)
	if err != nil {
		appErr := r.stepError(ctx, err)
		if appErr.Type() == activities.ErrTypeRegistrationRefused {
			// The carrier would not send a PIN: say so, the client may
			// choose another channel.
			return RequestPINResult{Success: false, Message: appErr.Message()}, nil
		}
		return RequestPINResult{}, appErr
	}
	msg := res.Message
	if msg == "" {
		msg = "PIN sent"
	}
	return RequestPINResult{Success: true, Message: msg}, nil
}

func (r *registration) verifyPIN(ctx workflow.Context, args VerifyPINArgs) (VerifyResult, error) {
	return r.verify(ctx, "pin", func(ctx workflow.Context, a *activities.CarrierAccountActivities) workflow.Future {
		return workflow.ExecuteActivity(ctx, a.VerifyCarrierPIN, activities.VerifyCarrierPINInput{
			OrganizationID: r.in.OrganizationID, AccountID: r.in.AccountID, PIN: strings.TrimSpace(args.PIN), RunID: r.runID,
		})
	})
}

func (r *registration) verifyInvoice(ctx workflow.Context, args VerifyInvoiceArgs) (VerifyResult, error) {
	inv := args.Invoice
	if inv.Currency == "" {
		inv.Currency = "USD"
	}
	return r.verify(ctx, "invoice", func(ctx workflow.Context, a *activities.CarrierAccountActivities) workflow.Future {
		return workflow.ExecuteActivity(ctx, a.VerifyCarrierInvoice, activities.VerifyCarrierInvoiceInput{
			OrganizationID: r.in.OrganizationID, AccountID: r.in.AccountID, Invoice: inv, RunID: r.runID,
		})
	})
}

func (r *registration) verify(ctx workflow.Context, method string, call func(workflow.Context, *activities.CarrierAccountActivities) workflow.Future) (VerifyResult, error) {
	unlock, err := r.lock(ctx, r.notWaiting)
	if err != nil {
		return VerifyResult{}, err
	}
	defer unlock()
	var res activities.VerifyCarrierResult
	if err := call(workflow.WithActivityOptions(ctx, registrationCallOptions), nil).Get(ctx, &res); err != nil {
		appErr := r.stepError(ctx, err)
		if appErr.Type() == activities.ErrTypeRegistrationRefused {
			return r.refused(ctx, method, appErr.Message()), nil
		}
		return VerifyResult{}, appErr
	}
	if !res.Verified {
		msg := res.Error
		if msg == "" {
			msg = "the carrier refused the verification"
		}
		return r.refused(ctx, method, msg), nil
	}
	r.phase, r.method = RegistrationPhaseCompleted, method
	return VerifyResult{Verified: true}, nil
}

// wrongPINCapVersion introduced the wrong-PIN cap.
const wrongPINCapVersion = "wrong-pin-cap"

// refused answers a verification the carrier refused. A refused PIN counts
// against the cap; the PIN that reaches it fails the registration (the
// account is set to error), so PINs cannot be guessed without bound.
func (r *registration) refused(ctx workflow.Context, method, msg string) VerifyResult {
	if method != "pin" || workflow.GetVersion(ctx, wrongPINCapVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return VerifyResult{Verified: false, Error: msg}
	}
	r.wrongPINs++
	limit := r.maxWrongPINs
	if limit <= 0 {
		limit = DefaultMaxWrongPINs
	}
	if r.wrongPINs >= limit {
		r.end(ctx, RegistrationPhaseFailed, TooManyWrongPINsMessage, false)
		return VerifyResult{Verified: false, Error: TooManyWrongPINsMessage}
	}
	return VerifyResult{Verified: false, Error: msg}
}

// stepError maps a failed MFA step. A lost carrier session ends the
// registration as expired.
func (r *registration) stepError(ctx workflow.Context, err error) *temporal.ApplicationError {
	appErr := updateError(err)
	switch appErr.Type() {
	case activities.ErrTypeRegistrationSessionExpired:
		r.end(ctx, RegistrationPhaseExpired, RegistrationExpiredMessage+": the carrier's session ended", false)
		return appError("the registration expired (the carrier's session ended); register the account again", ErrTypeRegistrationExpired)
	case activities.ErrTypeRegistrationAccountGone:
		r.phase, r.failure = RegistrationPhaseFailed, appErr.Message()
	}
	return appErr
}

// end closes a registration that did not complete: the account is deleted
// (deleteAccount) or set to error with message.
func (r *registration) end(ctx workflow.Context, phase, message string, deleteAccount bool) {
	r.phase, r.failure = phase, message
	// Record it even when the run is being cancelled.
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var a *activities.CarrierAccountActivities
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, registrationEndOptions), a.EndCarrierRegistration, activities.EndCarrierRegistrationInput{
		OrganizationID: r.in.OrganizationID,
		AccountID:      r.in.AccountID,
		DeleteAccount:  deleteAccount,
		Message:        message,
		RunID:          r.runID,
	}).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not close the carrier registration", "AccountId", r.in.AccountID, "Error", err)
	}
}

// updateError turns an activity failure into the application error an
// update answers: the activity's type and message (the carrier's), without
// the activity wrapper.
func updateError(err error) *temporal.ApplicationError {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		return appError(appErr.Message(), appErr.Type())
	case errors.As(err, &timeoutErr):
		return appError("carrier_a did not answer in time", activities.ErrTypeRegistrationCarrierUnavailable)
	}
	return appError(err.Error(), "")
}

func appError(msg, typ string) *temporal.ApplicationError {
	var appErr *temporal.ApplicationError
	errors.As(temporal.NewApplicationError(msg, typ), &appErr)
	return appErr
}
