package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// Error types (temporal.ApplicationError.Type) of the shipment action
// activities: shipping's step error types (see shipping.SendAction).
const (
	ErrTypeShipmentActionRejected       = shipping.ErrTypeShipmentActionRejected
	ErrTypeShipmentCarrierUnavailable   = shipping.ErrTypeShipmentCarrierUnavailable
	ErrTypeShipmentActionOutcomeUnknown = shipping.ErrTypeShipmentActionOutcomeUnknown
	ErrTypeShipmentActionGone           = shipping.ErrTypeShipmentActionGone
)

// PermanentShipmentActionErrorTypes are the non-retryable error types of
// SendShipmentAction, for retry policies.
var PermanentShipmentActionErrorTypes = []string{
	ErrTypeShipmentActionRejected, ErrTypeShipmentActionGone, ErrTypeShipmentActionOutcomeUnknown, ErrTypeInvalidInput,
}

// ShipmentActivities are the activities on shipments, shipment actions and
// pickups. Each is a thin Temporal wrapper of a step of the shipping
// domain (shipping.Service): it parses the ids of its input, calls the
// step and turns a shipping.StepError into an application error of the
// same type (stepError).
type ShipmentActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// Temporal describes workflows (ReconcileShipments); nil uses the
	// worker's client.
	Temporal client.Client
	// Shipping is the domain service the steps are (nil: one built from
	// Store, Secrets, Carriers and Logger).
	Shipping *shipping.Service
	// Priority is where a purchase's steps mark themselves in flight, so
	// the dispatch drainers yield to them (nil: ProcessPriority).
	Priority *PriorityGate
}

// shipping is the domain service of the activities.
func (a *ShipmentActivities) shipping() *shipping.Service {
	if a.Shipping != nil {
		return a.Shipping
	}
	return shipping.New(shipping.Deps{Store: a.Store, Secrets: a.Secrets, Carriers: a.Carriers, Logger: a.log()})
}

// stepError is the activity error of a shipping step's failure: a
// shipping.StepError becomes an application error of its type, with its
// carrier failure as details, retryable or not as it says; any other error
// (a database write) stays retryable as it is.
func stepError(err error) error {
	var se *shipping.StepError
	if !errors.As(err, &se) {
		return err
	}
	var details []any
	if se.Failure != nil {
		details = append(details, *se.Failure)
	}
	if se.NonRetryable {
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, se.Err, details...)
	}
	return temporal.NewApplicationErrorWithCause(se.Message, se.Type, se.Err, details...)
}

// SendShipmentActionInput is the input of SendShipmentAction.
type SendShipmentActionInput struct {
	OrganizationID string `json:"organizationId"`
	ActionID       string `json:"actionId"`
}

// SendShipmentActionResult is the carrier's acceptance of an action.
type SendShipmentActionResult = shipping.SentAction

// SendShipmentAction sends a pending action record to the shipment's
// carrier (shipping.Service.SendAction).
func (a *ShipmentActivities) SendShipmentAction(ctx context.Context, in SendShipmentActionInput) (SendShipmentActionResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "actionId", in.ActionID)
	if err != nil {
		return SendShipmentActionResult{}, err
	}
	res, err := a.shipping().SendAction(ctx, ids[0], ids[1])
	return res, stepError(err)
}

// CarrierShipmentAction builds the carrier request of an action record.
func CarrierShipmentAction(act store.ShipmentAction, trackingNumber string) (carriers.ShipmentAction, error) {
	return shipping.CarrierShipmentAction(act, trackingNumber)
}

// ShipmentCarrierError maps a carrier adapter error of a delivery change
// to an activity error (shipping.ShipmentCarrierError).
func ShipmentCarrierError(err error) error { return stepError(shipping.ShipmentCarrierError(err)) }

// ShipmentActionUnknownMessage is the error of an action whose outcome at
// the carrier is unknown.
const ShipmentActionUnknownMessage = shipping.ShipmentActionUnknownMessage

// CarrierErrorMessage is what a client may read of a failed carrier call
// (shipping.CarrierErrorMessage).
func CarrierErrorMessage(err error) string { return shipping.CarrierErrorMessage(err) }

// RecordShipmentActionOutcomeInput is the input of RecordShipmentActionOutcome.
type RecordShipmentActionOutcomeInput struct {
	OrganizationID string `json:"organizationId"`
	ActionID       string `json:"actionId"`
	// Status is completed or failed.
	Status             string          `json:"status"`
	ConfirmationNumber string          `json:"confirmationNumber"`
	Messages           []string        `json:"messages"`
	Error              string          `json:"error"`
	CarrierResponse    json.RawMessage `json:"carrierResponse,omitempty"`
}

// RecordShipmentActionOutcomeResult is the result of RecordShipmentActionOutcome.
type RecordShipmentActionOutcomeResult struct {
	// Recorded is false when the record already had an outcome or no
	// longer exists.
	Recorded bool `json:"recorded"`
}

// RecordShipmentActionOutcome moves a pending action record to completed or
// failed (shipping.Service.RecordActionOutcome).
func (a *ShipmentActivities) RecordShipmentActionOutcome(ctx context.Context, in RecordShipmentActionOutcomeInput) (RecordShipmentActionOutcomeResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "actionId", in.ActionID)
	if err != nil {
		return RecordShipmentActionOutcomeResult{}, err
	}
	recorded, err := a.shipping().RecordActionOutcome(ctx, ids[0], ids[1], shipping.ActionOutcome{
		Status: in.Status, ConfirmationNumber: in.ConfirmationNumber, Messages: in.Messages, Error: in.Error, CarrierResponse: in.CarrierResponse,
	})
	return RecordShipmentActionOutcomeResult{Recorded: recorded}, stepError(err)
}

// CompletePastPickupsInput is the input of CompletePastPickups.
type CompletePastPickupsInput struct {
	// AsOf is the moment whose UTC date is "today": confirmed pickups dated
	// before it become completed. Zero means now.
	AsOf time.Time `json:"asOf"`
}

// CompletePastPickupsResult is the result of CompletePastPickups.
type CompletePastPickupsResult struct {
	Completed int64 `json:"completed"`
}

// CompletePastPickups persists the completion of every confirmed pickup
// whose date has passed, in every organization, with one UPDATE.
func (a *ShipmentActivities) CompletePastPickups(ctx context.Context, in CompletePastPickupsInput) (CompletePastPickupsResult, error) {
	asOf := in.AsOf
	if asOf.IsZero() {
		asOf = time.Now()
	}
	n, err := store.CompletePastPickups(ctx, a.Store.Pool, asOf)
	if err != nil {
		return CompletePastPickupsResult{}, fmt.Errorf("complete past pickups: %w", err)
	}
	if n > 0 {
		a.log().InfoContext(ctx, "pickups completed", "count", n)
	}
	return CompletePastPickupsResult{Completed: n}, nil
}

func (a *ShipmentActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}

// --- calls that spend money: label purchase (ShipmentLabel) ---

// Error types of the activities that call a carrier to spend money or book
// something (BuyShipmentLabel, BookPickup): shipping's step error types.
// Only ErrTypeCarrierNotSent is worth repeating; the workflows run these
// activities once per attempt and repeat them themselves on it only.
const (
	ErrTypeCarrierNotSent        = shipping.ErrTypeCarrierNotSent
	ErrTypeCarrierRefused        = shipping.ErrTypeCarrierRefused
	ErrTypeCarrierOutcomeUnknown = shipping.ErrTypeCarrierOutcomeUnknown
	ErrTypePurchaseGone          = shipping.ErrTypePurchaseGone
)

// CarrierFailure is what a client may read of a failed carrier call (the
// details of ErrTypeCarrierRefused and ErrTypeCarrierOutcomeUnknown).
type CarrierFailure = shipping.CarrierFailure

// CarrierFailureOf describes a failed carrier call.
func CarrierFailureOf(err error) CarrierFailure { return shipping.CarrierFailureOf(err) }

// CarrierRefusedRequest reports whether the carrier refused the request
// itself as invalid (shipping.CarrierRefusedRequest).
func CarrierRefusedRequest(err error) bool { return shipping.CarrierRefusedRequest(err) }

// purchaseIDs parses UUIDs of an activity input (name, value pairs).
func purchaseIDs(pairs ...any) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		id, err := uuid.Parse(pairs[i+1].(string))
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(pairs[i].(string)+" is not a UUID", ErrTypeInvalidInput, nil)
		}
		out = append(out, id)
	}
	return out, nil
}

// BuyShipmentLabelInput is the input of BuyShipmentLabel: the label request
// the API validated (its Reference is the shipment id).
type BuyShipmentLabelInput struct {
	OrganizationID   string                `json:"organizationId"`
	ShipmentID       string                `json:"shipmentId"`
	CarrierAccountID string                `json:"carrierAccountId"`
	Request          carriers.LabelRequest `json:"request"`
}

// BuyShipmentLabelResult is the bought label, as the shipment records it.
type BuyShipmentLabelResult = shipping.BuyLabelResult

// BuyShipmentLabel buys the label of a pending shipment
// (shipping.Service.BuyLabel): one carrier call; only ErrTypeCarrierNotSent
// may be repeated.
func (a *ShipmentActivities) BuyShipmentLabel(ctx context.Context, in BuyShipmentLabelInput) (BuyShipmentLabelResult, error) {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return BuyShipmentLabelResult{}, err
	}
	res, err := a.shipping().BuyLabel(ctx, shipping.BuyLabelInput{OrganizationID: ids[0], ShipmentID: ids[1], CarrierAccountID: ids[2], Request: in.Request})
	return res, stepError(err)
}

// ShipmentLabelDoc is what the store keeps of a bought label.
func ShipmentLabelDoc(l *carriers.Label) store.ShipmentLabelDoc { return shipping.LabelDoc(l) }

// RecordShipmentLabelInput is the input of RecordShipmentLabel.
type RecordShipmentLabelInput struct {
	OrganizationID string                 `json:"organizationId"`
	ShipmentID     string                 `json:"shipmentId"`
	Label          store.ShipmentLabelDoc `json:"label"`
}

// RecordShipmentLabel records a bought label on its pending shipment
// (shipping.Service.RecordLabel).
func (a *ShipmentActivities) RecordShipmentLabel(ctx context.Context, in RecordShipmentLabelInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().RecordLabel(ctx, ids[0], ids[1], in.Label))
}

// VoidShipmentLabelInput is the input of VoidShipmentLabel.
type VoidShipmentLabelInput struct {
	OrganizationID   string `json:"organizationId"`
	CarrierAccountID string `json:"carrierAccountId"`
	TrackingNumber   string `json:"trackingNumber"`
}

// VoidShipmentLabel voids a bought label that could not be recorded
// (shipping.Service.VoidLabel).
func (a *ShipmentActivities) VoidShipmentLabel(ctx context.Context, in VoidShipmentLabelInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().VoidLabel(ctx, ids[0], ids[1], in.TrackingNumber))
}

// FindShipmentLabelInput is the input of FindShipmentLabel.
type FindShipmentLabelInput struct {
	OrganizationID   string `json:"organizationId"`
	CarrierAccountID string `json:"carrierAccountId"`
	Reference        string `json:"reference"`
}

// FindShipmentLabelResult tells what is known of a label bought with a
// reference.
type FindShipmentLabelResult = shipping.FoundLabel

// FindShipmentLabel tells whether a purchase whose answer was lost bought a
// label (shipping.Service.FindLabel).
func (a *ShipmentActivities) FindShipmentLabel(ctx context.Context, in FindShipmentLabelInput) (FindShipmentLabelResult, error) {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return FindShipmentLabelResult{}, err
	}
	res, err := a.shipping().FindLabel(ctx, ids[0], ids[1], in.Reference)
	return res, stepError(err)
}

// EndShipmentPurchaseInput is the input of EndShipmentPurchase.
type EndShipmentPurchaseInput struct {
	OrganizationID string `json:"organizationId"`
	ShipmentID     string `json:"shipmentId"`
	// Unknown: the purchase's outcome is unknown (the shipment becomes
	// exception with Reason); else nothing was bought (it is deleted).
	Unknown bool   `json:"unknown"`
	Reason  string `json:"reason"`
}

// EndShipmentPurchase ends a pending shipment whose label was not bought
// (shipping.Service.EndLabelPurchase).
func (a *ShipmentActivities) EndShipmentPurchase(ctx context.Context, in EndShipmentPurchaseInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().EndLabelPurchase(ctx, ids[0], ids[1], in.Unknown, in.Reason))
}

// --- reconciliation of rows waiting on a workflow ---

// Workflow ID prefixes of the rows ReconcileShipments checks; the
// workflows package builds its IDs from them (CONTRACT 5 and 8b).
const (
	ShipmentLabelIDPrefix  = "shipment-label/"
	PickupBookingIDPrefix  = "pickup/"
	ShipmentActionIDPrefix = "shipment-action/"
)

// ReconcileBound is how long a shipment, pickup or shipment action may
// stay pending before ReconcileShipments looks at its workflow: far longer
// than a purchase takes (its carrier attempts, the records and the void).
const ReconcileBound = 15 * time.Minute

// ReconcileShipmentsInput is the input of ReconcileShipments.
type ReconcileShipmentsInput struct {
	// OlderThan overrides ReconcileBound (tests).
	OlderThan time.Duration `json:"olderThan,omitempty"`
}

// ReconcileShipmentsResult counts what ReconcileShipments found.
type ReconcileShipmentsResult struct {
	// Running: rows whose workflow still runs (left alone).
	Running int `json:"running"`
	// Removed: rows whose workflow never started (nothing reached the
	// carrier), or whose purchase the carrier proved empty or voided.
	Removed int `json:"removed"`
	// Failed: rows whose workflow ended without recording the outcome
	// (terminated or timed out in the UI, …), marked failed with the reason.
	Failed int `json:"failed"`
}

// ReconcileShipments finds shipments, pickups and shipment actions left
// pending longer than ReconcileBound and reconciles each with its workflow
// (DescribeWaitingRun, the reconciler's one reading of a run): a row whose
// workflow never started
// (the process died between the insert and the start) is removed (a
// shipment or pickup: nothing reached the carrier) or failed with the
// reason (an action); a row whose run ended without recording its outcome
// (terminated or timed out in the UI) is failed with the reason, a label
// first looked up by its reference and voided where the carrier can; a row
// whose run still goes is left alone. Every step is idempotent (each write
// applies only to a row still pending). Each kind is scanned by when the
// reconciler last checked a row (never checked first), up to
// ReconcilePages pages of ReconcileBatch rows, and the rows looked at are
// marked checked: rows that legitimately wait (a batch's labels on its
// long run) never hide a lost row behind them.
func (a *ShipmentActivities) ReconcileShipments(ctx context.Context, in ReconcileShipmentsInput) (ReconcileShipmentsResult, error) {
	c := a.Temporal
	if c == nil {
		c = activity.GetClient(ctx)
	}
	bound := in.OlderThan
	if bound <= 0 {
		bound = ReconcileBound
	}
	cutoff := time.Now().Add(-bound)
	var out ReconcileShipmentsResult
	count := func(removed bool, err error) error {
		if err == nil && removed {
			out.Removed++
		} else if err == nil {
			out.Failed++
		}
		return err
	}
	// A shipment whose label a batch buys waits on the batch's run (its
	// purchase owner), not on shipment-label/<id>.
	owners := map[uuid.UUID]string{}
	pendingShipments := func(ctx context.Context, db store.DBTX, cutoff time.Time, limit int) ([]store.WaitingRow, error) {
		rows, err := store.StalePendingShipments(ctx, db, cutoff, limit)
		out := make([]store.WaitingRow, 0, len(rows))
		for _, r := range rows {
			if r.Owner != nil && *r.Owner != "" {
				owners[r.ID] = *r.Owner
			}
			out = append(out, r.WaitingRow)
		}
		return out, err
	}
	kinds := []struct {
		prefix, table string
		list          func(context.Context, store.DBTX, time.Time, int) ([]store.WaitingRow, error)
		settle        settleFunc
	}{
		{ShipmentLabelIDPrefix, "shipments", pendingShipments, a.settleShipment},
		{PickupBookingIDPrefix, "pickups", store.StalePendingPickups, a.settlePickup},
		{ShipmentActionIDPrefix, "shipment_actions", store.StalePendingShipmentActions, a.settleShipmentAction},
	}
	for _, k := range kinds {
		// Rows of one run (a batch's shipments wait on the batch) are
		// described once; rows looked at are marked checked, so the next
		// page and the next run look at the others first (no head-of-line
		// blocking behind rows that legitimately wait).
		described := map[string]WaitingRun{}
		seen := map[uuid.UUID]bool{}
		table := strings.TrimSuffix(k.prefix, "/")
		for page := 0; page < ReconcilePages; page++ {
			rows, err := k.list(ctx, a.Store.Pool, cutoff, ReconcileBatch)
			if err != nil {
				return out, fmt.Errorf("list pending %s rows: %w", table, err)
			}
			fresh := make([]store.WaitingRow, 0, len(rows))
			for _, row := range rows {
				if !seen[row.ID] {
					seen[row.ID] = true
					fresh = append(fresh, row)
				}
			}
			err = a.reconcilePending(ctx, c, k.prefix, fresh, owners, described, k.settle, count, &out)
			if merr := store.MarkReconcileChecked(context.WithoutCancel(ctx), a.Store.Pool, k.table, rowIDs(fresh)); merr != nil {
				a.log().WarnContext(ctx, "reconcile: mark rows checked", "table", k.table, "error", merr)
			}
			if err != nil {
				return out, err
			}
			// Wrapped around (every row was looked at this run) or no more.
			if len(rows) < ReconcileBatch || len(fresh) < len(rows) {
				break
			}
		}
	}
	return out, nil
}

// settleFunc settles a pending row whose run is not open.
type settleFunc func(context.Context, store.WaitingRow, WaitingRun) (removed bool, err error)

// reconcilePending settles rows of one kind (see ReconcileShipments);
// an error ends the step (Temporal cannot be asked, or a write failed).
func (a *ShipmentActivities) reconcilePending(ctx context.Context, c client.Client, prefix string, rows []store.WaitingRow,
	owners map[uuid.UUID]string, described map[string]WaitingRun, settle settleFunc, count func(bool, error) error, out *ReconcileShipmentsResult) error {
	for _, row := range rows {
		wfID, since := prefix+row.ID.String(), row.Since
		if owner, ok := owners[row.ID]; ok && prefix == ShipmentLabelIDPrefix {
			// The owner's run began before the row: any run of it counts.
			wfID, since = owner, time.Time{}
		}
		run, ok := described[wfID]
		if !ok {
			var err error
			run, err = DescribeWaitingRun(ctx, c, wfID, since)
			if err != nil {
				// Temporal unavailable ends the step (the next run tries
				// again); any other failure is this row's: the others are
				// still settled (as ReconcileKind does).
				if ctx.Err() != nil || isUnavailable(err) {
					return err
				}
				a.log().WarnContext(ctx, "reconcile: describe", "workflow_id", wfID,
					"organization_id", row.OrganizationID, "error", err)
				continue
			}
			described[wfID] = run
		}
		if run.Open {
			out.Running++
			continue
		}
		if err := count(settle(ctx, row, run)); err != nil {
			return err
		}
		a.log().WarnContext(ctx, "pending row reconciled", "workflow_id", wfID,
			"organization_id", row.OrganizationID, "missing", run.Missing, "reason", run.Reason, "detail", run.Detail)
	}
	return nil
}

func rowIDs(rows []store.WaitingRow) []uuid.UUID {
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// settleShipment ends a pending shipment whose label purchase is not
// running. A shipment the carrier was never asked for (its own workflow
// never started; or, for one a batch buys, no label_requested_at) is
// removed. Otherwise the label its purchase stashed, else the carrier's
// lookup where it has one, is voided (only a label found and voided
// settles it: not found proves nothing) and the shipment removed; failing
// that it becomes exception with the reason.
func (a *ShipmentActivities) settleShipment(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	sh, shErr := store.ShipmentByID(ctx, a.Store.Pool, row.OrganizationID, row.ID)
	owned := shErr == nil && sh.PurchaseOwner != nil
	if run.Missing && !owned || owned && sh.LabelRequestedAt == nil {
		// No carrier call happened: the process died before the start, or
		// the batch stopped before it asked the carrier.
		_, err := store.DeletePendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID)
		return true, err
	}
	reason := run.Reason
	if run.Missing {
		reason = "its run no longer exists"
	}
	svc := a.shipping()
	if shErr == nil && sh.CarrierAccountID != nil {
		found, err := svc.FindLabel(ctx, row.OrganizationID, *sh.CarrierAccountID, row.ID.String())
		if err != nil && shipping.StepErrorType(err) == "" {
			return false, err // looked at again by the next run
		}
		if err == nil && found.Found {
			if verr := svc.VoidLabel(ctx, row.OrganizationID, *sh.CarrierAccountID, found.TrackingNumber); verr == nil {
				_, err := store.DeletePendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID)
				return true, err
			} else if shipping.StepErrorType(verr) == "" {
				return false, verr
			}
			_, err := store.FailPendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
				"the label purchase stopped before its outcome was recorded (%s); the label %s was bought and could not be voided: void it with the carrier", reason, found.TrackingNumber))
			return false, err
		}
	}
	_, err := store.FailPendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
		"the label purchase stopped before its outcome was recorded (%s): the label may or may not have been bought; check with the carrier (the label's reference is %s)", reason, row.ID))
	return false, err
}

// settlePickup ends a pending pickup whose booking workflow is not
// running.
func (a *ShipmentActivities) settlePickup(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	if run.Missing {
		_, err := store.DeletePendingPickup(ctx, a.Store.Pool, row.OrganizationID, row.ID)
		return true, err
	}
	_, err := store.FailPendingPickup(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
		"the pickup booking stopped before its outcome was recorded (%s): the pickup may or may not have been booked; check with the carrier", run.Reason))
	return false, err
}

// settleShipmentAction fails a pending action whose workflow is not
// running.
func (a *ShipmentActivities) settleShipmentAction(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	msg := "the action was never sent to the carrier (the service stopped before its workflow started); send it again"
	if !run.Missing {
		msg = fmt.Sprintf("the action stopped before the carrier's answer was recorded (%s): the change may or may not have been made; check with the carrier", run.Reason)
	}
	_, err := store.FinishShipmentAction(ctx, a.Store.Pool, row.OrganizationID, row.ID, store.ShipmentActionOutcome{Status: store.ShipmentActionFailed, Error: msg})
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return false, err
}
