package carriers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

func pickupReq(offset int) carriers.PickupRequest {
	return carriers.PickupRequest{
		Address:    memphis,
		PickupDate: day(offset).Format("2006-01-02"),
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

	cancel := carriers.CancelPickupRequest{ConfirmationNumber: p.ConfirmationNumber, PickupDate: day(2).Format("2006-01-02"), Location: p.Location, Reason: "not needed"}
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

func TestShipmentActions(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	prefix := map[string]string{"carrier_a": "DM", "carrier_b": "DC"}
	for _, code := range []string{"carrier_a", "carrier_b"} {
		t.Run(code, func(t *testing.T) {
			c, acct := get(t, reg, code), acctOf(code)
			l, err := c.CreateLabel(ctx, acct, labelReq(code, -1))
			require.NoError(t, err)
			actions := []carriers.ShipmentAction{
				{Type: carriers.ActionHold, Reason: "customer_request", Notes: "hold please"},
				{Type: carriers.ActionRedirect, Address: &seattle, Notes: "new place"},
				{Type: carriers.ActionRedeliver, PreferredDate: day(3).Format("2006-01-02"), Instructions: "after 5pm"},
				{Type: carriers.ActionInstructions, Instructions: "leave at back door"},
			}
			seen := map[string]bool{}
			for _, a := range actions {
				a.TrackingNumber, a.Reference = l.TrackingNumber, "action-1"
				res, err := c.SendAction(ctx, acct, a)
				require.NoError(t, err, a.Type)
				assert.Equal(t, "accepted", res.Status)
				assert.Regexp(t, `^`+prefix[code]+`\d{10}$`, res.ConfirmationNumber)
				assert.NotEmpty(t, res.Message)
				assert.False(t, seen[res.ConfirmationNumber], "one confirmation per action")
				seen[res.ConfirmationNumber] = true
			}

			_, err = c.SendAction(ctx, acct, carriers.ShipmentAction{Type: carriers.ActionInstructions, TrackingNumber: l.TrackingNumber})
			assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
			_, err = c.SendAction(ctx, acct, carriers.ShipmentAction{Type: "teleport", TrackingNumber: l.TrackingNumber})
			assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
			_, err = c.SendAction(ctx, acct, carriers.ShipmentAction{Type: carriers.ActionHold, Reason: "bored", TrackingNumber: l.TrackingNumber})
			assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
			_, err = c.SendAction(ctx, acct, carriers.ShipmentAction{Type: carriers.ActionHold, TrackingNumber: "1Z12345678900000"})
			assert.ErrorIs(t, err, carriers.ErrNotFound)
		})
	}
	_, err := get(t, reg, "carrier_c").SendAction(ctx, acctC(), carriers.ShipmentAction{Type: carriers.ActionHold, TrackingNumber: "x"})
	assert.ErrorIs(t, err, carriers.ErrNotSupported)
}
