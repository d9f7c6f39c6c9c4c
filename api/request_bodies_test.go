package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocumentBodiesNameEveryProblem: the bodies the document checks with
// x-merge-domain-errors answer the schema's details and the domain's in
// one 400, with the field names and messages the handlers used before.
func TestDocumentBodiesNameEveryProblem(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	orderID, _ := shpOrder(t, e, owner.org, shpSeattle())
	details := func(method, path string, body any) map[string]string {
		t.Helper()
		res := e.do(owner.caller, method, path, body)
		requireError(t, res, 400, "validation_error")
		out := map[string]string{}
		for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
			out[d.(map[string]any)["field"].(string)] = d.(map[string]any)["message"].(string)
		}
		return out
	}

	// A camelCase field is checked under its snake_case name; a null
	// dimension is missing; a dimension that is no number is the domain's
	// to name, beside the schema's findings.
	body := shpBody(orderID, acct)
	delete(body, "order_id")
	body["orderId"] = "nope"
	body["parcels"] = []any{map[string]any{"length": nil, "width": "x", "height": 8, "weight": 5, "unit": "lb"}}
	body["metadata"] = []any{}
	got := details("POST", "/api/v1/shipments", body)
	require.Equal(t, "must be a UUID", got["order_id"], "%v", got)
	require.Equal(t, "is required", got["parcels[0].length"], "%v", got)
	require.Equal(t, "must be an object", got["metadata"], "%v", got)
	require.Contains(t, got, "parcels[0].width")
	require.NotContains(t, got, "orderId")

	// Pickups: the weight's value is the domain's, the time's length the
	// schema's (trimmed, as the handler reads it).
	pb := pkpBody(acct, 2)
	pb["totalWeight"] = map[string]any{"value": "x"}
	pb["readyTime"] = " 09:00:00 "
	got = details("POST", "/api/v1/pickups", pb)
	require.Equal(t, "must be at most 5 characters", got["readyTime"], "%v", got)
	require.Contains(t, got["totalWeight.value"], "must be a number above 0", "%v", got)
	pb = pkpBody(acct, 2)
	pb["readyTime"] = " 09:00 "
	pb["totalWeight"] = 0
	require.Equal(t, map[string]string{"totalWeight": "must be a positive number of pounds or {value, unit: lb|kg}"}, details("POST", "/api/v1/pickups", pb))
}
