package shipping

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
)

// A PickupCancel run that ended without the carrier's answer is Upstream
// carrier_error (the outcome is unknown), never an internal error; a
// carrier's failure text reaches the caller through TenantText.
func TestCancelPickupFailure(t *testing.T) {
	s := New(Deps{})
	ctx := context.Background()
	requireSafe := func(err error) *domain.Error {
		t.Helper()
		var de *domain.Error
		require.ErrorAs(t, err, &de)
		require.NotContains(t, de.Message, "SQLSTATE")
		require.NotContains(t, de.Message, "10.0.0.5")
		return de
	}

	err := requireSafe(s.cancelPickupFailure(ctx, "carrier_a", fmt.Errorf("%w: workflow execution error: activity timed out", ErrRunOutcomeUnknown)))
	require.Equal(t, domain.KindUpstream, err.Kind)
	require.Equal(t, "carrier_error", err.Code)
	require.Contains(t, err.Message, "may or may not be cancelled")

	raw := &StepError{Type: ErrTypeCarrierRefused, Message: "cancel pickup: Post \"http://10.0.0.5:8443/pickup/v1/pickups/cancel\": dial tcp 10.0.0.5:8443: connection refused (SQLSTATE 0)"}
	err = requireSafe(s.cancelPickupFailure(ctx, "carrier_a", raw))
	require.Equal(t, domain.KindUpstream, err.Kind)
	require.Equal(t, "carrier_a refused to cancel the pickup: "+domain.InternalFailureMessage, err.Message)

	err = requireSafe(s.cancelPickupFailure(ctx, "carrier_a", &StepError{Type: ErrTypeCarrierRefused, Message: "Pickup already dispatched"}))
	require.Equal(t, "carrier_a refused to cancel the pickup: Pickup already dispatched", err.Message)

	err = requireSafe(s.cancelPickupFailure(ctx, "carrier_a", &StepError{Type: ErrTypePickupNotCancellable, Message: "only a confirmed pickup can be cancelled; this one is completed"}))
	require.Equal(t, domain.KindInvalid, err.Kind)
	require.Equal(t, "invalid_state", err.Code)
	err = requireSafe(s.cancelPickupFailure(ctx, "carrier_a", &StepError{Type: ErrTypePurchaseGone, Message: "pickup not found"}))
	require.Equal(t, domain.KindNotFound, err.Kind)
	err = requireSafe(s.cancelPickupFailure(ctx, "carrier_a", &StepError{Type: ErrTypeCarrierRefused, Message: "x",
		Failure: &CarrierFailure{APICode: "carrier_account_not_active", Message: "the pickup's carrier account was deleted"}}))
	require.Equal(t, "carrier_account_not_active", err.Code)
}
