package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are a process's own metrics (the Temporal SDK's have their own
// registry, served beside these by Handler): Go runtime and process,
// HTTP requests, the reconciler's repairs and, in the worker, the
// backlogs.
type Metrics struct {
	reg     *prometheus.Registry
	http    *HTTPMetrics
	repairs *prometheus.CounterVec
}

// NewMetrics registers the process's metrics on a registry of their own.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg, http: newHTTPMetrics(reg)}
	m.repairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fos_reconciler_repairs_total",
		Help: "Rows the reconciler settled because their workflow run was missing or closed: outcome restarted (run started again) or failed (row marked failed).",
	}, []string{"kind", "outcome"})
	reg.MustRegister(m.repairs)
	return m
}

// HTTP is the API's request metrics (nil when m is nil).
func (m *Metrics) HTTP() *HTTPMetrics {
	if m == nil {
		return nil
	}
	return m.http
}

// Repaired counts one repair of the reconciler; kind is the row kind
// ("rate comparison"), outcome "restarted" or "failed". Nil m: not counted.
func (m *Metrics) Repaired(kind, outcome string) {
	if m != nil {
		m.repairs.WithLabelValues(kind, outcome).Inc()
	}
}

// Handler serves these metrics and the gatherers given (the Temporal
// SDK's) in Prometheus' text format.
func (m *Metrics) Handler(also ...prometheus.Gatherer) http.Handler {
	g := append(prometheus.Gatherers{m.reg}, also...)
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// WatchBacklogs adds the backlog gauges, counted in db when scraped (at
// most every BacklogInterval). Call it in one process per deployment
// (the worker), not in every API replica.
func (m *Metrics) WatchBacklogs(db Querier, log *slog.Logger) {
	m.reg.MustRegister(newBacklogCollector(db, log, Backlogs))
}

// Backlog is one queue an operator watches: a query counting its rows.
type Backlog struct {
	// Name is the backlog label of fos_backlog_items.
	Name string
	// SQL counts the rows (one bigint). It may name a table that is not
	// there yet: the backlog is then not reported, and starts being once
	// the migration that creates the table has run.
	SQL string
}

// Backlogs are every backlog, in one place: a new queue is one more line.
// Each count should run on a (partial) index of the rows waiting.
var Backlogs = []Backlog{
	// Verified platform events waiting for their InboundWebhook run (the
	// relay's queue, webhook_events_relay_idx).
	{Name: "inbound_webhook_events_waiting", SQL: `SELECT count(*) FROM webhook_events WHERE status = 'received'`},
	// Orders a dispatcher assigned that no run has picked up yet.
	{Name: "dispatch_assignments_pending", SQL: `SELECT count(*) FROM dispatch_assignments WHERE status = 'pending'`},
	// Bulk operations running.
	{Name: "operations_executing", SQL: `SELECT count(*) FROM operations WHERE status = 'executing'`},
	// End-user webhook deliveries whose last attempt failed and that will
	// be tried again (wants a partial index on status = 'retrying' once
	// the table is large).
	{Name: "webhook_deliveries_failing", SQL: `SELECT count(*) FROM webhook_deliveries WHERE status = 'retrying'`},
}

// BacklogInterval is how often the backlog counts are refreshed at most,
// however often (and by however many servers) they are scraped.
const BacklogInterval = 10 * time.Second

// Querier runs a query of one row (a pool).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var backlogDesc = prometheus.NewDesc("fos_backlog_items",
	"Rows waiting in a backlog (inbound webhook events waiting, dispatch assignments pending, operations executing, end-user webhook deliveries failing).",
	[]string{"backlog"}, nil)

type backlogCollector struct {
	db       Querier
	log      *slog.Logger
	list     []Backlog
	interval time.Duration

	mu     sync.Mutex
	at     time.Time
	counts map[string]float64
}

func newBacklogCollector(db Querier, log *slog.Logger, list []Backlog) *backlogCollector {
	return &backlogCollector{db: db, log: log, list: list, interval: BacklogInterval}
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- backlogDesc }

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil || time.Since(c.at) >= c.interval {
		c.counts, c.at = c.count(), time.Now()
	}
	for _, b := range c.list {
		if n, ok := c.counts[b.Name]; ok {
			ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, n, b.Name)
		}
	}
}

// count runs every backlog's query; a backlog whose table does not exist
// (yet) or whose query fails is left out.
func (c *backlogCollector) count() map[string]float64 {
	out := make(map[string]float64, len(c.list))
	for _, b := range c.list {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var n int64
		err := c.db.QueryRow(ctx, b.SQL).Scan(&n)
		cancel()
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			out[b.Name] = float64(n)
		case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: not migrated yet
		default:
			c.log.Warn("backlog not counted", "backlog", b.Name, "error", err)
		}
	}
	return out
}
