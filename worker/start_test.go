package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// A start whose answer was lost may have started its run; Temporal's own
// refusals and the workflow's answers did not.
func TestStartMayHaveRun(t *testing.T) {
	for _, err := range []error{
		serviceerror.NewDeadlineExceeded("deadline"),
		serviceerror.NewUnavailable("unavailable"),
		serviceerror.NewInternal("internal"),
		serviceerror.NewCanceled("canceled"),
		context.DeadlineExceeded,
		context.Canceled,
		errors.New("transport: connection reset"),
	} {
		require.True(t, StartMayHaveRun(err), "%T: the run may exist", err)
	}
	for _, err := range []error{
		nil,
		serviceerror.NewInvalidArgument("search attribute OrganizationId is not defined"),
		serviceerror.NewNotFound("namespace"),
		serviceerror.NewNamespaceNotFound("default"),
		serviceerror.NewPermissionDenied("no", ""),
		serviceerror.NewFailedPrecondition("no"),
		serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "slow down"),
		serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", ""),
		temporal.NewApplicationError("the carrier refused", "RegistrationRefused"),
	} {
		require.False(t, StartMayHaveRun(err), "%v: a refusal or an answer", err)
	}
}
