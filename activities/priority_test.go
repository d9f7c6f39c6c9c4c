package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a gate's clock: sleeping advances it.
type fakeClock struct {
	t     time.Time
	slept time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func fakeGate(interactive, importing float64, linger time.Duration) (*PriorityGate, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)}
	g := NewPriorityGate(interactive, importing, linger)
	g.now, g.sleep = c.now, c.sleep
	return g, c
}

// drain takes n tokens one at a time, as the drainer's pushers do, and
// returns how long that took on the gate's clock.
func drain(t *testing.T, g *PriorityGate, c *fakeClock, n int) time.Duration {
	t.Helper()
	began := c.t
	for range n {
		require.NoError(t, g.Wait(context.Background(), 1))
	}
	return c.t.Sub(began)
}

// Nothing in flight: the drainer never waits, however fast it goes.
func TestPriorityGateFullSpeedWhenNothingHasPriority(t *testing.T) {
	g, c := fakeGate(500, 750, time.Second)
	require.Zero(t, g.Rate())
	require.Zero(t, drain(t, g, c, 10_000))
}

// A purchase in flight: the drainer keeps the interactive yield rate
// (the bucket's burst, a twentieth of a second, then one token per
// 1/rate); once the purchase ended and the linger passed, full speed.
func TestPriorityGatePacesWhileInteractiveWorkIsInFlight(t *testing.T) {
	g, c := fakeGate(500, 750, time.Second)
	end := g.Begin(PriorityInteractive)
	require.Equal(t, 500.0, g.Rate())
	took := drain(t, g, c, 1025)
	require.InDelta(t, 2.0, took.Seconds(), 0.01, "1,025 assignments: 25 of burst, then 1,000 at 500/s")

	end()
	end() // a second call changes nothing
	c.advance(999 * time.Millisecond)
	require.Equal(t, 500.0, g.Rate(), "within the linger the drainer still yields")
	require.Positive(t, drain(t, g, c, 100))
	c.advance(time.Second)
	require.Zero(t, g.Rate(), "after the linger: full speed")
	require.Zero(t, drain(t, g, c, 10_000))
}

// Work of several classes: the lowest yield rate holds; a class whose
// rate is 0 is not yielded to; two purchases in flight need both ended.
func TestPriorityGateClasses(t *testing.T) {
	g, c := fakeGate(200, 400, 0)
	endImport := g.Begin(PriorityImport)
	require.Equal(t, 400.0, g.Rate())
	require.InDelta(t, 1.0, drain(t, g, c, 420).Seconds(), 0.01)
	endA, endB := g.Begin(PriorityInteractive), g.Begin(PriorityInteractive)
	require.Equal(t, 200.0, g.Rate(), "the lowest rate in flight")
	endA()
	require.Equal(t, 200.0, g.Rate(), "one purchase still in flight")
	endB()
	c.advance(time.Nanosecond)
	require.Equal(t, 400.0, g.Rate())
	endImport()
	c.advance(time.Nanosecond)
	require.Zero(t, g.Rate())

	g.SetYieldRate(PriorityInteractive, 0)
	end := g.Begin(PriorityInteractive)
	defer end()
	require.Zero(t, g.Rate(), "a class with rate 0 is not yielded to")
	require.Zero(t, drain(t, g, c, 1000))
}

// A drainer waiting for a token stops when its context ends; the zero
// gate and a nil gate never slow anything.
func TestPriorityGateWaitEndsWithContext(t *testing.T) {
	g, _ := fakeGate(10, 10, time.Second)
	defer g.Begin(PriorityInteractive)()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 { // the burst, then a wait
		if err := g.Wait(ctx, 1); err != nil {
			require.ErrorIs(t, err, context.Canceled)
			return
		}
	}
	t.Fatal("a cancelled drainer kept taking tokens")
}

func TestPriorityGateZeroAndNil(t *testing.T) {
	var zero PriorityGate
	defer zero.Begin(PriorityInteractive)()
	require.Zero(t, zero.Rate())
	require.NoError(t, zero.Wait(context.Background(), 1000))
	var nilGate *PriorityGate
	nilGate.Begin(PriorityImport)()
	require.Zero(t, nilGate.Rate())
	require.Same(t, ProcessPriority, priorityOf(nil))
}
