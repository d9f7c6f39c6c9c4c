package api

import (
	"context"
	"fmt"
	"github.com/fos-dev/fos/locations"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

var locationFields = []string{"id", "name", "street", "city", "province", "zip", "country", "bridgeId", "externalId", "createdAt", "updatedAt"}

func TestLocationsCRUD(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "locations:read", "locations:write")

	// Create: name only, every other field null.
	res := e.do(key, "POST", "/api/v1/locations", map[string]any{"name": "  Back room  "})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	bare := res.data()
	require.ElementsMatch(t, locationFields, orderTestKeys(bare))
	require.Equal(t, "Back room", bare["name"])
	for _, k := range []string{"street", "city", "province", "zip", "country", "bridgeId", "externalId"} {
		require.Nil(t, bare[k], k)
	}

	// Create: every field.
	full := map[string]any{"name": "Main WH", "street": "1 Dock Rd", "city": "Memphis", "province": "TN", "zip": "38118", "country": "US"}
	res = e.do(key, "POST", "/api/v1/locations", full)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	loc := res.data()
	for k, v := range full {
		require.Equal(t, v, loc[k], k)
	}
	id := loc["id"].(string)

	// Get.
	res = e.do(key, "GET", "/api/v1/locations/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, loc, res.data())

	// Patch: a field changed, one cleared with null, one with "", the rest kept.
	res = e.do(key, "PATCH", "/api/v1/locations/"+id, map[string]any{"city": "Nashville", "province": nil, "zip": ""})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	up := res.data()
	require.Equal(t, "Nashville", up["city"])
	require.Nil(t, up["province"])
	require.Nil(t, up["zip"])
	require.Equal(t, "Main WH", up["name"])
	require.Equal(t, "1 Dock Rd", up["street"])
	require.Equal(t, loc["createdAt"], up["createdAt"])
	require.GreaterOrEqual(t, up["updatedAt"].(string), loc["updatedAt"].(string))
	res = e.do(key, "PATCH", "/api/v1/locations/"+id, map[string]any{})
	require.Equal(t, 200, res.Code, "an empty patch changes nothing")
	require.Equal(t, "Nashville", res.data()["city"])

	// List: newest first, pagination.
	res = e.do(key, "GET", "/api/v1/locations", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.list()
	require.Len(t, list, 2)
	require.Equal(t, id, list[0]["id"])
	require.Equal(t, bare["id"], list[1]["id"])
	require.ElementsMatch(t, locationFields, orderTestKeys(list[0]))
	require.Equal(t, map[string]any{"page": float64(1), "limit": float64(20), "total": float64(2), "totalPages": float64(1), "hasMore": false}, res.Body["pagination"])
	res = e.do(key, "GET", "/api/v1/locations?limit=1&page=2", nil)
	require.Equal(t, bare["id"], res.list()[0]["id"])
	require.Equal(t, float64(2), res.Body["pagination"].(map[string]any)["totalPages"])
	res = e.do(key, "GET", "/api/v1/locations?limit=1000", nil)
	require.Equal(t, float64(100), res.Body["pagination"].(map[string]any)["limit"], "clamped")
	require.ElementsMatch(t, []string{"page", "limit"}, orderTestFields(t, e.do(key, "GET", "/api/v1/locations?page=0&limit=x", nil)))
	require.Equal(t, []string{"bridgeId"}, orderTestFields(t, e.do(key, "GET", "/api/v1/locations?bridgeId=nope", nil)))

	// Filter by bridge.
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO locations (id, organization_id, name, bridge_id, external_id) VALUES ($1, $2, 'Synced', $3, 'ext-1')`,
		uuid.New(), owner.org, bridge)
	require.NoError(t, err)
	res = e.do(key, "GET", "/api/v1/locations?bridgeId="+bridge, nil)
	require.Len(t, res.list(), 1)
	require.Equal(t, bridge, res.list()[0]["bridgeId"])
	require.Equal(t, "ext-1", res.list()[0]["externalId"])

	// Delete.
	res = e.do(key, "DELETE", "/api/v1/locations/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(key, "GET", "/api/v1/locations/"+id, nil), 404, "not_found")
	requireError(t, e.do(key, "DELETE", "/api/v1/locations/"+id, nil), 404, "not_found")
}

func TestLocationsValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/locations", body) }

	require.Equal(t, []string{"name"}, orderTestFields(t, post(map[string]any{})))
	require.Equal(t, []string{"name"}, orderTestFields(t, post(map[string]any{"name": "   "})))
	requireError(t, post("{"), 400, "invalid_json")
	long := strings.Repeat("x", locations.MaxLen+1)
	require.ElementsMatch(t, []string{"name", "street", "city", "province", "zip", "country"},
		orderTestFields(t, post(map[string]any{"name": long, "street": 1, "city": true, "province": []any{}, "zip": map[string]any{}, "country": long})))

	id := rateTestLocation(t, e, owner.caller, map[string]any{"name": "A"})
	patch := func(body any) *response { return e.do(owner.caller, "PATCH", "/api/v1/locations/"+id, body) }
	require.Equal(t, []string{"name"}, orderTestFields(t, patch(map[string]any{"name": nil})))
	require.Equal(t, []string{"name"}, orderTestFields(t, patch(map[string]any{"name": ""})))
	require.ElementsMatch(t, []string{"street", "zip"}, orderTestFields(t, patch(map[string]any{"street": 5, "zip": long})))
	requireError(t, patch("nope"), 400, "invalid_json")
	// Nothing changed by the refused patches.
	res := e.do(owner.caller, "GET", "/api/v1/locations/"+id, nil)
	require.Equal(t, "A", res.data()["name"])
}

func TestLocationsOtherOrganizationAndScopes(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	stranger := e.signup()
	id := rateTestLocation(t, e, owner.caller, map[string]any{"name": "Mine"})

	// Another organization: 404 on every route, and absent from its list.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/locations/" + id},
		{"PATCH", "/api/v1/locations/" + id},
		{"DELETE", "/api/v1/locations/" + id},
		{"GET", "/api/v1/locations/" + uuid.NewString()},
		{"GET", "/api/v1/locations/not-a-uuid"},
	} {
		requireError(t, e.do(stranger.caller, c.method, c.path, map[string]any{"name": "x"}), 404, "not_found")
	}
	require.Empty(t, e.do(stranger.caller, "GET", "/api/v1/locations", nil).list())
	require.Equal(t, "Mine", e.do(owner.caller, "GET", "/api/v1/locations/"+id, nil).data()["name"])

	// Scopes: reads need locations:read, writes locations:write.
	readOnly := e.apiKey(owner, "locations:read")
	writeOnly := e.apiKey(owner, "locations:write")
	none := e.apiKey(owner, "rates:read")
	for _, c := range []struct {
		method, path, scope string
	}{
		{"GET", "/api/v1/locations", "locations:read"},
		{"GET", "/api/v1/locations/" + id, "locations:read"},
		{"POST", "/api/v1/locations", "locations:write"},
		{"PATCH", "/api/v1/locations/" + id, "locations:write"},
		{"DELETE", "/api/v1/locations/" + id, "locations:write"},
	} {
		name := fmt.Sprintf("%s %s", c.method, c.path)
		requireError(t, e.do(none, c.method, c.path, map[string]any{"name": "x"}), 403, "insufficient_scope")
		wrong := writeOnly
		if c.scope == "locations:write" {
			wrong = readOnly
		}
		res := e.do(wrong, c.method, c.path, map[string]any{"name": "x"})
		requireError(t, res, 403, "insufficient_scope")
		require.Equal(t, c.scope, res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["message"], name)
	}
	require.Equal(t, 201, e.do(writeOnly, "POST", "/api/v1/locations", map[string]any{"name": "k"}).Code)
	require.Equal(t, 200, e.do(readOnly, "GET", "/api/v1/locations", nil).Code)
}

// A location takes the rates' Address shape as it is (address1,
// provinceCode, zip, countryCode) and the usual aliases; a field sent
// under its own name wins.
func TestLocationsAcceptTheRatesAddressShape(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	res := e.do(owner.caller, "POST", "/api/v1/locations", map[string]any{
		"name": "Rates shape", "address1": "1 Dock Rd", "city": "Memphis", "provinceCode": "TN", "zip": "38118", "countryCode": "US",
	})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	loc := res.data()
	require.Equal(t, "1 Dock Rd", loc["street"])
	require.Equal(t, "TN", loc["province"])
	require.Equal(t, "US", loc["country"])
	id := loc["id"].(string)

	res = e.do(owner.caller, "PATCH", "/api/v1/locations/"+id, map[string]any{"postal_code": "38119", "state": "MS", "province": "AR"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "38119", res.data()["zip"])
	require.Equal(t, "AR", res.data()["province"], "the field's own name wins over an alias")
}
