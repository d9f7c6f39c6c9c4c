package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
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

// Outcomes of a purchase (PurchaseResult.Outcome): shipping's.
const (
	PurchaseDone    = shipping.PurchaseDone
	PurchaseRefused = shipping.PurchaseRefused
	PurchaseVoided  = shipping.PurchaseVoided
	PurchaseUnknown = shipping.PurchaseUnknown
)

// PurchaseResult is the outcome of ShipmentLabel and PickupBooking (the
// result of their PurchaseUpdateResult update, and of the run; a run whose
// outcome is not PurchaseDone fails with it as the error's details).
type PurchaseResult = shipping.PurchaseResult

// ErrTypePurchaseFailed is the error type of a ShipmentLabel or
// PickupBooking run that did not buy (book) and record; its details are the
// PurchaseResult.
const ErrTypePurchaseFailed = "PurchaseFailed"

// LabelUnknownMessage is the reason of a label purchase whose outcome is
// unknown.
const LabelUnknownMessage = shipping.LabelUnknownMessage

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
		id: in.ShipmentID, words: shipping.LabelWords, unknown: LabelUnknownMessage,
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

// purchase is a money-spending purchase (ShipmentLabel, PickupBooking) as
// a workflow runs it: its steps as functions over activities, run by the
// one course of every purchase (shipping.Course): buy (one carrier call,
// spendOnce), record (a local activity), undo (the compensation of what
// was bought but not recorded), find (optional: look up what an
// unanswered call bought) and end (the pending row of a purchase that
// bought nothing, or whose outcome is unknown).
type purchase struct {
	id      string
	words   shipping.PurchaseWords
	unknown string // the reason of an unknown outcome
	buy     func(ctx workflow.Context) (ref string, msgs []string, alreadyRecorded bool, err error)
	record  func(ctx workflow.Context) error
	undo    func(ctx workflow.Context, ref string) error
	find    func(ctx workflow.Context) (ref string, found bool)
	end     func(ctx workflow.Context, unknown bool, reason string) error
}

// run runs the course with each step in its context. What follows the
// carrier's answer runs even when the run is being cancelled (a
// disconnected context): a bought label is recorded or voided.
func (p purchase) run(ctx workflow.Context) PurchaseResult {
	log := workflow.GetLogger(ctx)
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	rctx := workflow.WithLocalActivityOptions(dctx, recordPurchaseOptions)
	uctx := workflow.WithActivityOptions(dctx, compensateOptions)
	c := shipping.Course{
		ID: p.id, Words: p.words, Unknown: p.unknown,
		Buy:       func() (string, []string, bool, error) { return p.buy(ctx) },
		Record:    func() error { return p.record(rctx) },
		Undo:      func(ref string) error { return p.undo(uctx, ref) },
		End:       func(unknown bool, reason string) error { return p.end(rctx, unknown, reason) },
		ErrorType: errorType,
		Failure:   carrierFailure,
		Message:   func(err error) string { msg, _ := failureOf(err); return msg },
		Warn:      log.Warn,
	}
	if p.find != nil {
		c.Find = func() (string, bool) { return p.find(workflow.WithActivityOptions(dctx, lookupOptions)) }
	}
	return c.Run()
}
