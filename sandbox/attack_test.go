package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The memory bombs of issue 15, finding 1: each builds a huge total
// through a built-in whose arguments are each within the limits.
var bombs = map[string]string{
	"join of 2,000 × 2 MB":   `function transform(d) { var s = "x".repeat(2e6); var a = []; for (var i = 0; i < 2000; i++) a.push(s); return {n: a.join("").length} }`,
	"concat.apply 1e6 × 200": `function transform(d) { var a = new Array(1e6); return {n: a.concat.apply(a, Array(200).fill(a)).length} }`,
	"String concat":          `function transform(d) { var s = "x".repeat(2e6); var parts = Array(500).fill(s); return {n: s.concat.apply(s, parts).length} }`,
	"flat":                   `function transform(d) { var row = Array(1e5).fill(1); var a = Array(500).fill(row); return {n: a.flat().length} }`,
	"flatMap":                `function transform(d) { var row = []; for (var i = 0; i < 1000; i++) row.push(i); return {n: Array.from({length: 2000}).flatMap(function () { return row }).length} }`,
	"replace product":        `function transform(d) { var s = "x".repeat(1e6); return {n: s.replace(/x/g, "y".repeat(1000)).length} }`,
	"replaceAll $prefix":     `function transform(d) { var s = "x".repeat(1e5); return {n: s.replaceAll("x", "$` + "`" + `").length} }`,
	"replace fn":             `function transform(d) { var s = "x".repeat(1e5), big = "y".repeat(2e6); return {n: s.replace(/x/g, function () { return big }).length} }`,
	"nested join":            `function transform(d) { var s = "x".repeat(2e6); var a = [s, s]; for (var i = 0; i < 10; i++) a = [a, a]; return {n: String(a).length} }`,
}

// testPool is a small pool for one test, 256 MiB of address space per
// process.
func testPool(t *testing.T, cfg PoolConfig) *Pool {
	t.Helper()
	cfg.MemoryBytes = 256 << 20
	p, err := NewPool(cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// The guards refuse each bomb before it allocates; with the guards off,
// the sandbox process dies or is killed and only that run fails. The
// service's own heap never sees the bomb, and the pool serves the next
// run.
func TestMemoryBombsCannotTakeTheServiceDown(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 2})
	// Deadlines are generous: the guards must answer, not the clock, on a
	// loaded machine.
	guarded := NewWithPool(Limits{Timeout: 10 * time.Second}, p)
	unguarded := NewWithPool(Limits{Unguarded: true, Timeout: 2 * time.Second}, p)
	ctx := context.Background()
	before := heapInUse()
	for name, code := range bombs {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := guarded.Run(ctx, code, []byte(`{}`))
			e := requireKind(t, err, KindMemory)
			if name != "flatMap" { // refused before it allocates
				require.Contains(t, e.Message, "sandbox limit")
			} // flatMap's parts are counted as they come: the guard or the process limit stops it
			require.Less(t, time.Since(start), 10*time.Second)
		})
	}
	_, killedBefore := p.Stats()
	for _, name := range []string{"join of 2,000 × 2 MB", "concat.apply 1e6 × 200", "replace fn"} {
		start := time.Now()
		_, err := unguarded.Run(ctx, bombs[name], []byte(`{}`))
		require.True(t, IsKind(err, KindMemory) || IsKind(err, KindTimeout), "%s: %v", name, err)
		require.Less(t, time.Since(start), 4*time.Second, name)
		t.Logf("%s without guards: %v after %v", name, err, time.Since(start))
		out, err := guarded.Run(ctx, `function transform(d) { return {ok: d.n + 1} }`, []byte(`{"n": 1}`))
		require.NoError(t, err)
		require.JSONEq(t, `{"ok": 2}`, string(out))
	}
	_, killed := p.Stats()
	require.Greater(t, killed, killedBefore, "the bombs' processes were replaced")
	require.Less(t, int64(heapInUse())-int64(before), int64(64<<20), "the service's heap stayed put")
}

// Issue 15, finding 2: one tenant's overrunning runs hold at most its
// share of the processes, so another tenant's trivial transformation runs
// at once, every time, while the bombs go on.
func TestHostileTenantCannotStarveAnother(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 2, PerTenant: 1})
	hostile := NewWithPool(Limits{Unguarded: true, Timeout: time.Second}, p)
	sb := NewWithPool(Limits{}, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bomb := `function transform(d) { var a = new Array(1e6); for (;;) a.concat.apply(a, Array(200).fill(a)) }`
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _ = hostile.RunFor(ctx, "hostile-org", bomb, []byte(`{}`))
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	var worst time.Duration
	for i := range 10 {
		start := time.Now()
		out, err := sb.RunFor(context.Background(), "innocent-org", `function transform(d) { d.i = d.i * 2; return d }`, []byte(fmt.Sprintf(`{"i": %d}`, i)))
		require.NoError(t, err, "run %d", i)
		require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, 2*i), string(out))
		worst = max(worst, time.Since(start))
	}
	cancel()
	wg.Wait()
	t.Logf("innocent tenant's worst run while the bombs ran: %v", worst)
	require.Less(t, worst, time.Second)
}

// A batch is one request: each record has its own deadline, a record
// that loops fails alone, the others come back in order.
func TestRunBatch(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 2})
	sb := NewWithPool(Limits{Timeout: 200 * time.Millisecond}, p)
	code := `function transform(d) { if (d.loop) for (;;) {}; if (d.bomb) { var s = "x".repeat(2e6); var a = Array(2000).fill(s); a.join("") } return {i: d.i * 10} }`
	var inputs [][]byte
	for i := range 50 {
		in := map[string]any{"i": i, "loop": i == 7, "bomb": i == 20}
		b, _ := json.Marshal(in)
		inputs = append(inputs, b)
	}
	inputs = append(inputs, []byte(`[1]`))
	res := sb.RunBatch(context.Background(), "org", code, inputs)
	require.Len(t, res, 51)
	for i, r := range res[:50] {
		switch i {
		case 7:
			requireKind(t, r.Err, KindTimeout)
		case 20:
			requireKind(t, r.Err, KindMemory)
		default:
			require.NoError(t, r.Err, "record %d", i)
			require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, i*10), string(r.Out))
		}
	}
	requireKind(t, res[50].Err, KindInput)

	// Without guards the record's process is killed; the rest go on in a
	// fresh one.
	ug := NewWithPool(Limits{Timeout: time.Second, Unguarded: true}, p)
	res = ug.RunBatch(context.Background(), "org", code, inputs[15:25])
	for i, r := range res {
		if i == 5 {
			require.True(t, IsKind(r.Err, KindMemory) || IsKind(r.Err, KindTimeout), "%v", r.Err)
			continue
		}
		require.NoError(t, r.Err, "record %d", 15+i)
	}
}

// The save check runs the code over a sample within the limits: a bomb
// that waits inside transform is refused; an exception on the sample is
// not (the sample is not the tenant's data).
func TestCheckRunsTheSample(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 2})
	for _, sb := range []*Sandbox{NewWithPool(Limits{Timeout: 300 * time.Millisecond}, p), NewWithPool(Limits{Timeout: 300 * time.Millisecond}, nil)} {
		ctx := context.Background()
		sample := []byte(`{"id": "1", "lineItems": []}`)
		require.NoError(t, sb.CheckFor(ctx, "org", `function transform(d) { return d }`, sample))
		require.NoError(t, sb.CheckFor(ctx, "org", `function transform(d) { return d.missing.field }`, sample))
		for _, code := range []string{
			`function transform(d) { for (;;) {} }`,
			bombs["join of 2,000 × 2 MB"],
			`function transform(d) { return {s: "x".repeat(2e6)} }`,
		} {
			e := requireKind(t, sb.CheckFor(ctx, "org", code, sample), KindSyntax)
			require.True(t, strings.Contains(e.Message, "sample") || strings.Contains(e.Message, "check"), e.Message)
		}
	}
}

// A process that died while idle (killed from outside) costs no run: the
// request goes to a fresh one.
func TestDeadIdleProcessIsReplaced(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 1})
	sb := NewWithPool(Limits{}, p)
	code := `function transform(d) { return {n: d.n + 1} }`
	_, err := sb.RunFor(context.Background(), "org", code, []byte(`{"n": 1}`))
	require.NoError(t, err)
	p.mu.Lock()
	require.Len(t, p.idle, 1)
	idle := p.idle[0]
	p.mu.Unlock()
	require.NoError(t, idle.cmd.Process.Kill())
	_, _ = idle.cmd.Process.Wait()
	out, err := sb.RunFor(context.Background(), "org", code, []byte(`{"n": 2}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 3}`, string(out))
}
