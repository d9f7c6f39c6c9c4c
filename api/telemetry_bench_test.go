package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/telemetry"
)

// benchTelemetry turns the benchmarks' telemetry on as fos does:
//
//	FOS_BENCH_TRACING=1   spans of the router, the store's queries (a
//	                      traced pool of the same size) exported over OTLP
//	                      to OTEL_EXPORTER_OTLP_ENDPOINT, or, unset, to a
//	                      loopback sink that reads and drops each batch
//	FOS_BENCH_METRICS=1   the HTTP request metrics
//	FOS_BENCH_CONNS=N     both paths' pools hold N connections (default:
//	                      the test pool's 40; less on a shared server
//	                      with a connection limit)
//
// Unset: off, as the service runs without OTEL_EXPORTER_OTLP_ENDPOINT and
// FOS_METRICS_ADDR.
func benchTelemetry(b *testing.B) func(*Deps) {
	return func(d *Deps) {
		// FOS_BENCH_NO_VALIDATION=1: request bodies are not validated by
		// api/openapi.yaml (to see what the validation costs).
		d.NoRequestValidation = os.Getenv("FOS_BENCH_NO_VALIDATION") == "1"
		if os.Getenv("FOS_BENCH_METRICS") == "1" {
			d.HTTPMetrics = telemetry.NewMetrics().HTTP()
		}
		conns := d.Store.Pool.Config().MaxConns
		if n, err := strconv.Atoi(os.Getenv("FOS_BENCH_CONNS")); err == nil && n > 0 {
			conns = int32(n)
		}
		tr := &telemetry.Tracing{}
		if os.Getenv("FOS_BENCH_TRACING") == "1" {
			tr = benchTracing(b)
		}
		if !tr.Enabled() && conns == d.Store.Pool.Config().MaxConns {
			return
		}
		st, err := store.Open(context.Background(), d.Store.Pool.Config().ConnString(), store.WithQueryTracer(tr.QueryTracer()),
			func(c *pgxpool.Config) { c.MaxConns = conns })
		require.NoError(b, err)
		b.Cleanup(st.Close)
		d.Store, d.Tracing = st, tr
	}
}

// benchTracing exports over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT or, unset,
// to a loopback sink that reads and drops each batch.
func benchTracing(b *testing.B) *telemetry.Tracing {
	var opts []otlptracehttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
		}))
		b.Cleanup(sink.Close)
		opts = append(opts, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	require.NoError(b, err)
	tr := telemetry.NewTracing(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp)))
	b.Cleanup(func() { _ = tr.Shutdown() })
	return tr
}
