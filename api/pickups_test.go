package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
)

var (
	pkpKeys       = shpSorted("id", "organizationId", "carrierAccountId", "externalId", "status", "pickupAddress", "pickupDate", "readyTime", "closeTime", "packageCount", "totalWeight", "confirmationNumber", "metadata", "createdAt", "updatedAt")
	pkpDetailKeys = shpSorted(append(append([]string{}, pkpKeys...), "carrierResponse")...)
)

func pkpDay(offset int) string { return time.Now().UTC().AddDate(0, 0, offset).Format("2006-01-02") }

func pkpBody(accountID string, offset int) map[string]any {
	return map[string]any{
		"carrierAccountId": accountID,
		"pickupAddress":    map[string]any{"address1": "10 Main St", "city": "Memphis", "provinceCode": "tn", "zip": "38103", "countryCode": "us", "name": "Ava Adams", "phone": "901-555-0100"},
		"pickupDate":       pkpDay(offset), "readyTime": "09:00", "closeTime": "17:00",
		"metadata": map[string]any{"dock": 4},
	}
}

// pkpInsert inserts a pickup straight into the database.
func pkpInsert(t *testing.T, e *testEnv, orgID, accountID, status, date string) string {
	t.Helper()
	id := uuid.New()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO pickups
		(id, organization_id, carrier_account_id, carrier, external_id, status, pickup_address, pickup_date, ready_time, close_time, confirmation_number)
		VALUES ($1, $2, $3, 'carrier_a', 'CPU1', $4, '{"address1": "10 Main St", "city": "Memphis", "provinceCode": "TN", "zip": "38103", "countryCode": "US"}',
		        $5, '09:00', '17:00', 'CPU1')`, id, orgID, accountID, status, date)
	require.NoError(t, err)
	return id.String()
}

func TestPickupCreateGetList(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	key := e.apiKey(owner, "pickups:write", "pickups:read")

	res := e.do(key, "POST", "/api/v1/pickups", pkpBody(acct, 2))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, shpSorted("pickup", "confirmationNumber", "messages"), shpKeys(res.Body))
	conf := res.Body["confirmationNumber"].(string)
	require.Regexp(t, `^CPU\d{8}$`, conf)
	require.Equal(t, []any{"Pickup scheduled"}, res.Body["messages"])
	p := res.Body["pickup"].(map[string]any)
	require.Equal(t, pkpKeys, shpKeys(p))
	require.Equal(t, owner.org, p["organizationId"])
	require.Equal(t, acct, p["carrierAccountId"])
	require.Equal(t, conf, p["externalId"])
	require.Equal(t, conf, p["confirmationNumber"])
	require.Equal(t, "confirmed", p["status"])
	require.Equal(t, map[string]any{"address1": "10 Main St", "city": "Memphis", "provinceCode": "TN", "zip": "38103", "countryCode": "US"}, p["pickupAddress"])
	require.Equal(t, pkpDay(2), p["pickupDate"])
	require.Equal(t, "09:00", p["readyTime"])
	require.Equal(t, "17:00", p["closeTime"])
	require.Equal(t, 1.0, p["packageCount"])
	require.Nil(t, p["totalWeight"])
	require.Equal(t, map[string]any{"dock": 4.0}, p["metadata"])
	id := p["id"].(string)

	// Get one carries the carrier's response.
	res = e.do(key, "GET", "/api/v1/pickups/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, pkpDetailKeys, shpKeys(res.data()))
	cr := res.data()["carrierResponse"].(map[string]any)
	require.Equal(t, conf, cr["confirmationNumber"])
	require.NotEmpty(t, cr["location"])

	// Optional fields.
	body := pkpBody(acct, 3)
	body["packageCount"] = 3
	body["totalWeight"] = map[string]any{"value": 12, "unit": "kg"}
	res = e.do(key, "POST", "/api/v1/pickups", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	p3 := res.Body["pickup"].(map[string]any)
	require.Equal(t, 3.0, p3["packageCount"])
	require.Equal(t, map[string]any{"value": 12.0, "unit": "kg"}, p3["totalWeight"])
	body = pkpBody(acct, 4)
	body["totalWeight"] = 20
	res = e.do(key, "POST", "/api/v1/pickups", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"value": 20.0, "unit": "lb"}, res.Body["pickup"].(map[string]any)["totalWeight"])
	id4 := res.Body["pickup"].(map[string]any)["id"].(string)

	// A confirmed pickup whose date has passed reads as completed.
	past := pkpInsert(t, e, owner.org, acct, "confirmed", pkpDay(-2))
	cancelled := pkpInsert(t, e, owner.org, acct, "cancelled", pkpDay(1))
	require.Equal(t, "completed", e.do(key, "GET", "/api/v1/pickups/"+past, nil).data()["status"])

	ids := func(q string) []string {
		res := e.do(key, "GET", "/api/v1/pickups"+q, nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var out []string
		for _, it := range res.list() {
			require.Equal(t, pkpKeys, shpKeys(it))
			out = append(out, it["id"].(string))
		}
		return out
	}
	p3id := p3["id"].(string)
	require.Equal(t, []string{id4, p3id, id, cancelled, past}, ids(""), "newest pickup date first")
	require.Equal(t, []string{id4, p3id, id}, ids("?status=confirmed"))
	require.Equal(t, []string{past}, ids("?status=completed"))
	require.Equal(t, []string{cancelled}, ids("?status=cancelled"))
	require.Equal(t, []string{p3id, id, cancelled}, ids("?fromDate="+pkpDay(1)+"&toDate="+pkpDay(3)))
	require.Equal(t, []string{id4, p3id, id, cancelled, past}, ids("?carrierAccountId="+acct))
	require.Empty(t, ids("?carrierAccountId="+uuid.NewString()))
	res = e.do(key, "GET", "/api/v1/pickups?limit=2&page=3", nil)
	require.Equal(t, map[string]any{"page": 3.0, "limit": 2.0, "total": 5.0, "totalPages": 3.0, "hasMore": false}, res.Body["pagination"])
	require.Equal(t, 100.0, e.do(key, "GET", "/api/v1/pickups?limit=101", nil).Body["pagination"].(map[string]any)["limit"])
	for _, q := range []string{"status=done", "carrierAccountId=x", "fromDate=tomorrow", "toDate=2025-13-01", "fromDate=2025-06-02&toDate=2025-06-01", "page=x"} {
		requireError(t, e.do(key, "GET", "/api/v1/pickups?"+q, nil), 400, "validation_error")
	}

	// Another organization, unknown ids, scopes.
	other := e.signup()
	requireError(t, e.do(other.caller, "GET", "/api/v1/pickups/"+id, nil), 404, "not_found")
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/pickups", nil).list())
	requireError(t, e.do(key, "GET", "/api/v1/pickups/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(key, "GET", "/api/v1/pickups/nope", nil), 404, "not_found")
	readOnly := e.apiKey(owner, "pickups:read")
	requireError(t, e.do(readOnly, "POST", "/api/v1/pickups", pkpBody(acct, 2)), 403, "insufficient_scope")
	requireError(t, e.do(e.apiKey(owner, "shipments:read"), "GET", "/api/v1/pickups", nil), 403, "insufficient_scope")
}

func TestPickupCreateRefusals(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())

	res := e.do(owner.caller, "POST", "/api/v1/pickups", map[string]any{})
	requireError(t, res, 400, "validation_error")
	for _, f := range []string{"carrierAccountId", "pickupAddress", "pickupDate", "readyTime", "closeTime"} {
		require.Contains(t, string(res.Raw), `"field":"`+f+`"`)
	}
	for _, mod := range []func(m map[string]any){
		func(m map[string]any) { m["carrierAccountId"] = "x" },
		func(m map[string]any) { m["pickupDate"] = "2025-02-30" },
		func(m map[string]any) { m["readyTime"] = "9:00" },
		func(m map[string]any) { m["closeTime"] = "24:00" },
		func(m map[string]any) { m["readyTime"], m["closeTime"] = "17:00", "09:00" },
		func(m map[string]any) { m["readyTime"], m["closeTime"] = "12:00", "12:00" },
		func(m map[string]any) { m["packageCount"] = 0 },
		func(m map[string]any) { m["packageCount"] = 1.5 },
		func(m map[string]any) { m["totalWeight"] = -1 },
		func(m map[string]any) { m["totalWeight"] = map[string]any{"value": 3, "unit": "stone"} },
		func(m map[string]any) { m["metadata"] = "x" },
		func(m map[string]any) { delete(m["pickupAddress"].(map[string]any), "zip") },
		func(m map[string]any) { delete(m["pickupAddress"].(map[string]any), "provinceCode") },
		func(m map[string]any) { m["pickupAddress"].(map[string]any)["countryCode"] = "USA" },
	} {
		body := pkpBody(acct, 2)
		mod(body)
		requireError(t, e.do(owner.caller, "POST", "/api/v1/pickups", body), 400, "validation_error")
	}

	// Account of another organization, not active, without pickups.
	other := e.signup()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(shpAccount(t, e, other.org, "carrier_a", "active", shpCarrierA()), 2)), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(shpAccount(t, e, owner.org, "carrier_a", "inactive", shpCarrierA()), 2)), 400, "carrier_account_not_active")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(shpAccount(t, e, owner.org, "carrier_a", "pending", shpCarrierA()), 2)), 400, "carrier_account_not_active")
	acctB := shpAccount(t, e, owner.org, "carrier_b", "active", map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"})
	requireError(t, e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acctB, 2)), 400, "pickups_not_supported")

	// The carrier refuses: 502.
	creds := shpCarrierA()
	creds["childKey"] = "sandbox-fail"
	res = e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(shpAccount(t, e, owner.org, "carrier_a", "active", creds), 2))
	requireError(t, res, 502, "carrier_error")
	require.NotContains(t, string(res.Raw), "sandbox-fail")
	// A past date is refused before the carrier is called.
	res = e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acct, -1))
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []any{map[string]any{"field": "pickupDate", "message": "must not be in the past"}}, res.Body["error"].(map[string]any)["details"])

	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/pickups", nil).list())
}

func TestPickupCancel(t *testing.T) {
	e, _ := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	create := func(offset int) string {
		res := e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acct, offset))
		require.Equal(t, 201, res.Code, "%s", res.Raw)
		return res.Body["pickup"].(map[string]any)["id"].(string)
	}
	id := create(2)

	requireError(t, e.do(e.apiKey(owner, "pickups:read"), "DELETE", "/api/v1/pickups/"+id, nil), 403, "insufficient_scope")
	other := e.signup()
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/pickups/"+id, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id, map[string]any{"reason": strings.Repeat("x", 501)}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id, "{"), 400, "invalid_json")

	res := e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id, map[string]any{"reason": "not needed"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true, "messages": []any{"Requested pickup has been cancelled Successfully."}}, res.Body)
	got := e.do(owner.caller, "GET", "/api/v1/pickups/"+id, nil).data()
	require.Equal(t, "cancelled", got["status"])
	require.NotNil(t, got["carrierResponse"].(map[string]any)["cancellation"])

	// Cancelled or completed: 400.
	res = e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id, nil)
	requireError(t, res, 400, "invalid_state")
	past := pkpInsert(t, e, owner.org, acct, "confirmed", pkpDay(-1))
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+past, nil), 400, "invalid_state")
	done := pkpInsert(t, e, owner.org, acct, "completed", pkpDay(1))
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+done, nil), 400, "invalid_state")

	// The carrier refuses (the account's credentials stopped working): 502
	// and the pickup stays confirmed.
	id2 := create(3)
	creds := shpCarrierA()
	creds["childSecret"] = "sandbox-fail"
	sealed := sealAccountCreds(t, e, owner.org, acct, creds)
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET credentials = $2 WHERE id = $1`, acct, sealed)
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id2, nil), 502, "carrier_error")
	require.Equal(t, "confirmed", e.do(owner.caller, "GET", "/api/v1/pickups/"+id2, nil).data()["status"])

	// Without a body, once the credentials work again.
	sealed = sealAccountCreds(t, e, owner.org, acct, shpCarrierA())
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET credentials = $2 WHERE id = $1`, acct, sealed)
	require.NoError(t, err)
	res = e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id2, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	// The carrier already cancelled it (an earlier answer was lost): recorded.
	id3 := create(4)
	p := e.do(owner.caller, "GET", "/api/v1/pickups/"+id3, nil).data()
	c, _ := e.deps.Carriers.Get("carrier_a")
	_, err = c.CancelPickup(context.Background(), carriers.Account{Carrier: "carrier_a", Credentials: shpCarrierA()}, carriers.CancelPickupRequest{
		ConfirmationNumber: p["confirmationNumber"].(string), PickupDate: p["pickupDate"].(string),
		Location: p["carrierResponse"].(map[string]any)["location"].(string)})
	require.NoError(t, err)
	res = e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id3, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "cancelled", e.do(owner.caller, "GET", "/api/v1/pickups/"+id3, nil).data()["status"])

	// The account was deleted: the pickup cannot be cancelled with the carrier.
	id4 := create(5)
	_, err = e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM carrier_accounts WHERE id = $1`, acct)
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/pickups/"+id4, nil), 400, "carrier_account_not_active")
	require.Nil(t, e.do(owner.caller, "GET", "/api/v1/pickups/"+id4, nil).data()["carrierAccountId"], "the pickup outlives its account")
}

// TestPickupCarrierRefusals: a request the carrier refuses as invalid is
// 400 validation_error naming the field; a network failure is 502 without
// the carrier's address.
func TestPickupCarrierRefusals(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())
	refuse := func(code string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/pickup/v1/pickups") {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"transactionId":"t1","errors":[{"code":"` + code + `","message":"Refused: ` + code + `"}]}`))
			return true
		}
	}
	for code, field := range map[string]string{
		"PICKUP.READYDATETIME.INVALID": "pickupDate", "PICKUP.CLOSETIME.INVALID": "closeTime",
		"PICKUP.ADDRESS.INVALID": "pickupAddress", "PICKUP.SOMETHING.ELSE": "body",
	} {
		hook := refuse(code)
		sb.hook.Store(&hook)
		res := e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acct, 2))
		requireError(t, res, 400, "validation_error")
		d := res.Body["error"].(map[string]any)["details"].([]any)
		require.Len(t, d, 1)
		require.Equal(t, field, d[0].(map[string]any)["field"], code)
		require.Contains(t, d[0].(map[string]any)["message"], "Refused: "+code)
	}

	// The connection drops: 502, and nothing of the carrier's address.
	hook := func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/pickup/v1/pickups") {
			return false
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		require.NoError(t, err)
		_ = conn.Close()
		return true
	}
	sb.hook.Store(&hook)
	res := e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acct, 2))
	requireError(t, res, 502, "carrier_error")
	host := strings.TrimPrefix(sb.srv.URL, "http://")
	require.NotContains(t, string(res.Raw), host)
	require.NotContains(t, string(res.Raw), "/pickup/v1")
	require.Contains(t, res.Body["error"].(map[string]any)["message"], "could not be reached")
	sb.hook.Store(nil)
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/pickups", nil).list())
}

// TestPickupBookedButNotRecorded: when the booked pickup cannot be written,
// it is cancelled with the carrier so it does not exist there only.
func TestPickupBookedButNotRecorded(t *testing.T) {
	e, sb := shpEnv(t)
	owner := e.signup()
	acct := shpAccount(t, e, owner.org, "carrier_a", "active", shpCarrierA())

	var booked, cancelled atomic.Value
	hook := func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pickup/v1/pickups"):
			// Book it, then lose the pending pickup before it is recorded.
			rec := httptest.NewRecorder()
			sb.inner.ServeHTTP(rec, r)
			booked.Store(rec.Body.String())
			_, err := e.deps.Store.Pool.Exec(context.Background(), `DELETE FROM pickups WHERE carrier_account_id = $1`, acct)
			require.NoError(t, err)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return true
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/pickup/v1/pickups/cancel"):
			rec := httptest.NewRecorder()
			raw, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			sb.inner.ServeHTTP(rec, r)
			cancelled.Store(fmt.Sprintf("%d %s", rec.Code, raw))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return true
		}
		return false
	}
	sb.hook.Store(&hook)

	res := e.do(owner.caller, "POST", "/api/v1/pickups", pkpBody(acct, 2))
	require.GreaterOrEqual(t, res.Code, 400, "%s", res.Raw)
	require.NotNil(t, booked.Load(), "the carrier booked it")
	var conf struct {
		Output struct {
			PickupConfirmationCode string `json:"pickupConfirmationCode"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(booked.Load().(string)), &conf))
	require.NotEmpty(t, conf.Output.PickupConfirmationCode)
	got, _ := cancelled.Load().(string)
	require.True(t, strings.HasPrefix(got, "200 "), "the booking was cancelled with the carrier: %q", got)
	require.Contains(t, got, conf.Output.PickupConfirmationCode)
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/pickups", nil).list())
}
