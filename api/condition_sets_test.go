package api

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// csTestCreate creates a condition set and returns its data.
func csTestCreate(t testing.TB, e *testEnv, c caller, name, typ string) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/condition-sets", map[string]any{"name": name, "valueType": typ})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

func csTestValuesBody(n int, prefix string) map[string]any {
	vals := make([]any, n)
	for i := range vals {
		vals[i] = map[string]any{"value": fmt.Sprintf("%s%06d", prefix, i)}
	}
	return map[string]any{"values": vals}
}

func TestConditionSetEndpoints(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	key := e.apiKey(owner, "dispatchers:read", "dispatchers:write")
	readOnly := e.apiKey(owner, "dispatchers:read")

	// Create: validation names fields; defaults; duplicate name 409.
	require.ElementsMatch(t, []string{"name", "valueType"}, orderTestFields(t, e.do(key, "POST", "/api/v1/condition-sets", map[string]any{"valueType": "date"})))
	set := csTestCreate(t, e, key, "Blocked SKUs", "string")
	require.Equal(t, orderTestSorted("id", "organizationId", "name", "description", "valueType", "valueCount", "createdAt", "updatedAt"), orderTestKeys(set))
	require.EqualValues(t, 0, set["valueCount"])
	require.Nil(t, set["description"])
	requireError(t, e.do(key, "POST", "/api/v1/condition-sets", map[string]any{"name": "Blocked SKUs", "valueType": "number"}), 409, "conflict")
	requireError(t, e.do(readOnly, "POST", "/api/v1/condition-sets", map[string]any{"name": "x", "valueType": "number"}), 403, "insufficient_scope")
	id := set["id"].(string)
	base := "/api/v1/condition-sets/" + id

	// Get, list (by name), patch.
	csTestCreate(t, e, key, "Alpha", "number")
	list := e.do(readOnly, "GET", "/api/v1/condition-sets", nil)
	require.Equal(t, 200, list.Code)
	require.Equal(t, "Alpha", list.list()[0]["name"])
	require.EqualValues(t, 2, list.Body["pagination"].(map[string]any)["total"])
	require.Equal(t, 200, e.do(readOnly, "GET", base, nil).Code)
	up := e.do(key, "PATCH", base, map[string]any{"description": "never ship these"})
	require.Equal(t, 200, up.Code, "%s", up.Raw)
	require.Equal(t, "never ship these", up.data()["description"])
	require.Equal(t, "Blocked SKUs", up.data()["name"])
	requireError(t, e.do(key, "PATCH", base, map[string]any{"name": "Alpha"}), 409, "conflict")
	require.Equal(t, []string{"name"}, orderTestFields(t, e.do(key, "PATCH", base, map[string]any{"name": ""})))

	// Values: duplicates ignored, added counts only new ones.
	add := e.do(key, "POST", base+"/values", map[string]any{"values": []any{
		map[string]any{"value": "SKU-B"}, map[string]any{"value": "SKU-A", "label": "Alpha"}, map[string]any{"value": "SKU-B"},
	}})
	require.Equal(t, 200, add.Code, "%s", add.Raw)
	require.Equal(t, map[string]any{"success": true, "added": float64(2)}, add.Body)
	add = e.do(key, "POST", base+"/values", map[string]any{"values": []any{map[string]any{"value": "SKU-A"}, map[string]any{"value": "SKU-C"}}})
	require.EqualValues(t, 1, add.Body["added"])
	require.EqualValues(t, 3, e.do(key, "GET", base, nil).data()["valueCount"])
	require.ElementsMatch(t, []string{"values[1].value", "values[2]"}, orderTestFields(t, e.do(key, "POST", base+"/values",
		map[string]any{"values": []any{map[string]any{"value": "ok"}, map[string]any{"value": "  "}, 7}})))
	require.Equal(t, []string{"values"}, orderTestFields(t, e.do(key, "POST", base+"/values", map[string]any{})))

	vals := e.do(readOnly, "GET", base+"/values?limit=2", nil)
	require.Equal(t, 200, vals.Code, "%s", vals.Raw)
	require.Len(t, vals.list(), 2)
	require.Equal(t, "SKU-A", vals.list()[0]["value"])
	require.Equal(t, "Alpha", vals.list()[0]["label"])
	require.Equal(t, id, vals.list()[0]["condition_set_id"])
	require.Equal(t, orderTestSorted("id", "condition_set_id", "value", "label"), orderTestKeys(vals.list()[1]))
	require.Equal(t, map[string]any{"page": 1.0, "limit": 2.0, "total": 3.0, "totalPages": 2.0, "hasMore": true}, vals.Body["pagination"])
	require.EqualValues(t, 100, e.do(readOnly, "GET", base+"/values", nil).Body["pagination"].(map[string]any)["limit"], "default 100")
	require.EqualValues(t, 1000, e.do(readOnly, "GET", base+"/values?limit=5000", nil).Body["pagination"].(map[string]any)["limit"], "max 1000")

	// Remove and clear.
	rm := e.do(key, "DELETE", base+"/values", map[string]any{"values": []any{"SKU-A", "SKU-Z"}})
	require.Equal(t, 200, rm.Code, "%s", rm.Raw)
	require.Equal(t, map[string]any{"success": true, "removed": float64(1)}, rm.Body)
	require.EqualValues(t, 2, e.do(key, "GET", base, nil).data()["valueCount"])
	require.Equal(t, 200, e.do(key, "DELETE", base+"/values/all", nil).Code)
	require.EqualValues(t, 0, e.do(key, "GET", base, nil).data()["valueCount"])
	require.Equal(t, 200, e.do(key, "GET", base, nil).Code, "the set is kept")

	// Another organization sees nothing.
	for _, r := range []struct{ method, path string }{
		{"GET", base}, {"PATCH", base}, {"DELETE", base}, {"GET", base + "/values"},
		{"POST", base + "/values"}, {"DELETE", base + "/values"}, {"DELETE", base + "/values/all"},
	} {
		requireError(t, e.do(other.caller, r.method, r.path, map[string]any{"values": []any{"x"}, "name": "n"}), 404, "not_found")
	}
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/condition-sets", nil).list())

	require.Equal(t, 200, e.do(key, "DELETE", base, nil).Code)
	requireError(t, e.do(key, "GET", base, nil), 404, "not_found")
}

func TestConditionSetTypedValues(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	nums := "/api/v1/condition-sets/" + csTestCreate(t, e, owner.caller, "Totals", "number")["id"].(string)
	res := e.do(owner.caller, "POST", nums+"/values", map[string]any{"values": []any{
		map[string]any{"value": "1.50"}, map[string]any{"value": 1.5}, map[string]any{"value": "abc"}, map[string]any{"value": true},
	}})
	require.Equal(t, []string{"values[2].value", "values[3].value"}, orderTestFields(t, res))
	res = e.do(owner.caller, "POST", nums+"/values", map[string]any{"values": []any{map[string]any{"value": "1.50"}, map[string]any{"value": 1.5}, map[string]any{"value": "10"}}})
	require.EqualValues(t, 2, res.Body["added"], "1.50 and 1.5 are one number")
	list := e.do(owner.caller, "GET", nums+"/values", nil).list()
	require.Equal(t, "1.5", list[0]["value"], "stored in canonical form")

	bools := "/api/v1/condition-sets/" + csTestCreate(t, e, owner.caller, "Flags", "boolean")["id"].(string)
	require.Equal(t, []string{"values[1].value"}, orderTestFields(t, e.do(owner.caller, "POST", bools+"/values",
		map[string]any{"values": []any{map[string]any{"value": "TRUE"}, map[string]any{"value": "yes"}}})))
	res = e.do(owner.caller, "POST", bools+"/values", map[string]any{"values": []any{map[string]any{"value": "TRUE"}, map[string]any{"value": false}}})
	require.EqualValues(t, 2, res.Body["added"])
	res = e.do(owner.caller, "DELETE", bools+"/values", map[string]any{"values": []any{"True"}})
	require.EqualValues(t, 1, res.Body["removed"])
}

// Concurrent adds through the API keep valueCount exact.
func TestConditionSetConcurrentAddsAPI(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	base := "/api/v1/condition-sets/" + csTestCreate(t, e, owner.caller, "Race", "string")["id"].(string)
	var wg sync.WaitGroup
	added := make([]int, 6)
	for w := range added {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := csTestValuesBody(300+w*50, "V") // overlapping prefixes
			res := e.do(owner.caller, "POST", base+"/values", body)
			if res.Code == 200 {
				added[w] = int(res.Body["added"].(float64))
			}
		}()
	}
	wg.Wait()
	sum := 0
	for _, n := range added {
		sum += n
	}
	require.Equal(t, 550, sum)
	require.EqualValues(t, 550, e.do(owner.caller, "GET", base, nil).data()["valueCount"])
	require.EqualValues(t, 550, e.do(owner.caller, "GET", base+"/values", nil).Body["pagination"].(map[string]any)["total"])
}

func TestConditionSetReferencedDelete(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	set := csTestCreate(t, e, owner.caller, "Ref", "string")["id"].(string)
	rule := e.do(owner.caller, "POST", "/api/v1/split-rules", map[string]any{
		"name": "by set", "method": "condition", "conditionGroups": []any{map[string]any{
			"label": "listed", "conditions": []any{map[string]any{"field": "lineItems[].sku", "operator": "in_set", "setId": set}},
		}},
	})
	require.Equal(t, 201, rule.Code, "%s", rule.Raw)
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/condition-sets/"+set, nil), 409, "conflict")
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/split-rules/"+rule.data()["id"].(string), nil).Code)
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/condition-sets/"+set, nil).Code)
}

// BenchmarkConditionSetAdd100k is POST /condition-sets/{id}/values with
// 100,000 new values, through the router (decode, validation, insert).
func BenchmarkConditionSetAdd100k(b *testing.B) {
	e := newEnv(b)
	owner := e.signup()
	raw, err := json.Marshal(csTestValuesBody(100_000, "SKU-"))
	require.NoError(b, err)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		b.StopTimer()
		base := "/api/v1/condition-sets/" + csTestCreate(b, e, owner.caller, uuid.NewString(), "string")["id"].(string)
		b.StartTimer()
		res := e.do(owner.caller, "POST", base+"/values", raw)
		if res.Code != 200 || res.Body["added"].(float64) != 100_000 {
			b.Fatalf("%d %s", res.Code, res.Raw[:min(len(res.Raw), 300)])
		}
	}
}
