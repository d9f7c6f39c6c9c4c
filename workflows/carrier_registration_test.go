package workflows

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
)

type carrierRegistrationSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// outcomes records each update's answer by a label.
	outcomes map[string]*regOutcome
}

// regOutcome is what one update answered.
type regOutcome struct {
	rejected error
	result   any
	err      error
	done     bool
}

func TestCarrierRegistration(t *testing.T) { suite.Run(t, new(carrierRegistrationSuite)) }

var ca *activities.CarrierAccountActivities

const (
	regOrg     = "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11"
	regAccount = "2f5d8c1e-7a3b-4e6f-9d0c-1b2a3c4d5e6f"
)

func (s *carrierRegistrationSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(CarrierRegistration, workflow.RegisterOptions{Name: CarrierRegistrationWorkflowType})
	s.env.RegisterActivity(&activities.CarrierAccountActivities{})
	s.outcomes = map[string]*regOutcome{}
}

func (s *carrierRegistrationSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func regInput(timeout time.Duration) CarrierRegistrationInput {
	return CarrierRegistrationInput{OrganizationID: regOrg, AccountID: regAccount, Timeout: timeout}
}

func regArgs(newAccount bool) RegisterArgs {
	return RegisterArgs{
		CustomerName: "George",
		Address: carriers.RegistrationAddress{StreetLines: []string{"20 FED EX PKWY"}, City: "COLLIERVILLE",
			StateOrProvinceCode: "TN", PostalCode: "38017", CountryCode: "US"},
		NewAccount:  newAccount,
		RequestedBy: Actor{Type: "user", ID: "u1", Name: "Ada"},
	}
}

func mfaResult() activities.RegisterCarrierAccountResult {
	return activities.RegisterCarrierAccountResult{MFARequired: true, Options: carriers.MFAOptions{
		Invoice: true, SecureCode: []string{"SMS", "CALL", "EMAIL"}, Email: "PU***@S***.COM", Phone: "***-***-4221",
	}}
}

// update sends an update after delay and records its outcome under label.
func (s *carrierRegistrationSuite) update(delay time.Duration, label, name string, arg any) {
	o := &regOutcome{}
	s.outcomes[label] = o
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(name, label, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { o.rejected, o.done = err, true },
			OnComplete: func(res any, err error) {
				o.result, o.err, o.done = res, err, true
			},
		}, arg)
	}, delay)
}

// decode converts an update result into out.
func (s *carrierRegistrationSuite) decode(label string, out any) {
	o := s.outcomes[label]
	s.Require().True(o.done, "update %s has no outcome", label)
	s.Require().NoError(o.rejected, "update %s rejected", label)
	s.Require().NoError(o.err, "update %s failed", label)
	raw, err := json.Marshal(o.result)
	s.Require().NoError(err)
	s.Require().NoError(json.Unmarshal(raw, out))
}

// failure is an update's rejection or error, with its application error type.
func (s *carrierRegistrationSuite) failure(label string) (string, string) {
	o := s.outcomes[label]
	s.Require().True(o.done, "update %s has no outcome", label)
	err := o.rejected
	if err == nil {
		err = o.err
	}
	s.Require().Error(err, "update %s succeeded", label)
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	return appErr.Type(), appErr.Message()
}

// result is the run's result. Only a completed registration completes the
// run; one that failed or expired fails it (so the Temporal UI shows it),
// with the result in the error's details.
func (s *carrierRegistrationSuite) result() CarrierRegistrationResult {
	s.Require().True(s.env.IsWorkflowCompleted())
	var res CarrierRegistrationResult
	if err := s.env.GetWorkflowError(); err != nil {
		var appErr *temporal.ApplicationError
		s.Require().True(errors.As(err, &appErr), "%v", err)
		s.Require().True(appErr.NonRetryable())
		s.Require().NoError(appErr.Details(&res))
		want := map[string]string{RegistrationPhaseFailed: ErrTypeRegistrationFailed, RegistrationPhaseExpired: ErrTypeRegistrationExpired}[res.Status]
		s.Require().NotEmpty(want, "a %s registration fails the run", res.Status)
		s.Require().Equal(want, appErr.Type())
		s.Require().Contains(appErr.Message(), res.Failure)
		return res
	}
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Require().Equal(RegistrationPhaseCompleted, res.Status, "only a completed registration completes the run")
	return res
}

func (s *carrierRegistrationSuite) expectRegister(res activities.RegisterCarrierAccountResult, err error) {
	s.env.OnActivity(ca.RegisterCarrierAccount, mock.Anything, mock.MatchedBy(func(in activities.RegisterCarrierAccountInput) bool {
		return in.OrganizationID == regOrg && in.AccountID == regAccount && in.CustomerName == "George" &&
			in.Address.PostalCode == "38017" && in.RunID != ""
	})).Return(res, err).Once()
}

func (s *carrierRegistrationSuite) TestPINPathWrongThenRight() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.RequestCarrierPIN, mock.Anything, mock.MatchedBy(func(in activities.RequestCarrierPINInput) bool {
		return in.Option == "SMS" && in.AccountID == regAccount
	})).Return(activities.RequestCarrierPINResult{Message: "sent secured Pin"}, nil).Once()
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.MatchedBy(func(in activities.VerifyCarrierPINInput) bool { return in.PIN == "000000" })).
		Return(activities.VerifyCarrierResult{Verified: false, Error: "Pin is invalid or expired.."}, nil).Once()
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.MatchedBy(func(in activities.VerifyCarrierPINInput) bool { return in.PIN == "123456" })).
		Return(activities.VerifyCarrierResult{Verified: true}, nil).Once()

	// Steps before the registration are refused.
	s.update(0, "early-pin", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "SMS"})
	s.update(time.Second, "register", RegistrationUpdateRegister, regArgs(true))
	s.update(2*time.Second, "pigeon", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "PIGEON"})
	s.update(3*time.Second, "pin", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "sms"})
	s.update(4*time.Second, "wrong", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "000000"})
	s.update(5*time.Second, "blank", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: " "})
	s.update(6*time.Second, "right", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Hour))

	typ, _ := s.failure("early-pin")
	s.Equal(ErrTypeRegistrationNotWaiting, typ)

	var reg RegisterResult
	s.decode("register", &reg)
	s.Equal(regAccount, reg.AccountID)
	s.False(reg.TestModeBypass)
	s.True(reg.MFAOptions.MFARequired)
	s.Equal("PU***@S***.COM", reg.MFAOptions.Email)
	s.Equal("***-***-4221", reg.MFAOptions.PhoneNumber)
	s.True(reg.MFAOptions.Options.Invoice)
	s.Equal([]string{"SMS", "CALL", "EMAIL"}, reg.MFAOptions.Options.SecureCode)

	typ, msg := s.failure("pigeon")
	s.Equal(ErrTypeRegistrationOptionNotOffered, typ)
	s.Contains(msg, "SMS, CALL, EMAIL")

	var pin RequestPINResult
	s.decode("pin", &pin)
	s.Equal(RequestPINResult{Success: true, Message: "sent secured Pin"}, pin)

	var wrong VerifyResult
	s.decode("wrong", &wrong)
	s.Equal(VerifyResult{Verified: false, Error: "Pin is invalid or expired.."}, wrong)
	typ, _ = s.failure("blank")
	s.Equal(ErrTypeRegistrationInvalid, typ)
	var right VerifyResult
	s.decode("right", &right)
	s.Equal(VerifyResult{Verified: true}, right)

	s.Equal(CarrierRegistrationResult{AccountID: regAccount, Status: RegistrationPhaseCompleted, Method: "pin"}, s.result())
	s.env.AssertActivityNumberOfCalls(s.T(), "EndCarrierRegistration", 0)
}

func (s *carrierRegistrationSuite) TestInvoicePath() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.VerifyCarrierInvoice, mock.Anything, mock.MatchedBy(func(in activities.VerifyCarrierInvoiceInput) bool {
		return in.Invoice.Number == "0"
	})).Return(activities.VerifyCarrierResult{Verified: false, Error: "Invoice does not exist for the provided invoice number."}, nil).Once()
	s.env.OnActivity(ca.VerifyCarrierInvoice, mock.Anything, mock.MatchedBy(func(in activities.VerifyCarrierInvoiceInput) bool {
		// The currency defaults to USD.
		return in.Invoice == carriers.Invoice{Number: "293235673", Date: "2026-01-09", Amount: 2323.2, Currency: "USD"}
	})).Return(activities.VerifyCarrierResult{Verified: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(false))
	s.update(time.Second, "bad", RegistrationUpdateVerifyInvoice, VerifyInvoiceArgs{Invoice: carriers.Invoice{Number: "0", Date: "2026-01-09", Amount: 1}})
	s.update(2*time.Second, "good", RegistrationUpdateVerifyInvoice, VerifyInvoiceArgs{Invoice: carriers.Invoice{Number: "293235673", Date: "2026-01-09", Amount: 2323.2}})
	s.update(3*time.Second, "late", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	var bad, good VerifyResult
	s.decode("bad", &bad)
	s.False(bad.Verified)
	s.Equal("Invoice does not exist for the provided invoice number.", bad.Error)
	s.decode("good", &good)
	s.True(good.Verified)
	s.Equal(CarrierRegistrationResult{AccountID: regAccount, Status: RegistrationPhaseCompleted, Method: "invoice"}, s.result())
	// The run completed: the later update never ran.
	s.False(s.outcomes["late"].done && s.outcomes["late"].err == nil && s.outcomes["late"].rejected == nil)
}

func (s *carrierRegistrationSuite) TestInvoiceNotOffered() {
	res := mfaResult()
	res.Options.Invoice = false
	res.Options.SecureCode = []string{"EMAIL"}
	s.expectRegister(res, nil)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.Anything).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(false))
	s.update(time.Second, "invoice", RegistrationUpdateVerifyInvoice, VerifyInvoiceArgs{Invoice: carriers.Invoice{Number: "1", Date: "2026-01-09", Amount: 1}})
	s.update(2*time.Second, "sms", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "SMS"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Minute))

	typ, msg := s.failure("invoice")
	s.Equal(ErrTypeRegistrationOptionNotOffered, typ)
	s.Contains(msg, "invoice")
	typ, msg = s.failure("sms")
	s.Equal(ErrTypeRegistrationOptionNotOffered, typ)
	s.Contains(msg, "offered: EMAIL")
	s.Equal(RegistrationPhaseExpired, s.result().Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "VerifyCarrierInvoice", 0)
	s.env.AssertActivityNumberOfCalls(s.T(), "RequestCarrierPIN", 0)
}

func (s *carrierRegistrationSuite) TestExpiry() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.MatchedBy(func(in activities.EndCarrierRegistrationInput) bool {
		return in.AccountID == regAccount && !in.DeleteAccount && in.Message == RegistrationExpiredMessage && in.RunID != ""
	})).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()

	var status RegistrationStatus
	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow(RegistrationQueryStatus)
		s.Require().NoError(err)
		s.Require().NoError(v.Get(&status))
	}, 2*time.Hour)
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(3*time.Hour))

	s.Equal(RegistrationPhaseWaiting, status.Phase)
	res := s.result()
	s.Equal(RegistrationPhaseExpired, res.Status)
	s.Equal(RegistrationExpiredMessage, res.Failure)
	// The run ended at the deadline, counted from the registration.
	s.GreaterOrEqual(s.env.Now().Sub(status.ExpiresAt), time.Duration(0))
}

func (s *carrierRegistrationSuite) TestReRegisterMovesTheDeadline() {
	s.env.OnActivity(ca.RegisterCarrierAccount, mock.Anything, mock.Anything).Return(mfaResult(), nil).Twice()
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.Anything).Return(activities.VerifyCarrierResult{Verified: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.update(50*time.Minute, "again", RegistrationUpdateRegister, regArgs(false))
	// Past the first deadline, inside the second.
	s.update(90*time.Minute, "verify", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Hour))

	var v VerifyResult
	s.decode("verify", &v)
	s.True(v.Verified)
	s.Equal(RegistrationPhaseCompleted, s.result().Status)
}

func (s *carrierRegistrationSuite) TestTestModeBypass() {
	s.expectRegister(activities.RegisterCarrierAccountResult{Active: true, TestModeBypass: true}, nil)
	args := regArgs(true)
	args.IsTest = true
	s.update(0, "register", RegistrationUpdateRegister, args)
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	var reg RegisterResult
	s.decode("register", &reg)
	s.True(reg.TestModeBypass)
	s.False(reg.MFAOptions.MFARequired)
	s.Equal([]string{}, reg.MFAOptions.Options.SecureCode)
	s.Equal(CarrierRegistrationResult{AccountID: regAccount, Status: RegistrationPhaseCompleted, Method: "test_mode_bypass"}, s.result())
}

func (s *carrierRegistrationSuite) TestUnknownAccountNumberDeletesTheNewAccount() {
	refused := temporal.NewNonRetryableApplicationError("Account Number not in database.", activities.ErrTypeRegistrationAccountNotFound, nil)
	s.expectRegister(activities.RegisterCarrierAccountResult{}, refused)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.MatchedBy(func(in activities.EndCarrierRegistrationInput) bool {
		return in.DeleteAccount
	})).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	typ, msg := s.failure("register")
	s.Equal(activities.ErrTypeRegistrationAccountNotFound, typ)
	s.Equal("Account Number not in database.", msg)
	res := s.result()
	s.Equal(RegistrationPhaseFailed, res.Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "RegisterCarrierAccount", 1)
}

// A PIN request sends an SMS or a call: a failed attempt (a timeout after
// the carrier may have sent it) is not repeated; the client asks again.
func (s *carrierRegistrationSuite) TestPINRequestIsNotRetried() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.RequestCarrierPIN, mock.Anything, mock.Anything).
		Return(activities.RequestCarrierPINResult{}, temporal.NewApplicationError("carrier_a is unavailable: the call did not complete in time", activities.ErrTypeRegistrationCarrierUnavailable)).Once()
	s.env.OnActivity(ca.RequestCarrierPIN, mock.Anything, mock.Anything).
		Return(activities.RequestCarrierPINResult{Message: "sent secured Pin"}, nil).Once()
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.Anything).Return(activities.VerifyCarrierResult{Verified: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.update(time.Second, "pin", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "SMS"})
	s.update(2*time.Second, "pin-again", RegistrationUpdateRequestPIN, RequestPINArgs{Option: "SMS"})
	s.update(3*time.Second, "right", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Hour))

	typ, _ := s.failure("pin")
	s.Equal(activities.ErrTypeRegistrationCarrierUnavailable, typ)
	var pin RequestPINResult
	s.decode("pin-again", &pin)
	s.True(pin.Success)
	s.Equal(RegistrationPhaseCompleted, s.result().Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "RequestCarrierPIN", 2)
}

func (s *carrierRegistrationSuite) TestCarrierUnavailableIsRetriedThenReported() {
	down := temporal.NewApplicationError("carrier_a is unavailable: Service Unavailable", activities.ErrTypeRegistrationCarrierUnavailable)
	s.env.OnActivity(ca.RegisterCarrierAccount, mock.Anything, mock.Anything).Return(activities.RegisterCarrierAccountResult{}, down)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.MatchedBy(func(in activities.EndCarrierRegistrationInput) bool {
		// An existing account is left as it was... by the activity; the
		// workflow asks for no deletion.
		return !in.DeleteAccount
	})).Return(activities.EndCarrierRegistrationResult{}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(false))
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	typ, _ := s.failure("register")
	s.Equal(activities.ErrTypeRegistrationCarrierUnavailable, typ)
	s.Equal(RegistrationPhaseFailed, s.result().Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "RegisterCarrierAccount", int(registrationCallOptions.RetryPolicy.MaximumAttempts))
}

func (s *carrierRegistrationSuite) TestRefusedReRegisterKeepsTheRegistration() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.RegisterCarrierAccount, mock.Anything, mock.Anything).
		Return(activities.RegisterCarrierAccountResult{}, temporal.NewNonRetryableApplicationError("address does not match", activities.ErrTypeRegistrationAddressInvalid, nil)).Once()
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.Anything).Return(activities.VerifyCarrierResult{Verified: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.update(time.Second, "again", RegistrationUpdateRegister, regArgs(false))
	s.update(2*time.Second, "verify", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	typ, _ := s.failure("again")
	s.Equal(activities.ErrTypeRegistrationAddressInvalid, typ)
	s.Equal(RegistrationPhaseCompleted, s.result().Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "EndCarrierRegistration", 0)
}

func (s *carrierRegistrationSuite) TestCarrierSessionEndedExpiresTheRegistration() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.Anything).Return(activities.VerifyCarrierResult{},
		temporal.NewNonRetryableApplicationError("the carrier's registration session expired", activities.ErrTypeRegistrationSessionExpired, nil)).Once()
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.MatchedBy(func(in activities.EndCarrierRegistrationInput) bool {
		return !in.DeleteAccount && in.Message != ""
	})).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()

	s.update(0, "register", RegistrationUpdateRegister, regArgs(true))
	s.update(time.Second, "verify", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "123456"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(0))

	typ, _ := s.failure("verify")
	s.Equal(ErrTypeRegistrationExpired, typ)
	s.Equal(RegistrationPhaseExpired, s.result().Status)
}

func (s *carrierRegistrationSuite) TestNoRegisterEverArrives() {
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.Anything).Return(activities.EndCarrierRegistrationResult{}, nil).Once()
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Hour))
	s.Equal(RegistrationPhaseExpired, s.result().Status)
}

// TestCarrierRegistrationReplay replays a recorded history (PIN path with a
// wrong PIN first) against the current code. It is recorded by the
// end-to-end test: FOS_UPDATE_HISTORY=1 go test ./e2e/ -run CarrierRegistration.
func TestCarrierRegistrationReplay(t *testing.T) {
	const file = "testdata/carrier_registration_history.json"
	r := newReplayer(t)
	r.RegisterWorkflowWithOptions(CarrierRegistration, workflow.RegisterOptions{Name: CarrierRegistrationWorkflowType})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
}

// TestWrongPINCapFailsTheRegistration: the PIN that reaches the cap fails
// the registration (account set to error) and ends the run, so a PIN
// cannot be guessed without bound, whichever API instance sends it.
func (s *carrierRegistrationSuite) TestWrongPINCapFailsTheRegistration() {
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.VerifyCarrierPIN, mock.Anything, mock.Anything).
		Return(activities.VerifyCarrierResult{Verified: false, Error: "Pin is invalid or expired.."}, nil).Times(3)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.MatchedBy(func(in activities.EndCarrierRegistrationInput) bool {
		return !in.DeleteAccount && in.Message == TooManyWrongPINsMessage
	})).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()

	args := regArgs(true)
	args.MaxWrongPINs = 3
	s.update(0, "register", RegistrationUpdateRegister, args)
	s.update(time.Second, "wrong1", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "000001"})
	s.update(2*time.Second, "wrong2", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "000002"})
	s.update(3*time.Second, "wrong3", RegistrationUpdateVerifyPIN, VerifyPINArgs{PIN: "000003"})
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Hour))

	var v VerifyResult
	s.decode("wrong2", &v)
	s.Equal(VerifyResult{Verified: false, Error: "Pin is invalid or expired.."}, v)
	s.decode("wrong3", &v)
	s.Equal(VerifyResult{Verified: false, Error: TooManyWrongPINsMessage}, v)
	res := s.result()
	s.Equal(RegistrationPhaseFailed, res.Status)
	s.Equal(TooManyWrongPINsMessage, res.Failure)
	s.env.AssertActivityNumberOfCalls(s.T(), "VerifyCarrierPIN", 3)
}

// A run that started before failed outcomes failed the run (its history
// has no version marker) still completes, so it replays.
func (s *carrierRegistrationSuite) TestFailedOutcomeBeforeVersionCompletes() {
	s.env.OnGetVersion(versionFailedOutcomeFailsRun, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	s.expectRegister(mfaResult(), nil)
	s.env.OnActivity(ca.EndCarrierRegistration, mock.Anything, mock.Anything).Return(activities.EndCarrierRegistrationResult{Changed: true}, nil).Once()
	s.update(0, "register", RegistrationUpdateRegister, regArgs(false))
	s.env.ExecuteWorkflow(CarrierRegistration, regInput(time.Minute))

	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res CarrierRegistrationResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(RegistrationPhaseExpired, res.Status)
}
