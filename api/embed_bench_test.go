package api

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkEmbedSessionAuth measures what an est_ session token costs a
// request: Authenticate alone (one unique-index lookup; no cache, so a
// revocation holds from the next request) and a whole session route
// (authentication, the session's scope and config, the handler). Reports
// p99 in microseconds (target: authentication ≤ 1 ms p99). Numbers taken
// on a loaded machine are noise; run alone:
//
//	./scripts/test-postgres.sh go test -run '^$' -bench BenchmarkEmbedSessionAuth -benchtime 2000x ./api/
func BenchmarkEmbedSessionAuth(b *testing.B) {
	e := newEnv(b)
	o := e.embedOrg(nil)
	tok, _ := e.embedSession(o, "bench", nil)
	p99 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)*99/100].Microseconds())
	}
	b.Run("authenticate", func(b *testing.B) {
		svc := e.embedService()
		ctx := b.Context()
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if _, err := svc.Authenticate(ctx, tok.token); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.ReportMetric(p99(lat), "p99-µs")
	})
	// A session may make 600 requests a minute: spread the route's
	// requests over sessions enough for the run.
	var toks []string
	for i := range 10 {
		t, _ := e.embedSession(o, "bench-"+strconv.Itoa(i), nil)
		toks = append(toks, t.token)
	}
	b.Run("session-route", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			req := httptest.NewRequest("GET", "/api/v1/embed/webhooks/event-types", nil)
			req.Header.Set("Authorization", "Bearer "+toks[i%len(toks)])
			i++
			rec := httptest.NewRecorder()
			t0 := time.Now()
			e.handler.ServeHTTP(rec, req)
			lat = append(lat, time.Since(t0))
			if rec.Code != 200 {
				b.Fatal(rec.Body.String())
			}
		}
		b.ReportMetric(p99(lat), "p99-µs")
	})
}
