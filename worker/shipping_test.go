package worker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/shipping"
)

// A PickupCancel run's failure reaches the shipping domain classified: the
// activity's error as the StepError it was, a run that ended without an
// answer as ErrRunOutcomeUnknown.
func TestPickupCancelError(t *testing.T) {
	timedOut := fmt.Errorf("workflow execution error: %w", fmt.Errorf("activity error: %w",
		temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)))
	require.ErrorIs(t, pickupCancelError(timedOut), shipping.ErrRunOutcomeUnknown)

	refused := temporal.NewNonRetryableApplicationError("Pickup already dispatched", shipping.ErrTypeCarrierRefused, nil,
		shipping.CarrierFailure{Message: "Pickup already dispatched", APICode: "x"})
	var se *shipping.StepError
	require.True(t, errors.As(pickupCancelError(fmt.Errorf("workflow execution error: %w", refused)), &se))
	require.Equal(t, shipping.ErrTypeCarrierRefused, se.Type)
	require.Equal(t, "Pickup already dispatched", se.Message)
	require.Equal(t, "x", se.Failure.APICode)

	other := errors.New("boom")
	require.Equal(t, other, pickupCancelError(other))
}
