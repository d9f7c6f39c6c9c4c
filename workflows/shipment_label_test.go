package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
)

func labelInput() ShipmentLabelInput {
	return ShipmentLabelInput{
		OrganizationID:   "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11",
		ShipmentID:       "0b7f1e4c-2d3a-4c5b-8e9f-6a7b8c9d0e1f",
		CarrierAccountID: "5d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a",
		Request:          carriers.LabelRequest{ServiceType: "FEDEX_GROUND", Reference: "0b7f1e4c-2d3a-4c5b-8e9f-6a7b8c9d0e1f"},
	}
}

// purchaseEnv is a test environment that sends the result update right
// after the start, as the API does.
type purchaseEnv struct {
	*testsuite.TestWorkflowEnvironment
	update *PurchaseResult
	upErr  error
}

func newPurchaseEnv(t *testing.T, wfID string) *purchaseEnv {
	var ts testsuite.WorkflowTestSuite
	env := &purchaseEnv{TestWorkflowEnvironment: ts.NewTestWorkflowEnvironment()}
	env.RegisterActivity(&activities.ShipmentActivities{})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: wfID})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(PurchaseUpdateResult, "api", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { env.upErr = err },
			OnComplete: func(res any, err error) {
				env.upErr = err
				if err == nil {
					r := res.(PurchaseResult)
					env.update = &r
				}
			},
		})
	}, 0)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// result checks that the update answered and the run ended with the same
// outcome: completed for PurchaseDone, failed with it as details otherwise.
func (e *purchaseEnv) result(t *testing.T) PurchaseResult {
	t.Helper()
	require.True(t, e.IsWorkflowCompleted())
	require.NoError(t, e.upErr)
	require.NotNil(t, e.update, "the update answered")
	if e.update.Outcome == PurchaseDone {
		require.NoError(t, e.GetWorkflowError())
		var res PurchaseResult
		require.NoError(t, e.GetWorkflowResult(&res))
		require.Equal(t, *e.update, res)
		return res
	}
	err := e.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrTypePurchaseFailed, appErr.Type())
	var res PurchaseResult
	require.NoError(t, appErr.Details(&res))
	require.Equal(t, *e.update, res)
	return res
}

var labelDoc = store.ShipmentLabelDoc{TrackingNumber: "700000000001", RateAmount: 12.5, RateCurrency: "USD", Format: "PDF",
	ContentType: "application/pdf", Document: []byte("%PDF-1"), CarrierResponse: json.RawMessage(`{}`)}

func TestShipmentLabelBoughtAndRecorded(t *testing.T) {
	in := labelInput()
	env := newPurchaseEnv(t, ShipmentLabelWorkflowID(in.ShipmentID))
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, activities.BuyShipmentLabelInput{
		OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, CarrierAccountID: in.CarrierAccountID, Request: in.Request,
	}).Return(activities.BuyShipmentLabelResult{Label: labelDoc}, nil).Once()
	env.OnActivity(shipActs.RecordShipmentLabel, mock.Anything, activities.RecordShipmentLabelInput{
		OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, Label: labelDoc,
	}).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, in)

	res := env.result(t)
	require.Equal(t, PurchaseResult{ID: in.ShipmentID, Outcome: PurchaseDone, Reference: "700000000001"}, res)
}

// A call that never reached the carrier is repeated; the label is bought
// once.
func TestShipmentLabelNotSentRetried(t *testing.T) {
	env := newPurchaseEnv(t, "shipment-label/x")
	notSent := temporal.NewApplicationError("the carrier could not be reached", activities.ErrTypeCarrierNotSent)
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).Return(activities.BuyShipmentLabelResult{}, notSent).Twice()
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).Return(activities.BuyShipmentLabelResult{Label: labelDoc}, nil).Once()
	env.OnActivity(shipActs.RecordShipmentLabel, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, labelInput())

	require.Equal(t, PurchaseDone, env.result(t).Outcome)
	env.AssertActivityNumberOfCalls(t, "BuyShipmentLabel", 3)
}

// Never reached after every attempt: nothing bought, the pending row goes.
func TestShipmentLabelNotSentExhausted(t *testing.T) {
	in := labelInput()
	env := newPurchaseEnv(t, "shipment-label/x")
	f := activities.CarrierFailure{Carrier: "carrier_a", Code: carriers.ErrCodeNetwork, Message: "the carrier could not be reached"}
	notSent := temporal.NewApplicationError(f.Message, activities.ErrTypeCarrierNotSent, f)
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).Return(activities.BuyShipmentLabelResult{}, notSent)
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, activities.EndShipmentPurchaseInput{OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID}).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, in)

	res := env.result(t)
	require.Equal(t, PurchaseRefused, res.Outcome)
	require.Equal(t, &f, res.Failure)
	env.AssertActivityNumberOfCalls(t, "BuyShipmentLabel", notSentAttempts)
}

// A 5xx (or any answer lost after the request was sent) is not repeated:
// exactly one call. The carrier offers no lookup, so the shipment ends as
// exception with the reason.
func TestShipmentLabelUnknownOutcomeNotRetried(t *testing.T) {
	in := labelInput()
	env := newPurchaseEnv(t, "shipment-label/x")
	f := activities.CarrierFailure{Carrier: "carrier_a", StatusCode: 503, Message: "carrier_a error 503: Service Unavailable"}
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).
		Return(activities.BuyShipmentLabelResult{}, temporal.NewNonRetryableApplicationError(f.Message, activities.ErrTypeCarrierOutcomeUnknown, nil, f))
	env.OnActivity(shipActs.FindShipmentLabel, mock.Anything, activities.FindShipmentLabelInput{
		OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, Reference: in.ShipmentID,
	}).Return(activities.FindShipmentLabelResult{}, nil).Once()
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, mock.MatchedBy(func(e activities.EndShipmentPurchaseInput) bool {
		return e.Unknown && e.Reason == LabelUnknownMessage+" (carrier_a error 503: Service Unavailable)"
	})).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, in)

	res := env.result(t)
	require.Equal(t, PurchaseUnknown, res.Outcome)
	require.Contains(t, res.Message, "may or may not have been bought")
	env.AssertActivityNumberOfCalls(t, "BuyShipmentLabel", 1)
	env.AssertActivityNumberOfCalls(t, "RecordShipmentLabel", 0)
}

// The attempt timed out after the request reached the carrier (or its
// worker died): one call, never a second; the carrier's lookup finds the
// label it bought, which is voided: one label or none, never two.
func TestShipmentLabelTimeoutLookedUpAndVoided(t *testing.T) {
	in := labelInput()
	env := newPurchaseEnv(t, "shipment-label/x")
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).
		Return(activities.BuyShipmentLabelResult{}, temporal.NewTimeoutError(0, nil))
	env.OnActivity(shipActs.FindShipmentLabel, mock.Anything, mock.Anything).
		Return(activities.FindShipmentLabelResult{Supported: true, Found: true, TrackingNumber: "1Z999"}, nil).Once()
	env.OnActivity(shipActs.VoidShipmentLabel, mock.Anything, activities.VoidShipmentLabelInput{
		OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, TrackingNumber: "1Z999",
	}).Return(nil).Once()
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, activities.EndShipmentPurchaseInput{OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID}).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, in)

	res := env.result(t)
	require.Equal(t, PurchaseVoided, res.Outcome)
	require.Equal(t, "1Z999", res.Reference)
	env.AssertActivityNumberOfCalls(t, "BuyShipmentLabel", 1)
}

// The carrier's lookup knows no label (yet): that proves nothing, the
// outcome stays unknown; never a second purchase.
func TestShipmentLabelTimeoutLookedUpNotFound(t *testing.T) {
	env := newPurchaseEnv(t, "shipment-label/x")
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).
		Return(activities.BuyShipmentLabelResult{}, temporal.NewTimeoutError(0, nil))
	env.OnActivity(shipActs.FindShipmentLabel, mock.Anything, mock.Anything).Return(activities.FindShipmentLabelResult{Supported: true}, nil).Once()
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, mock.MatchedBy(func(e activities.EndShipmentPurchaseInput) bool { return e.Unknown })).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, labelInput())

	require.Equal(t, PurchaseUnknown, env.result(t).Outcome)
	env.AssertActivityNumberOfCalls(t, "BuyShipmentLabel", 1)
}

// The shipment was deleted while the label was bought: recording fails for
// good and the compensation voids the label.
func TestShipmentLabelRecordFailsVoids(t *testing.T) {
	in := labelInput()
	env := newPurchaseEnv(t, "shipment-label/x")
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).Return(activities.BuyShipmentLabelResult{Label: labelDoc}, nil).Once()
	env.OnActivity(shipActs.RecordShipmentLabel, mock.Anything, mock.Anything).
		Return(temporal.NewNonRetryableApplicationError("the shipment was deleted while its label was being bought", activities.ErrTypePurchaseGone, nil)).Once()
	// The carrier is down for a while: the void is retried until it passes.
	env.OnActivity(shipActs.VoidShipmentLabel, mock.Anything, mock.Anything).
		Return(temporal.NewApplicationError("the carrier could not be reached", activities.ErrTypeCarrierOutcomeUnknown)).Twice()
	env.OnActivity(shipActs.VoidShipmentLabel, mock.Anything, activities.VoidShipmentLabelInput{
		OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, TrackingNumber: "700000000001",
	}).Return(nil).Once()
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, in)

	res := env.result(t)
	require.Equal(t, PurchaseVoided, res.Outcome)
	require.Contains(t, res.Message, "deleted while its label was being bought")
	env.AssertActivityNumberOfCalls(t, "VoidShipmentLabel", 3)
}

// A definite refusal: nothing bought, the pending row goes, the failure is
// the carrier's.
func TestShipmentLabelRefused(t *testing.T) {
	env := newPurchaseEnv(t, "shipment-label/x")
	f := activities.CarrierFailure{Carrier: "carrier_a", Code: "SERVICE.TYPE.INVALID", StatusCode: 400, Invalid: true, Message: "carrier_a error 400 SERVICE.TYPE.INVALID: bad"}
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).
		Return(activities.BuyShipmentLabelResult{}, temporal.NewNonRetryableApplicationError(f.Message, activities.ErrTypeCarrierRefused, nil, f)).Once()
	env.OnActivity(shipActs.EndShipmentPurchase, mock.Anything, mock.MatchedBy(func(e activities.EndShipmentPurchaseInput) bool { return !e.Unknown })).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, labelInput())

	res := env.result(t)
	require.Equal(t, PurchaseRefused, res.Outcome)
	require.Equal(t, &f, res.Failure)
}

// A second request attached to the running purchase gets the same answer;
// the label is bought once.
func TestShipmentLabelSecondUpdateSameAnswer(t *testing.T) {
	env := newPurchaseEnv(t, "shipment-label/x")
	var second *PurchaseResult
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(PurchaseUpdateResult, "retry", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(error) {},
			OnComplete: func(res any, err error) {
				if err == nil {
					r := res.(PurchaseResult)
					second = &r
				}
			},
		})
	}, time.Second)
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).After(5*time.Second).Return(activities.BuyShipmentLabelResult{Label: labelDoc}, nil).Once()
	env.OnActivity(shipActs.RecordShipmentLabel, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, labelInput())

	res := env.result(t)
	require.NotNil(t, second)
	require.Equal(t, res, *second)
}

func TestPickupBookingWorkflow(t *testing.T) {
	in := PickupBookingInput{OrganizationID: labelInput().OrganizationID, PickupID: "7d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a",
		CarrierAccountID: labelInput().CarrierAccountID, Request: carriers.PickupRequest{PickupDate: "2030-01-07"}}
	booking := activities.PickupCarrierResponse{ConfirmationNumber: "CONF1", Location: "TNMA", Messages: []string{"ok"}, Raw: json.RawMessage(`{"x":1}`)}

	t.Run("booked and recorded", func(t *testing.T) {
		env := newPurchaseEnv(t, PickupBookingWorkflowID(in.PickupID))
		env.OnActivity(shipActs.BookPickup, mock.Anything, activities.BookPickupInput{OrganizationID: in.OrganizationID, PickupID: in.PickupID,
			CarrierAccountID: in.CarrierAccountID, Request: in.Request}).Return(activities.BookPickupResult{Booking: booking}, nil).Once()
		env.OnActivity(shipActs.RecordPickupBooking, mock.Anything, activities.RecordPickupBookingInput{OrganizationID: in.OrganizationID, PickupID: in.PickupID, Booking: booking}).Return(nil).Once()
		env.ExecuteWorkflow(PickupBooking, in)
		require.Equal(t, PurchaseResult{ID: in.PickupID, Outcome: PurchaseDone, Reference: "CONF1", Messages: []string{"ok"}}, env.result(t))
	})
	t.Run("not recorded: cancelled with the carrier", func(t *testing.T) {
		env := newPurchaseEnv(t, PickupBookingWorkflowID(in.PickupID))
		env.OnActivity(shipActs.BookPickup, mock.Anything, mock.Anything).Return(activities.BookPickupResult{Booking: booking}, nil).Once()
		env.OnActivity(shipActs.RecordPickupBooking, mock.Anything, mock.Anything).
			Return(temporal.NewNonRetryableApplicationError("gone", activities.ErrTypePurchaseGone, nil)).Once()
		env.OnActivity(shipActs.CancelBookedPickup, mock.Anything, activities.CancelBookedPickupInput{OrganizationID: in.OrganizationID,
			CarrierAccountID: in.CarrierAccountID, ConfirmationNumber: "CONF1", PickupDate: "2030-01-07", Location: "TNMA",
			Reason: "the booking could not be recorded"}).Return(nil).Once()
		env.OnActivity(shipActs.EndPickupBooking, mock.Anything, mock.Anything).Return(nil).Once()
		env.ExecuteWorkflow(PickupBooking, in)
		require.Equal(t, PurchaseVoided, env.result(t).Outcome)
	})
	t.Run("unknown outcome: one call, failed with the reason", func(t *testing.T) {
		env := newPurchaseEnv(t, PickupBookingWorkflowID(in.PickupID))
		env.OnActivity(shipActs.BookPickup, mock.Anything, mock.Anything).Return(activities.BookPickupResult{}, temporal.NewTimeoutError(0, nil))
		env.OnActivity(shipActs.EndPickupBooking, mock.Anything, activities.EndPickupBookingInput{OrganizationID: in.OrganizationID, PickupID: in.PickupID,
			Unknown: true, Reason: PickupUnknownMessage}).Return(nil).Once()
		env.ExecuteWorkflow(PickupBooking, in)
		require.Equal(t, PurchaseUnknown, env.result(t).Outcome)
		env.AssertActivityNumberOfCalls(t, "BookPickup", 1)
	})
}

func TestPickupCancelWorkflow(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.ShipmentActivities{})
	in := activities.CancelPickupInput{OrganizationID: labelInput().OrganizationID, PickupID: "7d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a", Reason: "no"}
	// Cancelling is safe to repeat: an unknown outcome is retried.
	env.OnActivity(shipActs.CancelPickup, mock.Anything, in).Return(activities.CancelPickupResult{}, temporal.NewApplicationError("timeout", activities.ErrTypeCarrierOutcomeUnknown)).Once()
	env.OnActivity(shipActs.CancelPickup, mock.Anything, in).Return(activities.CancelPickupResult{Messages: []string{"cancelled"}}, nil).Once()
	env.ExecuteWorkflow(PickupCancel, in)
	require.NoError(t, env.GetWorkflowError())
	var res activities.CancelPickupResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, []string{"cancelled"}, res.Messages)
}

// A 429 with Retry-After is repeated after the wait the carrier asked for.
func TestShipmentLabelRateLimitedWaitsRetryAfter(t *testing.T) {
	env := newPurchaseEnv(t, "shipment-label/x")
	f := activities.CarrierFailure{Carrier: "carrier_a", StatusCode: 429, RetryAfter: 7 * time.Second, Message: "carrier_a error 429"}
	var calls []time.Time
	env.OnActivity(shipActs.BuyShipmentLabel, mock.Anything, mock.Anything).Return(func(_ context.Context, _ activities.BuyShipmentLabelInput) (activities.BuyShipmentLabelResult, error) {
		calls = append(calls, env.Now())
		if len(calls) == 1 {
			return activities.BuyShipmentLabelResult{}, temporal.NewApplicationError(f.Message, activities.ErrTypeCarrierNotSent, f)
		}
		return activities.BuyShipmentLabelResult{Label: labelDoc}, nil
	}).Twice()
	env.OnActivity(shipActs.RecordShipmentLabel, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(ShipmentLabel, labelInput())

	require.Equal(t, PurchaseDone, env.result(t).Outcome)
	require.Len(t, calls, 2)
	require.GreaterOrEqual(t, calls[1].Sub(calls[0]), 7*time.Second)
}
