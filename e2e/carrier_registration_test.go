package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// regStack is the running service with the sandbox carriers wired into
// both the API and the worker.
type regStack struct {
	*stack
	store *store.Store
	box   *secrets.Box
}

func startWithCarriers(t *testing.T) *regStack {
	s := start(t)
	return &regStack{stack: s, store: s.store, box: s.box}
}

func regBody(number string, isTest bool) map[string]any {
	return map[string]any{
		"accountNumber": number, "customerName": "George", "isTest": isTest,
		"address": map[string]any{"streetLines": []string{"20 FED EX PKWY"}, "city": "COLLIERVILLE",
			"stateOrProvinceCode": "TN", "postalCode": "38017", "countryCode": "US"},
	}
}

func TestCarrierRegistrationEndToEnd(t *testing.T) {
	began := time.Now()
	s := startWithCarriers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Carriers",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"carrier-accounts:read", "carrier-accounts:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	// Register: the account is pending and the MFA options come back.
	const number = "451134221"
	reg := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/register", regBody(number, false))
	acctID := reg["accountId"].(string)
	require.Equal(t, false, reg["testModeBypass"])
	mfa := reg["mfaOptions"].(map[string]any)
	require.Equal(t, true, mfa["mfaRequired"])
	require.Regexp(t, `^[A-Z]{2}\*\*\*@[A-Z]\*\*\*\.COM$`, mfa["email"])
	require.Equal(t, "***-***-4221", mfa["phoneNumber"])
	require.Equal(t, map[string]any{"invoice": true, "secureCode": []any{"SMS", "CALL", "EMAIL"}}, mfa["options"])
	t.Logf("register answered %s after start", time.Since(began).Round(time.Millisecond))

	acct := data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+acctID, nil))
	require.Equal(t, "pending", acct["status"])
	require.Equal(t, map[string]any{"accountNumber": "********"}, acct["credentials"])

	// request-pin, then a wrong PIN (still pending, may retry), then the right one.
	pin := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/request-pin", map[string]any{"accountId": acctID, "option": "SMS"})
	require.Equal(t, true, pin["success"])
	require.NotEmpty(t, pin["message"])
	wrong := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", map[string]any{"accountId": acctID, "pin": sandboxapi.WrongPIN})
	require.Equal(t, false, wrong["verified"])
	require.NotEmpty(t, wrong["error"])
	require.Equal(t, "pending", data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+acctID, nil))["status"])
	right := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", map[string]any{"accountId": acctID, "pin": "123456"})
	require.Equal(t, map[string]any{"verified": true}, right)

	// Active, with the issued keys stored encrypted and shown masked.
	acct = data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+acctID, nil))
	require.Equal(t, "active", acct["status"])
	require.Nil(t, acct["lastError"])
	require.Equal(t, map[string]any{"accountNumber": "********", "childKey": "********", "childSecret": "********"}, acct["credentials"])
	require.Equal(t, map[string]any{"valid": true, "error": nil}, s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/"+acctID+"/test", nil))
	row, err := store.CarrierAccountByID(ctx, s.store.Pool, uuid.MustParse(orgID), uuid.MustParse(acctID))
	require.NoError(t, err)
	creds, err := s.box.OpenJSON(row.Credentials, store.CarrierAccountCredentialsAD(row.OrganizationID, row.ID))
	require.NoError(t, err)
	childSecret := creds["childSecret"].(string)
	require.NotEmpty(t, childSecret)
	require.NotContains(t, string(row.Credentials), childSecret)

	// The run completed; later steps are refused.
	wfID := workflows.CarrierRegistrationWorkflowID(acctID)
	var res workflows.CarrierRegistrationResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, wfID, "").Get(ctx, &res))
	require.Equal(t, workflows.CarrierRegistrationResult{AccountID: acctID, Status: workflows.RegistrationPhaseCompleted, Method: "pin"}, res)
	code, out = s.call(key, "", "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", map[string]any{"accountId": acctID, "pin": "123456"})
	require.Equal(t, 409, code, "%v", out)

	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo()
	require.Equal(t, workflows.CarrierRegistrationWorkflowType, info.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	var gotOrg, gotMemo string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(info.GetSearchAttributes().GetIndexedFields()["OrganizationId"], &gotOrg))
	require.Equal(t, orgID, gotOrg)
	require.NoError(t, dataConverter.FromPayload(info.GetMemo().GetFields()["carrierAccountId"], &gotMemo))
	require.Equal(t, acctID, gotMemo)

	// No secret in the history: not the carrier's session token, not the
	// issued keys, not the account number.
	history := historyJSON(t, ctx, s, wfID, info.GetExecution().GetRunId())
	require.Contains(t, history, "COLLIERVILLE", "payloads are searched decoded")
	require.NotContains(t, rawHistoryJSON(t, ctx, s, wfID, info.GetExecution().GetRunId()), "COLLIERVILLE", "the stored history is encrypted")
	for _, secret := range []string{"accountAuthToken", childSecret, creds["childKey"].(string), number} {
		require.NotContains(t, history, secret)
	}
	writeHistory(t, ctx, s.temporal, wfID, info.GetExecution().GetRunId(), "carrier_registration_history.json")

	// The same number again updates the same account (no duplicate); the
	// test environment skips MFA and activates it at once.
	again := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/register", regBody(number, true))
	require.Equal(t, acctID, again["accountId"])
	require.Equal(t, true, again["testModeBypass"])
	list := s.mustCall(200, key, "GET", "/api/v1/carrier-accounts", nil)["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, true, list[0].(map[string]any)["isTest"])
	require.Equal(t, "active", list[0].(map[string]any)["status"])

	// Invoice verification of another account.
	inv := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/register", regBody("451134222", false))
	invID := inv["accountId"].(string)
	bad := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-invoice", map[string]any{"accountId": invID,
		"invoiceInfo": map[string]any{"invoiceNumber": sandboxapi.WrongInvoiceNumber, "invoiceDate": "2026-01-09", "invoiceAmount": 10}})
	require.Equal(t, false, bad["verified"])
	require.NotEmpty(t, bad["error"])
	good := s.mustCall(200, key, "POST", "/api/v1/carrier-accounts/carrier_a/verify-invoice", map[string]any{"accountId": invID,
		"invoiceInfo": map[string]any{"invoiceNumber": "293235673", "invoiceDate": "2026-01-09", "invoiceAmount": 2323.2}})
	require.Equal(t, map[string]any{"verified": true}, good)
	require.Equal(t, "active", data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+invID, nil))["status"])

	// An account number the carrier does not know: 400 with its message,
	// and no account is left behind.
	code, out = s.call(key, "", "POST", "/api/v1/carrier-accounts/carrier_a/register", regBody("012345678", false))
	require.Equal(t, 400, code, "%v", out)
	require.Contains(t, out["error"].(map[string]any)["message"], "Account Number not in database")
	require.Len(t, s.mustCall(200, key, "GET", "/api/v1/carrier-accounts", nil)["data"].([]any), 2)
	t.Logf("end to end in %s", time.Since(began).Round(time.Millisecond))
}

// TestCarrierRegistrationExpiresEndToEnd runs a registration with a short
// bounded wait on the real server: the account turns error and later
// steps are refused.
func TestCarrierRegistrationExpiresEndToEnd(t *testing.T) {
	s := startWithCarriers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Expiry",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"carrier-accounts:read", "carrier-accounts:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	// A pending account whose registration waits two seconds at most
	// (started here, as the API does, with a short timeout).
	newID := uuid.New()
	sealed, err := s.box.SealJSON(map[string]any{"accountNumber": "451134230"}, store.CarrierAccountCredentialsAD(uuid.MustParse(orgID), newID))
	require.NoError(t, err)
	ra, err := store.UpsertRegistrationAccount(ctx, s.store.Pool, store.CarrierAccount{
		ID: newID, OrganizationID: uuid.MustParse(orgID), Name: "Short", Carrier: carriers.CarrierA,
		Credentials: sealed, AccountNumberDigest: store.CarrierAccountNumberDigest(s.box, "451134230"),
	}, false)
	require.NoError(t, err)
	acctID := ra.Account.ID.String()
	wfID := workflows.CarrierRegistrationWorkflowID(acctID)
	run, err := s.temporal.ExecuteWorkflow(ctx, worker.StartOptions(wfID, taskQueue, orgID, map[string]any{"carrierAccountId": acctID}),
		workflows.CarrierRegistration, workflows.CarrierRegistrationInput{OrganizationID: orgID, AccountID: acctID, Timeout: 2 * time.Second})
	require.NoError(t, err)
	// The run fails (the Temporal UI shows it), its result in the details.
	var res workflows.CarrierRegistrationResult
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, run.Get(ctx, &res), &appErr)
	require.Equal(t, workflows.ErrTypeRegistrationExpired, appErr.Type())
	require.NoError(t, appErr.Details(&res))
	require.Equal(t, workflows.RegistrationPhaseExpired, res.Status)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, desc.GetWorkflowExecutionInfo().GetStatus())

	acct := data(s.mustCall(200, key, "GET", "/api/v1/carrier-accounts/"+acctID, nil))
	require.Equal(t, "error", acct["status"])
	require.Equal(t, workflows.RegistrationExpiredMessage, acct["lastError"])
	code, out = s.call(key, "", "POST", "/api/v1/carrier-accounts/carrier_a/verify-pin", map[string]any{"accountId": acctID, "pin": "123456"})
	require.Equal(t, 409, code, "%v", out)
	require.True(t, strings.Contains(out["error"].(map[string]any)["message"].(string), "registration expired"), "%v", out)
}

// historyJSON is a run's whole history as JSON text.
func historyJSON(t *testing.T, ctx context.Context, s *regStack, wfID, runID string) string {
	t.Helper()
	return historyText(t, ctx, s, wfID, runID, true)
}

// rawHistoryJSON is the history as stored: payloads left encrypted.
func rawHistoryJSON(t *testing.T, ctx context.Context, s *regStack, wfID, runID string) string {
	t.Helper()
	return historyText(t, ctx, s, wfID, runID, false)
}

func historyText(t *testing.T, ctx context.Context, s *regStack, wfID, runID string, decode bool) string {
	t.Helper()
	codec := codectest.Codec()
	it := s.temporal.GetWorkflowHistory(ctx, wfID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var b strings.Builder
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if decode {
			// As the UI shows it through the codec endpoint.
			require.NoError(t, proxy.VisitPayloads(ctx, ev, proxy.VisitPayloadsOptions{
				Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
					return codec.Decode(p)
				},
			}))
		}
		raw, err := protojson.Marshal(ev)
		require.NoError(t, err)
		b.Write(raw)
	}
	// Payloads are base64 in protojson: decode them so the search sees
	// their JSON.
	var out strings.Builder
	out.WriteString(b.String())
	for _, chunk := range strings.Split(b.String(), `"data":"`) {
		end := strings.IndexByte(chunk, '"')
		if end <= 0 {
			continue
		}
		var decoded []byte
		if err := json.Unmarshal([]byte(`"`+chunk[:end]+`"`), &decoded); err == nil {
			out.Write(decoded)
		}
	}
	return out.String()
}
