package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

// BenchmarkRatesFanOut quotes POST /api/v1/rates through the real router,
// middleware and store, authenticated by an API key, for an organization
// with three active accounts (carrier_a, carrier_b, carrier_c) against the
// sandbox carriers. In "latency" each sandbox carrier answers its rate call
// after an artificial delay of 20, 40 and 60 ms: the fan-out should cost
// about the slowest carrier (60 ms) plus a few milliseconds, reported as
// overhead-ms. "no-latency" is the bare cost of the three calls.
//
//	go test ./api -run XXX -bench RatesFanOut -benchtime 100x
func BenchmarkRatesFanOut(b *testing.B) {
	b.Run("latency", func(b *testing.B) {
		benchRatesFanOut(b, map[string]time.Duration{
			carriers.CarrierA: 20 * time.Millisecond,
			carriers.CarrierB: 40 * time.Millisecond,
			carriers.CarrierC: 60 * time.Millisecond,
		})
	})
	b.Run("no-latency", func(b *testing.B) { benchRatesFanOut(b, nil) })
}

func benchRatesFanOut(b *testing.B, delays map[string]time.Duration) {
	e := rateTestEnv(b, rateDelay(delays))
	owner := e.signup()
	for _, code := range carriers.Codes() {
		rateTestAccount(b, e, owner.org, code, "active")
	}
	key := e.apiKey(owner, "rates:read")
	raw, err := json.Marshal(rateTestBody())
	require.NoError(b, err)
	call := func() {
		req := httptest.NewRequest("POST", "/api/v1/rates", strings.NewReader(string(raw)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key.token)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("rates: %d %s", rec.Code, rec.Body.String())
		}
		var out struct {
			Results []json.RawMessage `json:"results"`
			Errors  []json.RawMessage `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Results) != 3 || len(out.Errors) != 0 {
			b.Fatalf("rates: want three results and no errors: %s", rec.Body.String())
		}
	}
	// Warm up: OAuth tokens and carrier_c's carrier list are cached, as
	// they are in a running service.
	call()

	var slowest time.Duration
	for _, d := range delays {
		slowest = max(slowest, d)
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		call()
	}
	perOp := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	b.ReportMetric(float64(perOp.Microseconds())/1000, "ms/op")
	if slowest > 0 {
		b.ReportMetric(float64((perOp-slowest).Microseconds())/1000, "overhead-ms")
	}
}
