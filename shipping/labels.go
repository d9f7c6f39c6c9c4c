package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// LabelRuns is the port through which the Service runs a label purchase
// as its own durable run (the ShipmentLabel workflow, shipment-label/<id>,
// implemented by worker.TemporalShipping) and waits for its outcome. An
// error of kind Unavailable means the outcome is unknown (the run may
// exist): the pending shipment must stay, for the run or the reconciler.
type LabelRuns interface {
	RunLabelPurchase(ctx context.Context, in LabelRun) (PurchaseResult, error)
}

// LabelRun is a label purchase to run for a pending shipment.
type LabelRun struct {
	OrganizationID   uuid.UUID
	ShipmentID       uuid.UUID
	CarrierAccountID uuid.UUID
	Request          carriers.LabelRequest
}

// CreateShipment creates a shipment and buys its label (POST /shipments,
// the agent's create-shipment tool): the shipment is inserted pending and
// the label bought by its ShipmentLabel run (LabelRuns), the caller
// waiting for the outcome. The same in.ID is the same purchase: a retry
// joins it, or answers with the shipment it recorded. A request the
// carrier refuses as invalid is Invalid naming the field (service, else
// body) and the pending shipment is deleted; a purchase whose outcome is
// unknown is Upstream and the shipment stays, as exception, with the
// reason in metadata.label_purchase_error. The actor needs
// shipments:write.
func (s *Service) CreateShipment(ctx context.Context, actor domain.Actor, in CreateShipmentInput) (Shipment, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return Shipment{}, err
	}
	orgID := actor.OrganizationID
	p, err := s.plan(ctx, orgID, in)
	if err != nil {
		return Shipment{}, err
	}
	if s.labels == nil {
		return Shipment{}, ErrWorkflowsUnavailable
	}
	// From here on the purchase runs to its end even when the caller goes
	// away (the run records or voids the label in any case).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), workTimeout)
	defer cancel()
	cur, created, err := s.insertPending(wctx, p)
	if err != nil {
		return Shipment{}, err
	}
	if cur.HasLabel() {
		return cur, nil // a retry of a purchase that is done
	}
	res, err := s.labels.RunLabelPurchase(wctx, LabelRun{OrganizationID: orgID, ShipmentID: p.row.ID, CarrierAccountID: p.account.ID, Request: p.request})
	if domain.KindOf(err) == domain.KindUnavailable {
		s.log.WarnContext(ctx, "purchase workflow unreachable", "shipment_id", p.row.ID, "error", err.Error())
		return Shipment{}, err
	}
	if (err != nil || res.Outcome != PurchaseDone) && created {
		// A refused start runs nothing; a retry answered by a closed run
		// re-inserted the row.
		if _, derr := store.DeletePendingShipment(wctx, s.store.Pool, orgID, p.row.ID); derr != nil {
			s.log.ErrorContext(ctx, "remove pending shipment", "shipment_id", p.row.ID, "error", derr.Error())
		}
	}
	if err != nil {
		return Shipment{}, err
	}
	if res.Outcome != PurchaseDone {
		s.log.WarnContext(ctx, "purchase failed", "what", "label", "id", res.ID, "outcome", res.Outcome, "message", res.Message)
		return Shipment{}, PurchaseFailure(p.account.Carrier+" could not create the label", res, serviceRefusalField)
	}
	done, err := store.ShipmentByID(wctx, s.store.Pool, orgID, p.row.ID)
	if err != nil {
		return Shipment{}, err
	}
	s.log.InfoContext(ctx, "label created", "shipment_id", p.row.ID, "carrier", p.account.Carrier, "tracking_number", res.Reference)
	rules.OrderEvent(ctx, s.hooks, orgID, p.orderID, rules.TriggerShipmentCreated)
	rules.Notify(ctx, s.events, orgID, rules.EventShipmentCreated, []uuid.UUID{done.ID})
	return done, nil
}

// PurchaseLabelInput is one label to buy from inside a durable run.
type PurchaseLabelInput struct {
	// Owner is the workflow id of the run that carries the purchase (an
	// operation's execution): the reconciler asks that run, not
	// shipment-label/<id>, before it settles the shipment. Required.
	Owner string
	// Shipment is the shipment to create; its ID is required and stable:
	// the same item always names the same shipment, so that calling again
	// never buys a second label.
	Shipment CreateShipmentInput
	// Batch, when set, is shared by the purchases of one batch (accounts
	// and origins read once).
	Batch *PurchaseBatch
}

// LabelPurchase is the outcome of PurchaseLabel and ResolveLabelPurchase.
type LabelPurchase struct {
	// Shipment is the shipment as it ended: label_created when done,
	// exception when the outcome is unknown; zero when it was deleted
	// (nothing bought, or voided) or never created.
	Shipment Shipment
	Result   PurchaseResult
}

// PurchaseLabel creates one shipment and buys and records its label with
// the money-safe course of CONTRACT 8b, inside the caller's activity: it
// is the batch path (operation execution) beside the API's ShipmentLabel
// workflow, with the same steps (BuyLabel, RecordLabel, VoidLabel,
// FindLabel, EndLabelPurchase) and the same course (Course.Run), so a
// batch can buy many labels in one activity without starting a workflow
// per item. For one item it
//
//   - validates the input and the organization's data as CreateShipment
//     does (Invalid, NotFound, … before anything is written);
//   - inserts the shipment pending under in.Shipment.ID with in.Owner as
//     its purchase owner (a shipment already holding its label is returned
//     as done: nothing is bought again);
//   - asks the carrier once, marking the shipment first
//     (label_requested_at; a shipment inserted afresh is inserted marked);
//     a call that never reached the carrier is repeated a few times,
//     nothing else is;
//   - records the label as soon as the carrier answers (a shipment found,
//     not created, stashes the documents first, as BuyLabel does); a label
//     that cannot be recorded is voided;
//   - when the carrier's answer is lost, looks the label up (stash, then
//     the carrier's lookup by reference) and voids what is found, else
//     leaves the shipment as exception with the reason.
//
// The error is nil only when the label is bought and recorded; otherwise
// it is the same refusal CreateShipment gives (PurchaseFailure), and
// Result says what happened. The steps after the carrier's answer run even
// when ctx is cancelled. It may wait about a minute in all (the carrier
// call, then a few retries with backoff): heartbeat from another
// goroutine.
//
// A caller that finds an item interrupted (its activity died during the
// call) must not call PurchaseLabel again blindly but ResolveLabelPurchase,
// which never asks the carrier for a label. The actor needs
// shipments:write.
func (s *Service) PurchaseLabel(ctx context.Context, actor domain.Actor, in PurchaseLabelInput) (LabelPurchase, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return LabelPurchase{}, err
	}
	if in.Owner == "" {
		return LabelPurchase{}, domain.InvalidField("owner", "is required: the workflow id of the run that buys the label")
	}
	if in.Shipment.ID == uuid.Nil {
		return LabelPurchase{}, domain.InvalidField("id", "is required: the stable id of the shipment to buy")
	}
	orgID := actor.OrganizationID
	p, err := s.planIn(ctx, orgID, in.Shipment, in.Batch)
	if err != nil {
		return LabelPurchase{}, err
	}
	owner := in.Owner
	p.row.PurchaseOwner = &owner
	// The adapter is opened before the shipment is inserted: a shipment
	// inserted afresh is marked as asked of the carrier in the same
	// statement, and the carrier is asked next.
	carrier, acct, aerr := in.Batch.adapter(ctx, s, orgID, p.account.ID)
	if aerr == nil {
		p.row.LabelRequestedAt = &time.Time{}
	}
	cur, created, err := s.insertPending(ctx, p)
	if err != nil {
		return LabelPurchase{}, err
	}
	if cur.HasLabel() {
		return LabelPurchase{Shipment: cur, Result: PurchaseResult{ID: cur.ID.String(), Outcome: PurchaseDone, Reference: deref(cur.TrackingNumber)}}, nil
	}
	if created && aerr == nil {
		// Just created and marked as asked of the carrier: nothing was
		// stashed for it and nobody else buys it, so this is BuyLabel
		// without what cannot be there yet, asking the carrier once. The
		// documents are not stashed: they travel in memory to the record
		// step, which stores them in one statement, the first write after
		// the carrier's answer either way; a label that cannot be recorded
		// is voided (runDirect's course).
		return s.runDirect(ctx, orgID, p.account, cur.ID, func(ctx context.Context) (BuyLabelResult, error) {
			doc, err := s.createLabel(ctx, orgID, cur.ID, carrier, acct, p.request)
			return BuyLabelResult{Label: doc}, err
		})
	}
	return s.runDirect(ctx, orgID, p.account, cur.ID, func(ctx context.Context) (BuyLabelResult, error) {
		return s.BuyLabel(ctx, BuyLabelInput{OrganizationID: orgID, ShipmentID: cur.ID, CarrierAccountID: p.account.ID, Request: p.request})
	})
}

// createLabel asks the carrier for the shipment's label, once, with the
// shipment id as its reference, and logs the answer. The one carrier call
// of BuyLabel and of PurchaseLabel's fresh path.
func (s *Service) createLabel(ctx context.Context, orgID, shipmentID uuid.UUID, carrier carriers.Carrier, acct carriers.Account, req carriers.LabelRequest) (store.ShipmentLabelDoc, error) {
	req.Reference = shipmentID.String()
	l, err := carrier.CreateLabel(ctx, acct, req)
	if err != nil {
		s.log.WarnContext(ctx, "label purchase failed", "organization_id", orgID, "shipment_id", shipmentID, "error", err.Error())
		return store.ShipmentLabelDoc{}, carrierCallError(err)
	}
	s.log.InfoContext(ctx, "label bought", "organization_id", orgID, "shipment_id", shipmentID, "tracking_number", l.TrackingNumber)
	return LabelDoc(l), nil
}

// ResolveLabelPurchase settles the label purchase of a shipment whose
// PurchaseLabel was interrupted (the batch's activity died and ran again):
// it never asks the carrier for a label. A shipment holding its label is
// done; one whose label was stashed gets it recorded (or voided when it
// cannot be); one the carrier was never asked for is deleted (Result
// refused: nothing was bought, the item may be bought afresh); one the
// carrier may have answered is looked up, and what is found is voided,
// else it ends as exception (unknown). A shipment that does not exist was
// never created (NotFound, Result refused). The actor needs
// shipments:write.
func (s *Service) ResolveLabelPurchase(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID) (LabelPurchase, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return LabelPurchase{}, err
	}
	orgID := actor.OrganizationID
	sh, err := store.ShipmentByID(ctx, s.store.Pool, orgID, shipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return LabelPurchase{Result: PurchaseResult{ID: shipmentID.String(), Outcome: PurchaseRefused, Message: "the shipment was never created; nothing was bought"}},
			domain.NotFound("shipment")
	}
	if err != nil {
		return LabelPurchase{}, err
	}
	carrier := sh.Carrier
	switch {
	case sh.HasLabel():
		return LabelPurchase{Shipment: sh, Result: PurchaseResult{ID: sh.ID.String(), Outcome: PurchaseDone, Reference: deref(sh.TrackingNumber)}}, nil
	case sh.Status != store.ShipmentPending:
		res := PurchaseResult{ID: sh.ID.String(), Outcome: PurchaseUnknown, Message: purchaseErrorOf(sh)}
		return LabelPurchase{Shipment: sh, Result: res}, PurchaseFailure(carrier+" could not create the label", res, nil)
	case sh.CarrierAccountID == nil:
		res := PurchaseResult{ID: sh.ID.String(), Outcome: PurchaseUnknown, Message: LabelUnknownMessage + " (the carrier account was deleted)"}
		if err := s.EndLabelPurchase(context.WithoutCancel(ctx), orgID, sh.ID, true, res.Message); err != nil {
			return LabelPurchase{}, err
		}
		return LabelPurchase{Result: res}, PurchaseFailure(carrier+" could not create the label", res, nil)
	}
	acct := store.CarrierAccount{ID: *sh.CarrierAccountID, Carrier: sh.Carrier}
	return s.runDirect(ctx, orgID, acct, sh.ID, func(ctx context.Context) (BuyLabelResult, error) {
		return s.resumeBuy(ctx, orgID, sh.ID)
	})
}

// resumeBuy is the buy step of ResolveLabelPurchase: what BuyLabel finds
// before it would call the carrier (the label recorded, or stashed), and
// otherwise never a call: nothing was sent when the shipment was never
// marked, else the outcome is unknown.
func (s *Service) resumeBuy(ctx context.Context, orgID, shipmentID uuid.UUID) (BuyLabelResult, error) {
	sh, err := store.ShipmentByID(ctx, s.store.Pool, orgID, shipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return BuyLabelResult{}, purchaseGone("the shipment was deleted before its label was bought")
	}
	if err != nil {
		return BuyLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the shipment", fmt.Errorf("read shipment %s: %w", shipmentID, err))
	}
	if sh.HasLabel() {
		return BuyLabelResult{AlreadyRecorded: true, Label: store.ShipmentLabelDoc{TrackingNumber: deref(sh.TrackingNumber)}}, nil
	}
	if sh.Status != store.ShipmentPending {
		return BuyLabelResult{}, purchaseGone("the shipment is " + sh.Status + ", no longer pending its label")
	}
	stashed, found, err := store.StashedShipmentLabel(ctx, s.store.Pool, orgID, shipmentID)
	if err != nil {
		return BuyLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the label stash", fmt.Errorf("read the label stash of shipment %s: %w", shipmentID, err))
	}
	if found {
		return BuyLabelResult{Label: stashed}, nil
	}
	if sh.LabelRequestedAt == nil {
		msg := "the purchase stopped before the carrier was asked; nothing was bought"
		return BuyLabelResult{}, &StepError{Type: ErrTypeCarrierRefused, Message: msg, Failure: &CarrierFailure{Message: msg}, NonRetryable: true}
	}
	return BuyLabelResult{}, &StepError{Type: ErrTypeCarrierOutcomeUnknown, Message: "the purchase stopped after the carrier was asked", NonRetryable: true}
}

// purchaseErrorOf is the reason an exception shipment keeps of its
// purchase (metadata.label_purchase_error), or the generic one.
func purchaseErrorOf(sh store.Shipment) string {
	var meta map[string]any
	_ = json.Unmarshal(sh.Metadata, &meta)
	if msg, ok := meta["label_purchase_error"].(string); ok && msg != "" {
		return msg
	}
	return "the shipment is " + sh.Status + ": " + LabelUnknownMessage
}

// Direct runs of a purchase's steps (PurchaseLabel, ResolveLabelPurchase):
// what the workflow's activity options do for the ShipmentLabel run.
var (
	// directNotSentAttempts bounds the attempts of a call that never
	// reached the carrier; directNotSentBackoff is the first pause between
	// them (doubling), directMaxRetryAfter caps a throttling carrier's
	// wait.
	directNotSentAttempts = 4
	directNotSentBackoff  = time.Second
	directMaxRetryAfter   = 30 * time.Second
	// directStepAttempts bounds the attempts of a record, void, lookup or
	// end step that failed in a way worth retrying; directStepBackoff is
	// the first pause (doubling).
	directStepAttempts = 5
	directStepBackoff  = 200 * time.Millisecond
	// directStepTimeout bounds one step's attempt.
	directStepTimeout = 45 * time.Second
)

// runDirect runs the purchase course of shipment id with direct calls of
// the steps (buy given: BuyLabel, or resumeBuy) and answers as
// PurchaseLabel does.
func (s *Service) runDirect(ctx context.Context, orgID uuid.UUID, acct store.CarrierAccount, id uuid.UUID,
	buy func(context.Context) (BuyLabelResult, error)) (LabelPurchase, error) {
	// What follows the carrier's answer runs even when ctx is cancelled.
	dctx := context.WithoutCancel(ctx)
	var (
		bought   BuyLabelResult
		recorded *Shipment
	)
	course := Course{
		ID: id.String(), Words: LabelWords, Unknown: LabelUnknownMessage,
		Buy: func() (string, []string, bool, error) {
			err := retryNotSent(ctx, func() error {
				var err error
				bought, err = buy(ctx)
				return err
			})
			return bought.Label.TrackingNumber, nil, bought.AlreadyRecorded, err
		},
		Record: func() error {
			return retryStep(dctx, func(ctx context.Context) error {
				sh, err := s.recordLabel(ctx, orgID, id, bought.Label)
				if err == nil {
					recorded = &sh
				}
				return err
			})
		},
		Undo: func(ref string) error {
			return retryStep(dctx, func(ctx context.Context) error { return s.VoidLabel(ctx, orgID, acct.ID, ref) })
		},
		Find: func() (string, bool) {
			var found FoundLabel
			err := retryStep(dctx, func(ctx context.Context) error {
				var err error
				found, err = s.FindLabel(ctx, orgID, acct.ID, id.String())
				return err
			})
			if err != nil {
				s.log.WarnContext(ctx, "label lookup failed", "shipment_id", id, "error", err.Error())
			}
			return found.TrackingNumber, found.Found
		},
		End: func(unknown bool, reason string) error {
			return retryStep(dctx, func(ctx context.Context) error { return s.EndLabelPurchase(ctx, orgID, id, unknown, reason) })
		},
		ErrorType: StepErrorType,
		Failure: func(err error) *CarrierFailure {
			var se *StepError
			if errors.As(err, &se) {
				return se.Failure
			}
			return nil
		},
		Message: stepMessage,
		Warn: func(msg string, kv ...any) {
			s.log.WarnContext(ctx, msg, kv...)
		},
	}
	res := course.Run()
	if res.Outcome != PurchaseDone {
		out := LabelPurchase{Result: res}
		if sh, err := store.ShipmentByID(dctx, s.store.Pool, orgID, id); err == nil {
			out.Shipment = sh
		}
		return out, PurchaseFailure(acct.Carrier+" could not create the label", res, serviceRefusalField)
	}
	var (
		sh  Shipment
		err error
	)
	if recorded != nil {
		sh = *recorded
	} else if sh, err = store.ShipmentByID(dctx, s.store.Pool, orgID, id); err != nil {
		return LabelPurchase{Result: res}, err
	}
	if sh.OrderID != nil {
		rules.OrderEvent(dctx, s.hooks, orgID, *sh.OrderID, rules.TriggerShipmentCreated)
	}
	rules.Notify(dctx, s.events, orgID, rules.EventShipmentCreated, []uuid.UUID{sh.ID})
	return LabelPurchase{Shipment: sh, Result: res}, nil
}

// stepMessage is a step error's text for people.
func stepMessage(err error) string {
	var se *StepError
	switch {
	case errors.As(err, &se):
		return se.Message
	case errors.Is(err, context.DeadlineExceeded):
		return "the call did not complete in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	}
	return domain.TenantText(err.Error())
}

// retryNotSent runs call, repeating it while it fails with
// ErrTypeCarrierNotSent (the call never reached the carrier), as the
// workflow's spendOnce does.
func retryNotSent(ctx context.Context, call func() error) error {
	pause := directNotSentBackoff
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || attempt >= directNotSentAttempts || StepErrorType(err) != ErrTypeCarrierNotSent {
			return err
		}
		wait := pause
		var se *StepError
		if errors.As(err, &se) && se.Failure != nil && se.Failure.RetryAfter > wait {
			wait = min(se.Failure.RetryAfter, directMaxRetryAfter)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return err
		}
		pause *= 2
	}
}

// retryStep runs a record, void, lookup or end step (each idempotent),
// each attempt bounded by directStepTimeout, repeating it while it fails
// in a way worth retrying (not a non-retryable StepError).
func retryStep(ctx context.Context, step func(context.Context) error) error {
	pause := directStepBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, directStepTimeout)
		err := step(actx)
		cancel()
		var se *StepError
		if err == nil || attempt >= directStepAttempts || errors.As(err, &se) && se.NonRetryable {
			return err
		}
		if serr := sleep(ctx, pause); serr != nil {
			return err
		}
		pause *= 2
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
