package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/embed"
)

var ea *activities.EmbedActivities

// deliveryEnv runs WebhookDelivery with the activity answering from
// answers (one per attempt) and records when each attempt ran.
func runDelivery(t *testing.T, answers []embed.AttemptResult) ([]time.Duration, WebhookDeliveryResult) {
	return runDeliveryFrom(t, 2, answers)
}

func runDeliveryFrom(t *testing.T, first int, answers []embed.AttemptResult) ([]time.Duration, WebhookDeliveryResult) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.EmbedActivities{})
	start := env.Now()
	var at []time.Duration
	var attempts []int
	env.OnActivity(ea.AttemptDelivery, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in embed.AttemptInput) (embed.AttemptResult, error) {
			at = append(at, env.Now().Sub(start))
			attempts = append(attempts, in.Attempt)
			return answers[len(at)-1], nil
		})
	in := WebhookDeliveryInput{OrganizationID: uuid.New(), DeliveryID: uuid.New(), FirstAttempt: first}
	env.ExecuteWorkflow(WebhookDelivery, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res WebhookDeliveryResult
	require.NoError(t, env.GetWorkflowResult(&res))
	for i, n := range attempts {
		require.Equal(t, i+first, n, "attempts are numbered from the first this run makes")
	}
	return at, res
}

func TestWebhookDeliveryRetriesOnTheContractSchedule(t *testing.T) {
	fail := embed.AttemptResult{}
	at, res := runDelivery(t, []embed.AttemptResult{fail, fail, fail, fail, fail, {Stop: true}})
	// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h after one another (timers skipped).
	want := []time.Duration{5 * time.Second}
	for _, d := range embed.RetrySchedule[1:] {
		want = append(want, want[len(want)-1]+d)
	}
	require.Len(t, at, 6)
	for i := range at {
		require.InDelta(t, want[i].Seconds(), at[i].Seconds(), 1, "attempt %d", i+2)
	}
	require.Equal(t, 7, res.Attempts)
	require.False(t, res.Success)
}

func TestWebhookDeliveryStopsOnSuccessGoneOrDisable(t *testing.T) {
	at, res := runDelivery(t, []embed.AttemptResult{{}, {Success: true, Stop: true}})
	require.Len(t, at, 2)
	require.True(t, res.Success)
	require.Equal(t, 3, res.Attempts)

	// 410 or a webhook disabled after 10 failures: the activity says stop.
	at, res = runDelivery(t, []embed.AttemptResult{{Stop: true}})
	require.Len(t, at, 1)
	require.False(t, res.Success)
}

func TestEmbedOutboxWaitsWhenEmptyAndContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.EmbedActivities{})
	calls := 0
	env.OnActivity(ea.DispatchOutbox, mock.Anything).Return(func(_ context.Context) (embed.DispatchResult, error) {
		calls++
		if calls%2 == 0 {
			return embed.DispatchResult{Events: 3, Deliveries: 3}, nil
		}
		return embed.DispatchResult{}, nil
	})
	env.ExecuteWorkflow(EmbedOutbox, EmbedOutboxInput{Idle: time.Second})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError(), "continues as new")
	require.Equal(t, outboxRounds, calls)
}

// A first attempt the fan-out abandoned (a receiver slower than its
// budget) is made again at once by the workflow, then retried.
func TestWebhookDeliveryFromAnAbandonedFirstAttempt(t *testing.T) {
	at, res := runDeliveryFrom(t, 1, []embed.AttemptResult{{}, {Success: true, Stop: true}})
	require.Len(t, at, 2)
	require.Less(t, at[0], time.Second, "attempt 1 at once")
	require.InDelta(t, (5 * time.Second).Seconds(), at[1].Seconds(), 1)
	require.True(t, res.Success)
	require.Equal(t, 2, res.Attempts)
}
