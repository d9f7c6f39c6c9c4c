package platforms

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CodeNotAvailable is the *Error code of a bridge type that has no
// connector.
const CodeNotAvailable = "not_available"

// ErrNotAvailable matches (errors.Is) an *Error reporting that the bridge
// type has no connector. Not retryable.
var ErrNotAvailable = errors.New("platforms: connector not available")

// unavailableConnector stands in for a bridge type's connector where it
// has none: every call fails at once, non-retryably, without a network
// call.
type unavailableConnector struct{ bridgeType string }

func (c unavailableConnector) err() error {
	return &Error{
		Code:    CodeNotAvailable,
		Message: fmt.Sprintf("the %s connector is not available", c.bridgeType),
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

// NewUnavailableConnector returns a stand-in for a bridge type that has no
// connector: every call fails with a non-retryable *Error matching
// ErrNotAvailable.
func NewUnavailableConnector(bridgeType string) Connector {
	return unavailableConnector{bridgeType: bridgeType}
}
