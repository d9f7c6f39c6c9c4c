package activities

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Priority between the work of one worker process (issue 22, "Speed").
//
// On a small machine the dispatch drainer, a label purchase an HTTP
// client waits for, an import's pages, PostgreSQL and the Temporal server
// share the same cores. Left alone the drainer takes the most — it waits
// on nothing but its destination — and the purchase and the import slow
// down. So the drainer yields: work that has priority marks itself in
// flight (PriorityGate.Begin: an atomic add, and one more when it ends),
// and the drainer takes a token per assignment (PriorityGate.Wait): none
// while no priority work was in flight for the gate's linger, else at
// the yield rate of the classes in flight (the lowest of them). A yield
// rate is a pace, not a stop: the drainer keeps going at it, so a steady
// stream of purchases cannot starve a dispatch.
//
// The linger covers the gaps between back-to-back work of a class (the
// workflow task between a purchase's activities, the next page of an
// import): the drainer speeds up only once the class has been quiet that
// long.

// PriorityClass is a kind of work the drainer yields to.
type PriorityClass int

const (
	// PriorityInteractive is work an HTTP client waits for: a label
	// purchase's activities.
	PriorityInteractive PriorityClass = iota
	// PriorityImport is an import's pages (a bridge task's SyncPage).
	PriorityImport
	priorityClasses
)

// Default yield rates (assignments per second of the process's drainers
// while work of the class is in flight), measured on the two-core
// machine of issue 22, where a drainer alone pushes ~900/s
// (BenchmarkDispatchDrain, BenchmarkImportDispatch). Interactive: 550/s
// keeps the drain above its 500/s target. Import: off. The drain of an
// import's own assignments already runs at the import's pace (~800/s at
// 100,000 orders), so yielding at 750/s left the import as slow (126 s
// either way) and only made the dispatch end later (x1.26 instead of
// x1.10); a rate low enough to help the import ends the dispatch far
// later.
const (
	DefaultInteractiveYieldRate = 550
	DefaultImportYieldRate      = 0
	// DefaultPriorityLinger is how long after work of a class ends the
	// drainer still yields to it.
	DefaultPriorityLinger = time.Second
)

// PriorityGate paces the process's drainers below the work that has
// priority. Its zero value never slows anything; NewPriorityGate sets the
// rates. Safe for concurrent use.
type PriorityGate struct {
	linger atomic.Int64 // nanoseconds
	class  [priorityClasses]struct {
		rate     atomic.Uint64 // math.Float64bits of the yield rate; 0: no yield
		inFlight atomic.Int64
		lastEnd  atomic.Int64 // the clock's UnixNano when one last ended
	}

	// now and sleep are the clock (tests replace them).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	limiter *rate.Limiter // at the current yield rate
}

// NewPriorityGate returns a gate whose drainers yield at interactive and
// importing assignments per second while a purchase or an import page is
// in flight or ended within linger (a rate ≤ 0: that class is not
// yielded to).
func NewPriorityGate(interactive, importing float64, linger time.Duration) *PriorityGate {
	g := &PriorityGate{}
	g.SetYieldRate(PriorityInteractive, interactive)
	g.SetYieldRate(PriorityImport, importing)
	g.SetLinger(linger)
	return g
}

// ProcessPriority is the gate of this process, shared by every worker it
// runs (the CPU is the process's, not a task queue's): the drainers of
// DispatchActivities and the purchase and import activities use it
// unless given their own. The worker sets its rates from its settings
// (FOS_DISPATCH_YIELD_RATE, FOS_DISPATCH_IMPORT_YIELD_RATE).
var ProcessPriority = NewPriorityGate(DefaultInteractiveYieldRate, DefaultImportYieldRate, DefaultPriorityLinger)

// priorityOf is g, or ProcessPriority when g is nil.
func priorityOf(g *PriorityGate) *PriorityGate {
	if g == nil {
		return ProcessPriority
	}
	return g
}

// SetYieldRate sets the drainers' rate while work of class c has priority
// (≤ 0: they do not yield to it).
func (g *PriorityGate) SetYieldRate(c PriorityClass, perSecond float64) {
	g.class[c].rate.Store(math.Float64bits(max(perSecond, 0)))
}

// YieldRate is the rate SetYieldRate set for class c.
func (g *PriorityGate) YieldRate(c PriorityClass) float64 {
	return math.Float64frombits(g.class[c].rate.Load())
}

// SetLinger sets how long after work of a class ends the drainers still
// yield to it.
func (g *PriorityGate) SetLinger(d time.Duration) { g.linger.Store(int64(max(d, 0))) }

func (g *PriorityGate) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// Begin marks work of class c in flight until the returned func is
// called (once). A nil gate marks nothing.
func (g *PriorityGate) Begin(c PriorityClass) (end func()) {
	if g == nil {
		return func() {}
	}
	cl := &g.class[c]
	cl.inFlight.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			cl.lastEnd.Store(g.clock().UnixNano())
			cl.inFlight.Add(-1)
		})
	}
}

// Rate is the pace the drainers keep now: the lowest yield rate of the
// classes in flight or ended within the linger; 0 when none (full speed).
func (g *PriorityGate) Rate() float64 {
	if g == nil {
		return 0
	}
	now := g.clock().UnixNano()
	linger := g.linger.Load()
	lowest := 0.0
	for i := range g.class {
		cl := &g.class[i]
		r := math.Float64frombits(cl.rate.Load())
		if r <= 0 {
			continue
		}
		if cl.inFlight.Load() > 0 || now-cl.lastEnd.Load() < linger {
			if lowest == 0 || r < lowest {
				lowest = r
			}
		}
	}
	return lowest
}

// Wait takes n tokens for a drainer's next assignments: at once while
// nothing has priority, else at Rate (a token bucket whose burst is a
// twentieth of a second of the rate). It returns ctx's error when ctx
// ends first.
func (g *PriorityGate) Wait(ctx context.Context, n int) error {
	r := g.Rate()
	if r <= 0 {
		return nil
	}
	now := g.clock()
	g.mu.Lock()
	burst := max(n, int(r/20))
	if g.limiter == nil {
		g.limiter = rate.NewLimiter(rate.Limit(r), burst)
	} else if g.limiter.Limit() != rate.Limit(r) || g.limiter.Burst() != burst {
		g.limiter.SetLimitAt(now, rate.Limit(r))
		g.limiter.SetBurstAt(now, burst)
	}
	res := g.limiter.ReserveN(now, n)
	g.mu.Unlock()
	d := res.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	sleep := g.sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	if err := sleep(ctx, d); err != nil {
		res.CancelAt(g.clock())
		return err
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
