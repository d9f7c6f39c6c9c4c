package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/grpc"
)

// saOperator lists the namespace's custom search attributes.
type saOperator struct {
	operatorservice.OperatorServiceClient
	have map[string]enumspb.IndexedValueType
}

func (o *saOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: o.have}, nil
}

func TestReadyzReportsAMissingSearchAttribute(t *testing.T) {
	op := &saOperator{}
	tc := mocks.NewClient(t)
	tc.On("CheckHealth", mock.Anything, mock.Anything).Return(&client.CheckHealthResponse{}, nil)
	tc.On("OperatorService").Return(op)
	env := newEnv(t, func(d *Deps) { d.Temporal = tc; d.TemporalNamespace = "fos-ns" })

	res := env.do(caller{}, "GET", "/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.Code, string(res.Raw))
	checks := res.Body["checks"].(map[string]any)
	require.Equal(t, "missing: BridgeId, OrganizationId, TaskName", checks["temporalSearchAttributes"])
	require.Equal(t, "ok", checks["temporal"])

	// Registered: ready.
	op.have = map[string]enumspb.IndexedValueType{"OrganizationId": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"BridgeId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "TaskName": enumspb.INDEXED_VALUE_TYPE_KEYWORD}
	res = env.do(caller{}, "GET", "/readyz", nil)
	require.Equal(t, http.StatusOK, res.Code, string(res.Raw))
	require.Equal(t, "ok", res.Body["checks"].(map[string]any)["temporalSearchAttributes"])
}
