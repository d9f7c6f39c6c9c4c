package carriers_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

func TestRegistry(t *testing.T) {
	reg := newSandbox(t).registry()
	assert.Equal(t, []string{"carrier_a", "carrier_b", "carrier_c"}, reg.Codes())
	assert.Equal(t, carriers.Codes(), reg.Codes())

	_, err := reg.Get("carrier_x")
	assert.ErrorIs(t, err, carriers.ErrUnknownCarrier)

	caps := map[string]carriers.Capabilities{}
	for _, code := range reg.Codes() {
		c := get(t, reg, code)
		assert.Equal(t, code, c.Code())
		caps[code] = c.Capabilities()
	}
	assert.Equal(t, carriers.Capabilities{Rating: true, Labels: true, Pickups: true, Tracking: true}, caps["carrier_a"])
	assert.Equal(t, carriers.Capabilities{Rating: true, Labels: true, Pickups: false, Tracking: true}, caps["carrier_b"])
	assert.Equal(t, carriers.Capabilities{Rating: true}, caps["carrier_c"])

	r, err := reg.Registrar("carrier_a")
	require.NoError(t, err)
	assert.NotNil(t, r)
	_, err = reg.Registrar("carrier_b")
	assert.ErrorIs(t, err, carriers.ErrNotSupported)
}

func TestValidateCredentials(t *testing.T) {
	reg := newSandbox(t).registry()
	a, b, c := get(t, reg, "carrier_a"), get(t, reg, "carrier_b"), get(t, reg, "carrier_c")

	assert.Empty(t, a.ValidateCredentials(acctA().Credentials))
	assert.Empty(t, b.ValidateCredentials(acctB().Credentials))
	assert.Empty(t, c.ValidateCredentials(acctC().Credentials))

	errs := a.ValidateCredentials(map[string]any{"accountNumber": "12345", "childKey": 7})
	assert.Equal(t, []carriers.FieldError{
		{Field: "accountNumber", Message: "must be a 9-digit account number"},
		{Field: "childKey", Message: "must be a string"},
		{Field: "childSecret", Message: "is required"},
	}, errs)
	assert.Equal(t, []carriers.FieldError{
		{Field: "accountNumber", Message: "is required"},
		{Field: "clientId", Message: "is required"},
		{Field: "clientSecret", Message: "is required"},
	}, b.ValidateCredentials(map[string]any{"clientId": " "}))
	assert.Equal(t, []carriers.FieldError{{Field: "apiKey", Message: "is required"}}, c.ValidateCredentials(nil))
}

func TestAccountNeverPrintsCredentials(t *testing.T) {
	a := acctA()
	for _, s := range []string{a.String(), a.GoString(), a.LogValue().String()} {
		assert.NotContains(t, s, "child-secret-1")
		assert.NotContains(t, s, "123456789")
	}
}

func TestRatesAllCarriers(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	want := map[string][]string{
		"carrier_a": {"FEDEX_GROUND", "FEDEX_EXPRESS_SAVER", "FEDEX_2_DAY", "STANDARD_OVERNIGHT", "PRIORITY_OVERNIGHT", "FIRST_OVERNIGHT"},
		"carrier_b": {"03", "12", "02", "59", "13", "01", "14"},
		"carrier_c": {"usps_ground_advantage", "usps_priority_mail", "usps_priority_mail_express"},
	}
	for _, code := range reg.Codes() {
		t.Run(code, func(t *testing.T) {
			c := get(t, reg, code)
			req := carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ShipDate: weekdayFrom(3)}
			qs, err := c.Rate(ctx, acctOf(code), req)
			require.NoError(t, err)
			var got []string
			for i, q := range qs {
				got = append(got, q.ServiceType)
				assert.Equal(t, code, q.Carrier)
				assert.NotEmpty(t, q.ServiceName)
				assert.Positive(t, q.TotalPrice)
				assert.Equal(t, "USD", q.Currency)
				require.NotNil(t, q.TransitDays, q.ServiceType)
				assert.Positive(t, *q.TransitDays)
				require.NotNil(t, q.EstimatedDelivery)
				assert.True(t, q.EstimatedDelivery.After(req.ShipDate))
				assert.Equal(t, "6", q.Zone)
				assert.NotEmpty(t, q.Raw)
				assert.True(t, json.Valid(q.Raw))
				sum := 0.0
				for _, b := range q.Breakdown {
					sum += b.Amount
				}
				assert.InDelta(t, q.TotalPrice, sum, 0.011, "breakdown adds up for %s: %+v", q.ServiceType, q.Breakdown)
				if i > 0 {
					assert.GreaterOrEqual(t, q.TotalPrice, qs[i-1].TotalPrice, "cheapest first")
				}
			}
			sort.Strings(got)
			exp := append([]string{}, want[code]...)
			sort.Strings(exp)
			assert.Equal(t, exp, got)
			// Ground is not guaranteed, the fastest air service is.
			assert.False(t, qs[0].TransitDaysGuaranteed)
			assert.True(t, qs[len(qs)-1].TransitDaysGuaranteed)
		})
	}
}

func TestRatesDeterministicAndFiltered(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	for _, code := range reg.Codes() {
		c := get(t, reg, code)
		req := carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ShipDate: weekdayFrom(3)}
		q1, err := c.Rate(ctx, acctOf(code), req)
		require.NoError(t, err)
		q2, err := c.Rate(ctx, acctOf(code), req)
		require.NoError(t, err)
		j1, _ := json.Marshal(q1)
		j2, _ := json.Marshal(q2)
		assert.JSONEq(t, string(j1), string(j2), "%s: same input, same output", code)

		// A fresh sandbox answers the same.
		q3, err := get(t, newSandbox(t).registry(), code).Rate(ctx, acctOf(code), req)
		require.NoError(t, err)
		assert.Equal(t, q1[0].TotalPrice, q3[0].TotalPrice)

		req.ServiceType = q1[1].ServiceType
		one, err := c.Rate(ctx, acctOf(code), req)
		require.NoError(t, err)
		require.Len(t, one, 1, code)
		assert.Equal(t, q1[1].ServiceType, one[0].ServiceType)
		assert.Equal(t, q1[1].TotalPrice, one[0].TotalPrice)
	}
}

func price(t *testing.T, c carriers.Carrier, acct carriers.Account, req carriers.RateRequest, service string) carriers.Quote {
	t.Helper()
	req.ServiceType = service
	qs, err := c.Rate(context.Background(), acct, req)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	return qs[0]
}

func TestRatesZonesWeightsAndUnits(t *testing.T) {
	reg := newSandbox(t).registry()
	services := map[string]string{"carrier_a": "FEDEX_GROUND", "carrier_b": "03", "carrier_c": "usps_ground_advantage"}
	for _, code := range reg.Codes() {
		t.Run(code, func(t *testing.T) {
			c, acct, svc := get(t, reg, code), acctOf(code), services[code]
			base := carriers.RateRequest{ShipFrom: memphis, Packages: box(5), ShipDate: weekdayFrom(3)}

			near, far := base, base
			near.ShipTo = memphisEast
			far.ShipTo = seattle
			far.ShipTo.Residential = false
			qn, qf := price(t, c, acct, near, svc), price(t, c, acct, far, svc)
			assert.Equal(t, "2", qn.Zone)
			assert.Equal(t, "6", qf.Zone)
			assert.Less(t, qn.TotalPrice, qf.TotalPrice, "farther costs more")
			assert.Less(t, *qn.TransitDays, *qf.TransitDays, "farther takes longer on ground")

			heavy := far
			heavy.Packages = box(25)
			assert.Less(t, qf.TotalPrice, price(t, c, acct, heavy, svc).TotalPrice, "heavier costs more")

			// Dimensional weight: a big light box bills like a heavy one.
			big := far
			big.Packages = []carriers.Package{{Weight: carriers.Weight{Value: 2, Unit: "lb"}, Length: 30, Width: 30, Height: 30}}
			small := far
			small.Packages = []carriers.Package{{Weight: carriers.Weight{Value: 2, Unit: "lb"}}}
			qb := price(t, c, acct, big, svc)
			assert.Greater(t, qb.TotalPrice, price(t, c, acct, small, svc).TotalPrice)
			if qb.BillingWeight != nil {
				assert.Greater(t, qb.BillingWeight.Value, 100.0)
			}

			// kg and cm are converted: 1 kg bills like 2.2 lb.
			kg := far
			kg.Packages = []carriers.Package{{Weight: carriers.Weight{Value: 1, Unit: "kg"}, Length: 10, Width: 10, Height: 10, DimensionUnit: "cm"}}
			lb := far
			lb.Packages = []carriers.Package{{Weight: carriers.Weight{Value: 2.2, Unit: "lb"}, Length: 4, Width: 4, Height: 4}}
			assert.Equal(t, price(t, c, acct, lb, svc).TotalPrice, price(t, c, acct, kg, svc).TotalPrice)

			// Two packages cost more than one.
			two := far
			two.Packages = append(box(5), box(5)...)
			assert.Greater(t, price(t, c, acct, two, svc).TotalPrice, qf.TotalPrice)
		})
	}
}

func TestRatesInternational(t *testing.T) {
	reg := newSandbox(t).registry()
	want := map[string][]string{
		"carrier_a": {"INTERNATIONAL_ECONOMY", "INTERNATIONAL_PRIORITY"},
		"carrier_b": {"07", "08"},
		"carrier_c": {"usps_priority_mail_express_international", "usps_priority_mail_international"},
	}
	for _, code := range reg.Codes() {
		qs, err := get(t, reg, code).Rate(context.Background(), acctOf(code),
			carriers.RateRequest{ShipFrom: memphis, ShipTo: toronto, Packages: box(3), ShipDate: weekdayFrom(3)})
		require.NoError(t, err)
		var got []string
		for _, q := range qs {
			got = append(got, q.ServiceType)
			assert.Equal(t, "9", q.Zone)
		}
		sort.Strings(got)
		assert.Equal(t, want[code], got, code)
	}
}

func TestRateValidation(t *testing.T) {
	reg := newSandbox(t).registry()
	for _, code := range reg.Codes() {
		_, err := get(t, reg, code).Rate(context.Background(), acctOf(code), carriers.RateRequest{ShipFrom: memphis, ShipTo: carriers.Address{City: "X"}})
		require.Error(t, err)
		assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
		ce, ok := carriers.AsError(err)
		require.True(t, ok)
		assert.False(t, ce.Retryable)
		assert.Contains(t, ce.Message, "shipTo.zip is required")

		// A service the route does not offer is the carrier's 400.
		_, err = get(t, reg, code).Rate(context.Background(), acctOf(code),
			carriers.RateRequest{ShipFrom: memphis, ShipTo: toronto, Packages: box(1), ServiceType: "NOPE"})
		if code == "carrier_c" {
			require.NoError(t, err) // filtered locally: no quote
			continue
		}
		require.Error(t, err)
		ce, _ = carriers.AsError(err)
		assert.Equal(t, 400, ce.StatusCode)
		assert.False(t, ce.Retryable)
	}
}

func TestAmountsAreCents(t *testing.T) {
	reg := newSandbox(t).registry()
	qs, err := get(t, reg, "carrier_a").Rate(context.Background(), acctA(),
		carriers.RateRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(3.3)})
	require.NoError(t, err)
	for _, q := range qs {
		assert.InDelta(t, 0, math.Abs(q.TotalPrice*100-math.Round(q.TotalPrice*100)), 1e-6)
	}
	assert.False(t, errors.Is(err, carriers.ErrNotSupported))
}
