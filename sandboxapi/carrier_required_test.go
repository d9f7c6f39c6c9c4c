package sandboxapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMissingField(t *testing.T) {
	body := []byte(`{"a":{"b":"x","e":"","s":" ","n":0,"f":false},"l":[{"w":1},{"w":2}],"one":{"w":1},"empty":[],"bad":[{"w":1},{}]}`)
	for path, want := range map[string]string{
		"a.b": "", "a.n": "", "a.f": "", "a.s": "", "a.e?": "", "l[].w": "", "one[].w": "",
		"a.e": "a.e", "a.x": "a.x", "a.x?": "a.x", "empty": "empty", "empty[].w": "empty.w", "bad[].w": "bad.w", "z.y": "z.y",
	} {
		assert.Equal(t, want, missingField(body, path), path)
	}
	assert.Equal(t, "", missingField([]byte(`not json`), "a"), "decoding errors are the handler's")
}

// Each carrier answers a request missing a required field with its own 400
// error body naming the field.
func TestCarrierRequiredFieldsAnswered(t *testing.T) {
	skipWithoutVendor(t)
	srv := newCarrierServer(t)
	drop := func(raw []byte, path ...string) []byte {
		var v map[string]any
		require.NoError(t, json.Unmarshal(raw, &v))
		m := v
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]any)
			require.True(t, ok, k)
			m = next
		}
		delete(m, path[len(path)-1])
		b, _ := json.Marshal(v)
		return b
	}

	tok := faTestToken(t, srv, nil)
	for _, c := range []struct {
		method, path, example, field string
		drop                         []string
	}{
		{http.MethodPost, "/rate/v1/rates/quotes", "rate-request.json", "requestedShipment.pickupType", []string{"requestedShipment", "pickupType"}},
		{http.MethodPost, "/ship/v1/shipments", "ship-request.json", "requestedShipment.labelSpecification.labelStockType", []string{"requestedShipment", "labelSpecification", "labelStockType"}},
		{http.MethodPost, "/pickup/v1/pickups", "pickup-create-request.json", "originDetail.customerCloseTime", []string{"originDetail", "customerCloseTime"}},
		{http.MethodPost, "/registration/v2/address/keysgeneration", "registration-address-keysgeneration-request.json", "accountNumber.key", []string{"accountNumber", "key"}},
		{http.MethodPost, "/registration/v2/address/keysgeneration", "registration-address-keysgeneration-request.json", "address.residential", []string{"address", "residential"}},
	} {
		req := drop(vendorExample(t, "carrier_a", c.example), c.drop...)
		status, body := faPost(t, srv, tok, c.method, c.path, req, nil)
		assert.Equal(t, http.StatusBadRequest, status, c.field)
		assert.Equal(t, "INVALID.INPUT.EXCEPTION", jsonPath(t, body, "errors", 0, "code"), c.field)
		assert.Contains(t, jsonPath(t, body, "errors", 0, "message"), c.field)
		// The published request itself is accepted (past the field check).
		status, body = faPost(t, srv, tok, c.method, c.path, vendorExample(t, "carrier_a", c.example), nil)
		assert.False(t, status == http.StatusBadRequest && bytes.Contains(body, []byte("is required")), "%s: %s", c.example, body)
	}

	utok := ubTestToken(t, srv, "A1B2C3")
	req := drop(vendorExample(t, "carrier_b", "ship-request.json"), "ShipmentRequest", "LabelSpecification")
	status, body := ubCall(t, srv, utok, http.MethodPost, "/api/shipments/v2409/ship", req)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, jsonPath(t, body, "response", "errors", 0, "message"), "ShipmentRequest.LabelSpecification.LabelImageFormat.Code")
	req = drop(vendorExample(t, "carrier_b", "rate-request.json"), "RateRequest", "Shipment", "ShipTo", "Name")
	status, body = ubCall(t, srv, utok, http.MethodPost, "/api/rating/v2409/Rate", req)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, jsonPath(t, body, "response", "errors", 0, "message"), "RateRequest.Shipment.ShipTo.Name")

	key := map[string]string{"api-key": "TEST_abc"}
	est := []byte(`{"carrier_ids":["se-1"],"from_country_code":"US","from_postal_code":"78756","from_city_locality":"Austin",
		"to_country_code":"US","to_postal_code":"95128","to_city_locality":"San Jose","to_state_province":"CA",
		"weight":{"value":1.0,"unit":"pound"},"ship_date":"2026-01-05T00:00:00Z"}`)
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_c/v1/rates/estimate", header: key, body: est})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "field_value_required", jsonPath(t, body, "errors", 0, "error_code"))
	assert.Contains(t, jsonPath(t, body, "errors", 0, "message"), "from_state_province")
}
