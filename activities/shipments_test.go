package activities

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/carriers/carrierstest"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// shpActFixture is an organization with a carrier_a account and a shipment
// whose label was bought from the sandbox.
type shpActFixture struct {
	t          *testing.T
	st         *store.Store
	box        *secrets.Box
	acts       *ShipmentActivities
	orgID      uuid.UUID
	accountID  uuid.UUID
	shipmentID uuid.UUID
	tracking   string
}

func newShpActFixture(t *testing.T) *shpActFixture {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	// No real carrier has a delivery-change API (the built-in adapters
	// refuse, TestSendShipmentActionUnsupportedCarrier): carrier_a here is
	// the test double of one that has, on the real adapter and sandbox.
	reg := carrierstest.WithDeliveryChanges(carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL}), carriers.CarrierA)
	f := &shpActFixture{t: t, st: st, box: box, orgID: uuid.New(), accountID: uuid.New(), shipmentID: uuid.New(),
		acts: &ShipmentActivities{Store: st, Secrets: box, Carriers: reg}}
	_, err = st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, f.orgID, "acme-"+f.orgID.String())
	require.NoError(t, err)
	creds := map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}
	sealed, err := box.SealJSON(creds, store.CarrierAccountCredentialsAD(f.orgID, f.accountID))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'A', 'carrier_a', $3, true, true, true)`, f.accountID, f.orgID, sealed)
	require.NoError(t, err)

	c, err := reg.Get(carriers.CarrierA)
	require.NoError(t, err)
	l, err := c.CreateLabel(ctx, carriers.Account{Carrier: carriers.CarrierA, Credentials: creds}, carriers.LabelRequest{
		ShipFrom:    carriers.Address{Address1: "10 Main St", City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"},
		ShipTo:      carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"},
		Packages:    []carriers.Package{{Weight: carriers.Weight{Value: 5, Unit: "lb"}}},
		ServiceType: "FEDEX_GROUND", ShipDate: time.Now().UTC().AddDate(0, 0, -3), Reference: f.shipmentID.String(),
	})
	require.NoError(t, err)
	f.tracking = l.TrackingNumber
	_, err = st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, tracking_number)
		VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'in_transit', $4)`, f.shipmentID, f.orgID, f.accountID, f.tracking)
	require.NoError(t, err)
	return f
}

func (f *shpActFixture) action(typ string, cfg store.ShipmentActionConfig) uuid.UUID {
	f.t.Helper()
	a, err := store.InsertShipmentAction(context.Background(), f.st.Pool, store.ShipmentAction{ID: uuid.New(), OrganizationID: f.orgID,
		ShipmentID: f.shipmentID, ActionType: typ, Config: shpMustJSON(f.t, cfg), ShipmentStatus: "in_transit"})
	require.NoError(f.t, err)
	return a.ID
}

func shpMustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

func (f *shpActFixture) send(id uuid.UUID) (SendShipmentActionResult, error) {
	return f.acts.SendShipmentAction(context.Background(), SendShipmentActionInput{OrganizationID: f.orgID.String(), ActionID: id.String()})
}

func requireShipmentAppErr(t *testing.T, err error, typ string, retryable bool) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, typ, appErr.Type(), "%v", err)
	require.Equal(t, !retryable, appErr.NonRetryable(), "%v", err)
}

func TestSendShipmentActionAgainstSandbox(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		typ string
		cfg store.ShipmentActionConfig
	}{
		{"hold", store.ShipmentActionConfig{Reason: "customer_request", Notes: "call first"}},
		{"redirect", store.ShipmentActionConfig{Address: &store.ShipmentActionAddress{Street: "5 Poplar Ave", City: "Memphis", State: "TN", Zip: "38117"}}},
		{"redeliver", store.ShipmentActionConfig{PreferredDate: time.Now().UTC().AddDate(0, 0, 3).Format("2006-01-02"), Instructions: "after 5pm"}},
		{"instructions", store.ShipmentActionConfig{Instructions: "leave at back door"}},
	} {
		id := f.action(c.typ, c.cfg)
		res, err := f.send(id)
		require.NoError(t, err, c.typ)
		require.Regexp(t, `^DM\d{10}$`, res.ConfirmationNumber, c.typ)
		require.Equal(t, "accepted", res.Status)
		require.NotEmpty(t, res.Messages)
		require.False(t, res.AlreadyFinished)

		rec, err := f.acts.RecordShipmentActionOutcome(ctx, RecordShipmentActionOutcomeInput{OrganizationID: f.orgID.String(), ActionID: id.String(),
			Status: store.ShipmentActionCompleted, ConfirmationNumber: res.ConfirmationNumber, Messages: res.Messages, CarrierResponse: res.Raw})
		require.NoError(t, err)
		require.True(t, rec.Recorded)
		// Idempotent: a repeated record or send changes nothing.
		rec, err = f.acts.RecordShipmentActionOutcome(ctx, RecordShipmentActionOutcomeInput{OrganizationID: f.orgID.String(), ActionID: id.String(), Status: store.ShipmentActionFailed, Error: "x"})
		require.NoError(t, err)
		require.False(t, rec.Recorded)
		again, err := f.send(id)
		require.NoError(t, err)
		require.Equal(t, SendShipmentActionResult{AlreadyFinished: true, FinishedStatus: store.ShipmentActionCompleted}, again)

		got, err := store.ShipmentActionByID(ctx, f.st.Pool, f.orgID, id)
		require.NoError(t, err)
		require.Equal(t, store.ShipmentActionCompleted, got.Status)
		require.Equal(t, res.ConfirmationNumber, *got.ConfirmationNumber)
	}
	// The shipment's status is untouched.
	sh, err := store.ShipmentByID(ctx, f.st.Pool, f.orgID, f.shipmentID)
	require.NoError(t, err)
	require.Equal(t, "in_transit", sh.Status)
}

func TestSendShipmentActionFailures(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	hold := store.ShipmentActionConfig{Reason: "other"}

	// Bad input and a gone record.
	_, err := f.acts.SendShipmentAction(ctx, SendShipmentActionInput{OrganizationID: "x", ActionID: uuid.NewString()})
	requireShipmentAppErr(t, err, ErrTypeInvalidInput, false)
	_, err = f.send(uuid.New())
	requireShipmentAppErr(t, err, ErrTypeShipmentActionGone, false)
	_, err = f.acts.SendShipmentAction(ctx, SendShipmentActionInput{OrganizationID: uuid.NewString(), ActionID: f.action("hold", hold).String()})
	requireShipmentAppErr(t, err, ErrTypeShipmentActionGone, false)

	// The carrier refuses: unknown tracking number.
	id := f.action("hold", hold)
	_, err = f.st.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = '700000000000' WHERE id = $1`, f.shipmentID)
	require.NoError(t, err)
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)
	_, err = f.st.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = $2 WHERE id = $1`, f.shipmentID, f.tracking)
	require.NoError(t, err)

	// Credentials refused: permanent; the carrier answers 503: the outcome
	// is unknown (the change may carry a fee), not retried.
	setCreds := func(creds map[string]any) {
		sealed, err := f.box.SealJSON(creds, store.CarrierAccountCredentialsAD(f.orgID, f.accountID))
		require.NoError(t, err)
		_, err = f.st.Pool.Exec(ctx, `UPDATE carrier_accounts SET credentials = $2 WHERE id = $1`, f.accountID, sealed)
		require.NoError(t, err)
	}
	setCreds(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "sandbox-fail"})
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)
	require.NotContains(t, err.Error(), "sandbox-fail")
	setCreds(map[string]any{"accountNumber": "sandbox-fail", "childKey": "k", "childSecret": "s"})
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionOutcomeUnknown, false)
	require.Contains(t, err.Error(), "may or may not have been made")

	// The account is not active, then deleted; the shipment has no number.
	_, err = f.st.Pool.Exec(ctx, `UPDATE carrier_accounts SET status = 'inactive' WHERE id = $1`, f.accountID)
	require.NoError(t, err)
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)
	_, err = f.st.Pool.Exec(ctx, `DELETE FROM carrier_accounts WHERE id = $1`, f.accountID)
	require.NoError(t, err)
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)
	_, err = f.st.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = NULL WHERE id = $1`, f.shipmentID)
	require.NoError(t, err)
	_, err = f.send(id)
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)

	// Recording a failure; an unknown record is not recorded, not an error.
	rec, err := f.acts.RecordShipmentActionOutcome(ctx, RecordShipmentActionOutcomeInput{OrganizationID: f.orgID.String(), ActionID: id.String(), Status: store.ShipmentActionFailed, Error: "refused"})
	require.NoError(t, err)
	require.True(t, rec.Recorded)
	got, err := store.ShipmentActionByID(ctx, f.st.Pool, f.orgID, id)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionFailed, got.Status)
	require.Equal(t, "refused", *got.Error)
	rec, err = f.acts.RecordShipmentActionOutcome(ctx, RecordShipmentActionOutcomeInput{OrganizationID: f.orgID.String(), ActionID: uuid.NewString(), Status: store.ShipmentActionFailed})
	require.NoError(t, err)
	require.False(t, rec.Recorded)
	_, err = f.acts.RecordShipmentActionOutcome(ctx, RecordShipmentActionOutcomeInput{OrganizationID: f.orgID.String(), ActionID: id.String(), Status: "pending"})
	requireShipmentAppErr(t, err, ErrTypeInvalidInput, false)
}

// The built-in adapters have no delivery changes: the action is rejected
// for good (not retried), with the carrier's reason.
func TestSendShipmentActionUnsupportedCarrier(t *testing.T) {
	f := newShpActFixture(t)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	f.acts.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	_, err := f.send(f.action("hold", store.ShipmentActionConfig{Reason: "other"}))
	requireShipmentAppErr(t, err, ErrTypeShipmentActionRejected, false)
	require.ErrorIs(t, err, carriers.ErrNotSupported)
}

func TestCarrierShipmentActionMapping(t *testing.T) {
	id := uuid.New()
	act := store.ShipmentAction{ID: id, ActionType: "redirect", Config: json.RawMessage(`{"address":{"street":"1 Pike St","city":"Seattle","state":"WA","zip":"98101"},"notes":"n"}`)}
	got, err := CarrierShipmentAction(act, "7001")
	require.NoError(t, err)
	require.Equal(t, carriers.ShipmentAction{Type: "redirect", TrackingNumber: "7001", Notes: "n", Reference: id.String(),
		Address: &carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"}}, got)
}

func TestCompletePastPickupsActivity(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	asOf := time.Date(2031, 5, 10, 3, 0, 0, 0, time.UTC)
	ins := func(date string) uuid.UUID {
		id := uuid.New()
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier, status, pickup_address, pickup_date, ready_time, close_time)
			VALUES ($1, $2, 'carrier_a', 'confirmed', '{}', $3, '09:00', '17:00')`, id, f.orgID, date)
		require.NoError(t, err)
		return id
	}
	past, today := ins("2031-05-09"), ins("2031-05-10")
	res, err := f.acts.CompletePastPickups(ctx, CompletePastPickupsInput{AsOf: asOf})
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Completed, int64(1))
	for id, want := range map[uuid.UUID]string{past: "completed", today: "confirmed"} {
		p, err := store.PickupByID(ctx, f.st.Pool, f.orgID, id)
		require.NoError(t, err)
		require.Equal(t, want, p.Status)
	}
	res, err = f.acts.CompletePastPickups(ctx, CompletePastPickupsInput{AsOf: asOf})
	require.NoError(t, err)
	require.Zero(t, res.Completed)
}

// TestReconcileShipments: pending rows past their bound are reconciled with
// their workflow, described through a mocked Temporal client.
func TestReconcileShipments(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	tc := mocks.NewClient(t)
	f.acts.Temporal = tc
	old := time.Now().Add(-time.Hour)
	shipment := func(age time.Time) uuid.UUID {
		id := uuid.New()
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, created_at)
			VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending', $4)`, id, f.orgID, f.accountID, age)
		require.NoError(t, err)
		return id
	}
	pickup := func() uuid.UUID {
		id := uuid.New()
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, status, pickup_address, pickup_date, ready_time, close_time, created_at)
			VALUES ($1, $2, $3, 'carrier_a', 'pending', '{}', '2030-01-07', '09:00', '17:00', $4)`, id, f.orgID, f.accountID, old)
		require.NoError(t, err)
		return id
	}
	action := func() uuid.UUID {
		id := f.action("hold", store.ShipmentActionConfig{Reason: "other"})
		_, err := f.st.Pool.Exec(ctx, `UPDATE shipment_actions SET created_at = $2 WHERE id = $1`, id, old)
		require.NoError(t, err)
		return id
	}
	describe := func(wfID string, st enumspb.WorkflowExecutionStatus) {
		if st == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			tc.On("DescribeWorkflowExecution", mock.Anything, wfID, "").Return(nil, serviceerror.NewNotFound("workflow not found")).Once()
			return
		}
		tc.On("DescribeWorkflowExecution", mock.Anything, wfID, "").Return(describeAs(wfID, st, old.Add(time.Second)), nil).Once()
		if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			it := mocks.NewHistoryEventIterator(t)
			it.On("HasNext").Return(false).Maybe()
			tc.On("GetWorkflowHistory", mock.Anything, wfID, "run-"+wfID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()
		}
	}
	none := enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED

	neverStarted, terminated, running := shipment(old), shipment(old), shipment(old)
	fresh := shipment(time.Now())
	// A run terminated after its activity bought and stashed the label
	// (carrier_a has no lookup): the stash names the label, which is voided.
	stashed := shipment(old)
	bought, err := f.acts.BuyShipmentLabel(ctx, BuyShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: stashed.String(), CarrierAccountID: f.accountID.String(),
		Request: carriers.LabelRequest{
			ShipFrom: carriers.Address{Address1: "10 Main St", City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"},
			ShipTo:   carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"},
			Packages: []carriers.Package{{Weight: carriers.Weight{Value: 5, Unit: "lb"}}}, ServiceType: "FEDEX_GROUND", ShipDate: time.Now().UTC().AddDate(0, 0, 1),
		}})
	require.NoError(t, err)
	require.True(t, bought.Label.Stashed)
	describe(ShipmentLabelIDPrefix+neverStarted.String(), none)
	describe(ShipmentLabelIDPrefix+terminated.String(), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	describe(ShipmentLabelIDPrefix+stashed.String(), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	describe(ShipmentLabelIDPrefix+running.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	pNever, pTimedOut := pickup(), pickup()
	describe(PickupBookingIDPrefix+pNever.String(), none)
	describe(PickupBookingIDPrefix+pTimedOut.String(), enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT)
	aNever, aTerminated := action(), action()
	describe(ShipmentActionIDPrefix+aNever.String(), none)
	describe(ShipmentActionIDPrefix+aTerminated.String(), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)

	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	val, err := env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	require.NoError(t, err)
	var res ReconcileShipmentsResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, ReconcileShipmentsResult{Running: 1, Removed: 3, Failed: 4}, res)

	_, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, neverStarted)
	require.ErrorIs(t, err, store.ErrNotFound, "never started: nothing was bought")
	_, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, stashed)
	require.ErrorIs(t, err, store.ErrNotFound, "the stashed label was voided, the shipment removed")
	_, found, err := store.StashedShipmentLabel(ctx, f.st.Pool, f.orgID, stashed)
	require.NoError(t, err)
	require.False(t, found)
	sh, err := store.ShipmentByID(ctx, f.st.Pool, f.orgID, terminated)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentException, sh.Status)
	require.Contains(t, string(sh.CarrierResponse), "(stopped by an operator)")
	require.Contains(t, string(sh.CarrierResponse), "may or may not have been bought")
	for _, id := range []uuid.UUID{running, fresh} {
		sh, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, id)
		require.NoError(t, err)
		require.Equal(t, store.ShipmentPending, sh.Status)
	}
	_, err = store.PickupByID(ctx, f.st.Pool, f.orgID, pNever)
	require.ErrorIs(t, err, store.ErrNotFound)
	p, err := store.PickupByID(ctx, f.st.Pool, f.orgID, pTimedOut)
	require.NoError(t, err)
	require.Equal(t, store.PickupFailed, p.Status)
	require.Contains(t, string(p.CarrierResponse), "(the workflow run timed out)")
	a, err := store.ShipmentActionByID(ctx, f.st.Pool, f.orgID, aNever)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionFailed, a.Status)
	require.Contains(t, *a.Error, "never sent")
	a, err = store.ShipmentActionByID(ctx, f.st.Pool, f.orgID, aTerminated)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionFailed, a.Status)
	require.Contains(t, *a.Error, "may or may not have been made")

	// A second run finds only the running one.
	describe(ShipmentLabelIDPrefix+running.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	val, err = env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.Equal(t, ReconcileShipmentsResult{Running: 1}, res)

	// A stashed label the carrier cannot void now: the shipment becomes
	// exception naming the label, and keeps its stash.
	unvoided := shipment(old)
	bought, err = f.acts.BuyShipmentLabel(ctx, BuyShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: unvoided.String(), CarrierAccountID: f.accountID.String(),
		Request: carriers.LabelRequest{
			ShipFrom: carriers.Address{Address1: "10 Main St", City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"},
			ShipTo:   carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"},
			Packages: []carriers.Package{{Weight: carriers.Weight{Value: 5, Unit: "lb"}}}, ServiceType: "FEDEX_GROUND", ShipDate: time.Now().UTC().AddDate(0, 0, 1),
		}})
	require.NoError(t, err)
	describe(ShipmentLabelIDPrefix+running.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	describe(ShipmentLabelIDPrefix+unvoided.String(), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	unreachable := httptest.NewServer(nil)
	unreachable.Close()
	online := f.acts.Carriers
	f.acts.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: unreachable.URL})
	val, err = env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	f.acts.Carriers = online
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.Equal(t, ReconcileShipmentsResult{Running: 1, Failed: 1}, res)
	sh, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, unvoided)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentException, sh.Status)
	require.Contains(t, string(sh.CarrierResponse), "the label "+bought.Label.TrackingNumber+" was bought and could not be voided")
	_, found, err = store.StashedShipmentLabel(ctx, f.st.Pool, f.orgID, unvoided)
	require.NoError(t, err)
	require.True(t, found, "the trace of the label stays")

	// A describe refused for one row is logged and skipped: the rows after
	// it are still settled. Temporal unavailable ends the step.
	refused, after := shipment(old.Add(time.Second)), shipment(old.Add(2*time.Second))
	describe(ShipmentLabelIDPrefix+running.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	tc.On("DescribeWorkflowExecution", mock.Anything, ShipmentLabelIDPrefix+refused.String(), "").
		Return(nil, serviceerror.NewPermissionDenied("no", "")).Once()
	describe(ShipmentLabelIDPrefix+after.String(), none)
	val, err = env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.Equal(t, ReconcileShipmentsResult{Running: 1, Removed: 1}, res)
	_, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, after)
	require.ErrorIs(t, err, store.ErrNotFound, "settled after the refused row")

	describe(ShipmentLabelIDPrefix+running.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	tc.On("DescribeWorkflowExecution", mock.Anything, ShipmentLabelIDPrefix+refused.String(), "").
		Return(nil, serviceerror.NewUnavailable("down")).Once()
	_, err = env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	require.Error(t, err, "Temporal unavailable ends the step")
}

// TestBuyShipmentLabelAgainstSandbox: the label purchase activity and its
// error classes, the record and the void.
func TestBuyShipmentLabelAgainstSandbox(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	pending := func() uuid.UUID {
		id := uuid.New()
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status)
			VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending')`, id, f.orgID, f.accountID)
		require.NoError(t, err)
		return id
	}
	req := carriers.LabelRequest{
		ShipFrom:    carriers.Address{Address1: "10 Main St", City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"},
		ShipTo:      carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"},
		Packages:    []carriers.Package{{Weight: carriers.Weight{Value: 5, Unit: "lb"}}},
		ServiceType: "FEDEX_GROUND", ShipDate: time.Now().UTC().AddDate(0, 0, 1),
	}
	buy := func(acts *ShipmentActivities, id uuid.UUID) (BuyShipmentLabelResult, error) {
		return acts.BuyShipmentLabel(ctx, BuyShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: id.String(),
			CarrierAccountID: f.accountID.String(), Request: req})
	}

	// Bought, recorded; bought again: nothing is bought, it is recorded.
	id := pending()
	res, err := buy(f.acts, id)
	require.NoError(t, err)
	require.False(t, res.AlreadyRecorded)
	require.NotEmpty(t, res.Label.TrackingNumber)
	// The documents were stashed, not returned: the result stays small.
	require.True(t, res.Label.Stashed)
	require.Nil(t, res.Label.Document)
	require.Nil(t, res.Label.Pieces)
	// Until it is recorded, a lost answer is found in the stash, even at
	// a carrier without a lookup (carrier_a).
	found, err := f.acts.FindShipmentLabel(ctx, FindShipmentLabelInput{OrganizationID: f.orgID.String(), CarrierAccountID: f.accountID.String(), Reference: id.String()})
	require.NoError(t, err)
	require.Equal(t, FindShipmentLabelResult{Supported: true, Found: true, TrackingNumber: res.Label.TrackingNumber}, found)
	// Bought again before it is recorded (a reset run): the stashed label
	// comes back and nothing is bought.
	again, err := buy(f.acts, id)
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.NoError(t, f.acts.RecordShipmentLabel(ctx, RecordShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: id.String(), Label: res.Label}))
	require.NoError(t, f.acts.RecordShipmentLabel(ctx, RecordShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: id.String(), Label: res.Label}), "idempotent")
	sh, err := store.ShipmentByID(ctx, f.st.Pool, f.orgID, id)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentLabelCreated, sh.Status)
	doc, err := store.ShipmentLabel(ctx, f.st.Pool, f.orgID, id)
	require.NoError(t, err)
	require.NotEmpty(t, doc.Document, "the stashed document is recorded")
	_, stashed, err := store.StashedShipmentLabel(ctx, f.st.Pool, f.orgID, id)
	require.NoError(t, err)
	require.False(t, stashed, "recording empties the stash")
	found, err = f.acts.FindShipmentLabel(ctx, FindShipmentLabelInput{OrganizationID: f.orgID.String(), CarrierAccountID: f.accountID.String(), Reference: id.String()})
	require.NoError(t, err)
	require.Equal(t, FindShipmentLabelResult{}, found, "carrier_a offers no lookup")
	// A stashed label whose stash is gone is not recorded without its
	// document (the purchase then voids it).
	lost := pending()
	lostRes, err := buy(f.acts, lost)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `DELETE FROM shipment_label_stash WHERE shipment_id = $1`, lost)
	require.NoError(t, err)
	err = f.acts.RecordShipmentLabel(ctx, RecordShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: lost.String(), Label: lostRes.Label})
	requireShipmentAppErr(t, err, ErrTypePurchaseGone, false)
	sh, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, lost)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentPending, sh.Status, "nothing recorded")
	// A voided label's stash goes with it: a later run does not record a
	// voided label (it buys anew).
	voided := pending()
	first, err := buy(f.acts, voided)
	require.NoError(t, err)
	require.NoError(t, f.acts.VoidShipmentLabel(ctx, VoidShipmentLabelInput{OrganizationID: f.orgID.String(), CarrierAccountID: f.accountID.String(), TrackingNumber: first.Label.TrackingNumber}))
	_, stashed, err = store.StashedShipmentLabel(ctx, f.st.Pool, f.orgID, voided)
	require.NoError(t, err)
	require.False(t, stashed)
	unreachable := httptest.NewServer(nil)
	unreachable.Close()
	offline := *f.acts
	offline.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: unreachable.URL})
	_, err = buy(&offline, voided)
	requireShipmentAppErr(t, err, ErrTypeCarrierNotSent, true) // it called the carrier: no stashed label answered
	again, err = buy(f.acts, id)
	require.NoError(t, err)
	require.True(t, again.AlreadyRecorded)
	require.Equal(t, res.Label.TrackingNumber, again.Label.TrackingNumber)

	// The shipment deleted: nothing bought; recording a bought label is
	// PurchaseGone (it must be voided), and the void passes.
	gone := pending()
	_, err = f.st.Pool.Exec(ctx, `DELETE FROM shipments WHERE id = $1`, gone)
	require.NoError(t, err)
	_, err = buy(f.acts, gone)
	requireShipmentAppErr(t, err, ErrTypePurchaseGone, false)
	err = f.acts.RecordShipmentLabel(ctx, RecordShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: gone.String(), Label: res.Label})
	requireShipmentAppErr(t, err, ErrTypePurchaseGone, false)
	require.NoError(t, f.acts.VoidShipmentLabel(ctx, VoidShipmentLabelInput{OrganizationID: f.orgID.String(), CarrierAccountID: f.accountID.String(), TrackingNumber: res.Label.TrackingNumber}))

	// Error classes: a refusal, an unknown outcome (503), never sent.
	setCreds := func(creds map[string]any) {
		sealed, err := f.box.SealJSON(creds, store.CarrierAccountCredentialsAD(f.orgID, f.accountID))
		require.NoError(t, err)
		_, err = f.st.Pool.Exec(ctx, `UPDATE carrier_accounts SET credentials = $2 WHERE id = $1`, f.accountID, sealed)
		require.NoError(t, err)
	}
	setCreds(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "sandbox-fail"})
	_, err = buy(f.acts, pending())
	requireShipmentAppErr(t, err, ErrTypeCarrierRefused, false)
	require.NotContains(t, err.Error(), "sandbox-fail")
	setCreds(map[string]any{"accountNumber": "sandbox-fail", "childKey": "k", "childSecret": "s"})
	_, err = buy(f.acts, pending())
	requireShipmentAppErr(t, err, ErrTypeCarrierOutcomeUnknown, false)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	var failure CarrierFailure
	require.NoError(t, appErr.Details(&failure))
	require.Equal(t, 503, failure.StatusCode)
	closed := httptest.NewServer(nil)
	closed.Close()
	down := *f.acts
	down.Carriers = carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: closed.URL})
	setCreds(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"})
	_, err = buy(&down, pending())
	requireShipmentAppErr(t, err, ErrTypeCarrierNotSent, true)

	// The account not active: refused before any call, with its API code.
	_, err = f.st.Pool.Exec(ctx, `UPDATE carrier_accounts SET status = 'inactive' WHERE id = $1`, f.accountID)
	require.NoError(t, err)
	_, err = buy(f.acts, pending())
	requireShipmentAppErr(t, err, ErrTypeCarrierRefused, false)
	require.True(t, errors.As(err, &appErr))
	require.NoError(t, appErr.Details(&failure))
	require.Equal(t, "carrier_account_not_active", failure.APICode)
}

// A purchase whose outcome is unknown stores its reason as a tenant may
// read it: a failed record step's database text is not kept.
func TestEndPurchaseStoresTenantText(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	shID, pID := uuid.New(), uuid.New()
	_, err := f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status)
		VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending')`, shID, f.orgID, f.accountID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, status, pickup_address, pickup_date, ready_time, close_time)
		VALUES ($1, $2, $3, 'carrier_a', 'pending', '{}', '2030-01-07', '09:00', '17:00')`, pID, f.orgID, f.accountID)
	require.NoError(t, err)
	raw := "the label 794 was bought but could not be recorded (failed to connect to `host=10.0.0.5 user=fos`: dial tcp 10.0.0.5:5432: connection refused (SQLSTATE 08006)) nor voided"

	require.NoError(t, f.acts.EndShipmentPurchase(ctx, EndShipmentPurchaseInput{OrganizationID: f.orgID.String(), ShipmentID: shID.String(), Unknown: true, Reason: raw}))
	sh, err := store.ShipmentByID(ctx, f.st.Pool, f.orgID, shID)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentException, sh.Status)
	for _, b := range [][]byte{sh.CarrierResponse, sh.Metadata} {
		require.NotContains(t, string(b), "SQLSTATE")
		require.NotContains(t, string(b), "10.0.0.5")
	}
	require.Contains(t, string(sh.Metadata), InternalFailureMessage)

	require.NoError(t, f.acts.EndPickupBooking(ctx, EndPickupBookingInput{OrganizationID: f.orgID.String(), PickupID: pID.String(), Unknown: true, Reason: raw}))
	p, err := store.PickupByID(ctx, f.st.Pool, f.orgID, pID)
	require.NoError(t, err)
	require.Equal(t, store.PickupFailed, p.Status)
	require.NotContains(t, string(p.CarrierResponse), "SQLSTATE")
	require.Contains(t, string(p.CarrierResponse), InternalFailureMessage)
}

// A database read that fails before the carrier call is the retryable
// never-sent type the workflows repeat (spendOnceWith), never an unknown
// outcome: nothing reached the carrier.
func TestPurchaseReadFailureBeforeCarrierCallIsNotSent(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	shID, pID := uuid.New(), uuid.New()
	_, err := f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status)
		VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending')`, shID, f.orgID, f.accountID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, status, pickup_address, pickup_date, ready_time, close_time)
		VALUES ($1, $2, $3, 'carrier_a', 'pending', '{}', '2030-01-07', '09:00', '17:00')`, pID, f.orgID, f.accountID)
	require.NoError(t, err)
	actionID := f.action("hold", store.ShipmentActionConfig{Reason: "other"})
	buy := func(acts *ShipmentActivities) error {
		_, err := acts.BuyShipmentLabel(ctx, BuyShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: shID.String(), CarrierAccountID: f.accountID.String()})
		return err
	}
	book := func(acts *ShipmentActivities) error {
		_, err := acts.BookPickup(ctx, BookPickupInput{OrganizationID: f.orgID.String(), PickupID: pID.String(), CarrierAccountID: f.accountID.String()})
		return err
	}
	send := func(acts *ShipmentActivities) error {
		_, err := acts.SendShipmentAction(ctx, SendShipmentActionInput{OrganizationID: f.orgID.String(), ActionID: actionID.String()})
		return err
	}
	check := func(err error, typ string) {
		t.Helper()
		requireShipmentAppErr(t, err, typ, true)
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr))
		require.Contains(t, appErr.Message(), "nothing was sent to the carrier")
		if typ == ErrTypeCarrierNotSent {
			var cf CarrierFailure
			require.NoError(t, appErr.Details(&cf), "a purchase failure carries its CarrierFailure")
			require.Equal(t, appErr.Message(), cf.Message)
		}
	}

	// The first read fails (the database is unreachable).
	pool, err := pgxpool.New(ctx, f.st.Pool.Config().ConnString())
	require.NoError(t, err)
	pool.Close()
	down := &ShipmentActivities{Store: &store.Store{Pool: pool}, Secrets: f.box, Carriers: f.acts.Carriers}
	check(buy(down), ErrTypeCarrierNotSent)
	check(book(down), ErrTypeCarrierNotSent)
	check(send(down), ErrTypeShipmentCarrierUnavailable)

	// The carrier account's read fails.
	_, err = f.st.Pool.Exec(ctx, `ALTER TABLE carrier_accounts RENAME TO carrier_accounts_away`)
	require.NoError(t, err)
	defer func() {
		_, err := f.st.Pool.Exec(ctx, `ALTER TABLE carrier_accounts_away RENAME TO carrier_accounts`)
		require.NoError(t, err)
	}()
	check(buy(f.acts), ErrTypeCarrierNotSent)
	check(book(f.acts), ErrTypeCarrierNotSent)
	check(send(f.acts), ErrTypeShipmentCarrierUnavailable)
}

// TestReconcileOwnedShipments: a shipment whose label a batch buys
// (purchase_owner) waits on the batch's run: left alone while it runs;
// removed when the carrier was never asked; when it may have been asked,
// its stashed label is voided, and without one it becomes exception,
// never removed as if nothing had been bought.
func TestReconcileOwnedShipments(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	tc := mocks.NewClient(t)
	f.acts.Temporal = tc
	old := time.Now().Add(-time.Hour)
	owned := func(owner string, asked bool) uuid.UUID {
		id := uuid.New()
		var requested *time.Time
		if asked {
			requested = &old
		}
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, created_at, purchase_owner, label_requested_at)
			VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending', $4, $5, $6)`, id, f.orgID, f.accountID, old, owner, requested)
		require.NoError(t, err)
		return id
	}
	running, gone, closed := "operation/running-"+uuid.NewString(), "operation/gone-"+uuid.NewString(), "operation/closed-"+uuid.NewString()
	tc.On("DescribeWorkflowExecution", mock.Anything, running, "").Return(describeAs(running, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, old.Add(-time.Hour)), nil)
	tc.On("DescribeWorkflowExecution", mock.Anything, gone, "").Return(nil, serviceerror.NewNotFound("workflow not found"))
	tc.On("DescribeWorkflowExecution", mock.Anything, closed, "").Return(describeAs(closed, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, old.Add(-time.Hour)), nil)
	it := mocks.NewHistoryEventIterator(t)
	it.On("HasNext").Return(false).Maybe()
	tc.On("GetWorkflowHistory", mock.Anything, closed, "run-"+closed, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it)
	// Rows other tests of the package left behind: running.
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(describeAs("other", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, old), nil).Maybe()

	// The owner's run started an hour before the shipment: still its.
	waiting := owned(running, true)
	neverAsked := owned(gone, false)
	askedNoTrace := owned(gone, true)
	stashed := owned(closed, false)
	bought, err := f.acts.BuyShipmentLabel(ctx, BuyShipmentLabelInput{OrganizationID: f.orgID.String(), ShipmentID: stashed.String(), CarrierAccountID: f.accountID.String(),
		Request: carriers.LabelRequest{
			ShipFrom: carriers.Address{Address1: "10 Main St", City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"},
			ShipTo:   carriers.Address{Address1: "1 Pike St", City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US"},
			Packages: []carriers.Package{{Weight: carriers.Weight{Value: 5, Unit: "lb"}}}, ServiceType: "FEDEX_GROUND", ShipDate: time.Now().UTC().AddDate(0, 0, 1),
		}})
	require.NoError(t, err)
	require.True(t, bought.Label.Stashed, "the purchase marked the shipment and stashed its label")

	res := f.reconcileShipments()
	require.Equal(t, 2, res.Removed)
	require.Equal(t, 1, res.Failed)

	sh, err := store.ShipmentByID(ctx, f.st.Pool, f.orgID, waiting)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentPending, sh.Status, "its run still goes")
	for _, id := range []uuid.UUID{neverAsked, stashed} {
		_, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, id)
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	_, found, err := store.StashedShipmentLabel(ctx, f.st.Pool, f.orgID, stashed)
	require.NoError(t, err)
	require.False(t, found, "the stashed label was voided")
	sh, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, askedNoTrace)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentException, sh.Status, "asked, and nothing proves it bought nothing")
	require.Contains(t, string(sh.CarrierResponse), "its run no longer exists")
}
