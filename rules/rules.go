// Package rules evaluates what happens to an order after it enters the
// service: split rules (child orders) and dispatchers (routing to a
// destination bridge). Both arrive in a later issue; today the API calls the
// hook and nothing happens.
package rules

import (
	"context"

	"github.com/google/uuid"
)

// OrderHooks is called by the API after an order is committed.
type OrderHooks interface {
	// OrderCreated runs after an order was created. The order is already
	// stored: an error is reported by the caller, never undoes the create.
	OrderCreated(ctx context.Context, orgID, orderID uuid.UUID) error
}

// Noop is the OrderHooks that does nothing.
type Noop struct{}

// OrderCreated does nothing.
func (Noop) OrderCreated(context.Context, uuid.UUID, uuid.UUID) error { return nil }

var _ OrderHooks = Noop{}
