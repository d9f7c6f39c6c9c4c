package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// recording is tracing into an in-memory exporter.
func recording(t *testing.T) (*Tracing, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return NewTracing(tp), exp
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code, rec.Body.String())
	return rec.Body.String()
}

// A request is one span named by its route pattern, carrying no path,
// query, address or user agent, and one histogram series per route and
// status; a path no route matched is "unmatched", never itself.
func TestMiddlewareSpansAndMetrics(t *testing.T) {
	tr, exp := recording(t)
	m := NewMetrics()
	r := chi.NewRouter()
	r.Use(Middleware(tr, m.HTTP()))
	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/shipments/{id}", func(w http.ResponseWriter, r *http.Request) {
			require.True(t, trace.SpanContextFromContext(r.Context()).IsValid(), "the handler runs in the span")
			require.Equal(t, "secret-token", r.URL.Query().Get("sig"), "the handler sees the whole request")
			require.Equal(t, "Ada/1.0", r.UserAgent())
			w.WriteHeader(http.StatusTeapot)
		})
	})

	id := uuid.NewString()
	req := httptest.NewRequest("GET", "/api/v1/shipments/"+id+"?sig=secret-token", nil)
	req.Header.Set("User-Agent", "Ada/1.0")
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.RemoteAddr = "198.51.100.9:4711"
	// A caller's trace is linked, not continued.
	callerTrace := "0af7651916cd43dd8448eb211c80319c"
	req.Header.Set("traceparent", "00-"+callerTrace+"-b7ad6b7169203331-01")
	r.ServeHTTP(httptest.NewRecorder(), req)
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/wp-admin/"+id, nil))
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/api/v1/shipments/"+id, nil))

	spans := exp.GetSpans()
	require.Len(t, spans, 3)
	s := spans[0]
	require.Equal(t, "GET /api/v1/shipments/{id}", s.Name)
	require.Equal(t, trace.SpanKindServer, s.SpanKind)
	require.NotEqual(t, callerTrace, s.SpanContext.TraceID().String())
	require.False(t, s.Parent.IsValid())
	require.Len(t, s.Links, 1)
	require.Equal(t, callerTrace, s.Links[0].SpanContext.TraceID().String())
	attrs := map[string]string{}
	for _, a := range s.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	require.Equal(t, "/api/v1/shipments/{id}", attrs["http.route"])
	require.Equal(t, "418", attrs["http.response.status_code"])
	for k, v := range attrs {
		for _, leak := range []string{id, "secret", "Ada", "203.0.113.7", "198.51.100.9"} {
			require.NotContains(t, v, leak, "attribute %s", k)
		}
	}
	require.Equal(t, "GET", spans[1].Name, "unmatched: the method only")

	body := scrape(t, m.Handler())
	require.Contains(t, body, `fos_http_request_duration_seconds_count{method="GET",route="/api/v1/shipments/{id}",status="418"} 1`)
	require.Contains(t, body, `fos_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 1`)
	require.Contains(t, body, `fos_http_request_duration_seconds_count{method="OTHER",route="unmatched",status="405"} 1`)
	require.NotContains(t, body, id)
	require.Contains(t, body, "go_goroutines")
}

// Off: the router's handler is the handler itself.
func TestMiddlewareOff(t *testing.T) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	var off *Tracing
	require.Equal(t, fmt.Sprintf("%p", h), fmt.Sprintf("%p", Middleware(off, nil)(h)))
	require.Equal(t, fmt.Sprintf("%p", h), fmt.Sprintf("%p", Middleware(&Tracing{}, nil)(h)))
	tr, err := StartTracing(context.Background(), "fos", func(string) string { return "" })
	require.NoError(t, err)
	require.False(t, tr.Enabled())
	require.Nil(t, tr.Provider())
	require.Nil(t, tr.QueryTracer())
	ic, err := tr.TemporalInterceptors()
	require.NoError(t, err)
	require.Empty(t, ic)
	require.NoError(t, tr.Shutdown())
}

func TestStartTracingOTLP(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
	tr, err := StartTracing(context.Background(), "fos", func(k string) string { return env[k] })
	require.NoError(t, err)
	require.True(t, tr.Enabled())
	require.NotNil(t, tr.QueryTracer())
	ic, err := tr.TemporalInterceptors()
	require.NoError(t, err)
	require.Len(t, ic, 1)
	require.NoError(t, tr.Shutdown())

	env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
	tr, err = StartTracing(context.Background(), "fos", func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, tr.Shutdown())

	env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "smoke-signals"
	_, err = StartTracing(context.Background(), "fos", func(k string) string { return env[k] })
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
}

// An error's message (a carrier's, the database's: it may quote an
// address) never reaches a span; its type and the failed status do.
func TestErrorsRedacted(t *testing.T) {
	tr, exp := recording(t)
	ctx, span := tr.Provider().Tracer("test").Start(context.Background(), "work")
	require.Equal(t, span.SpanContext(), trace.SpanFromContext(ctx).SpanContext())
	span.RecordError(errors.New("address 1 Main St, Ada Lovelace rejected"), trace.WithStackTrace(true))
	span.SetStatus(codes.Error, "address 1 Main St, Ada Lovelace rejected")
	span.End()
	s := exp.GetSpans()[0]
	require.Equal(t, codes.Error, s.Status.Code)
	require.Empty(t, s.Status.Description)
	require.Len(t, s.Events, 1)
	require.Equal(t, "exception", s.Events[0].Name)
	require.Len(t, s.Events[0].Attributes, 1)
	require.Equal(t, "*errors.errorString", s.Events[0].Attributes[0].Value.AsString())
}

// The backlogs count their rows; one whose table does not exist yet is
// not reported, and is once the table is there.
func TestBacklogs(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	table := "backlog_test_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	m := NewMetrics()
	c := newBacklogCollector(st.Pool, slog.New(slog.DiscardHandler), append([]Backlog{
		{Name: "test_waiting", SQL: `SELECT count(*) FROM ` + table + ` WHERE waiting`},
	}, Backlogs...))
	c.interval = 0
	m.reg.MustRegister(c)

	// Every real backlog query runs, or names a table not migrated yet.
	for _, b := range Backlogs {
		var n int64
		err := st.Pool.QueryRow(ctx, b.SQL).Scan(&n)
		if err != nil {
			require.Contains(t, err.Error(), "SQLSTATE 42P01", "%s: %s", b.Name, b.SQL)
		}
	}

	body := scrape(t, m.Handler())
	require.NotContains(t, body, `backlog="test_waiting"`)
	require.Contains(t, body, `fos_backlog_items{backlog="inbound_webhook_events_waiting"} 0`)
	require.Contains(t, body, `fos_backlog_items{backlog="dispatch_assignments_pending"} 0`)
	for _, tbl := range []struct{ name, table string }{{"operations_executing", "operations"}, {"webhook_deliveries_failing", "webhook_deliveries"}} {
		var exists bool
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, tbl.table).Scan(&exists))
		require.Equal(t, exists, strings.Contains(body, `backlog="`+tbl.name+`"`), tbl.name)
	}

	_, err := st.Pool.Exec(ctx, `CREATE TABLE `+table+` (waiting boolean)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = st.Pool.Exec(context.Background(), `DROP TABLE `+table) })
	_, err = st.Pool.Exec(ctx, `INSERT INTO `+table+` VALUES (true), (true), (false)`)
	require.NoError(t, err)
	require.Contains(t, scrape(t, m.Handler()), `fos_backlog_items{backlog="test_waiting"} 2`)
}

// The counts are refreshed at most every interval, however often scraped.
func TestBacklogsCached(t *testing.T) {
	q := &countingQuerier{}
	c := newBacklogCollector(q, slog.New(slog.DiscardHandler), []Backlog{{Name: "a", SQL: "x"}})
	m := NewMetrics()
	m.reg.MustRegister(c)
	for range 3 {
		require.Contains(t, scrape(t, m.Handler()), `fos_backlog_items{backlog="a"} 7`)
	}
	require.Equal(t, 1, q.n)
	c.interval = time.Nanosecond
	scrape(t, m.Handler())
	require.Equal(t, 2, q.n)
}

func TestRepairsCounted(t *testing.T) {
	m := NewMetrics()
	m.Repaired("rate comparison", "restarted")
	m.Repaired("rate comparison", "restarted")
	m.Repaired("dispatch assignment", "failed")
	var none *Metrics
	none.Repaired("x", "failed")
	require.Nil(t, none.HTTP())
	body := scrape(t, m.Handler())
	require.Contains(t, body, `fos_reconciler_repairs_total{kind="rate comparison",outcome="restarted"} 2`)
	require.Contains(t, body, `fos_reconciler_repairs_total{kind="dispatch assignment",outcome="failed"} 1`)
}

type countingQuerier struct{ n int }

func (q *countingQuerier) QueryRow(context.Context, string, ...any) pgx.Row {
	q.n++
	return fixedRow(7)
}

type fixedRow int64

func (r fixedRow) Scan(dest ...any) error {
	*(dest[0].(*int64)) = int64(r)
	return nil
}
