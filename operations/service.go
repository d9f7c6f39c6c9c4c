// Package operations holds the bulk operations domain (spec Part 3,
// CONTRACT 5 and 10): operation types, operations, their items, actions
// and history, and their execution and undo. The API's handlers, the
// Temporal activities and the agent's tools call the one Service.
//
// Execution runs in one OperationExecute workflow per operation
// (operation/<id>) that processes the items in batches; each batch is an
// activity that calls ProcessBatch. An item is claimed pending →
// processing in the database before its effect and settled with its
// result, so a batch run again never repeats an item: an item it finds
// processing is settled through the label purchase's resolution
// (Labels.ResolveLabelPurchase), never bought again. PostgreSQL is the
// truth the API reads; the workflow only drives.
package operations

import (
	"context"
	"io"
	"log/slog"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// Runs is the port through which the Service drives the operation's
// workflows (the Temporal adapter is worker.TemporalOperations).
type Runs interface {
	// Execute starts OperationExecute (operation/<id>) with
	// update-with-start, or delivers the execute update to the run going;
	// the update moves the operation to executing (BeginExecution) and
	// answers. A run that refuses (already executing) is Conflict.
	Execute(ctx context.Context, in ExecuteRun) error
	// Pause, Resume and Cancel send the update of that name to the run
	// going; a run that refuses is Conflict, a run that does not exist
	// is ErrNoRun.
	Pause(ctx context.Context, orgID, opID uuid.UUID) error
	Resume(ctx context.Context, orgID, opID uuid.UUID) error
	Cancel(ctx context.Context, orgID, opID uuid.UUID) error
	// Undo starts OperationUndo (operation-undo/<historyId>).
	Undo(ctx context.Context, in UndoRun) error
}

// ExecuteRun is an execution to start.
type ExecuteRun struct {
	OrganizationID uuid.UUID
	OperationID    uuid.UUID
	// Actor is who asked (the run acts as the operation on its behalf).
	Actor domain.Actor
}

// UndoRun is an undo to start.
type UndoRun struct {
	OrganizationID uuid.UUID
	OperationID    uuid.UUID
	HistoryID      uuid.UUID
	Actor          domain.Actor
}

// Labels is the label port: the shipping domain's money-safe purchase
// inside a batch (shipping.Service implements it).
type Labels interface {
	PurchaseLabel(ctx context.Context, actor domain.Actor, in shipping.PurchaseLabelInput) (shipping.LabelPurchase, error)
	ResolveLabelPurchase(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID) (shipping.LabelPurchase, error)
	QuoteOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, opts shipping.RateOptions) (shipping.RateQuote, error)
	DeleteShipment(ctx context.Context, actor domain.Actor, id uuid.UUID) error
}

// Dispatches is the dispatch port: an order sent to a bridge (a dispatch
// assignment with metadata.trigger operation), and the cancellation of an
// assignment not yet pushed.
type Dispatches interface {
	DispatchToBridge(ctx context.Context, actor domain.Actor, in DispatchInput) (assignmentID uuid.UUID, err error)
	// CancelAssignment cancels an assignment not yet pushed; pushed is
	// true when it was pushed already (nothing to cancel).
	CancelAssignment(ctx context.Context, actor domain.Actor, assignmentID uuid.UUID) (pushed bool, err error)
}

// DispatchInput is one order to dispatch. Key is stable per item: the
// same key is the same dispatch.
type DispatchInput struct {
	OrderID  uuid.UUID
	BridgeID uuid.UUID
	Key      uuid.UUID
}

// Transforms runs an organization's transformations of a trigger point
// (before_operation, after_operation) on an order and keeps what they
// return (once per key: the item); a failing transformation is an error
// naming it.
type Transforms interface {
	TransformOrder(ctx context.Context, orgID, orderID, key uuid.UUID, trigger string) error
}

// BatchTransforms is Transforms that can serve a batch of items: Batch
// gives the Transforms of one batch, which reads each trigger point's
// transformations once instead of once per item.
type BatchTransforms interface {
	Transforms
	Batch() Transforms
}

// Deps are the Service's dependencies.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	// Runs drives the workflows (nil: execute, pause, resume, cancel of a
	// running operation and undo answer that workflows are unavailable).
	Runs Runs
	// Labels buys and voids labels (nil: items that need one fail).
	Labels Labels
	// Dispatches sends orders to bridges (nil: items that need one fail).
	Dispatches Dispatches
	// Transforms runs before_operation and after_operation (nil: none).
	Transforms Transforms
}

// Service is the operations domain's operations.
type Service struct {
	store      *store.Store
	log        *slog.Logger
	runs       Runs
	labels     Labels
	dispatches Dispatches
	transforms Transforms
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{store: d.Store, log: log, runs: d.Runs, labels: d.Labels, dispatches: d.Dispatches, transforms: d.Transforms}
}

// Scopes of the operations endpoints (CONTRACT 3).
const (
	ScopeRead    = "operations:read"
	ScopeWrite   = "operations:write"
	ScopeExecute = "operations:execute"
)

// Limits of the specification.
const (
	MaxIDs         = 500
	MaxNameLen     = 255
	MaxDescription = 1000
	HistoryLimit   = 50
)

// performer names the actor in history (created_by, performed_by).
func performer(a domain.Actor) *string {
	kind, id, name := a.Attribution()
	s := kind
	switch {
	case id != nil:
		s += ":" + *id
	case name != nil:
		s += ":" + *name
	}
	return &s
}
