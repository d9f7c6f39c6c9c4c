package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
)

// A PickupCancel run that ended without the carrier's answer is 502
// carrier_error (the outcome is unknown), never a 500; a carrier's failure
// text reaches the client through TenantText.
func TestCancelPickupError(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := httptest.NewRequest("DELETE", "/api/v1/pickups/x", nil)

	timedOut := fmt.Errorf("workflow execution error: %w", fmt.Errorf("activity error: %w",
		temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)))
	err := requireTenantSafe(t, s.cancelPickupError(r, "carrier_a", timedOut))
	require.Equal(t, 502, err.Status)
	require.Equal(t, "carrier_error", err.Code)
	require.Contains(t, err.Message, "may or may not be cancelled")

	raw := temporal.NewApplicationError("cancel pickup: Post \"http://10.0.0.5:8443/pickup/v1/pickups/cancel\": dial tcp 10.0.0.5:8443: connection refused (SQLSTATE 0)", activities.ErrTypeCarrierRefused)
	err = requireTenantSafe(t, s.cancelPickupError(r, "carrier_a", raw))
	require.Equal(t, 502, err.Status)
	require.Equal(t, "carrier_a refused to cancel the pickup: "+activities.InternalFailureMessage, err.Message)

	err = requireTenantSafe(t, s.cancelPickupError(r, "carrier_a", temporal.NewApplicationError("Pickup already dispatched", activities.ErrTypeCarrierRefused)))
	require.Equal(t, "carrier_a refused to cancel the pickup: Pickup already dispatched", err.Message)
}
