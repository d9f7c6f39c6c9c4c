package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/shipping"
)

// trackingTestShipment inserts a shipment of the organization (the
// shipments API is not needed to test tracking).
func trackingTestShipment(t testing.TB, e *testEnv, orgID, status string) string {
	t.Helper()
	id := uuid.NewString()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO shipments (id, organization_id, carrier, service, status, tracking_number)
		VALUES ($1, $2, 'carrier_a', 'FEDEX_GROUND', $3, $4)`, id, orgID, status, "7948"+id[:8])
	require.NoError(t, err)
	return id
}

func trackingTestStatus(t testing.TB, e *testEnv, shipmentID string) string {
	t.Helper()
	var s string
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT status FROM shipments WHERE id = $1`, shipmentID).Scan(&s))
	return s
}

func trackingTestCount(t testing.TB, e *testEnv, shipmentID string) int {
	t.Helper()
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM tracking_checkpoints WHERE shipment_id = $1`, shipmentID).Scan(&n))
	return n
}

// trackingTestBody is a valid checkpoint with only the required fields.
func trackingTestBody(shipmentID string, seq int, status string, at time.Time) map[string]any {
	return map[string]any{
		"shipmentId": shipmentID, "sequence": seq, "status": status,
		"checkpointTime": at.Format(time.RFC3339), "source": "carrier_a",
	}
}

// trackingTestDetails are the fields named by a validation error.
func trackingTestDetails(t testing.TB, res *response) map[string]string {
	t.Helper()
	requireError(t, res, 400, "validation_error")
	out := map[string]string{}
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		m := d.(map[string]any)
		out[m["field"].(string)] = m["message"].(string)
	}
	return out
}

var checkpointKeys = []string{"id", "organizationId", "shipmentId", "sequence", "status", "statusDetail", "description",
	"city", "state", "country", "countryCode", "zip", "latitude", "longitude", "checkpointTime", "source",
	"sourceEventId", "isException", "exceptionType", "createdAt", "updatedAt"}

func TestTrackingCheckpointCreate(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:write", "shipments:read")
	sh := trackingTestShipment(t, e, owner.org, "label_created")
	at := time.Date(2025, 6, 2, 14, 30, 0, 0, time.UTC)

	// Every field.
	body := trackingTestBody(sh, 3, "in_transit", at)
	body["checkpointTime"] = "2025-06-02T16:30:00+02:00"
	body["statusDetail"] = "AR"
	body["description"] = "Arrived at FedEx location"
	body["city"] = "MEMPHIS"
	body["state"] = "TN"
	body["country"] = "United States"
	body["countryCode"] = "us"
	body["zip"] = "38118"
	body["latitude"] = 35.1495
	body["longitude"] = -90.049
	body["sourceEventId"] = "evt-1"
	body["rawData"] = map[string]any{"scanCode": "AR"}
	body["isException"] = false
	body["exceptionType"] = nil
	res := e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	c := res.data()
	require.ElementsMatch(t, checkpointKeys, orderTestKeys(c))
	_, err := uuid.Parse(c["id"].(string))
	require.NoError(t, err)
	require.Equal(t, owner.org, c["organizationId"])
	require.Equal(t, sh, c["shipmentId"])
	require.EqualValues(t, 3, c["sequence"])
	require.Equal(t, "in_transit", c["status"])
	require.Equal(t, "AR", c["statusDetail"])
	require.Equal(t, "Arrived at FedEx location", c["description"])
	require.Equal(t, "MEMPHIS", c["city"])
	require.Equal(t, "TN", c["state"])
	require.Equal(t, "United States", c["country"])
	require.Equal(t, "US", c["countryCode"], "upper-cased")
	require.Equal(t, "38118", c["zip"])
	require.InDelta(t, 35.1495, c["latitude"], 1e-9)
	require.InDelta(t, -90.049, c["longitude"], 1e-9)
	ts, err := time.Parse(time.RFC3339, c["checkpointTime"].(string))
	require.NoError(t, err)
	require.True(t, at.Equal(ts))
	require.Equal(t, "carrier_a", c["source"])
	require.Equal(t, "evt-1", c["sourceEventId"])
	require.Equal(t, false, c["isException"])
	require.Nil(t, c["exceptionType"])
	require.NotEmpty(t, c["createdAt"])
	require.NotEmpty(t, c["updatedAt"])
	require.Equal(t, "in_transit", trackingTestStatus(t, e, sh), "the shipment moved forward")

	// Only the required fields: the rest null, isException false; a user
	// token needs no scope.
	res = e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 4, "exception", at.Add(time.Hour)))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	c = res.data()
	require.ElementsMatch(t, checkpointKeys, orderTestKeys(c))
	for _, k := range []string{"statusDetail", "description", "city", "state", "country", "countryCode", "zip", "latitude", "longitude", "sourceEventId", "exceptionType"} {
		require.Nil(t, c[k], k)
	}
	require.Equal(t, false, c["isException"])
	require.Equal(t, "exception", trackingTestStatus(t, e, sh))

	// An exception checkpoint with its type.
	exc := trackingTestBody(sh, 5, "exception", at.Add(2*time.Hour))
	exc["isException"] = true
	exc["exceptionType"] = "DELIVERY_ATTEMPTED"
	res = e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", exc)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, true, res.data()["isException"])
	require.Equal(t, "DELIVERY_ATTEMPTED", res.data()["exceptionType"])

	// An older checkpoint does not move the shipment.
	res = e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 0, "delivered", at.Add(-time.Hour)))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "exception", trackingTestStatus(t, e, sh))
	// A later delivered scan does.
	res = e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 6, "delivered", at.Add(3*time.Hour)))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "delivered", trackingTestStatus(t, e, sh))

	// Duplicate shipment + source + sourceEventId: 409, nothing written.
	n := trackingTestCount(t, e, sh)
	dup := trackingTestBody(sh, 9, "delivered", at)
	dup["sourceEventId"] = "evt-1"
	requireError(t, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", dup), 409, "conflict")
	require.Equal(t, n, trackingTestCount(t, e, sh))
	// Another source with the same event id is not a duplicate.
	dup["source"] = "manual"
	require.Equal(t, 201, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", dup).Code)
	// Without sourceEventId there is nothing to deduplicate on.
	for range 2 {
		require.Equal(t, 201, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 9, "delivered", at)).Code)
	}

	// Unknown, malformed-free but foreign shipments: 404.
	other := e.signup()
	foreign := trackingTestShipment(t, e, other.org, "in_transit")
	requireError(t, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(foreign, 0, "in_transit", at)), 404, "not_found")
	requireError(t, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(uuid.NewString(), 0, "in_transit", at)), 404, "not_found")
	require.Equal(t, 0, trackingTestCount(t, e, foreign))

	// Scope, authentication, body.
	readOnly := e.apiKey(owner, "shipments:read")
	res = e.do(readOnly, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 0, "in_transit", at))
	requireError(t, res, 403, "insufficient_scope")
	require.Contains(t, string(res.Raw), "shipments:write")
	requireError(t, e.do(caller{}, "POST", "/api/v1/shipment-tracking/checkpoints", trackingTestBody(sh, 0, "in_transit", at)), 401, "unauthorized")
	requireError(t, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", "{nope"), 400, "invalid_json")
	requireError(t, e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints", "[]"), 400, "invalid_json")
}

func TestTrackingCheckpointValidation(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	sh := trackingTestShipment(t, e, owner.org, "label_created")
	post := func(body any) *response {
		return e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints", body)
	}

	d := trackingTestDetails(t, post(map[string]any{}))
	for _, f := range []string{"shipmentId", "sequence", "status", "checkpointTime", "source"} {
		require.Equal(t, "is required", d[f], f)
	}
	require.Len(t, d, 5)

	d = trackingTestDetails(t, post(map[string]any{
		"shipmentId": "not-a-uuid", "sequence": 1.5, "status": "lost", "checkpointTime": "yesterday", "source": "  ",
		"countryCode": "USA", "latitude": 91, "longitude": -181, "rawData": []any{1}, "isException": "yes",
		"description": strings.Repeat("x", 2001), "zip": 12345,
	}))
	require.Equal(t, "must be a UUID", d["shipmentId"])
	require.Contains(t, d["sequence"], "integer")
	require.Contains(t, d["status"], "pending, label_created, in_transit, out_for_delivery, delivered, exception")
	require.Equal(t, "must be an ISO 8601 timestamp", d["checkpointTime"])
	require.Equal(t, "is required", d["source"])
	require.Contains(t, d["countryCode"], "two letters")
	require.Equal(t, "must be between -90 and 90", d["latitude"])
	require.Equal(t, "must be between -180 and 180", d["longitude"])
	require.Equal(t, "must be an object", d["rawData"])
	require.Equal(t, "must be a boolean", d["isException"])
	require.Contains(t, d["description"], "at most 2000")
	require.Equal(t, "must be a string", d["zip"])

	body := trackingTestBody(sh, -1, "in_transit", time.Now())
	body["latitude"] = 10
	d = trackingTestDetails(t, post(body))
	require.Contains(t, d["sequence"], "integer from 0")
	require.Equal(t, "is required with latitude", d["longitude"])
	body = trackingTestBody(sh, 0, "in_transit", time.Now())
	body["sequence"] = "1"
	require.Equal(t, "must be a number", trackingTestDetails(t, post(body))["sequence"])
	require.Equal(t, 0, trackingTestCount(t, e, sh))
}

func TestTrackingCheckpointBatch(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:write")
	a := trackingTestShipment(t, e, owner.org, "label_created")
	b := trackingTestShipment(t, e, owner.org, "in_transit")
	at := time.Date(2025, 7, 1, 9, 0, 0, 0, time.UTC)
	cp := func(sh string, seq int, status string, h int, event string) map[string]any {
		m := trackingTestBody(sh, seq, status, at.Add(time.Duration(h)*time.Hour))
		if event != "" {
			m["sourceEventId"] = event
		}
		return m
	}
	batch := []any{
		cp(a, 0, "label_created", 0, "a0"), cp(a, 1, "in_transit", 5, "a1"), cp(a, 2, "out_for_delivery", 30, "a2"),
		cp(b, 0, "in_transit", 1, "b0"), cp(b, 1, "delivered", 40, "b1"), cp(b, 2, "in_transit", 2, ""),
	}
	res := e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", map[string]any{"checkpoints": batch})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.EqualValues(t, 6, res.Body["count"])
	items := res.list()
	require.Len(t, items, 6)
	for i, it := range items {
		require.ElementsMatch(t, []string{"id", "shipmentId", "sequence", "status", "checkpointTime"}, orderTestKeys(it))
		in := batch[i].(map[string]any)
		require.Equal(t, in["shipmentId"], it["shipmentId"], "input order")
		require.EqualValues(t, in["sequence"], it["sequence"])
		require.Equal(t, in["status"], it["status"])
		require.Equal(t, in["checkpointTime"], it["checkpointTime"])
	}
	require.Equal(t, "out_for_delivery", trackingTestStatus(t, e, a))
	require.Equal(t, "delivered", trackingTestStatus(t, e, b))
	require.Equal(t, 3, trackingTestCount(t, e, a))
	require.Equal(t, 3, trackingTestCount(t, e, b))

	// Upsert: the same keys again update in place (same ids); the checkpoint
	// without sourceEventId is inserted again.
	changed := cp(a, 7, "delivered", 50, "a2")
	res = e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", map[string]any{"checkpoints": append(batch, changed)})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	again := res.list()
	require.EqualValues(t, 7, res.Body["count"])
	for i := range 5 {
		require.Equal(t, items[i]["id"], again[i]["id"], "item %d", i)
	}
	require.NotEqual(t, items[5]["id"], again[5]["id"])
	require.Equal(t, again[2]["id"], again[6]["id"], "the same key twice: one row, the last wins")
	require.EqualValues(t, 7, again[2]["sequence"])
	require.Equal(t, 3, trackingTestCount(t, e, a))
	require.Equal(t, 4, trackingTestCount(t, e, b))
	require.Equal(t, "delivered", trackingTestStatus(t, e, a))

	// A shipment not in the organization rejects the whole batch, naming it.
	other := e.signup()
	foreign := trackingTestShipment(t, e, other.org, "in_transit")
	missing := uuid.NewString()
	res = e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", map[string]any{"checkpoints": []any{
		cp(a, 10, "in_transit", 60, "new-1"), cp(foreign, 0, "in_transit", 1, "f"), cp(missing, 0, "in_transit", 1, "m"), cp(missing, 1, "in_transit", 2, "m2"),
	}})
	d := trackingTestDetails(t, res)
	require.Len(t, d, 2, "one detail per unknown shipment")
	require.Contains(t, d["checkpoints[1].shipmentId"], foreign)
	require.Contains(t, d["checkpoints[2].shipmentId"], missing)
	require.Contains(t, res.Body["error"].(map[string]any)["message"], foreign)
	require.Equal(t, 3, trackingTestCount(t, e, a), "nothing written")
	require.Equal(t, 0, trackingTestCount(t, e, foreign))

	// Shape and size.
	post := func(body any) *response {
		return e.do(key, "POST", "/api/v1/shipment-tracking/checkpoints/batch", body)
	}
	require.Equal(t, "is required", trackingTestDetails(t, post(map[string]any{}))["checkpoints"])
	require.Equal(t, "must be an array", trackingTestDetails(t, post(map[string]any{"checkpoints": map[string]any{}}))["checkpoints"])
	require.Equal(t, "must have 1-1000 items", trackingTestDetails(t, post(map[string]any{"checkpoints": []any{}}))["checkpoints"])
	big := make([]any, 1001)
	for i := range big {
		big[i] = cp(a, i, "in_transit", 1, "")
	}
	require.Equal(t, "must have 1-1000 items", trackingTestDetails(t, post(map[string]any{"checkpoints": big}))["checkpoints"])
	d = trackingTestDetails(t, post(map[string]any{"checkpoints": []any{cp(a, 0, "in_transit", 1, ""), "x", map[string]any{"shipmentId": a}}}))
	require.Equal(t, "must be an object", d["checkpoints[1]"])
	d = trackingTestDetails(t, post(map[string]any{"checkpoints": []any{cp(a, 0, "in_transit", 1, ""), map[string]any{"shipmentId": a, "status": "nope"}}}))
	require.Equal(t, "is required", d["checkpoints[1].sequence"])
	require.Equal(t, "is required", d["checkpoints[1].source"])
	require.Contains(t, d["checkpoints[1].status"], "must be one of")
	require.NotContains(t, d, "checkpoints[0].sequence")
	requireError(t, post("{"), 400, "invalid_json")

	// Scope.
	readOnly := e.apiKey(owner, "shipments:read")
	requireError(t, e.do(readOnly, "POST", "/api/v1/shipment-tracking/checkpoints/batch", map[string]any{"checkpoints": batch}), 403, "insufficient_scope")
}

func TestTrackingCheckpointList(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:read")
	sh := trackingTestShipment(t, e, owner.org, "in_transit")
	at := time.Date(2025, 8, 1, 0, 0, 0, 0, time.UTC)
	var batch []any
	for i := 119; i >= 0; i-- { // sent newest first
		batch = append(batch, trackingTestBody(sh, i, "in_transit", at.Add(time.Duration(i)*time.Minute)))
	}
	res := e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints/batch", map[string]any{"checkpoints": batch})
	require.Equal(t, 201, res.Code, "%s", res.Raw)

	path := "/api/v1/shipment-tracking/checkpoints?shipmentId=" + sh
	res = e.do(key, "GET", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	list := res.list()
	require.Len(t, list, 50, "default 50")
	for i, c := range list {
		require.EqualValues(t, i, c["sequence"], "sequence ascending")
		require.ElementsMatch(t, checkpointKeys, orderTestKeys(c))
	}
	pg := res.Body["pagination"].(map[string]any)
	require.EqualValues(t, 120, pg["total"])
	require.EqualValues(t, 50, pg["limit"])
	require.Equal(t, true, pg["hasMore"])

	res = e.do(key, "GET", path+"&limit=1000", nil)
	require.Len(t, res.list(), 100, "max 100")
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"])
	res = e.do(key, "GET", path+"&limit=50&page=3", nil)
	require.Len(t, res.list(), 20)
	require.EqualValues(t, 100, res.list()[0]["sequence"])
	require.Equal(t, false, res.Body["pagination"].(map[string]any)["hasMore"])
	res = e.do(key, "GET", path+"&page=9", nil)
	require.Equal(t, 200, res.Code)
	require.Empty(t, res.list())

	// shipmentId is required and must be a UUID.
	requireError(t, e.do(key, "GET", "/api/v1/shipment-tracking/checkpoints", nil), 400, "validation_error")
	require.Equal(t, "is required", trackingTestDetails(t, e.do(key, "GET", "/api/v1/shipment-tracking/checkpoints?page=1", nil))["shipmentId"])
	require.Equal(t, "must be a UUID", trackingTestDetails(t, e.do(key, "GET", "/api/v1/shipment-tracking/checkpoints?shipmentId=x", nil))["shipmentId"])
	require.Equal(t, "must be a positive integer", trackingTestDetails(t, e.do(key, "GET", path+"&limit=0", nil))["limit"])

	// Another organization's shipment, an unknown one: 404.
	other := e.signup()
	requireError(t, e.do(other.caller, "GET", path, nil), 404, "not_found")
	requireError(t, e.do(key, "GET", "/api/v1/shipment-tracking/checkpoints?shipmentId="+uuid.NewString(), nil), 404, "not_found")

	// A shipment without checkpoints: an empty list.
	empty := trackingTestShipment(t, e, owner.org, "pending")
	res = e.do(key, "GET", "/api/v1/shipment-tracking/checkpoints?shipmentId="+empty, nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, "[]", strings.TrimSpace(fmt.Sprint(res.Body["data"])))

	// Scope.
	writeOnly := e.apiKey(owner, "shipments:write")
	requireError(t, e.do(writeOnly, "GET", path, nil), 403, "insufficient_scope")
}

func TestTrackingMap(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "shipments:read")
	ctx := context.Background()
	pool := e.deps.Store.Pool
	bridge := orderTestBridge(t, e, owner.org, "Shop")

	withTo := trackingTestShipment(t, e, owner.org, "in_transit")
	_, err := pool.Exec(ctx, `UPDATE shipments SET ship_to_lat = 47.6062, ship_to_lng = -122.3321, bridge_id = $2,
		ship_to = '{"address1": "1 Pike St", "city": "Seattle", "provinceCode": "WA", "zip": "98101", "countryCode": "US"}',
		ship_from = '{"city": "Memphis", "state": "TN"}', created_at = now() - interval '1 hour' WHERE id = $1`, withTo, bridge)
	require.NoError(t, err)
	withFrom := trackingTestShipment(t, e, owner.org, "delivered")
	_, err = pool.Exec(ctx, `UPDATE shipments SET ship_from_lat = 35.1495, ship_from_lng = -90.049 WHERE id = $1`, withFrom)
	require.NoError(t, err)
	trackingTestShipment(t, e, owner.org, "in_transit") // no coordinates: not on the map
	other := e.signup()
	foreign := trackingTestShipment(t, e, other.org, "in_transit")
	_, err = pool.Exec(ctx, `UPDATE shipments SET ship_to_lat = 1, ship_to_lng = 1 WHERE id = $1`, foreign)
	require.NoError(t, err)

	res := e.do(key, "GET", "/api/v1/shipment-tracking/map", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	items := res.list()
	require.Len(t, items, 2)
	require.Equal(t, withFrom, items[0]["id"], "newest first")
	require.Equal(t, withTo, items[1]["id"])
	m := items[1]
	require.ElementsMatch(t, []string{"id", "status", "tracking_number", "carrier", "service", "ship_to_lat", "ship_to_lng",
		"ship_from_lat", "ship_from_lng", "ship_to", "ship_from", "created_at", "updated_at"}, orderTestKeys(m))
	require.Equal(t, "in_transit", m["status"])
	require.Equal(t, "7948"+withTo[:8], m["tracking_number"])
	require.Equal(t, "carrier_a", m["carrier"])
	require.Equal(t, "FEDEX_GROUND", m["service"])
	require.InDelta(t, 47.6062, m["ship_to_lat"], 1e-9)
	require.InDelta(t, -122.3321, m["ship_to_lng"], 1e-9)
	require.Nil(t, m["ship_from_lat"])
	require.Nil(t, m["ship_from_lng"])
	require.Equal(t, map[string]any{"city": "Seattle", "state": "WA"}, m["ship_to"])
	require.Equal(t, map[string]any{"city": "Memphis", "state": "TN"}, m["ship_from"])
	require.Equal(t, map[string]any{"city": nil, "state": nil}, items[0]["ship_to"])
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"], "default 100")

	// Filters.
	res = e.do(key, "GET", "/api/v1/shipment-tracking/map?status=delivered", nil)
	require.Len(t, res.list(), 1)
	require.Equal(t, withFrom, res.list()[0]["id"])
	res = e.do(key, "GET", "/api/v1/shipment-tracking/map?bridgeId="+bridge, nil)
	require.Len(t, res.list(), 1)
	require.Equal(t, withTo, res.list()[0]["id"])
	res = e.do(key, "GET", "/api/v1/shipment-tracking/map?bridgeId="+uuid.NewString(), nil)
	require.Empty(t, res.list())
	res = e.do(key, "GET", "/api/v1/shipment-tracking/map?limit=1", nil)
	require.Len(t, res.list(), 1)
	require.Equal(t, true, res.Body["pagination"].(map[string]any)["hasMore"])
	res = e.do(key, "GET", "/api/v1/shipment-tracking/map?limit=10000", nil)
	require.EqualValues(t, 500, res.Body["pagination"].(map[string]any)["limit"], "max 500")

	d := trackingTestDetails(t, e.do(key, "GET", "/api/v1/shipment-tracking/map?status=lost&bridgeId=x&limit=-1", nil))
	require.Contains(t, d["status"], "must be one of")
	require.Equal(t, "must be a UUID", d["bridgeId"])
	require.Equal(t, "must be a positive integer", d["limit"])

	writeOnly := e.apiKey(owner, "shipments:write")
	requireError(t, e.do(writeOnly, "GET", "/api/v1/shipment-tracking/map", nil), 403, "insufficient_scope")
	requireError(t, e.do(caller{}, "GET", "/api/v1/shipment-tracking/map", nil), 401, "unauthorized")
}

// TestTrackingCheckpointTimeBounds: a checkpointTime more than 24 hours
// ahead or before 1970 is refused (single and batch), so a future-dated
// checkpoint cannot freeze a shipment's status.
func TestTrackingCheckpointTimeBounds(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	sh := trackingTestShipment(t, e, owner.org, "label_created")
	post := func(path string, body any) *response {
		return e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints"+path, body)
	}
	now := time.Now().UTC()

	d := trackingTestDetails(t, post("", trackingTestBody(sh, 0, "in_transit", now.Add(25*time.Hour))))
	require.Equal(t, "must not be more than 24 hours in the future", d["checkpointTime"])
	require.Len(t, d, 1)
	d = trackingTestDetails(t, post("", trackingTestBody(sh, 0, "in_transit", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC))))
	require.Contains(t, d["checkpointTime"], "1970")
	d = trackingTestDetails(t, post("/batch", map[string]any{"checkpoints": []any{
		trackingTestBody(sh, 0, "in_transit", now.Add(-time.Hour)),
		trackingTestBody(sh, 1, "delivered", now.AddDate(1, 0, 0)),
	}}))
	require.Equal(t, map[string]string{"checkpoints[1].checkpointTime": "must not be more than 24 hours in the future"}, d)
	require.Equal(t, 0, trackingTestCount(t, e, sh))
	require.Equal(t, "label_created", trackingTestStatus(t, e, sh))

	// Within the window (clock skew): accepted.
	res := post("", trackingTestBody(sh, 0, "in_transit", now.Add(23*time.Hour)))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "in_transit", trackingTestStatus(t, e, sh))
}

// TestTrackingCheckpointIsException: isException on a checkpoint of another
// status moves the shipment to exception (unless it is a delivery).
func TestTrackingCheckpointIsException(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	sh := trackingTestShipment(t, e, owner.org, "in_transit")
	at := time.Now().UTC().Add(-2 * time.Hour)

	body := trackingTestBody(sh, 0, "in_transit", at)
	body["isException"] = true
	body["exceptionType"] = "weather_delay"
	res := e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "exception", trackingTestStatus(t, e, sh))

	// A delivery flagged isException is still a delivery.
	body = trackingTestBody(sh, 1, "delivered", at.Add(time.Hour))
	body["isException"] = true
	res = e.do(owner.caller, "POST", "/api/v1/shipment-tracking/checkpoints", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, "delivered", trackingTestStatus(t, e, sh))
}

// TestCheckpointBatchLimitInDocument: the batch size the document refuses
// above is the one the shipping domain records at most.
func TestCheckpointBatchLimitInDocument(t *testing.T) {
	batch := openAPIDoc()["components"].(map[string]any)["schemas"].(map[string]any)["CheckpointBatch"].(map[string]any)
	items := batch["properties"].(map[string]any)["checkpoints"].(map[string]any)
	require.EqualValues(t, shipping.MaxCheckpointBatch, items["maxItems"])
	require.Equal(t, fmt.Sprintf("must have 1-%d items", shipping.MaxCheckpointBatch), items["x-messages"].(map[string]any)["maxItems"])
}
