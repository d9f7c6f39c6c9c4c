package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// carrierEnv is a test env with the sandbox carriers and a Temporal mock.
func carrierEnv(t *testing.T) (*testEnv, *mocks.Client) {
	t.Helper()
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) {
		d.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
		d.Temporal = tc
	})
	return e, tc
}

func carrierCCreate(name string) map[string]any {
	return map[string]any{"name": name, "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "TEST_key_123"}}
}

func requireField(t *testing.T, res *response, field string) {
	t.Helper()
	requireError(t, res, 400, "validation_error")
	for _, d := range res.Body["error"].(map[string]any)["details"].([]any) {
		if d.(map[string]any)["field"] == field {
			return
		}
	}
	t.Fatalf("no detail for %s: %s", field, res.Raw)
}

func TestCarrierAccountCreateGetList(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()

	res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", map[string]any{
		"name": " Rates ", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "TEST_key_123"},
		"isTest": true, "metadata": map[string]any{"team": "east"},
	})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	c := res.data()
	require.NotContains(t, string(res.Raw), "TEST_key_123")
	require.Equal(t, "Rates", c["name"])
	require.Equal(t, owner.org, c["organizationId"])
	require.Equal(t, "carrier_c", c["carrier"])
	require.Equal(t, map[string]any{"apiKey": "********"}, c["credentials"])
	require.Equal(t, true, c["supportsRating"])
	require.Equal(t, false, c["supportsPickup"])
	require.Equal(t, false, c["supportsLabels"])
	require.Equal(t, "active", c["status"])
	require.Equal(t, true, c["isTest"])
	require.Equal(t, map[string]any{"team": "east"}, c["metadata"])
	for _, k := range []string{"id", "createdAt", "updatedAt"} {
		require.NotEmpty(t, c[k], k)
	}
	require.Contains(t, c, "lastError")
	require.Nil(t, c["lastError"])

	res = e.do(owner.caller, "POST", "/api/v1/carrier-accounts", map[string]any{
		"name": "UPS", "carrier": "carrier_b", "credentials": map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": "A1B2C3"},
	})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	b := res.data()
	require.Equal(t, map[string]any{"clientId": "********", "clientSecret": "********", "accountNumber": "********"}, b["credentials"])
	require.Equal(t, false, b["isTest"])
	require.Equal(t, map[string]any{}, b["metadata"])
	require.Equal(t, true, b["supportsLabels"])
	require.Equal(t, false, b["supportsPickup"])

	// Get, and another organization's account is 404.
	got := e.do(owner.caller, "GET", "/api/v1/carrier-accounts/"+c["id"].(string), nil)
	require.Equal(t, 200, got.Code, "%s", got.Raw)
	require.Equal(t, c, got.data())
	other := e.signup()
	requireError(t, e.do(other.caller, "GET", "/api/v1/carrier-accounts/"+c["id"].(string), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts/nope", nil), 404, "not_found")

	// List: newest first, filters, clamped limit, credentials masked.
	list := e.do(owner.caller, "GET", "/api/v1/carrier-accounts?limit=500", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	items := list.list()
	require.Len(t, items, 2)
	require.Equal(t, b["id"], items[0]["id"])
	require.Equal(t, map[string]any{"page": 1.0, "limit": 100.0, "total": 2.0, "totalPages": 1.0, "hasMore": false}, list.Body["pagination"])
	require.NotContains(t, string(list.Raw), "secret\"")
	items = e.do(owner.caller, "GET", "/api/v1/carrier-accounts?carrier=carrier_c", nil).list()
	require.Len(t, items, 1)
	require.Equal(t, c["id"], items[0]["id"])
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts?status=error", nil).list())
	page := e.do(owner.caller, "GET", "/api/v1/carrier-accounts?limit=1&page=2", nil)
	require.Len(t, page.list(), 1)
	require.Equal(t, false, page.Body["pagination"].(map[string]any)["hasMore"])
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/carrier-accounts", nil).list())
	requireField(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts?carrier=dhl&status=gone&page=0", nil), "carrier")
	res = e.do(owner.caller, "GET", "/api/v1/carrier-accounts?carrier=dhl&status=gone&page=0", nil)
	requireField(t, res, "status")
	requireField(t, res, "page")
}

func TestCarrierAccountCreateValidation(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	post := func(body any) *response { return e.do(owner.caller, "POST", "/api/v1/carrier-accounts", body) }

	res := post(map[string]any{})
	requireField(t, res, "name")
	requireField(t, res, "carrier")
	requireField(t, res, "credentials")
	requireField(t, post(map[string]any{"name": strings.Repeat("n", 101), "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "k"}}), "name")
	requireField(t, post(map[string]any{"name": "X", "carrier": "dhl", "credentials": map[string]any{}}), "carrier")

	// Credentials are checked against the carrier's schema, naming each field.
	res = post(map[string]any{"name": "X", "carrier": "carrier_b", "credentials": map[string]any{"clientId": "id", "clientSecret": 5}})
	requireField(t, res, "credentials.accountNumber")
	requireField(t, res, "credentials.clientSecret")
	requireField(t, post(map[string]any{"name": "X", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "********"}}), "credentials.apiKey")
	requireError(t, post(map[string]any{"name": "X", "carrier": "carrier_c", "credentials": "k"}), 400, "validation_error")
	requireError(t, post(`{"name": "X",`), 400, "invalid_json")

	// carrier_a goes through the registration flow.
	res = post(map[string]any{"name": "FX", "carrier": "carrier_a", "credentials": map[string]any{"accountNumber": "451134221", "childKey": "k", "childSecret": "s"}})
	requireField(t, res, "carrier")
	require.Contains(t, string(res.Raw), "carrier_a/register")
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts", nil).list())
}

func TestCarrierAccountScopes(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	acct := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", carrierCCreate("Rates")).data()
	id := acct["id"].(string)

	reader := e.apiKey(owner, "carrier-accounts:read")
	require.Equal(t, 200, e.do(reader, "GET", "/api/v1/carrier-accounts", nil).Code)
	require.Equal(t, 200, e.do(reader, "GET", "/api/v1/carrier-accounts/"+id, nil).Code)
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/carrier-accounts"},
		{"PATCH", "/api/v1/carrier-accounts/" + id},
		{"DELETE", "/api/v1/carrier-accounts/" + id},
		{"POST", "/api/v1/carrier-accounts/" + id + "/test"},
		{"POST", "/api/v1/carrier-accounts/carrier_a/register"},
		{"POST", "/api/v1/carrier-accounts/carrier_a/request-pin"},
		{"POST", "/api/v1/carrier-accounts/carrier_a/verify-pin"},
		{"POST", "/api/v1/carrier-accounts/carrier_a/verify-invoice"},
	} {
		res := e.do(reader, c.method, c.path, map[string]any{})
		requireError(t, res, 403, "insufficient_scope")
		require.Contains(t, string(res.Raw), "carrier-accounts:write")
	}
	none := e.apiKey(owner, "orders:read")
	requireError(t, e.do(none, "GET", "/api/v1/carrier-accounts", nil), 403, "insufficient_scope")
	requireError(t, e.do(none, "GET", "/api/v1/carrier-accounts/"+id, nil), 403, "insufficient_scope")

	writer := e.apiKey(owner, "carrier-accounts:write")
	require.Equal(t, 201, e.do(writer, "POST", "/api/v1/carrier-accounts", carrierCCreate("Key")).Code)
	requireError(t, e.do(caller{}, "GET", "/api/v1/carrier-accounts", nil), 401, "unauthorized")
}

func TestCarrierAccountUpdate(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	b := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", map[string]any{
		"name": "UPS", "carrier": "carrier_b", "credentials": map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": "A1B2C3"},
	}).data()
	path := "/api/v1/carrier-accounts/" + b["id"].(string)
	acctID := uuid.MustParse(b["id"].(string))
	creds := func() map[string]any {
		a, err := e.deps.Store.Pool.Query(context.Background(), `SELECT credentials FROM carrier_accounts WHERE id = $1`, acctID)
		require.NoError(t, err)
		defer a.Close()
		require.True(t, a.Next())
		var sealed []byte
		require.NoError(t, a.Scan(&sealed))
		m, err := e.deps.Secrets.OpenJSON(sealed, store.CarrierAccountCredentialsAD(uuid.MustParse(owner.org), acctID))
		require.NoError(t, err)
		return m
	}

	// Credentials are merged: masked values are ignored, only changed
	// fields are sent.
	res := e.do(owner.caller, "PATCH", path, map[string]any{
		"name": "UPS East", "credentials": map[string]any{"clientId": "********", "clientSecret": "new-secret"},
		"status": "inactive", "metadata": map[string]any{"k": "v"},
	})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, "UPS East", d["name"])
	require.Equal(t, "inactive", d["status"])
	require.Equal(t, map[string]any{"k": "v"}, d["metadata"])
	require.Equal(t, map[string]any{"clientId": "********", "clientSecret": "********", "accountNumber": "********"}, d["credentials"])
	require.NotContains(t, string(res.Raw), "new-secret")
	require.Equal(t, map[string]any{"clientId": "id", "clientSecret": "new-secret", "accountNumber": "A1B2C3"}, creds())

	// Re-validated after the merge.
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"clientId": ""}}), "credentials.clientId")
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"accountNumber": nil}}), "credentials.accountNumber")
	require.Equal(t, "id", creds()["clientId"])

	// Status: active or inactive only; name 1-100.
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"status": "error"}), "status")
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"status": "pending"}), "status")
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"name": " "}), "name")
	res = e.do(owner.caller, "PATCH", path, map[string]any{"status": "active"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "active", res.data()["status"])
	require.Equal(t, "UPS East", res.data()["name"])

	other := e.signup()
	requireError(t, e.do(other.caller, "PATCH", path, map[string]any{"name": "Mine"}), 404, "not_found")
	requireError(t, e.do(owner.caller, "PATCH", "/api/v1/carrier-accounts/"+uuid.NewString(), map[string]any{"name": "X"}), 404, "not_found")
}

func TestCarrierAccountDeleteKeepsShipments(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	acct := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", carrierCCreate("Rates")).data()
	id := acct["id"].(string)
	shipID := uuid.New()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service) VALUES ($1, $2, $3, 'carrier_c', 'ground')`, shipID, owner.org, id)
	require.NoError(t, err)

	other := e.signup()
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/carrier-accounts/"+id, nil), 404, "not_found")
	res := e.do(owner.caller, "DELETE", "/api/v1/carrier-accounts/"+id, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
	requireError(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts/"+id, nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/carrier-accounts/"+id, nil), 404, "not_found")
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM shipments WHERE id = $1 AND carrier_account_id IS NULL`, shipID).Scan(&n))
	require.Equal(t, 1, n)
}

func TestCarrierAccountTestCredentials(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	acct := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", map[string]any{
		"name": "Bad", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": sandboxapi.InvalidAPIKey},
	}).data()
	path := "/api/v1/carrier-accounts/" + acct["id"].(string)

	res := e.do(owner.caller, "POST", path+"/test", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, false, res.Body["valid"])
	msg, _ := res.Body["error"].(string)
	require.NotEmpty(t, msg)
	t.Logf("test of a refused key: %s", res.Raw)
	got := e.do(owner.caller, "GET", path, nil).data()
	require.Equal(t, "error", got["status"])
	require.Equal(t, msg, got["lastError"])
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts?status=error", nil).list(), 1)

	// Fixed credentials: active, the error cleared.
	require.Equal(t, 200, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"apiKey": "TEST_good"}}).Code)
	res = e.do(owner.caller, "POST", path+"/test", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"valid": true, "error": nil}, res.Body)
	got = e.do(owner.caller, "GET", path, nil).data()
	require.Equal(t, "active", got["status"])
	require.Nil(t, got["lastError"])

	// From inactive too.
	require.Equal(t, 200, e.do(owner.caller, "PATCH", path, map[string]any{"status": "inactive"}).Code)
	require.Equal(t, true, e.do(owner.caller, "POST", path+"/test", nil).Body["valid"])
	require.Equal(t, "active", e.do(owner.caller, "GET", path, nil).data()["status"])

	other := e.signup()
	requireError(t, e.do(other.caller, "POST", path+"/test", nil), 404, "not_found")
}

// ---- carrier_a registration ----

func registerBody(number string) map[string]any {
	return map[string]any{
		"accountNumber": number, "customerName": "George",
		"address": map[string]any{"streetLines": []string{"20 FED EX PKWY"}, "city": "COLLIERVILLE", "stateOrProvinceCode": "tn",
			"postalCode": "38017", "countryCode": "us", "residential": true},
	}
}

// fakeStartOp stands in for the SDK's update-with-start operation.
type fakeStartOp struct{}

func (fakeStartOp) Get(context.Context) (client.WorkflowRun, error) { return nil, nil }

// updateHandle answers Get with result (copied through JSON) or err.
func updateHandle(t *testing.T, result any, err error) *mocks.WorkflowUpdateHandle {
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, out any) error {
		if err != nil {
			return err
		}
		raw, merr := json.Marshal(result)
		require.NoError(t, merr)
		return json.Unmarshal(raw, out)
	}).Once()
	return h
}

// expectRegister expects one update-with-start of the account's
// registration whose register args satisfy check.
func expectRegister(t *testing.T, tc *mocks.Client, orgID string, check func(acctID string, args workflows.RegisterArgs) bool, result func(acctID string) (any, error)) {
	t.Helper()
	var acct string
	tc.On("NewWithStartWorkflowOperation",
		mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
			org, ok := o.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
			acct = strings.TrimPrefix(o.ID, "carrier-registration/")
			return strings.HasPrefix(o.ID, "carrier-registration/") && o.TaskQueue == "fos-test" &&
				o.WorkflowIDConflictPolicy == enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING &&
				ok && org == orgID && o.Memo["carrierAccountId"] == acct
		}),
		mock.MatchedBy(func(fn any) bool {
			return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.CarrierRegistration).Pointer()
		}),
		mock.MatchedBy(func(in workflows.CarrierRegistrationInput) bool {
			return in.OrganizationID == orgID && in.AccountID == acct && in.Timeout == 0
		}),
	).Return(fakeStartOp{}).Once()
	tc.On("UpdateWithStartWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWithStartWorkflowOptions) bool {
		u := o.UpdateOptions
		if u.WorkflowID != workflows.CarrierRegistrationWorkflowID(acct) || u.UpdateName != workflows.RegistrationUpdateRegister ||
			u.WaitForStage != client.WorkflowUpdateStageCompleted || len(u.Args) != 1 {
			return false
		}
		args, ok := u.Args[0].(workflows.RegisterArgs)
		return ok && check(acct, args)
	})).Return(func(context.Context, client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
		res, err := result(acct)
		return updateHandle(t, res, err), nil
	}).Once()
}

func mfaRegisterResult(acct string) (any, error) {
	r := workflows.RegisterResult{AccountID: acct}
	r.MFAOptions.MFARequired = true
	r.MFAOptions.Email = "PU***@S***.COM"
	r.MFAOptions.PhoneNumber = "***-***-4221"
	r.MFAOptions.Options.Invoice = true
	r.MFAOptions.Options.SecureCode = []string{"SMS", "CALL", "EMAIL"}
	return r, nil
}

func TestCarrierARegister(t *testing.T) {
	e, tc := carrierEnv(t)
	owner := e.signup()

	expectRegister(t, tc, owner.org, func(_ string, a workflows.RegisterArgs) bool {
		return a.CustomerName == "George" && a.NewAccount && !a.IsTest && a.Address.CountryCode == "US" &&
			a.Address.StateOrProvinceCode == "TN" && a.Address.Residential && a.RequestedBy.Type == "user"
	}, mfaRegisterResult)
	res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134221"))
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	acctID, _ := res.Body["accountId"].(string)
	require.NotEmpty(t, acctID)
	require.Equal(t, map[string]any{
		"mfaRequired": true, "email": "PU***@S***.COM", "phoneNumber": "***-***-4221",
		"options": map[string]any{"invoice": true, "secureCode": []any{"SMS", "CALL", "EMAIL"}},
	}, res.Body["mfaOptions"])
	require.Equal(t, false, res.Body["testModeBypass"])

	// The account exists, pending, named after the customer, its number masked.
	acct := e.do(owner.caller, "GET", "/api/v1/carrier-accounts/"+acctID, nil).data()
	require.Equal(t, "pending", acct["status"])
	require.Equal(t, "George", acct["name"])
	require.Equal(t, "carrier_a", acct["carrier"])
	require.Equal(t, map[string]any{"accountNumber": "********"}, acct["credentials"])
	require.Equal(t, true, acct["supportsPickup"])
	require.Equal(t, true, acct["supportsLabels"])
	require.Equal(t, true, acct["supportsRating"])

	// The same number again updates the same account (renamed when a name
	// is given), without duplicating it.
	expectRegister(t, tc, owner.org, func(id string, a workflows.RegisterArgs) bool {
		return id == acctID && !a.NewAccount && a.IsTest
	}, func(acct string) (any, error) {
		return workflows.RegisterResult{AccountID: acct, TestModeBypass: true}, nil
	})
	body := registerBody("451134221")
	body["isTest"] = true
	body["name"] = "FedEx main"
	res = e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", body)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, acctID, res.Body["accountId"])
	require.Equal(t, true, res.Body["testModeBypass"])
	require.Equal(t, map[string]any{
		"mfaRequired": false, "email": nil, "phoneNumber": nil,
		"options": map[string]any{"invoice": false, "secureCode": []any{}},
	}, res.Body["mfaOptions"])
	list := e.do(owner.caller, "GET", "/api/v1/carrier-accounts", nil).list()
	require.Len(t, list, 1)
	require.Equal(t, "FedEx main", list[0]["name"])

	// Another organization registering the same number gets its own account.
	other := e.signup()
	expectRegister(t, tc, other.org, func(id string, a workflows.RegisterArgs) bool { return id != acctID && a.NewAccount }, mfaRegisterResult)
	res = e.do(other.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134221"))
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.NotEqual(t, acctID, res.Body["accountId"])
}

func TestCarrierARegisterValidation(t *testing.T) {
	e, _ := carrierEnv(t) // no workflow is started
	owner := e.signup()
	post := func(body any) *response {
		return e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", body)
	}
	res := post(map[string]any{})
	requireField(t, res, "accountNumber")
	requireField(t, res, "customerName")
	requireField(t, res, "address")
	for _, n := range []string{"12345678", "1234567890", "12345678a"} {
		requireField(t, post(registerBody(n)), "accountNumber")
	}
	res = post(map[string]any{"accountNumber": "451134221", "customerName": "G", "address": map[string]any{"streetLines": []string{}, "countryCode": "USA"}})
	requireField(t, res, "address.streetLines")
	requireField(t, res, "address.city")
	requireField(t, res, "address.postalCode")
	requireField(t, res, "address.countryCode")
	body := registerBody("451134221")
	body["address"].(map[string]any)["streetLines"] = []string{"ok", " "}
	requireField(t, post(body), "address.streetLines[1]")
	body = registerBody("451134221")
	body["customerName"] = strings.Repeat("c", 51)
	requireField(t, post(body), "customerName")
	body = registerBody("451134221")
	body["name"] = ""
	requireField(t, post(body), "name")
	body = registerBody("451134221")
	body["isTest"] = "yes"
	requireField(t, post(body), "isTest")
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/carrier-accounts", nil).list())
}

func TestCarrierARegisterFailures(t *testing.T) {
	e, tc := carrierEnv(t)
	owner := e.signup()

	// The carrier does not know the number: 400 with its message.
	carrierMsg := "Account Number not in database.  Please check the number entered and try again."
	expectRegister(t, tc, owner.org, func(string, workflows.RegisterArgs) bool { return true }, func(string) (any, error) {
		return nil, temporal.NewApplicationError(carrierMsg, activities.ErrTypeRegistrationAccountNotFound)
	})
	res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("012345678"))
	requireField(t, res, "accountNumber")
	require.Equal(t, carrierMsg, res.Body["error"].(map[string]any)["message"])

	// The carrier is down: 502.
	expectRegister(t, tc, owner.org, func(string, workflows.RegisterArgs) bool { return true }, func(string) (any, error) {
		return nil, temporal.NewApplicationError("carrier_a is unavailable: Service Unavailable", activities.ErrTypeRegistrationCarrierUnavailable)
	})
	requireError(t, e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134221")), 502, "carrier_error")

	// Temporal is unreachable (the update-with-start is sent again, then
	// Temporal says there is no run): 503, and the new account is not left
	// behind.
	tc.On("NewWithStartWorkflowOperation", mock.Anything, mock.Anything, mock.Anything).Return(fakeStartOp{}).Times(3)
	tc.On("UpdateWithStartWorkflow", mock.Anything, mock.Anything).Return(nil, serviceerror.NewUnavailable("connection refused")).Times(3)
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134299")), 503, "temporal_unavailable")
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM carrier_accounts WHERE organization_id = $1 AND account_number_digest = $2`, owner.org, accountNumberDigest(e, "451134299")).Scan(&n))
	require.Zero(t, n)

	// No Temporal at all.
	bare := newEnv(t, func(d *Deps) {
		d.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: "http://127.0.0.1:1"})
	})
	o := bare.signup()
	requireError(t, bare.do(o.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134221")), 503, "temporal_unavailable")
}

// pendingAccount registers an account (mocked workflow) and returns its id.
func pendingAccount(t *testing.T, e *testEnv, tc *mocks.Client, owner account, number string) string {
	t.Helper()
	expectRegister(t, tc, owner.org, func(string, workflows.RegisterArgs) bool { return true }, mfaRegisterResult)
	res := e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody(number))
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	return res.Body["accountId"].(string)
}

// expectStep expects one update of the account's registration.
func expectStep(t *testing.T, tc *mocks.Client, acctID, name string, check func(arg any) bool, result any, err error) {
	t.Helper()
	tc.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool {
		return o.WorkflowID == "carrier-registration/"+acctID && o.RunID == "" && o.UpdateName == name &&
			o.WaitForStage == client.WorkflowUpdateStageCompleted && len(o.Args) == 1 && check(o.Args[0])
	})).Return(updateHandle(t, result, err), nil).Once()
}

func TestCarrierAMFASteps(t *testing.T) {
	e, tc := carrierEnv(t)
	owner := e.signup()
	acctID := pendingAccount(t, e, tc, owner, "451134221")
	post := func(path string, body any) *response {
		return e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/"+path, body)
	}

	// request-pin.
	expectStep(t, tc, acctID, workflows.RegistrationUpdateRequestPIN, func(a any) bool {
		return a.(workflows.RequestPINArgs).Option == "SMS"
	}, workflows.RequestPINResult{Success: true, Message: "sent secured Pin"}, nil)
	res := post("request-pin", map[string]any{"accountId": acctID, "option": "sms"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true, "message": "sent secured Pin"}, res.Body)

	// An option the carrier did not offer (the workflow's validator).
	expectStep(t, tc, acctID, workflows.RegistrationUpdateRequestPIN, func(any) bool { return true }, nil,
		temporal.NewApplicationError("option CALL is not offered for this account (offered: SMS)", workflows.ErrTypeRegistrationOptionNotOffered))
	requireError(t, post("request-pin", map[string]any{"accountId": acctID, "option": "CALL"}), 400, "validation_error")

	// verify-pin: wrong, then right.
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyPIN, func(a any) bool {
		return a.(workflows.VerifyPINArgs).PIN == "000000"
	}, workflows.VerifyResult{Verified: false, Error: "Pin is invalid or expired.."}, nil)
	res = post("verify-pin", map[string]any{"accountId": acctID, "pin": "000000"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"verified": false, "error": "Pin is invalid or expired.."}, res.Body)
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyPIN, func(a any) bool {
		return a.(workflows.VerifyPINArgs).PIN == "123456"
	}, workflows.VerifyResult{Verified: true}, nil)
	res = post("verify-pin", map[string]any{"accountId": acctID, "pin": " 123456 "})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"verified": true}, res.Body)

	// verify-invoice: the currency defaults to USD.
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyInvoice, func(a any) bool {
		return a.(workflows.VerifyInvoiceArgs).Invoice == carriers.Invoice{Number: "293235673", Date: "2026-01-09", Amount: 2323.2, Currency: "USD"}
	}, workflows.VerifyResult{Verified: true}, nil)
	res = post("verify-invoice", map[string]any{"accountId": acctID, "invoiceInfo": map[string]any{
		"invoiceNumber": "293235673", "invoiceDate": "2026-01-09", "invoiceAmount": 2323.2,
	}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"verified": true}, res.Body)
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyInvoice, func(any) bool { return true },
		workflows.VerifyResult{Verified: false, Error: "Invoice does not exist for the provided invoice number."}, nil)
	res = post("verify-invoice", map[string]any{"accountId": acctID, "invoiceInfo": map[string]any{
		"invoiceNumber": "0", "invoiceDate": "2026-01-09", "invoiceAmount": 1, "currency": "cad",
	}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, false, res.Body["verified"])

	// The run is not waiting (expired, verified) or is gone: 409.
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyPIN, func(any) bool { return true }, nil,
		temporal.NewApplicationError("the registration expired; register the account again", workflows.ErrTypeRegistrationExpired))
	requireError(t, post("verify-pin", map[string]any{"accountId": acctID, "pin": "123456"}), 409, "conflict")
	tc.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, serviceerror.NewNotFound("workflow execution already completed")).Once()
	requireError(t, post("request-pin", map[string]any{"accountId": acctID, "option": "EMAIL"}), 409, "conflict")
	// The carrier is down: 502.
	expectStep(t, tc, acctID, workflows.RegistrationUpdateVerifyPIN, func(any) bool { return true }, nil,
		temporal.NewApplicationError("carrier_a is unavailable: Service Unavailable", activities.ErrTypeRegistrationCarrierUnavailable))
	requireError(t, post("verify-pin", map[string]any{"accountId": acctID, "pin": "123456"}), 502, "carrier_error")
}

func TestCarrierAMFAStepRefusals(t *testing.T) {
	e, tc := carrierEnv(t) // no update is expected
	owner := e.signup()
	pending := pendingAccount(t, e, tc, owner, "451134221")
	active := e.do(owner.caller, "POST", "/api/v1/carrier-accounts", carrierCCreate("Rates")).data()["id"].(string)
	post := func(c caller, path string, body any) *response {
		return e.do(c, "POST", "/api/v1/carrier-accounts/carrier_a/"+path, body)
	}

	// Validation.
	res := post(owner.caller, "request-pin", map[string]any{})
	requireField(t, res, "accountId")
	requireField(t, res, "option")
	requireField(t, post(owner.caller, "request-pin", map[string]any{"accountId": pending, "option": "PIGEON"}), "option")
	res = post(owner.caller, "verify-pin", map[string]any{"accountId": pending})
	requireField(t, res, "pin")
	res = post(owner.caller, "verify-invoice", map[string]any{"accountId": pending})
	requireField(t, res, "invoiceInfo")
	res = post(owner.caller, "verify-invoice", map[string]any{"accountId": pending, "invoiceInfo": map[string]any{"invoiceDate": "01/09/2026", "invoiceAmount": -1, "currency": "dollars"}})
	requireField(t, res, "invoiceInfo.invoiceNumber")
	requireField(t, res, "invoiceInfo.invoiceDate")
	requireField(t, res, "invoiceInfo.invoiceAmount")
	requireField(t, res, "invoiceInfo.currency")
	requireField(t, post(owner.caller, "verify-invoice", map[string]any{"accountId": pending, "invoiceInfo": map[string]any{"invoiceNumber": "1", "invoiceDate": "2026-01-09"}}), "invoiceInfo.invoiceAmount")

	// Unknown, malformed or foreign account: 404.
	for _, id := range []string{uuid.NewString(), "nope"} {
		requireError(t, post(owner.caller, "request-pin", map[string]any{"accountId": id, "option": "SMS"}), 404, "not_found")
		requireError(t, post(owner.caller, "verify-pin", map[string]any{"accountId": id, "pin": "1"}), 404, "not_found")
	}
	other := e.signup()
	requireError(t, post(other.caller, "request-pin", map[string]any{"accountId": pending, "option": "SMS"}), 404, "not_found")
	requireError(t, post(other.caller, "verify-invoice", map[string]any{"accountId": pending, "invoiceInfo": map[string]any{
		"invoiceNumber": "1", "invoiceDate": "2026-01-09", "invoiceAmount": 1}}), 404, "not_found")

	// Not pending: 409.
	requireError(t, post(owner.caller, "verify-pin", map[string]any{"accountId": active, "pin": "123456"}), 409, "conflict")
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'error', last_error = 'registration expired' WHERE id = $1`, pending)
	require.NoError(t, err)
	res = post(owner.caller, "request-pin", map[string]any{"accountId": pending, "option": "SMS"})
	requireError(t, res, 409, "conflict")
	require.Contains(t, string(res.Raw), "registration expired")
}

func TestCarrierAPendingAccountRules(t *testing.T) {
	e, tc := carrierEnv(t)
	owner := e.signup()
	acctID := pendingAccount(t, e, tc, owner, "451134221")
	path := "/api/v1/carrier-accounts/" + acctID

	// A pending account cannot be tested, activated or given credentials.
	requireError(t, e.do(owner.caller, "POST", path+"/test", nil), 409, "conflict")
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"status": "active"}), 409, "conflict")
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"childKey": "k"}}), "credentials.childSecret")
	res := e.do(owner.caller, "PATCH", path, map[string]any{"name": "Renamed", "metadata": map[string]any{"a": 1}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "pending", res.data()["status"])

	// Deleting it stops its registration.
	tc.On("TerminateWorkflow", mock.Anything, "carrier-registration/"+acctID, "", "carrier account deleted").Return(serviceerror.NewNotFound("gone")).Once()
	res = e.do(owner.caller, "DELETE", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"success": true}, res.Body)
}

func TestCarrierAActiveAccountUpdate(t *testing.T) {
	e, _ := carrierEnv(t)
	owner := e.signup()
	ctx := context.Background()
	// An active carrier_a account, as a completed registration leaves it.
	id := uuid.New()
	creds := map[string]any{"accountNumber": "451134221", "childKey": "k", "childSecret": "s"}
	_, err := e.deps.Store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, account_number_digest, status)
		VALUES ($1, $2, 'FX', 'carrier_a', $3, $4, 'active')`, id, owner.org, sealAccountCreds(t, e, owner.org, id.String(), creds), accountNumberDigest(e, "451134221"))
	require.NoError(t, err)
	second := uuid.New()
	creds["accountNumber"] = "451134222"
	_, err = e.deps.Store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, account_number_digest, status)
		VALUES ($1, $2, 'FX2', 'carrier_a', $3, $4, 'active')`, second, owner.org, sealAccountCreds(t, e, owner.org, second.String(), creds), accountNumberDigest(e, "451134222"))
	require.NoError(t, err)

	path := "/api/v1/carrier-accounts/" + id.String()
	requireField(t, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"accountNumber": "12"}}), "credentials.accountNumber")
	// The account number is the registration key: another account's is a conflict.
	requireError(t, e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"accountNumber": "451134222"}}), 409, "conflict")
	res := e.do(owner.caller, "PATCH", path, map[string]any{"credentials": map[string]any{"accountNumber": "451134223", "childKey": "********"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM carrier_accounts WHERE id = $1 AND account_number_digest = $2`, id, accountNumberDigest(e, "451134223")).Scan(&n))
	require.Equal(t, 1, n)

	// The live test works with the sandbox carrier_a.
	res = e.do(owner.caller, "POST", path+"/test", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	t.Logf("carrier_a test: %s", res.Raw)
	require.Contains(t, res.Body, "valid")
	require.Contains(t, res.Body, "error")
}
