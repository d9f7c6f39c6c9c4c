package operations

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Operation is an operation with its counters.
type Operation = store.Operation

// Type is an operation type (spec Part 3; CONTRACT 10).
type Type struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Icon                 string          `json:"icon"`
	Category             string          `json:"category"`
	ConfigSchema         json.RawMessage `json:"configSchema"`
	SupportsBulk         bool            `json:"supportsBulk"`
	SupportsUndo         bool            `json:"supportsUndo"`
	MaxBatchSize         int             `json:"maxBatchSize"`
	RequiresConfirmation bool            `json:"requiresConfirmation"`
	RequiredPermissions  []string        `json:"requiredPermissions"`
	IsActive             bool            `json:"isActive"`
	IsSystem             bool            `json:"isSystem"`
	SortOrder            int             `json:"sortOrder"`
	CreatedAt            time.Time       `json:"createdAt"`
	UpdatedAt            time.Time       `json:"updatedAt"`
	// field is the config's one required field (a UUID).
	field string
}

// Action type ids.
const (
	ActionAssignRate         = "assign-rate"
	ActionOverrideCarrier    = "override-carrier"
	ActionOverrideDispatcher = "override-dispatcher"
)

// typesSince is when the system types were defined.
var typesSince = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func systemType(id, name, desc, icon, category, field string, order int) Type {
	schema := `{"type":"object","required":["` + field + `"],"properties":{"` + field + `":{"type":"string","format":"uuid"}},"additionalProperties":true}`
	return Type{ID: id, Name: name, Description: desc, Icon: icon, Category: category, ConfigSchema: json.RawMessage(schema),
		SupportsBulk: true, SupportsUndo: true, MaxBatchSize: MaxIDs, RequiredPermissions: []string{ScopeWrite},
		IsActive: true, IsSystem: true, SortOrder: order, CreatedAt: typesSince, UpdatedAt: typesSince, field: field}
}

// types are the active operation types: the three action types.
var types = []Type{
	systemType(ActionAssignRate, "Assign rate", "Assign a rate snapshot to the items: their label is bought at that rate", "tag", "shipping", "rateSnapshotId", 1),
	systemType(ActionOverrideCarrier, "Override carrier", "Buy the items' labels with this carrier account at its cheapest quote", "truck", "shipping", "carrierAccountId", 2),
	systemType(ActionOverrideDispatcher, "Override dispatcher", "Dispatch the items' orders to this bridge", "send", "fulfillment", "bridgeId", 3),
}

// Types are the active operation types.
func (s *Service) Types(_ context.Context, actor domain.Actor) ([]Type, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, err
	}
	return slices.Clone(types), nil
}

// TypeByID is an active operation type.
func (s *Service) TypeByID(_ context.Context, actor domain.Actor, id string) (Type, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Type{}, err
	}
	t, ok := typeOf(id)
	if !ok {
		return Type{}, domain.NotFound("operation type")
	}
	return t, nil
}

func typeOf(id string) (Type, bool) {
	for _, t := range types {
		if t.ID == id && t.IsActive {
			return t, true
		}
	}
	return Type{}, false
}

// CreateInput is an operation to create.
type CreateInput struct {
	Name        string
	Description *string
	// ID names the operation (zero: a new id). A create whose ID exists
	// in the organization answers that operation (a caller's retry, e.g.
	// the agent's create_operation tool keyed by its call).
	ID uuid.UUID
}

func checkName(v *domain.FieldErrors, name string) {
	switch n := len([]rune(strings.TrimSpace(name))); {
	case n == 0:
		v.Add("name", "is required")
	case len([]rune(name)) > MaxNameLen:
		v.Add("name", "must be at most 255 characters")
	}
}

func checkDescription(v *domain.FieldErrors, d *string) {
	if d != nil && len([]rune(*d)) > MaxDescription {
		v.Add("description", "must be at most 1000 characters")
	}
}

// Create creates a draft operation (currency USD).
func (s *Service) Create(ctx context.Context, actor domain.Actor, in CreateInput) (Operation, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Operation{}, err
	}
	var v domain.FieldErrors
	checkName(&v, in.Name)
	checkDescription(&v, in.Description)
	if err := v.Err(); err != nil {
		return Operation{}, err
	}
	id := in.ID
	if id == uuid.Nil {
		id = uuid.New()
	} else if op, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id); err == nil {
		return op, nil
	}
	op, err := store.CreateOperation(ctx, s.store.Pool, store.Operation{ID: id, OrganizationID: actor.OrganizationID,
		Name: strings.TrimSpace(in.Name), Description: in.Description, CreatedBy: performer(actor)})
	return op, storeErr(err, "operation")
}

// Get is an operation of the organization.
func (s *Service) Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (Operation, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Operation{}, err
	}
	op, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return op, storeErr(err, "operation")
}

// ListInput selects operations.
type ListInput struct {
	Status        string
	Limit, Offset int
}

// List lists the organization's operations, most recently updated first.
func (s *Service) List(ctx context.Context, actor domain.Actor, in ListInput) ([]Operation, int, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, 0, err
	}
	if in.Status != "" && !slices.Contains(store.OperationStatuses, in.Status) {
		return nil, 0, domain.InvalidField("status", "must be one of "+strings.Join(store.OperationStatuses, ", "))
	}
	list, total, err := store.ListOperations(ctx, s.store.Pool, actor.OrganizationID, in.Status, in.Limit, in.Offset)
	return list, total, storeErr(err, "operation")
}

// UpdateInput is a change of an operation (nil: unchanged).
type UpdateInput struct {
	Name *string
	// Description: set when SetDescription (nil clears).
	Description    *string
	SetDescription bool
	Status         *string
}

// Update changes an operation's name, description or status. Status: any
// move from a status other than executing or completed; from those only
// to cancelled (else Conflict). A move to cancelled of a running
// operation cancels its run (as Cancel); a move to executing executes it
// (as Execute); a paused operation moves only to executing (resume) or
// cancelled, since its run waits.
func (s *Service) Update(ctx context.Context, actor domain.Actor, id uuid.UUID, in UpdateInput) (Operation, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Operation{}, err
	}
	var v domain.FieldErrors
	if in.Name != nil {
		checkName(&v, *in.Name)
		t := strings.TrimSpace(*in.Name)
		in.Name = &t
	}
	if in.SetDescription {
		checkDescription(&v, in.Description)
	}
	if in.Status != nil && !slices.Contains(store.OperationStatuses, *in.Status) {
		v.Add("status", "must be one of "+strings.Join(store.OperationStatuses, ", "))
	}
	if err := v.Err(); err != nil {
		return Operation{}, err
	}
	orgID := actor.OrganizationID
	cur, err := store.OperationByID(ctx, s.store.Pool, orgID, id)
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	// Status moves that drive the run go through the run.
	if in.Status != nil && *in.Status != cur.Status {
		to := *in.Status
		switch {
		case (cur.Status == store.OperationExecuting || cur.Status == store.OperationCompleted) && to != store.OperationCancelled:
			return Operation{}, domain.Conflict("an operation that is " + cur.Status + " can only be cancelled")
		case to == store.OperationCancelled && (cur.Status == store.OperationExecuting || cur.Status == store.OperationPaused):
			if _, err := s.Cancel(ctx, actor, id); err != nil {
				return Operation{}, err
			}
			in.Status = nil
		case to == store.OperationExecuting && cur.Status == store.OperationPaused:
			if _, err := s.Resume(ctx, actor, id); err != nil {
				return Operation{}, err
			}
			in.Status = nil
		case cur.Status == store.OperationPaused:
			return Operation{}, domain.Conflict("a paused operation can only be resumed (executing) or cancelled")
		case to == store.OperationExecuting:
			if !actor.HasScope(ScopeExecute) {
				return Operation{}, actor.RequireScope(ScopeExecute)
			}
			if _, err := s.Execute(ctx, actor, id); err != nil {
				return Operation{}, err
			}
			in.Status = nil
		case to == store.OperationPaused:
			return Operation{}, domain.Conflict("only an executing operation can be paused")
		}
	}
	err = pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		st, err := store.LockOperation(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		if in.Status != nil && *in.Status != st {
			if (st == store.OperationExecuting || st == store.OperationCompleted) && *in.Status != store.OperationCancelled {
				return domain.Conflict("an operation that is " + st + " can only be cancelled")
			}
			if *in.Status == store.OperationCancelled && st != store.OperationCompleted {
				if _, err := store.SkipPendingItems(ctx, tx, id, "the operation was cancelled"); err != nil {
					return err
				}
			}
		}
		p := store.OperationPatch{Name: in.Name, Status: in.Status}
		if in.SetDescription {
			p.Description = &in.Description
		}
		return store.UpdateOperation(ctx, tx, orgID, id, p)
	})
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, id)
	return op, storeErr(err, "operation")
}

// Delete deletes a draft operation (Conflict otherwise).
func (s *Service) Delete(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	err := store.DeleteDraftOperation(ctx, s.store, actor.OrganizationID, id)
	if errors.Is(err, store.ErrConflict) {
		return domain.Conflict("only a draft operation can be deleted")
	}
	return storeErr(err, "operation")
}

// storeErr maps a store error: not found names what.
func storeErr(err error, what string) error {
	var de *domain.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case errors.Is(err, store.ErrNotFound):
		return domain.NotFound(what)
	case errors.Is(err, store.ErrInvalidInput):
		return domain.Invalid(domain.FieldError{Field: "body", Message: "holds a value that cannot be stored"})
	}
	return err
}

// Statuses are the operation statuses; ItemStatuses the item statuses;
// HistoryUndone the action of an undo's entry.
var (
	Statuses     = store.OperationStatuses
	ItemStatuses = store.ItemStatuses
)

// HistoryUndone is the action of the entry an undo records.
const HistoryUndone = store.HistoryUndone
