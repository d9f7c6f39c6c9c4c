package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/carriers/carrierstest"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/workflows"
)

// One label purchase is one trace: POST /shipments, the ShipmentLabel
// workflow it starts, that workflow's activities and the SQL both run,
// every span a descendant of the request's. No span carries the
// customer's name, e-mail or address.
func TestLabelPurchaseIsOneTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := startTraced(t, telemetry.NewTracing(tp), nil, func(r *carriers.Registry) *carriers.Registry {
		return carrierstest.WithDeliveryChanges(r, carriers.CarrierA)
	})
	// Signs up, makes a key, a carrier account and an order, buys the
	// label (POST /shipments) and moves the shipment in transit.
	(&shpStack{stack: s, store: s.store, box: s.box}).shipmentInTransit(t)

	var root tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "POST /api/v1/shipments" {
			root = sp
		}
	}
	require.True(t, root.SpanContext.IsValid(), "no span for POST /api/v1/shipments")
	require.False(t, root.Parent.IsValid(), "the request's span is the root")
	require.Equal(t, trace.SpanKindServer, root.SpanKind)
	traceID := root.SpanContext.TraceID()

	// The workflow's spans end as its tasks complete: wait for them.
	var spans tracetest.SpanStubs
	names := map[string]int{}
	require.Eventually(t, func() bool {
		spans, names = nil, map[string]int{}
		for _, sp := range exp.GetSpans() {
			if sp.SpanContext.TraceID() == traceID {
				spans = append(spans, sp)
				names[sp.Name]++
			}
		}
		return names["RunWorkflow:ShipmentLabel"] > 0 && names["RunActivity:BuyShipmentLabel"] > 0
	}, 20*time.Second, 100*time.Millisecond, "spans of the trace: %v", names)

	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	// under reports whether sp descends from a span named name (or is one).
	under := func(sp tracetest.SpanStub, name string) bool {
		for {
			if sp.Name == name || strings.HasPrefix(sp.Name, name) {
				return true
			}
			parent, ok := byID[sp.Parent.SpanID()]
			if !sp.Parent.IsValid() || !ok {
				return false
			}
			sp = parent
		}
	}
	var activities, activityQueries, apiQueries int
	for _, sp := range spans {
		require.True(t, under(sp, "POST /api/v1/shipments"), "%s is not under the request's span", sp.Name)
		isQuery := sp.SpanKind == trace.SpanKindClient && attr(sp, "db.query.text") != ""
		switch {
		case strings.HasPrefix(sp.Name, "RunActivity:"):
			activities++
			require.True(t, under(sp, "RunWorkflow:ShipmentLabel"), "%s outside the workflow", sp.Name)
		case isQuery && under(sp, "RunActivity:"):
			activityQueries++
		case isQuery:
			apiQueries++
		}
		if isQuery {
			require.Contains(t, attr(sp, "db.query.text"), "$1", "statements carry placeholders, not values")
		}
	}
	require.Positive(t, activities)
	require.Positive(t, activityQueries, "the activities' SQL is in the trace")
	require.Positive(t, apiQueries, "the API's SQL is in the trace")
	// The API starts the workflow with its purchase update (update-with-start).
	require.Equal(t, 1, names["UpdateWithStartWorkflow:"+workflows.PurchaseUpdateResult], "%v", names)
	require.Equal(t, 1, names["RunWorkflow:ShipmentLabel"], "%v", names)

	// Personal data the order holds never becomes an attribute.
	for _, sp := range exp.GetSpans() {
		for _, a := range sp.Attributes {
			for _, pii := range []string{"c@example.com", "Chloe", "1 Pike St", "Lovelace", "correct horse"} {
				require.NotContains(t, a.Value.Emit(), pii, "span %s attribute %s", sp.Name, a.Key)
			}
		}
	}
}

func attr(sp tracetest.SpanStub, key string) string {
	for _, a := range sp.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}
