package platforms

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CodeNotAvailable is the *Error code of a bridge type that has no
// connector outside the sandbox yet.
const CodeNotAvailable = "not_available"

// ErrNotAvailable matches (errors.Is) an *Error reporting that the bridge
// type has no real connector yet (FOS_SANDBOX=0). Not retryable.
var ErrNotAvailable = errors.New("platforms: connector not available")

// unavailableConnector stands in for a bridge type's real connector until
// it exists: every call fails at once, non-retryably, without a network
// call (CONTRACT 8b: with FOS_SANDBOX=0 nothing talks to the sandbox).
type unavailableConnector struct{ bridgeType string }

func (c unavailableConnector) err() error {
	return &Error{
		Code:    CodeNotAvailable,
		Message: fmt.Sprintf("the %s connector is not available yet outside the sandbox (FOS_SANDBOX=0)", c.bridgeType),
	}
}

// FetchOrder implements Connector.
func (c unavailableConnector) FetchOrder(context.Context, Bridge, string) (*Order, error) {
	return nil, c.err()
}

// ListOrders implements Connector.
func (c unavailableConnector) ListOrders(context.Context, Bridge, time.Time, string) ([]Order, string, error) {
	return nil, "", c.err()
}

// NewUnavailableConnector returns the connector of a bridge type that has
// no real connector yet: every call fails with a non-retryable *Error
// matching ErrNotAvailable.
func NewUnavailableConnector(bridgeType string) Connector {
	return unavailableConnector{bridgeType: bridgeType}
}

// NewProductionRegistry returns the registry used with FOS_SANDBOX=0: each
// bridge type's real connector, or NewUnavailableConnector while it has
// none (today: every type). It never talks to the sandbox.
func NewProductionRegistry() *Registry {
	r := NewRegistry()
	for _, t := range Types() {
		r.Register(t.Slug, NewUnavailableConnector(t.Slug))
	}
	return r
}
