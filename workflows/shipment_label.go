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
	var a *activities.ShipmentActivities
	var bought activities.BuyShipmentLabelResult
	return purchase{
		id: in.ShipmentID, words: purchaseWords{thing: "label", bought: "bought", undo: "void", undone: "voided"}, unknown: LabelUnknownMessage,
		buy: func(ctx workflow.Context) (string, []string, bool, error) {
			err := spendOnce(ctx, a.BuyShipmentLabel, activities.BuyShipmentLabelInput{
				OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, CarrierAccountID: in.CarrierAccountID, Request: in.Request,
			}, &bought)
			return bought.Label.TrackingNumber, nil, bought.AlreadyRecorded, err
		},
		record: func(ctx workflow.Context) error {
			return workflow.ExecuteLocalActivity(ctx, a.RecordShipmentLabel, activities.RecordShipmentLabelInput{
				OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, Label: bought.Label,
			}).Get(ctx, nil)
		},
		undo: func(ctx workflow.Context, tracking string) error {
			return workflow.ExecuteActivity(ctx, a.VoidShipmentLabel, activities.VoidShipmentLabelInput{
				OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, TrackingNumber: tracking,
			}).Get(ctx, nil)
		},
		find: func(ctx workflow.Context) (string, bool) {
			var found activities.FindShipmentLabelResult
			if err := workflow.ExecuteActivity(ctx, a.FindShipmentLabel, activities.FindShipmentLabelInput{
				OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, Reference: in.ShipmentID,
			}).Get(ctx, &found); err != nil {
				workflow.GetLogger(ctx).Warn("label lookup failed", "ShipmentId", in.ShipmentID, "Error", err)
			}
			return found.TrackingNumber, found.Found
		},
		end: func(ctx workflow.Context, unknown bool, reason string) error {
			return workflow.ExecuteLocalActivity(ctx, a.EndShipmentPurchase, activities.EndShipmentPurchaseInput{
				OrganizationID: in.OrganizationID, ShipmentID: in.ShipmentID, Unknown: unknown, Reason: reason,
			}).Get(ctx, nil)
		},
	}.run(ctx)
}

// purchaseWords name what a purchase buys, in its messages.
type purchaseWords struct {
	thing  string // "label", "pickup"
	bought string // "bought", "booked"
	undo   string // "void", "cancel"
	undone string // "voided", "cancelled"
}

// purchase is the course of a money-spending purchase (ShipmentLabel,
// PickupBooking), its steps given as functions over activities: buy (one
// carrier call, spendOnce), record (a local activity), undo (the
// compensation of what was bought but not recorded), find (optional: look
// up what an unanswered call bought) and end (the pending row of a
// purchase that bought nothing, or whose outcome is unknown).
type purchase struct {
	id      string
	words   purchaseWords
	unknown string // the reason of an unknown outcome
	buy     func(ctx workflow.Context) (ref string, msgs []string, alreadyRecorded bool, err error)
	record  func(ctx workflow.Context) error
	undo    func(ctx workflow.Context, ref string) error
	find    func(ctx workflow.Context) (ref string, found bool)
	end     func(ctx workflow.Context, unknown bool, reason string) error
}

// run buys, then records or undoes, and says the outcome. What follows the
// carrier's answer runs even when the run is being cancelled (a
// disconnected context): a bought label is recorded or voided.
func (p purchase) run(ctx workflow.Context) PurchaseResult {
	log := workflow.GetLogger(ctx)
	w := p.words
	out := PurchaseResult{ID: p.id}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	rctx := workflow.WithLocalActivityOptions(dctx, recordPurchaseOptions)
	uctx := workflow.WithActivityOptions(dctx, compensateOptions)
	end := func(unknown bool, reason string) {
		if err := p.end(rctx, unknown, reason); err != nil {
			log.Warn("could not end the pending "+w.thing+"; the reconciler will", "Id", p.id, "Error", err)
		}
	}

	ref, msgs, already, err := p.buy(ctx)
	switch typ := errorType(err); {
	case err == nil && already:
		out.Outcome, out.Reference = PurchaseDone, ref
		return out
	case err == nil:
		out.Reference, out.Messages = ref, msgs
		rerr := p.record(rctx)
		if rerr == nil {
			out.Outcome = PurchaseDone
			return out
		}
		// Bought but not recorded: undo it, so it is not billed.
		msg, _ := failureOf(rerr)
		log.Warn(w.thing+" "+w.bought+" but not recorded; undoing it", "Id", p.id, "Reference", ref, "Error", msg)
		if uerr := p.undo(uctx, ref); uerr != nil {
			umsg, _ := failureOf(uerr)
			out.Outcome = PurchaseUnknown
			out.Message = "the " + w.thing + " " + ref + " was " + w.bought + " but could not be recorded (" + msg + ") nor " + w.undone +
				" (" + umsg + "): " + w.undo + " it with the carrier"
			end(true, out.Message)
			return out
		}
		out.Outcome = PurchaseVoided
		out.Message = "the " + w.thing + " could not be recorded (" + msg + "); it was " + w.undone + " with the carrier"
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
	// died during the call. Never repeated; looked up where the carrier can
	// (only what is found is conclusive: it is undone).
	out.Failure = carrierFailure(err)
	if p.find != nil {
		if found, ok := p.find(workflow.WithActivityOptions(dctx, lookupOptions)); ok {
			out.Reference = found
			if p.undo(uctx, found) == nil {
				out.Outcome = PurchaseVoided
				out.Message = "the carrier did not answer; the " + w.thing + " it " + w.bought + " (" + found + ") was " + w.undone + ": nothing is billed, try again"
				end(false, "")
				return out
			}
		}
	}
	out.Outcome, out.Message = PurchaseUnknown, p.unknown
	if out.Failure != nil {
		out.Message += " (" + out.Failure.Message + ")"
	}
	log.Warn(w.thing+" outcome unknown", "Id", p.id, "Message", out.Message)
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
