package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/grpc"
)

func TestStartOptions(t *testing.T) {
	o := StartOptions("order-resync/o1", "fos", "org-1", map[string]any{"orderId": "o1"})
	require.Equal(t, "order-resync/o1", o.ID)
	require.Equal(t, "fos", o.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, o.WorkflowIDConflictPolicy)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, o.WorkflowIDReusePolicy)
	org, ok := o.TypedSearchAttributes.GetKeyword(OrganizationIDKey)
	require.True(t, ok)
	require.Equal(t, "org-1", org)
	require.Equal(t, "OrganizationId", OrganizationIDKey.GetName())
	require.Equal(t, map[string]any{"orderId": "o1", "organizationId": "org-1"}, o.Memo)
	require.Equal(t, "Resync of order o1", o.StaticSummary)
}

// fakeOperator answers ListSearchAttributes with have and records adds.
type fakeOperator struct {
	operatorservice.OperatorServiceClient
	have   map[string]enumspb.IndexedValueType
	addErr error
	added  []*operatorservice.AddSearchAttributesRequest
}

func (f *fakeOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.have}, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, r *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	f.added = append(f.added, r)
	return &operatorservice.AddSearchAttributesResponse{}, f.addErr
}

func ensureWith(t *testing.T, op *fakeOperator) error {
	c := mocks.NewClient(t)
	c.On("OperatorService").Return(op)
	return EnsureSearchAttributes(context.Background(), c, "ns")
}

func TestEnsureSearchAttributes(t *testing.T) {
	// Missing: added to the namespace.
	op := &fakeOperator{}
	require.NoError(t, ensureWith(t, op))
	require.Len(t, op.added, 1)
	require.Equal(t, "ns", op.added[0].GetNamespace())
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, op.added[0].GetSearchAttributes()["OrganizationId"])
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, op.added[0].GetSearchAttributes()["BridgeId"])
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, op.added[0].GetSearchAttributes()["TaskName"])

	// Present: nothing to do.
	op = &fakeOperator{have: map[string]enumspb.IndexedValueType{"OrganizationId": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"BridgeId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "TaskName": enumspb.INDEXED_VALUE_TYPE_KEYWORD}}
	require.NoError(t, ensureWith(t, op))
	require.Empty(t, op.added)

	// Added concurrently by another process: fine.
	op = &fakeOperator{addErr: serviceerror.NewAlreadyExists("exists")}
	require.NoError(t, ensureWith(t, op))

	// Present with another type, or refused: errors.
	op = &fakeOperator{have: map[string]enumspb.IndexedValueType{"OrganizationId": enumspb.INDEXED_VALUE_TYPE_TEXT}}
	require.ErrorContains(t, ensureWith(t, op), "OrganizationId")
	op = &fakeOperator{addErr: serviceerror.NewPermissionDenied("no", "")}
	err := ensureWith(t, op)
	require.ErrorContains(t, err, `the Temporal namespace "ns" lacks the search attribute(s) BridgeId, OrganizationId, TaskName`)
	require.ErrorContains(t, err, "temporal operator search-attribute create --namespace ns --name OrganizationId --type Keyword")
}

// fakeWorkflowService answers visibility counts: InvalidArgument when the
// query names an attribute the namespace lacks.
type fakeWorkflowService struct {
	workflowservice.WorkflowServiceClient
	known bool
}

func (f *fakeWorkflowService) CountWorkflowExecutions(context.Context, *workflowservice.CountWorkflowExecutionsRequest, ...grpc.CallOption) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	if !f.known {
		return nil, serviceerror.NewInvalidArgument("invalid query: unknown search attribute OrganizationId")
	}
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

// deniedOperator may not list search attributes (a Cloud API key).
type deniedOperator struct {
	operatorservice.OperatorServiceClient
}

func (deniedOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return nil, serviceerror.NewPermissionDenied("operator rights needed", "")
}

func TestMissingSearchAttributesProbesWhenListingIsDenied(t *testing.T) {
	for _, known := range []bool{true, false} {
		c := mocks.NewClient(t)
		c.On("OperatorService").Return(deniedOperator{})
		c.On("WorkflowService").Return(&fakeWorkflowService{known: known})
		missing, err := MissingSearchAttributes(context.Background(), c, "ns")
		require.NoError(t, err)
		if known {
			require.Empty(t, missing)
		} else {
			require.Equal(t, []string{"BridgeId", "OrganizationId", "TaskName"}, missing)
		}
	}
}
