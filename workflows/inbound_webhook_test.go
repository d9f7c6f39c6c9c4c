package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
)

type inboundWebhookSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestInboundWebhook(t *testing.T) { suite.Run(t, new(inboundWebhookSuite)) }

func (s *inboundWebhookSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterActivity(&activities.WebhookActivities{})
}

func (s *inboundWebhookSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

var wa *activities.WebhookActivities

func webhookInput() InboundWebhookInput {
	return InboundWebhookInput{OrganizationID: "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11", EventID: "3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"}
}

func (s *inboundWebhookSuite) TestProcessed() {
	in := webhookInput()
	res := activities.ProcessWebhookEventResult{Topic: "orders/create", OrderIDs: []string{"o1"}, CreatedOrderIDs: []string{"o1"}}
	s.env.OnActivity(wa.ProcessWebhookEvent, mock.Anything, activities.WebhookEventInput{OrganizationID: in.OrganizationID, EventID: in.EventID}).Return(res, nil).Once()

	s.env.ExecuteWorkflow(InboundWebhook, in)
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var got InboundWebhookResult
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal(res, got)
	// The activity records the event processed itself.
	s.env.AssertActivityNumberOfCalls(s.T(), "FinishWebhookEvent", 0)
}

func (s *inboundWebhookSuite) TestTransientFailureIsRetried() {
	transient := temporal.NewApplicationError("bridge \"Shop\" failed: down", activities.ErrTypePlatformUnavailable)
	s.env.OnActivity(wa.ProcessWebhookEvent, mock.Anything, mock.Anything).Return(activities.ProcessWebhookEventResult{}, transient).Twice()
	s.env.OnActivity(wa.ProcessWebhookEvent, mock.Anything, mock.Anything).Return(activities.ProcessWebhookEventResult{OrderIDs: []string{}, CreatedOrderIDs: []string{}}, nil).Once()
	s.env.ExecuteWorkflow(InboundWebhook, webhookInput())
	s.NoError(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessWebhookEvent", 3)
	s.env.AssertActivityNumberOfCalls(s.T(), "FinishWebhookEvent", 0)
}

func (s *inboundWebhookSuite) TestPermanentFailureRecordsFailed() {
	in := webhookInput()
	perm := temporal.NewNonRetryableApplicationError("order 4001 not found on bridge \"Shop\"", activities.ErrTypePlatformPermanent, nil)
	s.env.OnActivity(wa.ProcessWebhookEvent, mock.Anything, mock.Anything).Return(activities.ProcessWebhookEventResult{}, perm).Once()
	s.env.OnActivity(wa.FinishWebhookEvent, mock.Anything, activities.FinishWebhookEventInput{
		OrganizationID: in.OrganizationID, EventID: in.EventID, Failed: true, Error: "order 4001 not found on bridge \"Shop\"",
	}).Return(nil).Once()
	s.env.ExecuteWorkflow(InboundWebhook, in)
	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessWebhookEvent", 1)
}

func (s *inboundWebhookSuite) TestRetriesExhaustedRecordsFailed() {
	transient := temporal.NewApplicationError("bridge \"Shop\" failed: down", activities.ErrTypePlatformUnavailable)
	s.env.OnActivity(wa.ProcessWebhookEvent, mock.Anything, mock.Anything).Return(activities.ProcessWebhookEventResult{}, transient)
	s.env.OnActivity(wa.FinishWebhookEvent, mock.Anything, mock.MatchedBy(func(in activities.FinishWebhookEventInput) bool { return in.Failed })).Return(nil).Once()
	s.env.ExecuteWorkflow(InboundWebhook, webhookInput())
	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ProcessWebhookEvent", int(processWebhookOptions.RetryPolicy.MaximumAttempts))
}
