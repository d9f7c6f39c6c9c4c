package api

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/sandbox"
)

// Attacks on the transformation endpoints (issue 15, findings 1 and 2).
func TestTransformationAttacks(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Sandbox = sandbox.New(sandbox.Limits{Timeout: 3 * time.Second}) })
	require.True(t, e.deps.Sandbox.Isolated(), "transformations run in sandbox processes")
	hostile, innocent := e.signup(), e.signup()

	// The memory bombs answer {success: false}; the service's heap never
	// holds them.
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, code := range []string{
		`function transform(d) { var s = "x".repeat(2e6); var a = []; for (var i = 0; i < 2000; i++) a.push(s); d.n = a.join("").length }`,
		`function transform(d) { var a = new Array(1e6); d.n = a.concat.apply(a, Array(200).fill(a)).length }`,
		`function transform(d) { var s = "x".repeat(1e6); d.n = s.replace(/x/g, "y".repeat(1000)).length }`,
	} {
		res := e.do(hostile.caller, "POST", "/api/v1/transformations/test", map[string]any{"code": code, "sampleData": map[string]any{}})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Equal(t, false, res.Body["success"], code)
		require.Contains(t, res.Body["error"], "sandbox limit")
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(64<<20))

	// Saving a bomb is refused: the save check runs transform over a
	// sample order within the limits, not only the top level.
	res := e.do(hostile.caller, "POST", "/api/v1/transformations", map[string]any{"name": "bomb", "triggerPoint": "before_sync",
		"code": `function transform(d) { for (;;) {} }`})
	requireError(t, res, 400, "invalid_javascript")
	// Code that merely throws on the sample is saved (the sample is not
	// the tenant's data).
	res = e.do(hostile.caller, "POST", "/api/v1/transformations", map[string]any{"name": "picky", "triggerPoint": "before_sync",
		"code": `function transform(d) { if (!d.special) throw new Error("not special"); return d }`})
	require.Equal(t, 201, res.Code, "%s", res.Raw)

	// While the hostile organization keeps overrunning test runs, the
	// other organization's trivial transformation answers every time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.do(hostile.caller, "POST", "/api/v1/transformations/test", map[string]any{"sampleData": map[string]any{},
					"code": `function transform(d) { for (;;) {} }`})
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	for range 5 {
		start := time.Now()
		res := e.do(innocent.caller, "POST", "/api/v1/transformations/test", map[string]any{"code": `function transform(d) { d.ok = true }`,
			"sampleData": map[string]any{"a": 1}})
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Equal(t, true, res.Body["success"], "%s", res.Raw)
		// Starved, it would wait behind the hostile runs' deadlines and
		// fail; served in turn it answers in well under a deadline even
		// when starting a fresh sandbox process on a loaded machine.
		require.Less(t, time.Since(start), 5*time.Second)
	}
	close(stop)
	wg.Wait()
}

// The test endpoints are rate limited per organization.
func TestTransformationTestRateLimit(t *testing.T) {
	old := transformationTestRate
	transformationTestRate = config.Rate{Events: 3, Per: time.Minute}
	t.Cleanup(func() { transformationTestRate = old })
	e := newEnv(t)
	a, b := e.signup(), e.signup()
	body := map[string]any{"code": transformIdentity, "sampleData": map[string]any{}}
	for range 3 {
		require.Equal(t, 200, e.do(a.caller, "POST", "/api/v1/transformations/test", body).Code)
	}
	requireError(t, e.do(a.caller, "POST", "/api/v1/transformations/test", body), 429, "rate_limited")
	require.Equal(t, 200, e.do(b.caller, "POST", "/api/v1/transformations/test", body).Code)
}
