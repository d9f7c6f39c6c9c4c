package workflows

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

type trackingPollerSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestTrackingPoller(t *testing.T) { suite.Run(t, new(trackingPollerSuite)) }

func (s *trackingPollerSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(TrackingPoller, workflow.RegisterOptions{Name: TrackingPollerWorkflowType})
	s.env.RegisterActivity(&activities.TrackingActivities{})
}

func (s *trackingPollerSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

var ta *activities.TrackingActivities

var trackingCutoff = time.Date(2025, 10, 1, 12, 0, 0, 0, time.UTC)

func trackingIDs(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", from+i)
	}
	return out
}

// expectList expects one TrackingListDue call with the cutoff (nil: the
// first) and answers ids.
func (s *trackingPollerSuite) expectList(first bool, limit int, ids []string) {
	s.env.OnActivity(ta.TrackingListDue, mock.Anything, mock.MatchedBy(func(in activities.TrackingListDueInput) bool {
		if in.Limit != limit {
			return false
		}
		if first {
			return in.Cutoff == nil
		}
		return in.Cutoff != nil && in.Cutoff.Equal(trackingCutoff)
	})).Return(activities.TrackingListDueResult{Cutoff: trackingCutoff, ShipmentIDs: ids}, nil).Once()
}

// expectPoll expects one TrackingPollShipments call for exactly ids.
func (s *trackingPollerSuite) expectPoll(ids []string, res activities.TrackingPollResult, err error) {
	s.env.OnActivity(ta.TrackingPollShipments, mock.Anything, mock.MatchedBy(func(in activities.TrackingPollInput) bool {
		return fmt.Sprint(in.ShipmentIDs) == fmt.Sprint(ids)
	})).Return(res, err).Once()
}

func (s *trackingPollerSuite) TestPagesUntilAShortPage() {
	// Batches of 2, 2 at once: pages of 4.
	p1, p2, p3 := trackingIDs(0, 4), trackingIDs(4, 4), trackingIDs(8, 1)
	s.expectList(true, 4, p1)
	s.expectPoll(p1[:2], activities.TrackingPollResult{Shipments: 2, Tracked: 2, Checkpoints: 10, StatusChanges: 2, Delivered: 1}, nil)
	s.expectPoll(p1[2:], activities.TrackingPollResult{Shipments: 2, Tracked: 1, NotFound: 1, Checkpoints: 4}, nil)
	s.expectList(false, 4, p2)
	s.expectPoll(p2[:2], activities.TrackingPollResult{Shipments: 2, Failed: 2, Errors: []string{"account x: refused"}}, nil)
	s.expectPoll(p2[2:], activities.TrackingPollResult{Shipments: 2, Untrackable: 2}, nil)
	s.expectList(false, 4, p3)
	s.expectPoll(p3, activities.TrackingPollResult{Shipments: 1, Tracked: 1, Checkpoints: 6, StatusChanges: 1, Delivered: 1}, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 2, Concurrency: 2})

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var res TrackingPollerResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(TrackingPollerResult{Rounds: 3, Runs: 1, Totals: activities.TrackingPollResult{
		Shipments: 9, Tracked: 4, NotFound: 1, Untrackable: 2, Failed: 2, Checkpoints: 20, StatusChanges: 3, Delivered: 2,
		Errors: []string{"account x: refused"},
	}}, res)
	s.env.AssertActivityNumberOfCalls(s.T(), "TrackingListDue", 3)
	s.env.AssertActivityNumberOfCalls(s.T(), "TrackingPollShipments", 5)
}

func (s *trackingPollerSuite) TestFullLastPageListsOnceMore() {
	p1 := trackingIDs(0, 4)
	s.expectList(true, 4, p1)
	s.expectPoll(p1[:2], activities.TrackingPollResult{Shipments: 2}, nil)
	s.expectPoll(p1[2:], activities.TrackingPollResult{Shipments: 2}, nil)
	s.expectList(false, 4, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 2, Concurrency: 2})

	s.NoError(s.env.GetWorkflowError())
	var res TrackingPollerResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(1, res.Rounds)
	s.Equal(4, res.Totals.Shipments)
}

func (s *trackingPollerSuite) TestNothingDue() {
	s.expectList(true, TrackingDefaultBatchSize*TrackingDefaultConcurrency, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{})

	s.NoError(s.env.GetWorkflowError())
	var res TrackingPollerResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(TrackingPollerResult{Runs: 1}, res)
	s.env.AssertActivityNumberOfCalls(s.T(), "TrackingPollShipments", 0)
}

func (s *trackingPollerSuite) TestContinuesAsNewWhenHistoryGrows() {
	p1 := trackingIDs(0, 2)
	s.expectList(true, 2, p1)
	s.expectPoll(p1[:1], activities.TrackingPollResult{Shipments: 1, Checkpoints: 3}, nil)
	s.expectPoll(p1[1:], activities.TrackingPollResult{Shipments: 1, Checkpoints: 5}, nil)

	// The test environment reports the history length it is told.
	s.env.SetCurrentHistoryLength(5)
	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 1, Concurrency: 2, MaxHistoryEvents: 5})

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(err, &can), "%v", err)
	s.Equal(TrackingPollerWorkflowType, can.WorkflowType.Name)
	var next TrackingPollerInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Equal(1, next.BatchSize)
	s.Equal(2, next.Concurrency)
	s.Equal(5, next.MaxHistoryEvents)
	s.Require().NotNil(next.Cutoff, "the cutoff is carried")
	s.True(next.Cutoff.Equal(trackingCutoff))
	s.Require().NotNil(next.Carry)
	s.Equal(TrackingPollerResult{Rounds: 1, Runs: 1, Totals: activities.TrackingPollResult{Shipments: 2, Checkpoints: 8}}, *next.Carry)
}

func (s *trackingPollerSuite) TestContinuesAsNewWhenSuggested() {
	p1 := trackingIDs(0, 2)
	s.expectList(true, 2, p1)
	s.expectPoll(p1[:1], activities.TrackingPollResult{Shipments: 1}, nil)
	s.expectPoll(p1[1:], activities.TrackingPollResult{Shipments: 1}, nil)

	s.env.SetContinueAsNewSuggested(true)
	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 1, Concurrency: 2})

	var can *workflow.ContinueAsNewError
	s.True(errors.As(s.env.GetWorkflowError(), &can))
}

func (s *trackingPollerSuite) TestContinuedRunGoesOnFromTheCarry() {
	cut := trackingCutoff
	s.expectList(false, 2, trackingIDs(0, 1))
	s.expectPoll(trackingIDs(0, 1), activities.TrackingPollResult{Shipments: 1, Checkpoints: 2}, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 1, Concurrency: 2, Cutoff: &cut,
		Carry: &TrackingPollerResult{Rounds: 4, Runs: 1, Totals: activities.TrackingPollResult{Shipments: 8, Checkpoints: 30}}})

	s.NoError(s.env.GetWorkflowError())
	var res TrackingPollerResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(TrackingPollerResult{Rounds: 5, Runs: 2, Totals: activities.TrackingPollResult{Shipments: 9, Checkpoints: 32}}, res)
}

func (s *trackingPollerSuite) TestFailedActivityEndsThePollAfterItsRound() {
	p1 := trackingIDs(0, 4)
	s.expectList(true, 4, p1)
	s.expectPoll(p1[:2], activities.TrackingPollResult{}, temporal.NewNonRetryableApplicationError("shipmentIds must be UUIDs", activities.ErrTypeInvalidInput, nil))
	s.expectPoll(p1[2:], activities.TrackingPollResult{Shipments: 2, Tracked: 2}, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 2, Concurrency: 2})

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(activities.ErrTypeInvalidInput, appErr.Type())
	s.env.AssertActivityNumberOfCalls(s.T(), "TrackingListDue", 1)
	s.env.AssertActivityNumberOfCalls(s.T(), "TrackingPollShipments", 2)
}

func (s *trackingPollerSuite) TestRetryableActivityFailureIsRetried() {
	p1 := trackingIDs(0, 1)
	s.expectList(true, 4, p1)
	s.expectPoll(p1, activities.TrackingPollResult{}, errors.New("connection reset"))
	s.expectPoll(p1, activities.TrackingPollResult{Shipments: 1, Tracked: 1}, nil)

	s.env.ExecuteWorkflow(TrackingPoller, TrackingPollerInput{BatchSize: 2, Concurrency: 2})

	s.NoError(s.env.GetWorkflowError())
	var res TrackingPollerResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(1, res.Totals.Tracked)
}
