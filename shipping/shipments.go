package shipping

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Shipment statuses, sort fields and the summaries a list includes.
var (
	// ShipmentStatuses are every shipment status, in lifecycle order.
	ShipmentStatuses = store.ShipmentStatuses
	// ShipmentSortFields are the fields a list sorts by.
	ShipmentSortFields = store.ShipmentSortColumns
)

// Included summaries of a shipment list.
type (
	// ShipmentBridge is a shipment's bridge (include=bridge).
	ShipmentBridge = store.OrderBridge
	// ShipmentOrder is a shipment's order (include=order).
	ShipmentOrder = store.ShipmentOrder
)

// ListShipmentsInput is a filter, a sort, a page and what to include.
type ListShipmentsInput struct {
	Status  string
	OrderID *uuid.UUID
	Carrier string
	// Sort is a key of ShipmentSortFields ("" is created_at).
	Sort          string
	Desc          bool
	Limit, Offset int
	// IncludeBridge and IncludeOrder load the shipments' bridges and orders.
	IncludeBridge, IncludeOrder bool
}

// ShipmentPage is one page of shipments, the number of all that match,
// and the included bridges and orders by id (nil when not asked).
type ShipmentPage struct {
	Items   []Shipment
	Total   int
	Bridges map[uuid.UUID]ShipmentBridge
	Orders  map[uuid.UUID]ShipmentOrder
}

// ListShipments lists the organization's shipments. The actor needs
// shipments:read.
func (s *Service) ListShipments(ctx context.Context, actor domain.Actor, in ListShipmentsInput) (ShipmentPage, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return ShipmentPage{}, err
	}
	list, total, err := store.ListShipments(ctx, s.store.Pool, actor.OrganizationID, store.ShipmentListParams{
		Filter: store.ShipmentFilter{Status: in.Status, OrderID: in.OrderID, Carrier: in.Carrier},
		Sort:   in.Sort, Desc: in.Desc, Limit: in.Limit, Offset: in.Offset,
	})
	if err != nil {
		return ShipmentPage{}, err
	}
	page := ShipmentPage{Items: list, Total: total}
	return page, s.include(ctx, actor.OrganizationID, &page, in.IncludeBridge, in.IncludeOrder)
}

// include loads the bridges and orders of a page's shipments, each kind
// in one query.
func (s *Service) include(ctx context.Context, orgID uuid.UUID, page *ShipmentPage, bridges, orders bool) error {
	var err error
	if bridges {
		if page.Bridges, err = store.OrderBridges(ctx, s.store.Pool, orgID, uniqueIDs(page.Items, func(sh Shipment) *uuid.UUID { return sh.BridgeID })); err != nil {
			return err
		}
	}
	if orders {
		if page.Orders, err = store.ShipmentOrders(ctx, s.store.Pool, orgID, uniqueIDs(page.Items, func(sh Shipment) *uuid.UUID { return sh.OrderID })); err != nil {
			return err
		}
	}
	return nil
}

func uniqueIDs(list []Shipment, id func(Shipment) *uuid.UUID) []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	out := make([]uuid.UUID, 0, len(list))
	for _, sh := range list {
		if v := id(sh); v != nil && !seen[*v] {
			seen[*v] = true
			out = append(out, *v)
		}
	}
	return out
}

// GetShipment is one shipment of the organization, with its bridge and
// order when asked (the page's maps). The actor needs shipments:read.
func (s *Service) GetShipment(ctx context.Context, actor domain.Actor, id uuid.UUID, includeBridge, includeOrder bool) (ShipmentPage, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return ShipmentPage{}, err
	}
	sh, err := s.shipment(ctx, actor.OrganizationID, id)
	if err != nil {
		return ShipmentPage{}, err
	}
	page := ShipmentPage{Items: []Shipment{sh}, Total: 1}
	return page, s.include(ctx, actor.OrganizationID, &page, includeBridge, includeOrder)
}

// shipment loads a shipment of the organization (NotFound otherwise).
func (s *Service) shipment(ctx context.Context, orgID, id uuid.UUID) (Shipment, error) {
	sh, err := store.ShipmentByID(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return sh, domain.NotFound("shipment")
	}
	return sh, err
}

// UpdateShipmentInput changes a shipment; nil fields stay as they are.
type UpdateShipmentInput struct {
	// Status may be any shipment status (tracking moves it too).
	Status *string
	// TrackingNumber: a pointer to nil clears it.
	TrackingNumber **string
	// Metadata is merged one level deep: its keys overwrite, a nil value
	// removes its key.
	Metadata map[string]any
	// Carrier and Service are fixed once the label is bought: only the
	// shipment's own value is accepted (nil: not sent; "" or any other
	// value is refused).
	Carrier, Service *string
}

// UpdateShipment applies status, tracking number and metadata. The actor
// needs shipments:write.
func (s *Service) UpdateShipment(ctx context.Context, actor domain.Actor, id uuid.UUID, in UpdateShipmentInput) (Shipment, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return Shipment{}, err
	}
	cur, err := s.shipment(ctx, actor.OrganizationID, id)
	if err != nil {
		return Shipment{}, err
	}
	var v domain.FieldErrors
	if in.Status != nil && !containsStatus(ShipmentStatuses, *in.Status) {
		v.Add("status", "must be one of "+strings.Join(ShipmentStatuses, ", "))
	}
	if in.TrackingNumber != nil && *in.TrackingNumber != nil {
		v.MaxLen("tracking_number", **in.TrackingNumber, MaxTrackingLen)
	}
	for _, fixed := range []struct {
		key      string
		sent     *string
		shipment string
	}{{"carrier", in.Carrier, cur.Carrier}, {"service", in.Service, cur.Service}} {
		if fixed.sent != nil && strings.TrimSpace(*fixed.sent) != fixed.shipment {
			v.Add(fixed.key, "cannot be changed: the shipment's label was generated for "+fixed.shipment)
		}
	}
	if err := v.Err(); err != nil {
		return Shipment{}, err
	}
	sh, err := store.PatchShipment(ctx, s.store, actor.OrganizationID, id, store.ShipmentPatch{Status: in.Status, TrackingNumber: in.TrackingNumber, Metadata: in.Metadata})
	if errors.Is(err, store.ErrNotFound) {
		return sh, domain.NotFound("shipment")
	}
	return sh, err
}

// DeleteShipment deletes a shipment for good. A label that is bought but
// not yet moving (label_created) is voided with the carrier first; a
// carrier refusal is Upstream and the shipment stays. A shipment whose
// carrier account was deleted cannot be voided and is deleted as it is;
// one already moving (or delivered) has nothing left to void. The actor
// needs shipments:write.
func (s *Service) DeleteShipment(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return err
	}
	orgID := actor.OrganizationID
	sh, err := s.shipment(ctx, orgID, id)
	if err != nil {
		return err
	}
	if sh.Status == store.ShipmentLabelCreated && sh.TrackingNumber != nil && *sh.TrackingNumber != "" && sh.CarrierAccountID != nil {
		acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sh.CarrierAccountID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			carrier, adapterAcct, err := s.adapter(acct)
			if err != nil {
				return err
			}
			vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), carrierTimeout)
			defer cancel()
			// A number the carrier does not know has nothing to void.
			if err := carrier.VoidLabel(vctx, adapterAcct, *sh.TrackingNumber); err != nil && !errors.Is(err, carriers.ErrNotFound) {
				return s.carrierCallFailure(ctx, acct.Carrier+" refused to void the label", err)
			}
		}
	}
	if err := store.DeleteShipment(ctx, s.store.Pool, orgID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return domain.NotFound("shipment")
		}
		return err
	}
	return nil
}

// adapter is the account's carrier adapter and its opened account, for a
// call made while the caller waits.
func (s *Service) adapter(acct store.CarrierAccount) (carriers.Carrier, carriers.Account, error) {
	if s.carriers == nil {
		return nil, carriers.Account{}, errors.New("no carrier registry configured")
	}
	c, err := s.carriers.Get(acct.Carrier)
	if err != nil {
		return nil, carriers.Account{}, err
	}
	if s.secrets == nil {
		return nil, carriers.Account{}, errors.New("no encryption key configured")
	}
	a, err := store.AdapterAccount(s.secrets, acct)
	if err != nil {
		return nil, carriers.Account{}, fmt.Errorf("open the credentials of carrier account %s: %w", acct.ID, err)
	}
	return c, a, nil
}

// LabelFile is a label document to serve.
type LabelFile struct {
	ContentType string
	Filename    string
	Document    []byte
}

// ShipmentLabel is the label document of a shipment: application/pdf or
// application/x-zpl. A label of several packages serves one package's
// label with piece N (1-based; 0: the first package's PDF, or every
// package's ZPL one after the other). The actor needs shipments:read.
func (s *Service) ShipmentLabel(ctx context.Context, actor domain.Actor, id uuid.UUID, piece string) (LabelFile, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return LabelFile{}, err
	}
	return s.labelFile(ctx, actor.OrganizationID, id, piece)
}

func (s *Service) labelFile(ctx context.Context, orgID, id uuid.UUID, piece string) (LabelFile, error) {
	l, err := store.ShipmentLabel(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return LabelFile{}, domain.NotFound("shipment label")
	}
	if err != nil {
		return LabelFile{}, err
	}
	doc := l.Document
	suffix := ""
	if piece != "" {
		n, err := strconv.Atoi(piece)
		pieces := max(len(l.PieceDocuments), 1)
		if err != nil || n < 1 || n > pieces {
			return LabelFile{}, domain.InvalidField("piece", fmt.Sprintf("must be an integer from 1 to %d", pieces))
		}
		if len(l.PieceDocuments) > 0 {
			doc = l.PieceDocuments[n-1]
			suffix = "-" + strconv.Itoa(n)
		}
	}
	ext := ".pdf"
	if l.Format == carriers.FormatZPL {
		ext = ".zpl"
	}
	return LabelFile{ContentType: l.ContentType, Filename: "label-" + id.String() + suffix + ext, Document: doc}, nil
}
