package carriers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/carriers/carrierstest"
)

// memphisDay is the date offset days from today in Memphis: pickup dates
// are the pickup location's.
func memphisDay(offset int) string {
	loc, err := time.LoadLocation("America/Chicago")
	if err != nil {
		panic(err)
	}
	return time.Now().In(loc).AddDate(0, 0, offset).Format("2006-01-02")
}

func pickupReq(offset int) carriers.PickupRequest {
	return carriers.PickupRequest{
		Address:    memphis,
		PickupDate: memphisDay(offset),
		ReadyTime:  "09:00", CloseTime: "17:00",
		PackageCount: 3,
		TotalWeight:  &carriers.Weight{Value: 12, Unit: "kg"},
		Remarks:      "dock 4",
	}
}

func TestPickups(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	c := get(t, reg, "carrier_a")

	p, err := c.CreatePickup(ctx, acctA(), pickupReq(2))
	require.NoError(t, err)
	assert.Regexp(t, `^CPU\d{8}$`, p.ConfirmationNumber)
	assert.Regexp(t, `^TN[A-Z]A$`, p.Location)
	assert.Equal(t, []string{"Pickup scheduled"}, p.Messages)
	assert.Contains(t, string(p.Raw), p.ConfirmationNumber)

	again, err := c.CreatePickup(ctx, acctA(), pickupReq(2))
	require.NoError(t, err)
	assert.Equal(t, p.ConfirmationNumber, again.ConfirmationNumber, "deterministic")

	today, err := c.CreatePickup(ctx, acctA(), pickupReq(0))
	require.NoError(t, err)
	assert.Equal(t, []string{"Courier on the way"}, today.Messages)

	cancel := carriers.CancelPickupRequest{ConfirmationNumber: p.ConfirmationNumber, PickupDate: memphisDay(2), Location: p.Location, Reason: "not needed"}
	cr, err := c.CancelPickup(ctx, acctA(), cancel)
	require.NoError(t, err)
	assert.Equal(t, []string{"Requested pickup has been cancelled Successfully."}, cr.Messages)
	_, err = c.CancelPickup(ctx, acctA(), cancel)
	require.Error(t, err)
	ce, _ := carriers.AsError(err)
	assert.Equal(t, "PICKUP.ALREADY.CANCELLED", ce.Code)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	// Express pickups: numeric code, cancelling needs the location.
	x := pickupReq(3)
	x.CarrierCode = "FDXE"
	xp, err := c.CreatePickup(ctx, acctA(), x)
	require.NoError(t, err)
	assert.Regexp(t, `^\d{4}$`, xp.ConfirmationNumber)
	_, err = c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: xp.ConfirmationNumber, PickupDate: x.PickupDate, CarrierCode: "FDXE"})
	ce, _ = carriers.AsError(err)
	require.NotNil(t, ce)
	assert.Equal(t, "PICKUP.LOCATION.REQUIRED", ce.Code)
	_, err = c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: xp.ConfirmationNumber, PickupDate: x.PickupDate, CarrierCode: "FDXE", Location: xp.Location})
	require.NoError(t, err)

	// The carrier's rules and local validation.
	_, err = c.CreatePickup(ctx, acctA(), pickupReq(-1))
	ce, _ = carriers.AsError(err)
	require.NotNil(t, ce)
	assert.Equal(t, "PICKUP.REQUESTED.PREVIOUS.DAY", ce.Code)
	assert.Equal(t, 400, ce.StatusCode)
	assert.False(t, ce.Retryable)
	_, err = c.CancelPickup(ctx, acctA(), carriers.CancelPickupRequest{ConfirmationNumber: "CPU1", PickupDate: day(-2).Format("2006-01-02")})
	ce, _ = carriers.AsError(err)
	require.NotNil(t, ce)
	assert.Equal(t, "PICKUP.NUMBER.EXPIRED", ce.Code)

	bad := pickupReq(2)
	bad.ReadyTime, bad.CloseTime = "18:00", "09:00"
	_, err = c.CreatePickup(ctx, acctA(), bad)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	bad = pickupReq(2)
	bad.PickupDate = "tomorrow"
	_, err = c.CreatePickup(ctx, acctA(), bad)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	for _, code := range []string{"carrier_b", "carrier_c"} {
		_, err := get(t, reg, code).CreatePickup(ctx, acctOf(code), pickupReq(2))
		assert.ErrorIs(t, err, carriers.ErrNotSupported, code)
		_, err = get(t, reg, code).CancelPickup(ctx, acctOf(code), carriers.CancelPickupRequest{})
		assert.ErrorIs(t, err, carriers.ErrNotSupported, code)
	}
}

// No real carrier publishes a delivery-change API: every adapter says so
// and sends nothing.
func TestShipmentActionsUnsupported(t *testing.T) {
	sb := newSandbox(t)
	reg := sb.registry()
	ctx := context.Background()
	for _, code := range carriers.Codes() {
		c := get(t, reg, code)
		assert.False(t, c.Capabilities().Actions, code)
		before := len(sb.counts)
		_, err := c.SendAction(ctx, acctOf(code), carriers.ShipmentAction{Type: carriers.ActionHold, TrackingNumber: "700000000001", Reason: "other"})
		assert.ErrorIs(t, err, carriers.ErrNotSupported, code)
		assert.False(t, carriers.IsRetryable(err), code)
		assert.Len(t, sb.counts, before, "nothing was sent")
	}
}

// The ShipmentAction path stays open to an adapter that has such an API:
// Registry.With plugs one in (here the test double).
func TestShipmentActionsThroughAPluggedInAdapter(t *testing.T) {
	reg := carrierstest.WithDeliveryChanges(newSandbox(t).registry(), "carrier_a")
	ctx := context.Background()
	c := get(t, reg, "carrier_a")
	require.True(t, c.Capabilities().Actions)
	assert.True(t, c.Capabilities().Pickups, "the adapter's other capabilities are kept")
	_, isRegistrar := c.(carriers.Registrar)
	assert.True(t, isRegistrar)
	assert.False(t, get(t, reg, "carrier_b").Capabilities().Actions, "other codes unchanged")

	l, err := c.CreateLabel(ctx, acctA(), labelReq("carrier_a", -1))
	require.NoError(t, err)
	res, err := c.SendAction(ctx, acctA(), carriers.ShipmentAction{Type: carriers.ActionRedirect, Address: &seattle, TrackingNumber: l.TrackingNumber, Reference: "a-1"})
	require.NoError(t, err)
	assert.Equal(t, "accepted", res.Status)
	assert.Regexp(t, `^DM\d{10}$`, res.ConfirmationNumber)

	_, err = c.SendAction(ctx, acctA(), carriers.ShipmentAction{Type: carriers.ActionInstructions, TrackingNumber: l.TrackingNumber})
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	_, err = c.SendAction(ctx, acctA(), carriers.ShipmentAction{Type: "teleport", TrackingNumber: l.TrackingNumber})
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	_, err = c.SendAction(ctx, acctA(), carriers.ShipmentAction{Type: carriers.ActionHold, TrackingNumber: "700000000000"})
	ce, ok := carriers.AsError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "TRACKING.TRACKINGNUMBER.NOTFOUND", ce.Code)
	assert.False(t, ce.Retryable)
	_, err = c.SendAction(ctx, withCred(acctA(), "childSecret", "sandbox-fail"), carriers.ShipmentAction{Type: carriers.ActionHold, TrackingNumber: l.TrackingNumber})
	assert.ErrorIs(t, err, carriers.ErrUnauthorized)
}
