package carriers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

func requireOrdered(t *testing.T, evs []carriers.TrackEvent) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		assert.False(t, evs[i].Time.Before(evs[i-1].Time), "events oldest first")
	}
}

func TestTrackIssuedLabel(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	for _, code := range []string{"carrier_a", "carrier_b"} {
		t.Run(code, func(t *testing.T) {
			c, acct := get(t, reg, code), acctOf(code)
			future, err := c.CreateLabel(ctx, acct, labelReq(code, 5))
			require.NoError(t, err)
			past, err := c.CreateLabel(ctx, acct, labelReq(code, -20))
			require.NoError(t, err)

			res, err := c.Track(ctx, acct, []string{future.TrackingNumber, past.TrackingNumber})
			require.NoError(t, err)
			require.Len(t, res, 2)

			f := res[0]
			assert.Equal(t, future.TrackingNumber, f.TrackingNumber)
			assert.False(t, f.NotFound)
			assert.Equal(t, carriers.StatusLabelCreated, f.Status)
			require.Len(t, f.Events, 1)
			assert.Equal(t, carriers.StatusLabelCreated, f.Events[0].Status)
			assert.Nil(t, f.DeliveredAt)

			p := res[1]
			assert.Equal(t, carriers.StatusDelivered, p.Status)
			assert.Equal(t, groundOf[code], p.ServiceType)
			require.NotNil(t, p.DeliveredAt)
			require.NotNil(t, p.ShipDate)
			require.NotNil(t, p.Weight)
			assert.InDelta(t, 5, p.Weight.Value, 0.01)
			require.NotNil(t, p.Origin)
			assert.Equal(t, "MEMPHIS", p.Origin.City)
			require.NotNil(t, p.Destination)
			assert.Equal(t, "98101", p.Destination.Zip)
			require.NotNil(t, p.Destination.Latitude)
			assert.InDelta(t, 47.61, *p.Destination.Latitude, 0.01)
			requireOrdered(t, p.Events)
			assert.GreaterOrEqual(t, len(p.Events), 6)
			statuses := map[string]bool{}
			for _, e := range p.Events {
				statuses[e.Status] = true
				assert.NotEmpty(t, e.EventID)
				assert.NotEmpty(t, e.City)
				require.NotNil(t, e.Latitude, "coordinates for %s", e.City)
				require.NotNil(t, e.Longitude)
			}
			for _, s := range []string{carriers.StatusLabelCreated, carriers.StatusInTransit, carriers.StatusOutForDelivery, carriers.StatusDelivered} {
				assert.True(t, statuses[s], "has a %s event", s)
			}
			last := p.Events[len(p.Events)-1]
			assert.Equal(t, carriers.StatusDelivered, last.Status)
			assert.Equal(t, last.Time, *p.DeliveredAt)
		})
	}
}

func TestTrackDerivedNotFoundAndException(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	nums := map[string][3]string{
		"carrier_a": {"794843185271", "794843180000", "794843185299"},
		"carrier_b": {"1Z1442YY7229014688", "1Z1442YY7229010000", "1Z1442YY7229014699"},
	}
	for _, code := range []string{"carrier_a", "carrier_b"} {
		t.Run(code, func(t *testing.T) {
			c, acct := get(t, reg, code), acctOf(code)
			n := nums[code]
			res, err := c.Track(ctx, acct, []string{n[0], n[1], n[2], n[0]})
			require.NoError(t, err)
			require.Len(t, res, 3, "duplicates are tracked once")

			d := res[0]
			assert.Equal(t, n[0], d.TrackingNumber)
			assert.False(t, d.NotFound)
			assert.Equal(t, carriers.StatusDelivered, d.Status)
			assert.NotEmpty(t, d.ServiceType)
			require.NotNil(t, d.Origin)
			require.NotNil(t, d.Destination)
			assert.NotEqual(t, d.Origin.City, d.Destination.City)
			require.NotNil(t, d.Origin.Latitude)
			require.NotNil(t, d.Destination.Longitude)
			require.NotNil(t, d.Weight)
			assert.Positive(t, d.Weight.Value)
			require.NotNil(t, d.ShipDate)
			assert.Equal(t, 2025, d.ShipDate.Year())
			requireOrdered(t, d.Events)
			for _, e := range d.Events {
				assert.NotNil(t, e.Latitude)
			}

			assert.True(t, res[1].NotFound, "…0000 is unknown")
			assert.Empty(t, res[1].Events)

			x := res[2]
			assert.Equal(t, carriers.StatusException, x.Status, "…99 ends in an exception")
			assert.Nil(t, x.DeliveredAt)
			exc := x.Events[len(x.Events)-1]
			assert.True(t, exc.IsException)
			assert.NotEmpty(t, exc.ExceptionType)

			// Deterministic: the same history, event ids included, from a fresh sandbox.
			again, err := get(t, newSandbox(t).registry(), code).Track(ctx, acct, []string{n[0]})
			require.NoError(t, err)
			assert.Equal(t, d.Events, again[0].Events)
			assert.Equal(t, d.Origin, again[0].Origin)
		})
	}
}

func TestTrackBatching(t *testing.T) {
	sb := newSandbox(t)
	reg := sb.registry()
	ctx := context.Background()

	var nums []string
	for i := 0; i < 65; i++ {
		nums = append(nums, fmt.Sprintf("7700%08d", i*7+1))
	}
	res, err := get(t, reg, "carrier_a").Track(ctx, acctA(), nums)
	require.NoError(t, err)
	require.Len(t, res, 65)
	for i, r := range res {
		assert.Equal(t, nums[i], r.TrackingNumber, "results in input order")
		assert.False(t, r.NotFound)
	}
	assert.Equal(t, 3, sb.count("/track/v1/trackingnumbers"), "65 numbers → 3 calls of ≤30")

	var ups []string
	for i := 0; i < 12; i++ {
		ups = append(ups, fmt.Sprintf("1ZA1B2C303%08d", i+11))
	}
	res, err = get(t, reg, "carrier_b").Track(ctx, acctB(), ups)
	require.NoError(t, err)
	require.Len(t, res, 12)
	for i, r := range res {
		assert.Equal(t, ups[i], r.TrackingNumber)
		assert.Equal(t, carriers.StatusDelivered, r.Status)
	}
	assert.Equal(t, 12, sb.countPrefix("/carriers/carrier_b/api/track/v1/details/"), "one call per number")
}

func (sb *sandbox) countPrefix(prefix string) int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	n := 0
	for p, c := range sb.counts {
		if len(p) >= len(prefix) && p[:len(prefix)] == prefix {
			n += c
		}
	}
	return n
}

func TestTrackClockProgress(t *testing.T) {
	// A label shipped yesterday is past its pickup: in transit or later.
	reg := newSandbox(t).registry()
	c := get(t, reg, "carrier_a")
	req := labelReq("carrier_a", 0)
	req.ShipDate = day(-1)
	l, err := c.CreateLabel(context.Background(), acctA(), req)
	require.NoError(t, err)
	res, err := c.Track(context.Background(), acctA(), []string{l.TrackingNumber})
	require.NoError(t, err)
	assert.Contains(t, []string{carriers.StatusInTransit, carriers.StatusOutForDelivery, carriers.StatusDelivered}, res[0].Status)
	require.NotNil(t, res[0].ShipDate)
	assert.WithinDuration(t, day(-1), *res[0].ShipDate, 24*time.Hour)
}
