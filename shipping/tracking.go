package shipping

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// Shipment tracking: checkpoints recorded by clients and the tracking
// poller, and the map of the shipments on their way. Their scopes follow
// shipments (CONTRACT 3).

// Checkpoint is a tracking checkpoint as stored.
type Checkpoint = store.Checkpoint

// TrackingMapItem is a shipment of the tracking map.
type TrackingMapItem = store.TrackingMapItem

// CheckpointStatuses are a checkpoint's statuses.
var CheckpointStatuses = store.CheckpointStatuses

// MaxCheckpointBatch is the most checkpoints one batch records.
const MaxCheckpointBatch = 1000

// RecordCheckpoint records one checkpoint (inserted; one with the same
// shipment, source and sourceEventId already recorded is a Conflict). The
// actor needs shipments:write.
func (s *Service) RecordCheckpoint(ctx context.Context, actor domain.Actor, c Checkpoint) (Checkpoint, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return Checkpoint{}, err
	}
	res, err := store.RecordCheckpoints(ctx, s.store.Pool, store.TrackingWrite{
		OrganizationID: actor.OrganizationID, Checkpoints: []store.Checkpoint{c}, InsertOnly: true,
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Checkpoint{}, domain.NotFound("shipment")
	case errors.Is(err, store.ErrConflict):
		return Checkpoint{}, domain.Conflict("a checkpoint with this shipmentId, source and sourceEventId already exists")
	case err != nil:
		return Checkpoint{}, err
	}
	s.tellExceptions(ctx, actor.OrganizationID, res.Changes)
	return res.Checkpoints[0], nil
}

// RecordCheckpoints records up to MaxCheckpointBatch checkpoints in one
// transaction of a constant number of statements: upsert on shipment +
// source + sourceEventId; a checkpoint without sourceEventId is always
// inserted. A shipment not in the organization refuses the whole batch,
// naming it at its first position (checkpoints[i].shipmentId). The actor
// needs shipments:write.
func (s *Service) RecordCheckpoints(ctx context.Context, actor domain.Actor, cps []Checkpoint) ([]Checkpoint, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return nil, err
	}
	res, err := store.RecordCheckpoints(ctx, s.store.Pool, store.TrackingWrite{OrganizationID: actor.OrganizationID, Checkpoints: cps})
	var unknown *store.UnknownShipmentsError
	if errors.As(err, &unknown) {
		return nil, unknownShipments(cps, unknown.IDs)
	}
	if err == nil {
		s.tellExceptions(ctx, actor.OrganizationID, res.Changes)
	}
	return res.Checkpoints, err
}

// tellExceptions tells the shipments a recording moved to exception to
// the events' listener, one batch.
func (s *Service) tellExceptions(ctx context.Context, orgID uuid.UUID, changes []store.StatusChange) {
	var ids []uuid.UUID
	for _, c := range changes {
		if c.To == store.TrackingException && c.From != store.TrackingException {
			ids = append(ids, c.ShipmentID)
		}
	}
	rules.Notify(ctx, s.events, orgID, rules.EventTrackingException, ids)
}

// unknownShipments names shipments that are not the organization's: one
// field per shipment, at its first position.
func unknownShipments(cps []Checkpoint, ids []uuid.UUID) error {
	unknown := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		unknown[id] = true
	}
	var v domain.FieldErrors
	for i, c := range cps {
		if unknown[c.ShipmentID] {
			delete(unknown, c.ShipmentID)
			v.Add(fmt.Sprintf("checkpoints[%d].shipmentId", i), "shipment "+c.ShipmentID.String()+" is not a shipment of this organization")
		}
	}
	return v.Err()
}

// ListCheckpoints lists a shipment's checkpoints by sequence ascending,
// with their number. The actor needs shipments:read.
func (s *Service) ListCheckpoints(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID, limit, offset int) ([]Checkpoint, int, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return nil, 0, err
	}
	if err := store.ShipmentOfOrganization(ctx, s.store.Pool, actor.OrganizationID, shipmentID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, 0, domain.NotFound("shipment")
		}
		return nil, 0, err
	}
	return store.ListCheckpoints(ctx, s.store.Pool, actor.OrganizationID, shipmentID, limit, offset)
}

// TrackingMapInput filters the map.
type TrackingMapInput struct {
	Status        string
	BridgeID      *uuid.UUID
	Limit, Offset int
}

// TrackingMap lists the organization's shipments that have coordinates,
// newest first, with their number. The actor needs shipments:read.
func (s *Service) TrackingMap(ctx context.Context, actor domain.Actor, in TrackingMapInput) ([]TrackingMapItem, int, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return nil, 0, err
	}
	return store.TrackingMap(ctx, s.store.Pool, actor.OrganizationID, store.TrackingMapFilter{
		Status: in.Status, BridgeID: in.BridgeID, Limit: in.Limit, Offset: in.Offset,
	})
}
