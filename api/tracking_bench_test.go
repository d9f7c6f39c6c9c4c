package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// trackingStmtCounter is a pgx tracer counting every statement sent to
// PostgreSQL (BEGIN and COMMIT included).
type trackingStmtCounter struct {
	n   atomic.Int64
	mu  sync.Mutex
	sql []string
}

func (c *trackingStmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.mu.Lock()
	first := strings.Fields(d.SQL)
	if len(first) > 0 {
		c.sql = append(c.sql, strings.ToUpper(first[0]))
	}
	c.mu.Unlock()
	return ctx
}

func (c *trackingStmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *trackingStmtCounter) reset() {
	c.n.Store(0)
	c.mu.Lock()
	c.sql = nil
	c.mu.Unlock()
}

// trackingTracedEnv is a test environment whose store counts statements.
func trackingTracedEnv(t testing.TB) (*testEnv, *trackingStmtCounter) {
	t.Helper()
	storetest.New(t) // creates and migrates the package database
	cfg, err := pgxpool.ParseConfig(storetest.URL())
	require.NoError(t, err)
	counter := &trackingStmtCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return newEnv(t, func(d *Deps) { d.Store = &store.Store{Pool: pool} }), counter
}

// trackingBatchBody is a batch of n checkpoints spread over shipments, with
// event ids unique to tag.
func trackingBatchBody(t testing.TB, shipments []string, n int, tag string) []byte {
	t.Helper()
	at := time.Date(2025, 9, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{"label_created", "in_transit", "in_transit", "out_for_delivery", "delivered"}
	perShipment := max(1, n/len(shipments))
	cps := make([]map[string]any, n)
	for i := range cps {
		seq := i / len(shipments)
		cps[i] = map[string]any{
			"shipmentId":     shipments[i%len(shipments)],
			"sequence":       seq,
			"status":         statuses[min(seq*len(statuses)/perShipment, len(statuses)-1)],
			"checkpointTime": at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339),
			"source":         "carrier_a",
			"sourceEventId":  fmt.Sprintf("%s-%d", tag, i),
			"city":           "MEMPHIS",
			"state":          "TN",
			"countryCode":    "US",
			"zip":            "38118",
			"latitude":       35.1495,
			"longitude":      -90.049,
			"description":    "Arrived at FedEx location",
			"rawData":        map[string]any{"scan": i},
		}
	}
	raw, err := json.Marshal(map[string]any{"checkpoints": cps})
	require.NoError(t, err)
	return raw
}

// TestTrackingBatchStatementCount proves a batch is a constant number of
// statements: the same for 40 and 1,000 checkpoints.
func TestTrackingBatchStatementCount(t *testing.T) {
	e, counter := trackingTracedEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:write", "shipments:read")
	var shipments []string
	for range 20 {
		shipments = append(shipments, trackingTestShipment(t, e, owner.org, "label_created"))
	}
	// The first use of a key records it, off the request path: let that pass.
	require.Equal(t, 200, e.do(key, "GET", "/api/v1/shipment-tracking/map", nil).Code)
	time.Sleep(200 * time.Millisecond)
	count := func(n int, tag string) (int64, []string) {
		t.Helper()
		body := trackingBatchBody(t, shipments, n, tag)
		counter.reset()
		res := e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", body)
		require.Equal(t, 201, res.Code, "%s", res.Raw)
		require.EqualValues(t, n, res.Body["count"])
		counter.mu.Lock()
		defer counter.mu.Unlock()
		return counter.n.Load(), append([]string(nil), counter.sql...)
	}
	few, sqlFew := count(40, "few")
	thousand, sqlThousand := count(1000, "thousand")
	again, _ := count(1000, "thousand") // all upserts
	t.Logf("statements per request: 40 checkpoints %d %v; 1000 checkpoints %d %v; 1000 upserts %d", few, sqlFew, thousand, sqlThousand, again)
	require.Equal(t, few, thousand)
	require.Equal(t, thousand-1, again, "no shipment moves: no UPDATE")
	// BEGIN, lock, insert, update shipments, COMMIT (the API key is cached
	// since the warm-up request: no lookup).
	require.Equal(t, []string{"BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"}, sqlThousand)
}

func benchmarkCheckpointBatch(b *testing.B, upsert bool) {
	e, counter := trackingTracedEnv(b)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:write")
	var shipments []string
	for range 50 {
		shipments = append(shipments, trackingTestShipment(b, e, owner.org, "label_created"))
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		tag := fmt.Sprintf("b%d", i)
		if upsert {
			tag = "same"
		}
		bodies[i] = trackingBatchBody(b, shipments, 1000, tag)
	}
	if upsert {
		res := e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", bodies[0])
		require.Equal(b, 201, res.Code, "%s", res.Raw)
	}
	counter.reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", bodies[i])
		if res.Code != 201 {
			b.Fatalf("%d %s", res.Code, res.Raw)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(counter.n.Load())/float64(b.N), "stmts/op")
	b.ReportMetric(1000, "checkpoints/op")
}

// BenchmarkCheckpointBatch1000 posts batches of 1,000 new checkpoints (50
// shipments) through the router; stmts/op counts every statement of the
// request (authentication included).
func BenchmarkCheckpointBatch1000(b *testing.B) { benchmarkCheckpointBatch(b, false) }

// BenchmarkCheckpointBatch1000Upsert posts the same 1,000 checkpoints again
// and again (every row an ON CONFLICT update).
func BenchmarkCheckpointBatch1000Upsert(b *testing.B) { benchmarkCheckpointBatch(b, true) }
