package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fos-dev/fos/telemetry"
)

// With tracing on, a request's span is named by its route pattern and its
// access log line carries the span's trace id; off, the line has none.
func TestAccessLogTraceID(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var logs bytes.Buffer
	e := newEnv(t, func(d *Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		d.Tracing = telemetry.NewTracing(tp)
		d.HTTPMetrics = telemetry.NewMetrics().HTTP()
	})
	owner := e.signup()
	logs.Reset()
	exp.Reset()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/orders/"+owner.org, nil)
	req.Header.Set("Authorization", "Bearer "+owner.token)
	req.Header.Set("X-Organization-Id", owner.org)
	e.handler.ServeHTTP(rec, req)
	require.Equal(t, 404, rec.Code, rec.Body.String())

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "http request" {
			line = m
		}
	}
	require.NotNil(t, line, logs.String())
	var server tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "GET /api/v1/orders/{id}" {
			server = s
		}
	}
	require.True(t, server.SpanContext.IsValid(), "spans: %v", exp.GetSpans())
	require.Equal(t, server.SpanContext.TraceID().String(), line["trace_id"])

	off := newEnv(t, func(d *Deps) { d.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	logs.Reset()
	off.handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	require.NotContains(t, logs.String(), "trace_id")
}
