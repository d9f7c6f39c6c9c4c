// Package routing holds the routing domain: dispatchers and their dispatch
// assignments (an order sent to a destination bridge), split rules,
// condition sets and transformations. The API's handlers, operation
// execution and the agent's tools call the one Service; none of them
// repeats its logic or reaches the store for these resources.
//
// The entry points other domains use:
//
//   - DispatchToBridge sends one order to one bridge (an operation's
//     overrideDispatchBridgeId, CONTRACT 10): idempotent per order and
//     bridge, recorded as a dispatch assignment with metadata.trigger
//     "operation" and pushed by the DispatchAssignment workflow.
//   - CancelAssignment cancels an assignment that was not pushed yet (an
//     operation's undo).
//   - EvaluateDispatchers runs the dispatchers of an order's bridge on it
//     (the agent's evaluate_dispatchers tool).
//
// Every method takes the acting domain.Actor (its organization scopes
// everything; another organization's ids are NotFound) and returns
// domain errors.
package routing

import (
	"context"
	"io"
	"log/slog"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/store"
)

// Deps are the Service's dependencies.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	// Hooks are the order hooks; when they are a *rules.Hooks their
	// dispatcher evaluation (and condition-set cache) is used, else one
	// over Store and Starter.
	Hooks rules.OrderHooks
	// Starter starts DispatchAssignment runs (rules.TemporalDispatch on the
	// bulk task queue); nil: new assignments stay pending for
	// ProcessAssignments and the reconciler.
	Starter rules.DispatchStarter
	// Sandbox runs transformation code (nil: sandbox defaults).
	Sandbox *sandbox.Sandbox
}

// Service is the routing domain's operations.
type Service struct {
	store   *store.Store
	log     *slog.Logger
	hooks   *rules.Hooks
	starter rules.DispatchStarter
	sandbox *sandbox.Sandbox
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, ok := d.Hooks.(*rules.Hooks)
	if !ok {
		h = &rules.Hooks{Store: d.Store, Log: log, Dispatcher: d.Starter}
	}
	sb := d.Sandbox
	if sb == nil {
		sb = sandbox.New(sandbox.Limits{})
	}
	return &Service{store: d.Store, log: log, hooks: h, starter: d.Starter, sandbox: sb}
}

// Scopes of the routing resources (Part 2: split rules, condition sets and
// transformations are under dispatchers:* too, as the API mounts them).
const (
	ScopeRead  = "dispatchers:read"
	ScopeWrite = "dispatchers:write"
)

// notFound maps store.ErrNotFound to a NotFound naming what.
func notFound(err error, what string) error {
	if err != nil && isNotFound(err) {
		return domain.NotFound(what)
	}
	return err
}

// Page is one page of a list and the number of all that match.
type Page[T any] struct {
	Items []T
	Total int
}

// orgOf is the actor's organization after checking scope.
func orgOf(actor domain.Actor, scope string) (uuid.UUID, error) {
	if err := actor.RequireScope(scope); err != nil {
		return uuid.Nil, err
	}
	return actor.OrganizationID, nil
}

// detached keeps work that must finish as a whole (assignments created and
// started) from being cut by the caller going away.
func detached(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
