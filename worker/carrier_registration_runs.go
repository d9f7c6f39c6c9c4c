package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carrieraccounts"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/workflows"
)

// TemporalCarrierAccounts is the Temporal adapter of the carrier accounts
// domain's Registrations port: each carrier_a registration is the
// CarrierRegistration run carrier-registration/<accountId> on TaskQueue;
// each step is an update of it.
type TemporalCarrierAccounts struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
}

var _ carrieraccounts.Registrations = TemporalCarrierAccounts{}

func (t TemporalCarrierAccounts) starter() Starter { return Starter{Client: t.Client, Log: t.Log} }

// Register implements carrieraccounts.Registrations: the register update
// of the account's run, started when none runs (update-with-start), and
// the carrier's answer. A run that is just closing refuses the update; it
// is then sent again, which starts a new run. An answer lost to a deadline
// or an outage is sent again under the same update id, so that Temporal
// answers the first one's outcome instead of registering twice; when the
// outcome is still unknown the error is unavailable and
// domain.ErrRunMayExist unless Temporal knows no run of this
// request.
func (t TemporalCarrierAccounts) Register(ctx context.Context, in carrieraccounts.RegisterRun) (carrieraccounts.Registered, error) {
	orgID, acctID := in.OrganizationID.String(), in.AccountID.String()
	args := workflows.RegisterArgs{
		CustomerName: in.CustomerName, Address: in.Address, IsTest: in.IsTest, NewAccount: in.NewAccount,
		RequestedBy:  workflows.Actor{Type: string(in.RequestedBy.Kind), ID: in.RequestedBy.ID.String(), Name: in.RequestedBy.Name},
		MaxWrongPINs: in.MaxWrongPINs,
	}
	since := time.Now()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), carrieraccounts.RegistrationTimeout)
	defer cancel()
	wfID := workflows.CarrierRegistrationWorkflowID(acctID)
	updateID := uuid.NewString()
	var lastErr error
	waitClose := false
	for attempt := 0; attempt < 3; attempt++ {
		if waitClose {
			// Wait for the closing run to close.
			cctx, ccancel := context.WithTimeout(wctx, 5*time.Second)
			_ = t.Client.GetWorkflow(cctx, wfID, "").Get(cctx, nil)
			ccancel()
			// A new run gets a new update.
			updateID = uuid.NewString()
		}
		opts := StartOptions(wfID, t.TaskQueue, orgID, map[string]any{"carrierAccountId": acctID})
		op := t.Client.NewWithStartWorkflowOperation(opts, workflows.CarrierRegistration, workflows.CarrierRegistrationInput{
			OrganizationID: orgID, AccountID: acctID,
		})
		handle, err := t.Client.UpdateWithStartWorkflow(wctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID: updateID, WorkflowID: wfID, UpdateName: workflows.RegistrationUpdateRegister,
				Args: []any{args}, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		var res workflows.RegisterResult
		if err == nil {
			err = handle.Get(wctx, &res)
		}
		if err == nil {
			return registered(res), nil
		}
		lastErr = err
		if StartMayHaveRun(err) {
			waitClose = false
			t.starter().log().WarnContext(ctx, "carrier registration outcome unknown; sending it again", "workflow_id", wfID, "attempt", attempt, "error", err.Error())
			continue
		}
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeRegistrationNotWaiting && appErr.Type() != workflows.ErrTypeRegistrationExpired {
			return carrieraccounts.Registered{}, t.registrationError(ctx, err)
		}
		waitClose = true
	}
	if StartMayHaveRun(lastErr) {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), StartRetryTimeout)
		defer dcancel()
		if _, found, derr := t.starter().RunStartedSince(dctx, wfID, since); derr != nil || found {
			return carrieraccounts.Registered{}, domain.WorkflowsUnavailable(fmt.Errorf("%w: %w", domain.ErrRunMayExist, lastErr))
		}
	}
	return carrieraccounts.Registered{}, t.registrationError(ctx, lastErr)
}

func registered(res workflows.RegisterResult) carrieraccounts.Registered {
	return carrieraccounts.Registered{
		MFAOptions: carrieraccounts.MFAOptions{
			MFARequired: res.MFAOptions.MFARequired, Email: res.MFAOptions.Email, PhoneNumber: res.MFAOptions.PhoneNumber,
			Invoice: res.MFAOptions.Options.Invoice, SecureCode: res.MFAOptions.Options.SecureCode,
		},
		TestModeBypass: res.TestModeBypass,
	}
}

// registrationError maps a failed registration update to a domain error.
func (t TemporalCarrierAccounts) registrationError(ctx context.Context, err error) error {
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr):
		msg := activities.TenantText(appErr.Message())
		switch appErr.Type() {
		case workflows.ErrTypeRegistrationNotWaiting, workflows.ErrTypeRegistrationExpired, activities.ErrTypeRegistrationSessionExpired:
			return domain.Conflict(msg)
		case workflows.ErrTypeRegistrationOptionNotOffered, workflows.ErrTypeRegistrationInvalid, activities.ErrTypeRegistrationRefused:
			return &domain.Error{Kind: domain.KindInvalid, Code: "validation_error", Message: msg}
		case activities.ErrTypeRegistrationAccountNotFound:
			return &domain.Error{Kind: domain.KindInvalid, Code: "validation_error", Message: msg, Fields: []domain.FieldError{{Field: "accountNumber", Message: msg}}}
		case activities.ErrTypeRegistrationAddressInvalid:
			return &domain.Error{Kind: domain.KindInvalid, Code: "validation_error", Message: msg, Fields: []domain.FieldError{{Field: "address", Message: msg}}}
		case activities.ErrTypeRegistrationCarrierUnavailable:
			return domain.Upstream("carrier_error", msg, nil)
		case activities.ErrTypeRegistrationAccountGone:
			return domain.NotFound("carrier account")
		}
	case errors.As(err, &notFound):
		// No run for the workflow id, or it is closed.
		return domain.Conflict("no registration is waiting for this account; register it again")
	case IsTemporalUnavailable(ctx, err):
		t.starter().log().WarnContext(ctx, "carrier registration update", "error", err.Error())
		return domain.WorkflowsUnavailable(err)
	}
	return err
}

// step sends an MFA step to the account's running registration and waits
// for its answer.
func (t TemporalCarrierAccounts) step(ctx context.Context, acctID uuid.UUID, name string, arg, out any) error {
	sctx, cancel := context.WithTimeout(ctx, carrieraccounts.RegistrationTimeout)
	defer cancel()
	handle, err := t.Client.UpdateWorkflow(sctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.CarrierRegistrationWorkflowID(acctID.String()), UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = handle.Get(sctx, out)
	}
	if err != nil {
		return t.registrationError(ctx, err)
	}
	return nil
}

// RequestPIN implements carrieraccounts.Registrations.
func (t TemporalCarrierAccounts) RequestPIN(ctx context.Context, _, acctID uuid.UUID, option string) (carrieraccounts.PINRequested, error) {
	var res workflows.RequestPINResult
	err := t.step(ctx, acctID, workflows.RegistrationUpdateRequestPIN, workflows.RequestPINArgs{Option: option}, &res)
	return carrieraccounts.PINRequested{Success: res.Success, Message: res.Message}, err
}

// VerifyPIN implements carrieraccounts.Registrations.
func (t TemporalCarrierAccounts) VerifyPIN(ctx context.Context, _, acctID uuid.UUID, pin string) (carrieraccounts.Verified, error) {
	var res workflows.VerifyResult
	err := t.step(ctx, acctID, workflows.RegistrationUpdateVerifyPIN, workflows.VerifyPINArgs{PIN: pin}, &res)
	return carrieraccounts.Verified{Verified: res.Verified, Error: res.Error}, err
}

// VerifyInvoice implements carrieraccounts.Registrations.
func (t TemporalCarrierAccounts) VerifyInvoice(ctx context.Context, _, acctID uuid.UUID, inv carriers.Invoice) (carrieraccounts.Verified, error) {
	var res workflows.VerifyResult
	err := t.step(ctx, acctID, workflows.RegistrationUpdateVerifyInvoice, workflows.VerifyInvoiceArgs{Invoice: inv}, &res)
	return carrieraccounts.Verified{Verified: res.Verified, Error: res.Error}, err
}

// Stop implements carrieraccounts.Registrations: the account's run is
// terminated (none running is not an error).
func (t TemporalCarrierAccounts) Stop(ctx context.Context, acctID uuid.UUID) error {
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var nf *serviceerror.NotFound
	if err := t.Client.TerminateWorkflow(sctx, workflows.CarrierRegistrationWorkflowID(acctID.String()), "", "carrier account deleted"); err != nil && !errors.As(err, &nf) {
		return err
	}
	return nil
}
