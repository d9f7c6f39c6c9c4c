package telemetry

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// HTTPMetrics is the latency histogram of the API's requests by method,
// route pattern and status; its _count is the request count.
type HTTPMetrics struct{ duration *prometheus.HistogramVec }

func newHTTPMetrics(reg prometheus.Registerer) *HTTPMetrics {
	m := &HTTPMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fos_http_request_duration_seconds",
		Help:    "Latency of HTTP API requests by method, route pattern (never the raw path) and status; _count counts requests.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
	}, []string{"method", "route", "status"})}
	reg.MustRegister(m.duration)
	return m
}

// unmatchedRoute labels a request no route matched (a 404 or 405), so a
// scan of random paths does not make a series per path.
const unmatchedRoute = "unmatched"

// Middleware traces and measures every request of a chi router; use it
// first (outermost). tr nil: no spans; m nil: no metrics; both nil: the
// request passes through untouched. The span is named "METHOD
// /route/{pattern}" once chi has routed the request.
//
// What a span carries about the request is the method, the host, the
// route pattern and the status: otelhttp is shown a copy of the request
// without its path, query, client address, user agent or headers (other
// than the trace context), so no id, token, signature or personal data
// becomes an attribute. Public API: a caller's traceparent is linked, not
// continued (a client cannot force sampling or join our traces).
func Middleware(tr *Tracing, m *HTTPMetrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		h := next
		if m != nil {
			h = m.measure(h)
		}
		if tr.Enabled() {
			h = traced(tr.provider, h)
		}
		return h
	}
}

func (m *HTTPMetrics) measure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		m.duration.WithLabelValues(methodLabel(r.Method), routePattern(r), strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}

// origRequest carries the request past otelhttp, which sees a view of it.
type origRequest struct{}

func traced(tp trace.TracerProvider, next http.Handler) http.Handler {
	// The handler otelhttp calls: the original request, in the span's
	// context; once routed, the span takes the route pattern as its name.
	inner := http.HandlerFunc(func(w http.ResponseWriter, view *http.Request) {
		r := view.Context().Value(origRequest{}).(*http.Request).WithContext(view.Context())
		next.ServeHTTP(w, r)
		if p := routePattern(r); p != unmatchedRoute {
			span := trace.SpanFromContext(r.Context())
			span.SetName(r.Method + " " + p)
			span.SetAttributes(attribute.String("http.route", p))
		}
	})
	h := otelhttp.NewHandler(inner, "http",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return methodLabel(r.Method) }),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, requestView(r))
	})
}

// requestView is what otelhttp sees of r: method, host, protocol, TLS and
// the trace context headers.
func requestView(r *http.Request) *http.Request {
	h := http.Header{}
	for _, k := range Propagator.Fields() {
		if v := r.Header.Values(k); len(v) > 0 {
			h[http.CanonicalHeaderKey(k)] = v
		}
	}
	v := &http.Request{
		Method: r.Method, URL: &url.URL{}, Host: r.Host, TLS: r.TLS, Header: h, Body: http.NoBody,
		Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
	}
	return v.WithContext(context.WithValue(r.Context(), origRequest{}, r))
}

// routePattern is the chi route pattern that served r ("/api/v1/shipments/{id}").
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" && p != "/*" {
			return p
		}
	}
	return unmatchedRoute
}

// methodLabel bounds the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
