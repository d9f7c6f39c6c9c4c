package platforms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

// A type's unavailable connector fails at once, non-retryably, and says
// why; nothing is dialed.
func TestUnavailableConnectorFailsClosed(t *testing.T) {
	for _, b := range bridges() {
		conn := platforms.NewUnavailableConnector(b.Type)

		_, err := conn.FetchOrder(context.Background(), b, "1001")
		require.Error(t, err, b.Type)
		assert.True(t, errors.Is(err, platforms.ErrNotAvailable), "%s: %v", b.Type, err)
		assert.False(t, errors.Is(err, platforms.ErrOrderNotFound), b.Type)
		assert.False(t, platforms.IsRetryable(err), "%s: not-available must not be retried", b.Type)
		assert.Contains(t, err.Error(), b.Type)
		assert.Contains(t, err.Error(), "not available")

		_, _, err = conn.ListOrders(context.Background(), b, time.Time{}, "")
		assert.True(t, errors.Is(err, platforms.ErrNotAvailable), "%s: %v", b.Type, err)
		assert.False(t, platforms.IsRetryable(err))
	}
}
