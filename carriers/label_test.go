package carriers_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

var groundOf = map[string]string{"carrier_a": "FEDEX_GROUND", "carrier_b": "03"}

func labelReq(code string, shipOffset int) carriers.LabelRequest {
	return carriers.LabelRequest{ShipFrom: memphis, ShipTo: seattle, Packages: box(5), ServiceType: groundOf[code],
		ShipDate: weekdayFrom(shipOffset), Reference: "#1001"}
}

func TestCreateLabelPDF(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	for _, code := range []string{"carrier_a", "carrier_b"} {
		t.Run(code, func(t *testing.T) {
			c := get(t, reg, code)
			req := labelReq(code, 5)
			l, err := c.CreateLabel(ctx, acctOf(code), req)
			require.NoError(t, err)
			assert.NotEmpty(t, l.TrackingNumber)
			if code == "carrier_a" {
				assert.Regexp(t, `^7\d{11}$`, l.TrackingNumber)
			} else {
				assert.Regexp(t, `^1ZA1B2C303\d{8}$`, l.TrackingNumber)
			}
			assert.Equal(t, carriers.FormatPDF, l.Format)
			assert.Equal(t, "application/pdf", l.ContentType)
			requireValidPDF(t, l.Document)
			if code == "carrier_a" {
				assert.Contains(t, string(l.Document), "Seattle WA 98101")
				assert.Contains(t, string(l.Document), "REF: #1001")
			}
			assert.Contains(t, string(l.Document), l.TrackingNumber[len(l.TrackingNumber)-4:])
			require.Len(t, l.Pieces, 1)
			assert.Equal(t, l.TrackingNumber, l.Pieces[0].TrackingNumber)
			assert.Equal(t, req.ShipDate, l.ShipDate)
			assert.NotContains(t, string(l.Raw), "JVBERi0", "label images are left out of Raw")

			// The label costs what the account quote said.
			q := price(t, c, acctOf(code), carriers.RateRequest{ShipFrom: req.ShipFrom, ShipTo: req.ShipTo, Packages: req.Packages, ShipDate: req.ShipDate}, req.ServiceType)
			assert.Equal(t, q.TotalPrice, l.TotalPrice)
			assert.Equal(t, "USD", l.Currency)
			if l.Zone != "" {
				assert.Equal(t, q.Zone, l.Zone)
			}
			sum := 0.0
			for _, b := range l.Breakdown {
				sum += b.Amount
			}
			assert.InDelta(t, l.TotalPrice, sum, 0.011)

			// Same request, same tracking number; another request, another.
			again, err := c.CreateLabel(ctx, acctOf(code), req)
			require.NoError(t, err)
			assert.Equal(t, l.TrackingNumber, again.TrackingNumber)
			other := req
			other.Reference = "#1002"
			o, err := c.CreateLabel(ctx, acctOf(code), other)
			require.NoError(t, err)
			assert.NotEqual(t, l.TrackingNumber, o.TrackingNumber)
		})
	}
}

func TestCreateLabelZPLAndMultiPackage(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	for _, code := range []string{"carrier_a", "carrier_b"} {
		c := get(t, reg, code)
		req := labelReq(code, 5)
		req.Format = carriers.FormatZPL
		req.Packages = append(box(5), box(7)...)
		l, err := c.CreateLabel(ctx, acctOf(code), req)
		require.NoError(t, err, code)
		assert.Equal(t, carriers.FormatZPL, l.Format)
		assert.Equal(t, "application/x-zpl", l.ContentType)
		require.Len(t, l.Pieces, 2)
		assert.NotEqual(t, l.Pieces[0].TrackingNumber, l.Pieces[1].TrackingNumber)
		for _, p := range l.Pieces {
			assert.True(t, bytes.HasPrefix(p.Document, []byte("^XA")), code)
			assert.Contains(t, string(p.Document), "^FD"+p.TrackingNumber+"^FS")
			assert.True(t, bytes.HasSuffix(bytes.TrimSpace(p.Document), []byte("^XZ")))
		}
		assert.Equal(t, l.Pieces[0].Document, l.Document)

		// Each package number tracks the shipment.
		res, err := c.Track(ctx, acctOf(code), []string{l.Pieces[1].TrackingNumber})
		require.NoError(t, err)
		assert.False(t, res[0].NotFound)
		assert.Equal(t, carriers.StatusLabelCreated, res[0].Status)
	}
}

func TestCreateLabelValidationAndUnsupported(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	req := labelReq("carrier_a", 5)
	req.ServiceType = ""
	_, err := get(t, reg, "carrier_a").CreateLabel(ctx, acctA(), req)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
	req = labelReq("carrier_a", 5)
	req.Format = "EPL"
	_, err = get(t, reg, "carrier_a").CreateLabel(ctx, acctA(), req)
	assert.ErrorIs(t, err, carriers.ErrInvalidRequest)

	c := get(t, reg, "carrier_c")
	_, err = c.CreateLabel(ctx, acctC(), labelReq("carrier_c", 5))
	assert.ErrorIs(t, err, carriers.ErrNotSupported)
	assert.ErrorIs(t, c.VoidLabel(ctx, acctC(), "x"), carriers.ErrNotSupported)
	_, err = c.Track(ctx, acctC(), []string{"x"})
	assert.ErrorIs(t, err, carriers.ErrNotSupported)
	ce, ok := carriers.AsError(err)
	require.True(t, ok)
	assert.Equal(t, carriers.ErrCodeNotSupported, ce.Code)
	assert.False(t, carriers.IsRetryable(err))
}

func TestVoidLabel(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	for _, code := range []string{"carrier_a", "carrier_b"} {
		t.Run(code, func(t *testing.T) {
			c, acct := get(t, reg, code), acctOf(code)
			l, err := c.CreateLabel(ctx, acct, labelReq(code, 5))
			require.NoError(t, err)
			require.NoError(t, c.VoidLabel(ctx, acct, l.TrackingNumber))
			require.NoError(t, c.VoidLabel(ctx, acct, l.TrackingNumber), "voiding twice is fine")
			res, err := c.Track(ctx, acct, []string{l.TrackingNumber})
			require.NoError(t, err)
			assert.True(t, res[0].NotFound, "a voided label is not tracked")

			// A label already picked up cannot be voided.
			old, err := c.CreateLabel(ctx, acct, labelReq(code, -20))
			require.NoError(t, err)
			err = c.VoidLabel(ctx, acct, old.TrackingNumber)
			require.Error(t, err)
			assert.ErrorIs(t, err, carriers.ErrInvalidRequest)
			assert.False(t, carriers.IsRetryable(err))

			err = c.VoidLabel(ctx, acct, "1Z99999999990000")
			assert.ErrorIs(t, err, carriers.ErrNotFound)
			assert.ErrorIs(t, c.VoidLabel(ctx, acct, " "), carriers.ErrInvalidRequest)
		})
	}
}
