// Package telemetry is what an operator follows the service by: traces
// (OpenTelemetry, exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is
// set) across the HTTP API, Temporal workflows and activities and SQL
// queries, and Prometheus metrics (HTTP requests by route pattern, the
// backlogs, the reconciler's repairs) served beside the Temporal SDK's.
//
// Nothing here is global: each process builds one Tracing and one Metrics
// and hands them to the router, the Temporal client and the store.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Tracing is a process's tracer provider. The zero value (and nil) is
// tracing off: no middleware, no interceptor, no query tracer, nothing
// exported.
type Tracing struct {
	provider trace.TracerProvider
	shutdown func(context.Context) error
}

// Propagator is how a trace crosses processes: W3C trace context only
// (no baggage, which could carry anything a caller put in it).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// StartTracing exports spans over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and is off otherwise.
// The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself;
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc picks gRPC (default http/protobuf,
// the collector's port 4318). service names the process (service.name,
// overridden by OTEL_SERVICE_NAME); OTEL_TRACES_SAMPLER is honoured.
func StartTracing(ctx context.Context, service string, getenv func(string) string) (*Tracing, error) {
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return &Tracing{}, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch strings.ToLower(protocol) {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && res == nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return NewTracing(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))), nil
}

// NewTracing wraps an SDK tracer provider (tests pass one with an
// in-memory exporter). Spans it makes never carry an error's message: a
// carrier's or the database's message may quote an address or an e-mail,
// so an error is recorded by its type and the span marked failed; the
// message is in the log line with the same trace id.
func NewTracing(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{provider: redactingProvider{tp}, shutdown: tp.Shutdown}
}

// Enabled reports whether spans are made.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// Provider is the tracer provider (nil when off).
func (t *Tracing) Provider() trace.TracerProvider {
	if !t.Enabled() {
		return nil
	}
	return t.provider
}

// TemporalInterceptors are the client's interceptors: Temporal's
// OpenTelemetry interceptor, which carries the trace from the workflow
// start (an API request) into the workflow, its activities and child
// workflows, on the client and on every worker made from it. None when
// off.
func (t *Tracing) TemporalInterceptors() ([]interceptor.ClientInterceptor, error) {
	if !t.Enabled() {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            t.provider.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: Propagator,
		DisableBaggage:    true,
	})
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// QueryTracer traces every SQL statement run inside a traced request or
// activity (a query outside any span makes none): the statement text (SQL
// with $n placeholders, never the arguments) and the operation name. No
// connection details, no acquire spans. Nil when off.
func (t *Tracing) QueryTracer() pgx.QueryTracer {
	if !t.Enabled() {
		return nil
	}
	return otelpgx.NewTracer(
		otelpgx.WithTracerProvider(t.provider),
		otelpgx.WithDisableConnectionDetailsInAttributes(),
		otelpgx.WithDisableAcquireTracer(),
	)
}

// Shutdown flushes the spans not exported yet (within 5 seconds).
func (t *Tracing) Shutdown() error {
	if !t.Enabled() || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
