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
//     "operation" and pushed by the destination's DispatchBatch drainer.
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
	"fmt"
	"io"
	"log/slog"
	"strings"

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
	// Starter signals the destinations' drainers (rules.TemporalDispatch on the
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

// requiredName checks a name that is sent (or required: create): trimmed,
// 1-hi characters; ok when it may be set.
func requiredName(v *domain.FieldErrors, field string, s *string, create bool, hi int) (string, bool) {
	if !create && s == nil {
		return "", false
	}
	name := strings.TrimSpace(deref(s))
	if name == "" {
		v.Add(field, "is required")
		return "", false
	}
	if v.MaxLen(field, name, hi); v.Has(field) {
		return "", false
	}
	return name, true
}

// optionalText checks an optional text that is sent (always on create):
// trimmed, at most hi characters, blank clears it (nil); ok when it may be
// set.
func optionalText(v *domain.FieldErrors, field string, s *string, create bool, hi int) (*string, bool) {
	if !create && s == nil {
		return nil, false
	}
	text := strings.TrimSpace(deref(s))
	if text == "" {
		return nil, true
	}
	if v.MaxLen(field, text, hi); v.Has(field) {
		return nil, true
	}
	return &text, true
}

// priority checks a priority (0-hi) that is sent; ok when it may be set.
func priority(v *domain.FieldErrors, p *int, hi int) (int, bool) {
	if p == nil {
		return 0, false
	}
	if *p < 0 || *p > hi {
		v.Add("priority", fmt.Sprintf("must be between 0 and %d", hi))
		return 0, false
	}
	return *p, true
}
