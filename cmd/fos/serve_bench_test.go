package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.temporal.io/server/temporaltest"

	"github.com/fos-dev/fos/internal/bareorders"
	"github.com/fos-dev/fos/internal/proccpu"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// BenchmarkServeCreateOrder is POST /orders as a user's load test sees it
// (issue 17): the fos binary, built here, runs `fos serve` in its own
// process against the package's PostgreSQL database and an in-process
// Temporal test server; 32 clients send creates over loopback HTTP (keep-
// alive connections), in chunks interleaved with the same load on a bare
// chi+pgx server (internal/bareorders) that this process serves on the
// same database with a pool of the service's size. It reports both rates
// and their ratio (issue 17: >= 0.75 with tracing off, >= 0.65 with
// tracing exporting to a local collector).
//
//	./scripts/test-postgres.sh go test ./cmd/fos -run XXX -bench ServeCreateOrder -benchtime 6000x
//
//	FOS_BENCH_TRACING=1        the service exports its spans over OTLP/HTTP
//	                           to a loopback collector in this process
//	                           that reads and drops each batch
//	FOS_BENCH_PROFILE=FILE     afterwards, a 15 s CPU profile of the
//	                           service under the same load (its
//	                           FOS_DEBUG_ADDR), written to FILE
//	FOS_BENCH_LOG_LEVEL=LEVEL  the service's FOS_LOG_LEVEL (default info,
//	                           one access log line a request, as deployed)
//
// Run it with -benchtime Nx (N > 1): the probe run testing makes with
// b.N = 1 returns at once, so the binary is built and started only for
// the measured run.
func BenchmarkServeCreateOrder(b *testing.B) {
	if b.N == 1 {
		return
	}
	st := storetest.New(b)
	bin := filepath.Join(b.TempDir(), "fos")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(b, build.Run(), "go build ./cmd/fos")

	ts := temporaltest.NewServer()
	b.Cleanup(ts.Stop)
	httpAddr, debugAddr := freeAddr(b), freeAddr(b)
	level := os.Getenv("FOS_BENCH_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	env := append(os.Environ(),
		"DATABASE_URL="+storetest.URL(),
		"TEMPORAL_ADDRESS="+ts.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE="+ts.GetDefaultNamespace(),
		"FOS_ENCRYPTION_KEY="+secrets.NewKey(),
		"FOS_JWT_SECRET=serve-bench-secret-serve-bench-secret!",
		"FOS_HTTP_ADDR="+httpAddr,
		"FOS_DEBUG_ADDR="+debugAddr,
		"FOS_LOG_LEVEL="+level,
		// 32 clients on one key exceed the default 60,000/min.
		"FOS_LIMIT_API_KEY=off",
	)
	if os.Getenv("FOS_BENCH_TRACING") == "1" {
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlpSink(b), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	}
	logFile, err := os.Create(filepath.Join(b.TempDir(), "serve.log"))
	require.NoError(b, err)
	defer logFile.Close()
	srv := exec.Command(bin, "serve")
	srv.Env = env
	srv.Stdout, srv.Stderr = logFile, logFile
	require.NoError(b, srv.Start())
	b.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
		}
	})
	base := "http://" + httpAddr
	require.Eventually(b, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "fos serve never became ready (log: %s)", logFile.Name())

	// An organization, its API key (over the API, as a user does) and a
	// bridge.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 30 * time.Second}
	call := func(method, path, token, org string, body any, into any) {
		raw, _ := json.Marshal(body)
		req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
		require.NoError(b, err)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if org != "" {
			req.Header.Set("X-Organization-Id", org)
		}
		resp, err := client.Do(req)
		require.NoError(b, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		require.Less(b, resp.StatusCode, 300, "%s %s: %s", method, path, out)
		require.NoError(b, json.Unmarshal(out, into))
	}
	var signup struct {
		Data struct {
			AccessToken  string `json:"access_token"`
			Organization struct {
				ID string `json:"id"`
			} `json:"organization"`
		} `json:"data"`
	}
	call("POST", "/api/v1/auth/signup", "", "", map[string]any{"email": "bench-" + uuid.NewString()[:8] + "@example.com",
		"password": "a long bench password", "first_name": "Bench", "last_name": "Mark", "organization_name": "Bench"}, &signup)
	org := signup.Data.Organization.ID
	var key struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	call("POST", "/api/v1/api-keys", signup.Data.AccessToken, org, map[string]any{"name": "bench", "scopes": []string{"orders:write"}}, &key)
	bridge := uuid.New()
	_, err = st.Pool.Exec(context.Background(),
		`INSERT INTO bridges (id, organization_id, type, name, config) VALUES ($1, $2, 'storefront_a', 'Bench shop', '{}')`, bridge, org)
	require.NoError(b, err)

	// The baseline: a stock pgx pool of the service's size (store.Open's
	// floor of 16 on this URL) behind the bare router, over loopback HTTP.
	svcPool, err := store.Open(context.Background(), storetest.URL())
	require.NoError(b, err)
	conns := svcPool.Pool.Config().MaxConns
	svcPool.Close()
	cfg, err := pgxpool.ParseConfig(storetest.URL())
	require.NoError(b, err)
	cfg.MaxConns = conns
	barePool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(barePool.Close)
	bareSrv := httptest.NewServer(bareorders.Router(barePool, uuid.MustParse(org)))
	b.Cleanup(bareSrv.Close)

	template := `{"bridge_id":"` + bridge.String() + `","external_id":"%s-%d","order_number":"#%[2]d","status":"pending",` +
		`"customer":{"email":"jane.doe@example.com","firstName":"Jane","lastName":"Doe","phone":"+1 555 0100"},` +
		`"shipping_address":{"line1":"1 Main St","city":"Springfield","postalCode":"12345","country":"US"},` +
		`"line_items":[{"sku":"SKU-1","name":"Widget","quantity":2,"unitPrice":9.5,"totalPrice":19,"requiresShipping":true,"taxable":false}],` +
		`"totals":{"subtotal":19,"shipping":5,"tax":1.52,"discount":0,"total":25.52},"tags":["web"]}`
	const clients, chunk = 32, 512
	var seq, failed atomic.Int64
	// run sends n creates to url from 32 concurrent clients (or until stop
	// is closed, n < 0) and returns how long they took and how many ran.
	run := func(url, prefix, token string, n int, stop <-chan struct{}) (time.Duration, int64) {
		var next, done atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n < 0 || next.Add(1) <= int64(n) {
					if stop != nil {
						select {
						case <-stop:
							return
						default:
						}
					}
					req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(template, prefix, seq.Add(1))))
					req.Header.Set("Content-Type", "application/json")
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					resp, err := client.Do(req)
					if err != nil {
						if failed.Add(1) == 1 {
							b.Errorf("create %s: %v", prefix, err)
						}
						continue
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated && failed.Add(1) == 1 {
						b.Errorf("create %s: %d %s", prefix, resp.StatusCode, out)
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		return time.Since(start), done.Load()
	}
	svcURL, bareURL := base+"/api/v1/orders", bareSrv.URL+"/orders"
	// Warm both (connections, statement caches, the service's key cache).
	run(svcURL, "WARM", key.Data.Key, 2*chunk, nil)
	run(bareURL, "BAREWARM", "", 2*chunk, nil)

	var svcTime, bareTime time.Duration
	// CPU time of each side while it runs: this process (the clients, and
	// in the bare phase the bare server), the service's process and
	// PostgreSQL's (every postgres process).
	svcCPU, bareCPU := cpuTimes{ok: true}, cpuTimes{ok: true}
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		before := readCPU(srv.Process.Pid)
		d, _ := run(svcURL, "S", key.Data.Key, n, nil)
		mid := readCPU(srv.Process.Pid)
		svcTime += d
		d, _ = run(bareURL, "B", "", n, nil)
		after := readCPU(srv.Process.Pid)
		bareTime += d
		svcCPU = svcCPU.add(mid.sub(before))
		bareCPU = bareCPU.add(after.sub(mid))
	}
	b.StopTimer()
	svcRate, bareRate := float64(b.N)/svcTime.Seconds(), float64(b.N)/bareTime.Seconds()
	b.ReportMetric(svcRate, "orders/s")
	b.ReportMetric(bareRate, "bare_orders/s")
	b.ReportMetric(svcRate/bareRate, "ratio")
	b.ReportMetric(0, "ns/op") // both ran b.N times; ns/op would mislead
	if svcCPU.ok && bareCPU.ok {
		perReq := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
		b.Logf("CPU µs per create: service phase: clients %.0f, fos %.0f, postgres %.0f (sum %.0f); bare phase: clients+bare %.0f, fos %.0f, postgres %.0f (sum %.0f)",
			perReq(svcCPU.self), perReq(svcCPU.svc), perReq(svcCPU.pg), perReq(svcCPU.self+svcCPU.svc+svcCPU.pg),
			perReq(bareCPU.self), perReq(bareCPU.svc), perReq(bareCPU.pg), perReq(bareCPU.self+bareCPU.svc+bareCPU.pg))
	}

	if path := os.Getenv("FOS_BENCH_PROFILE"); path != "" {
		profileUnderLoad(b, "http://"+debugAddr, path, func(stop <-chan struct{}) {
			run(svcURL, "P", key.Data.Key, -1, stop)
		})
	}
}

// profileUnderLoad takes a 15 s CPU profile of the service while load runs.
func profileUnderLoad(b *testing.B, debugBase, path string, load func(stop <-chan struct{})) {
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() { load(stop); close(loaded) }()
	secs := 15
	if s, err := strconv.Atoi(os.Getenv("FOS_BENCH_PROFILE_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", debugBase, secs))
	close(stop)
	<-loaded
	require.NoError(b, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(b, os.WriteFile(path, raw, 0o644))
	b.Logf("CPU profile of fos serve under load: %s (go tool pprof -top %s)", path, path)
}

// otlpSink is a loopback OTLP/HTTP collector that reads each export and
// answers it empty (the service's exporter does all its work).
func otlpSink(b *testing.B) string {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(sink.Close)
	return sink.URL
}

// cpuTimes are the CPU times (user + system) of this process, the
// service's and PostgreSQL's processes, read from /proc (ok false where
// there is none).
type cpuTimes struct {
	self, svc, pg time.Duration
	ok            bool
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - o.self, svc: c.svc - o.svc, pg: c.pg - o.pg, ok: c.ok && o.ok}
}

func (c cpuTimes) add(o cpuTimes) cpuTimes {
	return cpuTimes{self: c.self + o.self, svc: c.svc + o.svc, pg: c.pg + o.pg, ok: c.ok && o.ok}
}

// readCPU reads the CPU times of this process, process svc and every
// process named postgres.
func readCPU(svc int) cpuTimes {
	self, err1 := proccpu.Of("self")
	service, err2 := proccpu.Of(strconv.Itoa(svc))
	return cpuTimes{self: self, svc: service, pg: proccpu.Named("postgres"), ok: err1 == nil && err2 == nil}
}
