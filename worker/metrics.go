package worker

import (
	"log/slog"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
)

// Metrics exports the Temporal SDK's metrics (workflow and activity task
// latencies, poll results, schedule-to-start, slots in use, request
// failures...) in Prometheus format, the way the SDK's contrib/tally
// package does: a tally scope with tally's Prometheus reporter on a
// registry of its own.
type Metrics struct {
	scope    tally.Scope
	closer   interface{ Close() error }
	reporter tallyprom.Reporter
	reg      *prom.Registry
}

// NewMetrics returns the metrics; pass Handler() as client.Options'
// MetricsHandler and serve HTTPHandler() at /metrics. A metric the SDK
// emits with a tag set Prometheus cannot take is logged and dropped.
func NewMetrics(log *slog.Logger) *Metrics {
	reg := prom.NewRegistry()
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		Gatherer:         reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError: func(err error) {
			log.Warn("temporal metric not exported", "error", err)
		},
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sanitize,
	}, time.Second)
	return &Metrics{scope: scope, closer: closer, reporter: reporter, reg: reg}
}

// sanitize keeps metric and label names to what Prometheus accepts, and
// label values readable (task queue "fos-bulk" stays "fos-bulk").
var sanitize = func() tally.SanitizeOptions {
	o := tallyprom.DefaultSanitizerOpts
	o.ValueCharacters = tally.ValidCharacters{
		Ranges:     tally.AlphanumericRange,
		Characters: []rune{'_', '-', '.', '/', ':', '@'},
	}
	return o
}()

// Handler is the SDK metrics handler.
func (m *Metrics) Handler() client.MetricsHandler { return tallyHandler{m.scope} }

// HTTPHandler serves the metrics in Prometheus' text format.
func (m *Metrics) HTTPHandler() http.Handler { return m.reporter.HTTPHandler() }

// Gatherer gathers the SDK metrics (to serve them beside others).
func (m *Metrics) Gatherer() prom.Gatherer { return m.reg }

// Close flushes and stops the reporting loop.
func (m *Metrics) Close() error { return m.closer.Close() }

// tallyHandler adapts a tally scope to the SDK's metrics handler.
type tallyHandler struct{ scope tally.Scope }

func (h tallyHandler) WithTags(tags map[string]string) client.MetricsHandler {
	return tallyHandler{h.scope.Tagged(tags)}
}
func (h tallyHandler) Counter(name string) client.MetricsCounter { return h.scope.Counter(name) }
func (h tallyHandler) Gauge(name string) client.MetricsGauge     { return h.scope.Gauge(name) }
func (h tallyHandler) Timer(name string) client.MetricsTimer     { return h.scope.Timer(name) }
