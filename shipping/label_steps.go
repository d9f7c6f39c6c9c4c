package shipping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// The steps of a label purchase (the Course of ShipmentLabel and of
// PurchaseLabel). They are not entry points: the actor was checked when
// the purchase began, and each step is idempotent, so a runner may repeat
// one (the activities' retries, a batch resumed after a crash).

// BuyLabelInput is a label to buy for a pending shipment: the request
// validated when the shipment was created (its Reference becomes the
// shipment id).
type BuyLabelInput struct {
	OrganizationID   uuid.UUID
	ShipmentID       uuid.UUID
	CarrierAccountID uuid.UUID
	Request          carriers.LabelRequest
}

// BuyLabelResult is the bought label, as the shipment records it.
type BuyLabelResult struct {
	Label store.ShipmentLabelDoc `json:"label"`
	// AlreadyRecorded: the shipment already holds its label (an earlier
	// run, or an operator's reset); nothing was bought.
	AlreadyRecorded bool `json:"alreadyRecorded"`
}

// BuyLabel buys the label of a pending shipment: one carrier call, with
// the shipment id as the carrier's reference. It buys nothing when the
// shipment is gone or no longer pending (ErrTypePurchaseGone), already
// holds its label (AlreadyRecorded), or has a label stashed by an earlier
// call whose answer was lost (that label is returned, to be recorded: never
// a second one). The shipment is marked (label_requested_at) before the
// call, and the documents are stashed as soon as the carrier answers, so
// that the label travels in no payload and a lost answer is found. A
// failed call is a StepError (carrierCallError); only ErrTypeCarrierNotSent
// may be repeated.
func (s *Service) BuyLabel(ctx context.Context, in BuyLabelInput) (BuyLabelResult, error) {
	orgID, shipmentID := in.OrganizationID, in.ShipmentID
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
	// A label already bought for this shipment (an earlier execution whose
	// answer was lost, a run reset in the UI) is recorded, not bought again.
	if stashed, found, err := store.StashedShipmentLabel(ctx, s.store.Pool, orgID, shipmentID); err != nil {
		return BuyLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the label stash", fmt.Errorf("read the label stash of shipment %s: %w", shipmentID, err))
	} else if found {
		s.log.InfoContext(ctx, "label already bought for this shipment; recording it", "organization_id", orgID, "shipment_id", shipmentID, "tracking_number", stashed.TrackingNumber)
		return BuyLabelResult{Label: stashed}, nil
	}
	carrier, acct, err := s.accountAdapter(ctx, orgID, in.CarrierAccountID, true)
	if err != nil {
		return BuyLabelResult{}, err
	}
	switch err := store.MarkLabelRequested(ctx, s.store.Pool, orgID, shipmentID); {
	case errors.Is(err, store.ErrNotFound):
		return BuyLabelResult{}, purchaseGone("the shipment was deleted before its label was bought")
	case err != nil:
		return BuyLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "mark the shipment", fmt.Errorf("mark shipment %s: %w", shipmentID, err))
	}
	doc, err := s.createLabel(ctx, orgID, shipmentID, carrier, acct, in.Request)
	if err != nil {
		return BuyLabelResult{}, err
	}
	// The documents go to the stash at once: they need not travel through
	// Temporal (whatever their size), and a lost answer can be found there.
	// If the stash cannot be written they travel in the result as before.
	if err := store.StashShipmentLabel(ctx, s.store.Pool, orgID, shipmentID, doc); err != nil {
		s.log.WarnContext(ctx, "label documents not stashed; they travel in the result", "shipment_id", shipmentID, "error", err.Error())
	} else {
		doc.Document, doc.Pieces, doc.Stashed = nil, nil, true
	}
	return BuyLabelResult{Label: doc}, nil
}

// LabelDoc is what the store keeps of a bought label.
func LabelDoc(l *carriers.Label) store.ShipmentLabelDoc {
	cur := l.Currency
	if cur == "" {
		cur = "USD"
	}
	doc := store.ShipmentLabelDoc{
		TrackingNumber: l.TrackingNumber, RateAmount: math.Round(l.TotalPrice*100) / 100, RateCurrency: cur,
		Format: l.Format, ContentType: l.ContentType, Document: l.Document,
	}
	if doc.Format == "" {
		doc.Format = carriers.FormatPDF
	}
	if doc.ContentType == "" {
		doc.ContentType = "application/pdf"
		if doc.Format == carriers.FormatZPL {
			doc.ContentType = "application/x-zpl"
		}
	}
	if !l.ShipDate.IsZero() {
		d := l.ShipDate
		doc.ShipDate = &d
	}
	if len(l.Pieces) > 1 {
		for _, p := range l.Pieces {
			doc.TrackingNumbers = append(doc.TrackingNumbers, p.TrackingNumber)
			doc.Pieces = append(doc.Pieces, p.Document)
		}
		if doc.Format == carriers.FormatZPL {
			// ZPL labels print one after the other from one stream.
			doc.Document = bytes.Join(doc.Pieces, []byte("\n"))
		}
	}
	if len(doc.Document) == 0 && len(l.Pieces) > 0 {
		doc.Document = l.Pieces[0].Document
	}
	raw := l.Raw
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	doc.CarrierResponse, _ = json.Marshal(map[string]any{
		"serviceType": l.ServiceType, "serviceName": l.ServiceName, "zone": l.Zone,
		"estimatedDelivery": l.EstimatedDelivery, "breakdown": l.Breakdown, "trackingNumbers": doc.TrackingNumbers,
		"raw": raw,
	})
	return doc
}

// RecordLabel records a bought label on its pending shipment
// (label_created). Repeating it changes nothing. A shipment deleted
// meanwhile, or holding another label, is ErrTypePurchaseGone: the label
// must then be voided.
func (s *Service) RecordLabel(ctx context.Context, orgID, shipmentID uuid.UUID, label store.ShipmentLabelDoc) error {
	_, err := s.recordLabel(ctx, orgID, shipmentID, label)
	return err
}

// recordLabel is RecordLabel, answering the shipment as recorded.
func (s *Service) recordLabel(ctx context.Context, orgID, shipmentID uuid.UUID, label store.ShipmentLabelDoc) (Shipment, error) {
	sh, err := store.CompleteShipmentLabel(ctx, s.store.Pool, orgID, shipmentID, label)
	if errors.Is(err, store.ErrNotFound) {
		return sh, purchaseGone("the shipment was deleted while its label was being bought")
	}
	if errors.Is(err, store.ErrLabelStashMissing) {
		return sh, purchaseGone("the label's documents were lost before it was recorded")
	}
	if err != nil {
		return sh, fmt.Errorf("record the label of shipment %s: %w", shipmentID, err)
	}
	if !label.Recorded(sh) {
		return sh, purchaseGone("the shipment is " + sh.Status + " without this label; it cannot take it")
	}
	return sh, nil
}

// VoidLabel voids a bought label that could not be recorded (the
// compensation of a purchase), and drops its stash so that no later run
// records it. Voiding is safe to repeat, so every failure but a definite
// refusal may be repeated; a label the carrier does not know has nothing
// to void.
func (s *Service) VoidLabel(ctx context.Context, orgID, acctID uuid.UUID, trackingNumber string) error {
	carrier, acct, err := s.accountAdapter(ctx, orgID, acctID, false)
	if err != nil {
		return err
	}
	if err := carrier.VoidLabel(ctx, acct, trackingNumber); err != nil && !errors.Is(err, carriers.ErrNotFound) {
		return compensationError(err)
	}
	s.log.InfoContext(ctx, "unrecorded label voided", "organization_id", orgID, "tracking_number", trackingNumber)
	return store.DropLabelStash(ctx, s.store.Pool, orgID, trackingNumber)
}

// FoundLabel tells what is known of a label bought with a reference.
type FoundLabel struct {
	// Supported is false when the carrier offers no lookup by reference.
	Supported      bool   `json:"supported"`
	Found          bool   `json:"found"`
	TrackingNumber string `json:"trackingNumber"`
}

// FindLabel tells whether a purchase whose answer was lost bought a label:
// from the shipment's label stash (the purchase wrote it before its answer
// was lost), else by asking the carrier when it offers a lookup by
// reference (carriers.LabelFinder). Only a label found is conclusive: a
// carrier may index a label some time after selling it.
func (s *Service) FindLabel(ctx context.Context, orgID, acctID uuid.UUID, reference string) (FoundLabel, error) {
	if shipmentID, perr := uuid.Parse(reference); perr == nil {
		stashed, found, err := store.StashedShipmentLabel(ctx, s.store.Pool, orgID, shipmentID)
		if err != nil {
			return FoundLabel{}, fmt.Errorf("read the label stash of shipment %s: %w", shipmentID, err)
		}
		if found {
			return FoundLabel{Supported: true, Found: true, TrackingNumber: stashed.TrackingNumber}, nil
		}
	}
	carrier, acct, err := s.accountAdapter(ctx, orgID, acctID, false)
	if err != nil {
		return FoundLabel{}, err
	}
	finder, ok := carrier.(carriers.LabelFinder)
	if !ok {
		return FoundLabel{}, nil
	}
	tn, found, err := finder.FindLabel(ctx, acct, reference)
	if err != nil {
		// Worth asking again; not an answer either way.
		return FoundLabel{}, &StepError{Type: ErrTypeCarrierOutcomeUnknown, Message: "look up the label of reference " + reference + ": " + CarrierErrorMessage(err), Err: err}
	}
	return FoundLabel{Supported: true, Found: found, TrackingNumber: tn}, nil
}

// EndLabelPurchase ends a pending shipment whose label was not bought:
// deleted when nothing was bought, exception with the reason when the
// outcome is unknown. A shipment no longer pending is left as it is. The
// reason is stored as a tenant may read it (domain.TenantText).
func (s *Service) EndLabelPurchase(ctx context.Context, orgID, shipmentID uuid.UUID, unknown bool, reason string) error {
	var err error
	if unknown {
		_, err = store.FailPendingShipment(ctx, s.store.Pool, orgID, shipmentID, domain.TenantText(reason))
	} else {
		_, err = store.DeletePendingShipment(ctx, s.store.Pool, orgID, shipmentID)
	}
	if err != nil {
		return fmt.Errorf("end the purchase of shipment %s: %w", shipmentID, err)
	}
	return nil
}
