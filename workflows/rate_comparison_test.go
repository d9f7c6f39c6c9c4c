package workflows

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/store"
)

type rateComparisonSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment

	mu      sync.Mutex
	batches [][2]int // the [from, to] of every batch call
}

func TestRateComparisonWorkflow(t *testing.T) { suite.Run(t, new(rateComparisonSuite)) }

var rca *activities.RateComparisonActivities

const (
	rcOrg  = "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11"
	rcComp = "3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
)

func (s *rateComparisonSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(RateComparison, workflow.RegisterOptions{Name: RateComparisonWorkflowType})
	s.env.RegisterActivity(&activities.RateComparisonActivities{})
	s.batches = nil
}

func (s *rateComparisonSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func rcInput() RateComparisonInput {
	return RateComparisonInput{OrganizationID: rcOrg, ComparisonID: rcComp, RequestedBy: Actor{Type: "user", ID: "u1", Name: "Ada"}}
}

func (s *rateComparisonSuite) expectPrepare(maxSeq int) {
	s.env.OnActivity(rca.PrepareRateComparison, mock.Anything, activities.PrepareRateComparisonInput{OrganizationID: rcOrg, ComparisonID: rcComp}).
		Return(activities.PrepareRateComparisonResult{SourceAccountID: "src", TargetAccountID: "tgt", SourceCarrier: "carrier_a", TargetCarrier: "carrier_b", MaxSeq: maxSeq, PendingItems: maxSeq}, nil).Once()
}

// expectBatches answers every batch: each item completed, except those whose
// seq is a multiple of failEvery (0: none).
func (s *rateComparisonSuite) expectBatches(failEvery int) {
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RateComparisonBatchInput) (activities.RateComparisonBatchResult, error) {
			s.record(in)
			var res activities.RateComparisonBatchResult
			for seq := in.FromSeq; seq <= in.ToSeq; seq++ {
				res.Claimed++
				if failEvery > 0 && seq%failEvery == 0 {
					res.Failed++
				} else {
					res.Completed++
				}
			}
			return res, nil
		})
}

func (s *rateComparisonSuite) record(in activities.RateComparisonBatchInput) {
	s.Equal(rcOrg, in.OrganizationID)
	s.Equal(rcComp, in.ComparisonID)
	s.Equal("src", in.SourceAccountID)
	s.Equal("tgt", in.TargetAccountID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, [2]int{in.FromSeq, in.ToSeq})
}

func (s *rateComparisonSuite) sortedBatches() [][2]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([][2]int(nil), s.batches...)
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func (s *rateComparisonSuite) expectFinish(outcome, errMsg string, res activities.FinishRateComparisonResult) {
	s.env.OnActivity(rca.FinishRateComparison, mock.Anything, activities.FinishRateComparisonInput{
		OrganizationID: rcOrg, ComparisonID: rcComp, Outcome: outcome, Error: errMsg,
	}).Return(res, nil).Once()
}

func (s *rateComparisonSuite) result() RateComparisonResult {
	var res RateComparisonResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	return res
}

// The items are cut into batches that cover every position once, several
// in flight, and the comparison is closed as completed.
func (s *rateComparisonSuite) TestBatches() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(1050)
	s.expectBatches(0)
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "completed", CompletedItems: 1050, TotalSavings: 12.5})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	want := [][2]int{}
	for from := 1; from <= 1050; from += 100 {
		want = append(want, [2]int{from, min(from+99, 1050)})
	}
	s.Equal(want, s.sortedBatches())
	s.Equal(RateComparisonResult{ComparisonID: rcComp, Status: "completed", CompletedItems: 1050, TotalSavings: 12.5, Batches: 11}, s.result())
}

// The default batch size is used when none is given, with at most
// Parallelism batches in flight.
func (s *rateComparisonSuite) TestDefaultsAndParallelism() {
	s.expectPrepare(2000)
	var mu sync.Mutex
	inflight, peak := 0, 0
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RateComparisonBatchInput) (activities.RateComparisonBatchResult, error) {
			mu.Lock()
			inflight++
			peak = max(peak, inflight)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			inflight--
			mu.Unlock()
			s.record(in)
			return activities.RateComparisonBatchResult{Completed: in.ToSeq - in.FromSeq + 1}, nil
		})
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "completed"})

	s.env.ExecuteWorkflow(RateComparison, rcInput())

	s.NoError(s.env.GetWorkflowError())
	b := s.sortedBatches()
	s.Len(b, 2000/DefaultRateComparisonBatchSize)
	s.Equal([2]int{1, DefaultRateComparisonBatchSize}, b[0])
	s.Equal(DefaultRateComparisonParallelism, peak, "bounded batches in flight")
}

// After BatchesPerRun batches the run drains and continues as new,
// carrying the cursor and the accounts.
func (s *rateComparisonSuite) TestContinueAsNewCarriesTheCursor() {
	in := rcInput()
	in.BatchSize, in.BatchesPerRun, in.Parallelism = 100, 3, 2
	s.expectPrepare(1000)
	s.expectBatches(10)

	s.env.ExecuteWorkflow(RateComparison, in)

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(err, &can), "%v", err)
	s.Equal(RateComparisonWorkflowType, can.WorkflowType.Name)
	var next RateComparisonInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Equal(in.BatchSize, next.BatchSize)
	s.Equal(in.BatchesPerRun, next.BatchesPerRun)
	s.Equal(in.RequestedBy, next.RequestedBy)
	s.Equal(&RateComparisonState{SourceAccountID: "src", TargetAccountID: "tgt", MaxSeq: 1000, Cursor: 300, Runs: 1,
		Batches: 3, Completed: 270, Failed: 30}, next.State)
	s.Equal([][2]int{{1, 100}, {101, 200}, {201, 300}}, s.sortedBatches())
	s.env.AssertActivityNumberOfCalls(s.T(), "FinishRateComparison", 0)
}

// A continued run starts after the cursor, without preparing again, and
// closes the comparison when the items run out.
func (s *rateComparisonSuite) TestContinuedRunResumesAtTheCursor() {
	in := rcInput()
	in.BatchSize, in.BatchesPerRun = 100, 3
	in.State = &RateComparisonState{SourceAccountID: "src", TargetAccountID: "tgt", MaxSeq: 1000, Cursor: 900, Runs: 3, Batches: 9, Completed: 900}
	s.expectBatches(0)
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "completed", CompletedItems: 1000})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.NoError(s.env.GetWorkflowError())
	s.Equal([][2]int{{901, 1000}}, s.sortedBatches())
	s.env.AssertActivityNumberOfCalls(s.T(), "PrepareRateComparison", 0)
	res := s.result()
	s.Equal(10, res.Batches)
	s.Equal(3, res.Runs)
	s.Equal(1000, res.CompletedItems)
}

// Temporal's continue-as-new suggestion also ends the run early.
func (s *rateComparisonSuite) TestContinueAsNewSuggested() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(1000)
	s.expectBatches(0)
	s.env.SetContinueAsNewSuggested(true)

	s.env.ExecuteWorkflow(RateComparison, in)

	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can))
	var next RateComparisonInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Equal(100, next.State.Cursor, "one batch, then continue as new")
}

// Cancelling the workflow stops dispatching; the comparison is closed as
// cancelled (its unfinished items skipped) and the run ends cancelled.
func (s *rateComparisonSuite) TestCancellation() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(5000)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RateComparisonBatchInput) (activities.RateComparisonBatchResult, error) {
			s.record(in)
			if in.FromSeq == 1 {
				s.env.CancelWorkflow()
			}
			time.Sleep(50 * time.Millisecond)
			return activities.RateComparisonBatchResult{Completed: 100}, nil
		})
	s.expectFinish(store.FinishCancelled, "", activities.FinishRateComparisonResult{Status: "cancelled", CompletedItems: 0, SkippedItems: 5000})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	var canceled *temporal.CanceledError
	s.Require().True(errors.As(err, &canceled), "%v", err)
	// Only the batches in flight when it was cancelled ran (some may have
	// been cancelled before they started); none started afterwards.
	s.LessOrEqual(len(s.sortedBatches()), DefaultRateComparisonParallelism)
	s.Equal([2]int{1, 100}, s.sortedBatches()[0])
}

// Every item failing ends the comparison failed (Finish decides), and the
// run fails too, its result in the error's details.
func (s *rateComparisonSuite) TestAllItemsFailed() {
	in := rcInput()
	in.BatchSize = 50
	s.expectPrepare(120)
	s.expectBatches(1)
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "failed", FailedItems: 120})

	s.env.ExecuteWorkflow(RateComparison, in)

	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Equal(ErrTypeRateComparisonFailed, appErr.Type())
	s.True(appErr.NonRetryable())
	var res RateComparisonResult
	s.Require().NoError(appErr.Details(&res))
	s.Equal("failed", res.Status)
	s.Equal(120, res.FailedItems)
}

// A fatal batch error stops dispatching and fails the comparison with its
// message; the run fails.
func (s *rateComparisonSuite) TestFatalBatchError() {
	in := rcInput()
	in.BatchSize, in.Parallelism = 100, 1
	s.expectPrepare(1000)
	fatal := temporal.NewNonRetryableApplicationError("carrier_b refused to rate with account tgt: bad credentials", activities.ErrTypeRateComparisonFatal, nil)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RateComparisonBatchInput) (activities.RateComparisonBatchResult, error) {
			s.record(in)
			if in.FromSeq > 100 {
				return activities.RateComparisonBatchResult{}, fatal
			}
			return activities.RateComparisonBatchResult{Completed: 100}, nil
		})
	s.expectFinish(store.FinishFailed, "carrier_b refused to rate with account tgt: bad credentials", activities.FinishRateComparisonResult{Status: "failed", CompletedItems: 100, PendingItems: 900})

	s.env.ExecuteWorkflow(RateComparison, in)

	err := s.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(activities.ErrTypeRateComparisonFatal, appErr.Type())
	s.Equal([][2]int{{1, 100}, {101, 200}}, s.sortedBatches())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessRateComparisonBatch", 2)
}

// A failing prepare (no source carrier account) fails the comparison.
func (s *rateComparisonSuite) TestFatalPrepare() {
	msg := "the organization has no active carrier_a account to track the source shipments with"
	s.env.OnActivity(rca.PrepareRateComparison, mock.Anything, mock.Anything).
		Return(activities.PrepareRateComparisonResult{}, temporal.NewNonRetryableApplicationError(msg, activities.ErrTypeRateComparisonFatal, nil)).Once()
	s.expectFinish(store.FinishFailed, msg, activities.FinishRateComparisonResult{Status: "failed", PendingItems: 10})

	s.env.ExecuteWorkflow(RateComparison, rcInput())

	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessRateComparisonBatch", 0)
}

// A transient batch failure is retried by Temporal.
func (s *rateComparisonSuite) TestTransientBatchFailureIsRetried() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(100)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).
		Return(activities.RateComparisonBatchResult{}, errors.New("connection reset")).Once()
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).
		Return(activities.RateComparisonBatchResult{Completed: 100}, nil).Once()
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "completed", CompletedItems: 100})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.NoError(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessRateComparisonBatch", 2)
}

// Retries exhausted: the comparison fails with a message that tells the
// user what to do, and nothing internal. (The activity makes a failure other
// than a carrier outage permanent after a few attempts.)
func (s *rateComparisonSuite) TestRetriesExhausted() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(100)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).
		Return(activities.RateComparisonBatchResult{}, errors.New("dial tcp 10.0.0.1:5432: connection refused")).Times(activities.DefaultRateComparisonMaxOtherAttempts - 1)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).
		Return(activities.RateComparisonBatchResult{}, temporal.NewNonRetryableApplicationError("dial tcp 10.0.0.1:5432: connection refused",
			activities.ErrTypeRateComparisonBatchFailed, nil)).Once()
	s.expectFinish(store.FinishFailed, "processing failed; process the comparison again to finish the remaining items", activities.FinishRateComparisonResult{Status: "failed"})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessRateComparisonBatch", activities.DefaultRateComparisonMaxOtherAttempts)
}

// A short carrier outage is waited out: the batch is retried (more times
// than any other failure would be, backing off up to two minutes) and the
// comparison completes.
func (s *rateComparisonSuite) TestCarrierOutageIsWaitedOut() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(100)
	unavailable := temporal.NewApplicationError("carrier_b is unavailable: The service is temporarily unavailable (190001) (100 items not processed)",
		activities.ErrTypeRateComparisonCarrierUnavailable)
	var infos []activity.Info
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.RateComparisonBatchInput) (activities.RateComparisonBatchResult, error) {
			infos = append(infos, activity.GetInfo(ctx))
			if len(infos) <= 8 {
				return activities.RateComparisonBatchResult{}, unavailable
			}
			return activities.RateComparisonBatchResult{Claimed: 100, Completed: 100}, nil
		})
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "completed", CompletedItems: 100})
	began := s.env.Now()

	s.env.ExecuteWorkflow(RateComparison, in)

	s.NoError(s.env.GetWorkflowError())
	s.Equal("completed", s.result().Status)
	s.Len(infos, 9)
	s.Equal(DefaultRateComparisonBatchScheduleToClose, infos[0].ScheduleToCloseTimeout, "one hour unless the input says otherwise")
	s.Greater(s.env.Now().Sub(began), 4*time.Minute, "backed off: 1+2+…+64 s, then 2 min")
	s.Less(s.env.Now().Sub(began), 6*time.Minute)
}

// A carrier that stays unavailable: the batch is retried until its
// schedule-to-close timeout, then the comparison fails saying so; its
// unfinished items stay for a later process.
func (s *rateComparisonSuite) TestCarrierUnavailable() {
	in := rcInput()
	in.BatchSize = 100
	in.BatchScheduleToClose = 3 * time.Minute
	s.expectPrepare(100)
	unavailable := temporal.NewApplicationError("carrier_b is unavailable: The service is temporarily unavailable (190001) (100 items not processed)",
		activities.ErrTypeRateComparisonCarrierUnavailable)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(activities.RateComparisonBatchResult{}, unavailable)
	s.expectFinish(store.FinishFailed, "carrier_b is unavailable: The service is temporarily unavailable (190001) (100 items not processed); process the comparison again to finish the remaining items",
		activities.FinishRateComparisonResult{Status: "failed", PendingItems: 100})
	began := s.env.Now()

	s.env.ExecuteWorkflow(RateComparison, in)

	s.Error(s.env.GetWorkflowError())
	// 1+2+4+8+16+32+64 s = 127 s, the next retry (at 247 s) would be late.
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessRateComparisonBatch", 8)
	s.Less(s.env.Now().Sub(began), 4*time.Minute)
}

// A comparison deleted during processing (or a run reset in the UI after
// it was deleted) fails the run without writing anything.
func (s *rateComparisonSuite) TestGone() {
	in := rcInput()
	in.BatchSize = 100
	s.expectPrepare(300)
	gone := temporal.NewNonRetryableApplicationError("rate comparison was deleted", activities.ErrTypeRateComparisonGone, nil)
	s.env.OnActivity(rca.ProcessRateComparisonBatch, mock.Anything, mock.Anything).Return(activities.RateComparisonBatchResult{}, gone)

	s.env.ExecuteWorkflow(RateComparison, in)

	var appErr *temporal.ApplicationError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &appErr)
	s.Equal(activities.ErrTypeRateComparisonGone, appErr.Type())
	s.True(appErr.NonRetryable())
	s.env.AssertActivityNumberOfCalls(s.T(), "FinishRateComparison", 0)
}

func TestRateComparisonWorkflowID(t *testing.T) {
	require.Equal(t, "rate-comparison/abc", RateComparisonWorkflowID("abc"))
}

// TestRateComparisonReplay replays a recorded 500-item run (three batches in
// flight) against the current code: a change that running histories cannot
// replay fails here (guard it with workflow.GetVersion). Recorded by the
// end-to-end test: FOS_UPDATE_HISTORY=1 go test ./e2e -run TestRateComparisonEndToEnd.
func TestRateComparisonReplay(t *testing.T) {
	r := newReplayer(t)
	r.RegisterWorkflowWithOptions(RateComparison, workflow.RegisterOptions{Name: RateComparisonWorkflowType})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/rate_comparison_history.json"))
}

// A run that started before failed outcomes failed the run (no version
// marker in its history) still completes, so it replays.
func (s *rateComparisonSuite) TestAllItemsFailedBeforeVersionCompletes() {
	s.env.OnGetVersion(versionFailedOutcomeFailsRun, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	in := rcInput()
	in.BatchSize = 50
	s.expectPrepare(120)
	s.expectBatches(1)
	s.expectFinish(store.FinishCompleted, "", activities.FinishRateComparisonResult{Status: "failed", FailedItems: 120})

	s.env.ExecuteWorkflow(RateComparison, in)

	s.NoError(s.env.GetWorkflowError())
	s.Equal("failed", s.result().Status)
}
