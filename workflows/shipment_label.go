package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
)

// ShipmentLabel buys a shipment's label (CONTRACT 8b): the API inserts the
// shipment as pending, starts the run with update-with-start and waits for
// the PurchaseUpdateResult update, which answers with the outcome. The
// carrier call is one activity attempt, repeated only when the call
// provably never reached the carrier; an unknown outcome is looked up where
// the carrier can, else the shipment ends as exception with the reason. A
// label bought but not recorded (the shipment deleted meanwhile) is voided
// by a compensation that runs inside the workflow, so it survives a worker
// crash.
const (
	ShipmentLabelWorkflowType = "ShipmentLabel"
	// PurchaseUpdateResult is the update of ShipmentLabel and PickupBooking
	// that waits for the outcome and returns the PurchaseResult.
	PurchaseUpdateResult = "result"
)

// ShipmentLabelWorkflowID is the stable workflow ID of a shipment's label
// purchase (CONTRACT 8b).
func ShipmentLabelWorkflowID(shipmentID string) string {
	return activities.ShipmentLabelIDPrefix + shipmentID
}

// ShipmentLabelInput is the input of ShipmentLabel: the label request the
// API validated (its reference is the shipment id).
type ShipmentLabelInput struct {
	OrganizationID   string                `json:"organizationId"`
	ShipmentID       string                `json:"shipmentId"`
	CarrierAccountID string                `json:"carrierAccountId"`
	Request          carriers.LabelRequest `json:"request"`
}

// Outcomes of a purchase (PurchaseResult.Outcome).
const (
	// PurchaseDone: bought (booked) and recorded.
	PurchaseDone = "done"
	// PurchaseRefused: nothing was bought: the carrier refused, could not
	// be reached, or the record was gone before the call.
	PurchaseRefused = "refused"
	// PurchaseVoided: bought but not recorded; voided (cancelled) with the
	// carrier.
	PurchaseVoided = "voided"
	// PurchaseUnknown: the carrier's answer was lost; something may have
	// been bought. The record is kept with the reason.
	PurchaseUnknown = "unknown"
)

// PurchaseResult is the outcome of ShipmentLabel and PickupBooking (the
// result of their PurchaseUpdateResult update, and of the run; a run whose
// outcome is not PurchaseDone fails with it as the error's details).
type PurchaseResult struct {
	// ID is the shipment's or pickup's id.
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	// Reference is the label's tracking number or the pickup's confirmation
	// number.
	Reference string   `json:"reference,omitempty"`
	Messages  []string `json:"messages,omitempty"`
	// Message explains an outcome other than PurchaseDone.
	Message string `json:"message,omitempty"`
	// Failure is the carrier's failure, when it answered one.
	Failure *activities.CarrierFailure `json:"failure,omitempty"`
}

// ErrTypePurchaseFailed is the error type of a ShipmentLabel or
// PickupBooking run that did not buy (book) and record; its details are the
// PurchaseResult.
const ErrTypePurchaseFailed = "PurchaseFailed"

// LabelUnknownMessage is the reason of a label purchase whose outcome is
// unknown.
const LabelUnknownMessage = "the carrier did not answer; the label may or may not have been bought: check with the carrier (the shipment id is the label's reference) before buying it again"

// Activity options of the purchase workflows.
var (
	// spendOptions: one carrier call that spends money, one attempt per
	// execution. A Temporal retry would also repeat an attempt that timed
	// out after the request was sent (or whose worker died), so the
	// workflow repeats it itself, only on ErrTypeCarrierNotSent.
	spendOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 45 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// recordPurchaseOptions: database writes, run as local activities (in
	// the workflow's worker, without a round trip through a task queue: the
	// client is waiting). Idempotent, retried, since a bought label must be
	// recorded (or voided); a worker that dies during one runs it again
	// when the workflow task is replayed elsewhere.
	recordPurchaseOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 15 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        20,
			NonRetryableErrorTypes: []string{activities.ErrTypePurchaseGone, activities.ErrTypeInvalidInput},
		},
	}
	// compensateOptions: a void or cancellation, safe to repeat: retried
	// for a day.
	compensateOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    45 * time.Second,
		ScheduleToCloseTimeout: 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeCarrierRefused, activities.ErrTypeInvalidInput},
		},
	}
	// lookupOptions: a read at the carrier.
	lookupOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 2 * time.Second, MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeCarrierRefused, activities.ErrTypeInvalidInput}},
	}
)

// notSentAttempts bounds the attempts of a call that never reached the
// carrier; notSentBackoff is the first pause between them (doubling).
// maxRetryAfter caps the wait a throttling carrier asks for (the client
// is waiting).
const (
	notSentAttempts = 4
	notSentBackoff  = time.Second
	maxRetryAfter   = 30 * time.Second
)

// spendOnce runs a money-spending activity (spendOptions), repeating it
// only while it fails with ErrTypeCarrierNotSent.
func spendOnce(ctx workflow.Context, activity, in, out any) error {
	return spendOnceWith(ctx, spendOptions, activities.ErrTypeCarrierNotSent, activity, in, out)
}

// spendOnceWith runs activity with opts (one attempt per execution),
// repeating it only while it fails with the error type notSent.
func spendOnceWith(ctx workflow.Context, opts workflow.ActivityOptions, notSent string, activity, in, out any) error {
	actx := workflow.WithActivityOptions(ctx, opts)
	pause := notSentBackoff
	for attempt := 1; ; attempt++ {
		err := workflow.ExecuteActivity(actx, activity, in).Get(ctx, out)
		if err == nil || attempt >= notSentAttempts || errorType(err) != notSent {
			return err
		}
		wait := pause
		if f := carrierFailure(err); f != nil && f.RetryAfter > wait {
			// The carrier throttled the call and said when to come back.
			wait = min(f.RetryAfter, maxRetryAfter)
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
		pause *= 2
	}
}

// errorType is the application error type of an activity failure ("" for
// a timeout, a cancellation or another failure).
func errorType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

// carrierFailure is the CarrierFailure details of an activity failure, if
// it carries one.
func carrierFailure(err error) *activities.CarrierFailure {
	var appErr *temporal.ApplicationError
	var f activities.CarrierFailure
	if errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(&f) == nil {
		return &f
	}
	return nil
}

// servePurchase runs a purchase under the PurchaseUpdateResult update
// handler, which answers every update (the first request's, and a retried
// request's attached to the same run) with its outcome once known. The run
// fails with ErrTypePurchaseFailed when the outcome is not PurchaseDone.
func servePurchase(ctx workflow.Context, run func(workflow.Context) PurchaseResult) (PurchaseResult, error) {
	var done *PurchaseResult
	if err := workflow.SetUpdateHandler(ctx, PurchaseUpdateResult, func(ctx workflow.Context) (PurchaseResult, error) {
		if err := workflow.Await(ctx, func() bool { return done != nil }); err != nil {
			return PurchaseResult{}, err
		}
		return *done, nil
	}); err != nil {
		return PurchaseResult{}, err
	}
	res := run(ctx)
	done = &res
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return res, err
	}
	if res.Outcome != PurchaseDone {
		return res, temporal.NewNonRetryableApplicationError(res.Message, ErrTypePurchaseFailed, nil, res)
	}
	return res, nil
}

// ShipmentLabel buys, records (or voids) a shipment's label.
func ShipmentLabel(ctx workflow.Context, in ShipmentLabelInput) (PurchaseResult, error) {
	return servePurchase(ctx, func(ctx workflow.Context) PurchaseResult { return buyShipmentLabel(ctx, in) })
}

func buyShipmentLabel(ctx workflow.Context, in ShipmentLabelInput) PurchaseResult {
	log := workflow.GetLogger(ctx)
	var a *activities.ShipmentActivities
	out := PurchaseResult{ID: in.ShipmentID}
	// What follows the carrier's answer runs even when the run is being
	// cancelled: a bought label is recorded or voided.
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	rctx := workflow.WithLocalActivityOptions(dctx, recordPurchaseOptions)
	end := func(unknown bool, reason string) {
		if err := workflow.ExecuteLocalActivity(rctx, a.EndShipmentPurchase, activities.EndShipmentPurchaseInput{
			OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, Unknown: unknown, Reason: reason,
		}).Get(rctx, nil); err != nil {
			log.Warn("could not end the pending shipment; the reconciler will", "ShipmentId", in.ShipmentID, "Error", err)
		}
	}
	void := func(tracking string) error {
		vctx := workflow.WithActivityOptions(dctx, compensateOptions)
		return workflow.ExecuteActivity(vctx, a.VoidShipmentLabel, activities.VoidShipmentLabelInput{
			OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, TrackingNumber: tracking,
		}).Get(vctx, nil)
	}

	var bought activities.BuyShipmentLabelResult
	err := spendOnce(ctx, a.BuyShipmentLabel, activities.BuyShipmentLabelInput{
		OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, CarrierAccountID: in.CarrierAccountID, Request: in.Request,
	}, &bought)
	switch typ := errorType(err); {
	case err == nil && bought.AlreadyRecorded:
		out.Outcome, out.Reference = PurchaseDone, bought.Label.TrackingNumber
		return out
	case err == nil:
		out.Reference = bought.Label.TrackingNumber
		rerr := workflow.ExecuteLocalActivity(rctx, a.RecordShipmentLabel, activities.RecordShipmentLabelInput{
			OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, Label: bought.Label,
		}).Get(rctx, nil)
		if rerr == nil {
			out.Outcome = PurchaseDone
			return out
		}
		// Bought but not recorded: void it, so it is not billed.
		msg, _ := failureOf(rerr)
		log.Warn("label bought but not recorded; voiding it", "ShipmentId", in.ShipmentID, "TrackingNumber", out.Reference, "Error", msg)
		if verr := void(out.Reference); verr != nil {
			vmsg, _ := failureOf(verr)
			out.Outcome = PurchaseUnknown
			out.Message = "the label " + out.Reference + " was bought but could not be recorded (" + msg + ") nor voided (" + vmsg + "): void it with the carrier"
			end(true, out.Message)
			return out
		}
		out.Outcome = PurchaseVoided
		out.Message = "the label could not be recorded (" + msg + "); it was voided with the carrier"
		end(false, "")
		return out
	case typ == activities.ErrTypePurchaseGone:
		out.Outcome, out.Message = PurchaseRefused, failureMessage(err)
		return out
	case typ == activities.ErrTypeCarrierRefused, typ == activities.ErrTypeCarrierNotSent, typ == activities.ErrTypeInvalidInput:
		// Nothing was bought.
		out.Outcome, out.Message, out.Failure = PurchaseRefused, failureMessage(err), carrierFailure(err)
		end(false, "")
		return out
	}
	// The outcome is unknown: a timeout after sending, a 5xx, a worker that
	// died during the call. Never repeated; asked, where the carrier can.
	out.Failure = carrierFailure(err)
	var found activities.FindShipmentLabelResult
	lctx := workflow.WithActivityOptions(dctx, lookupOptions)
	if lerr := workflow.ExecuteActivity(lctx, a.FindShipmentLabel, activities.FindShipmentLabelInput{
		OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, Reference: in.ShipmentID,
	}).Get(lctx, &found); lerr != nil {
		log.Warn("label lookup failed", "ShipmentId", in.ShipmentID, "Error", lerr)
	}
	if found.Found {
		// Its document was lost with the answer: void it. (A label not
		// found proves nothing: a carrier may index a label some time after
		// selling it, so the outcome stays unknown.)
		if verr := void(found.TrackingNumber); verr == nil {
			out.Outcome, out.Reference = PurchaseVoided, found.TrackingNumber
			out.Message = "the carrier did not answer; the label it bought (" + found.TrackingNumber + ") was voided: nothing is billed, try again"
			end(false, "")
			return out
		}
		out.Reference = found.TrackingNumber
	}
	out.Outcome, out.Message = PurchaseUnknown, LabelUnknownMessage
	if out.Failure != nil {
		out.Message += " (" + out.Failure.Message + ")"
	}
	log.Warn("label purchase outcome unknown", "ShipmentId", in.ShipmentID, "Message", out.Message)
	end(true, out.Message)
	return out
}

// failureMessage is an activity failure's message for people.
func failureMessage(err error) string {
	if f := carrierFailure(err); f != nil && f.Message != "" {
		return f.Message
	}
	msg, _ := failureOf(err)
	return msg
}
