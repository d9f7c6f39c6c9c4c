package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// redactingProvider makes spans that keep error messages out of the
// trace: RecordError records the error's Go type only, SetStatus keeps the
// code and drops the description. The instrumentations (otelhttp,
// Temporal's interceptor, otelpgx) all record errors through these two.
type redactingProvider struct{ trace.TracerProvider }

func (p redactingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return redactingTracer{Tracer: p.TracerProvider.Tracer(name, opts...), provider: p}
}

type redactingTracer struct {
	trace.Tracer
	provider redactingProvider
}

func (t redactingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.Tracer.Start(ctx, name, opts...)
	rs := redactingSpan{Span: s, provider: t.provider}
	return trace.ContextWithSpan(ctx, rs), rs
}

type redactingSpan struct {
	trace.Span
	provider redactingProvider
}

// RecordError records an "exception" event naming the error's type; the
// options (attributes, stack trace) are dropped with the message.
func (s redactingSpan) RecordError(err error, _ ...trace.EventOption) {
	if err == nil || !s.IsRecording() {
		return
	}
	s.Span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", fmt.Sprintf("%T", err))))
}

// SetStatus keeps the code; a description is an error's message.
func (s redactingSpan) SetStatus(code codes.Code, _ string) { s.Span.SetStatus(code, "") }

func (s redactingSpan) TracerProvider() trace.TracerProvider { return s.provider }
