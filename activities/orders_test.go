package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// TestMain: the test binary is its own sandbox process, so the syncs'
// transformations run in the process pool as in the worker.
func TestMain(m *testing.M) {
	sandbox.ServeIfChild()
	os.Setenv("FOS_SANDBOX_MEMORY_MB", "256")
	os.Exit(storetest.Run(m))
}

// fixture is an organization with a storefront_a bridge on the sandbox.
type fixture struct {
	t        *testing.T
	st       *store.Store
	box      *secrets.Box
	acts     *OrderActivities
	sandbox  *httptest.Server
	orgID    uuid.UUID
	bridgeID uuid.UUID
	shop     string
}

func newFixture(t *testing.T, creds map[string]any) *fixture {
	t.Helper()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	f := &fixture{
		t: t, st: st, box: box, sandbox: sb,
		acts:     &OrderActivities{Store: st, Secrets: box, Platforms: platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), sb.Client(), nil)},
		orgID:    uuid.New(),
		bridgeID: uuid.New(),
		shop:     "acme-" + uuid.NewString()[:8] + ".example.com",
	}
	ctx := context.Background()
	_, err = st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, f.orgID, "acme-"+f.orgID.String())
	require.NoError(t, err)
	if creds == nil {
		creds = map[string]any{"accessToken": "shpat_test"}
	}
	sealed, err := box.SealJSON(creds, store.BridgeCredentialsAD(f.orgID, f.bridgeID))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config, credentials)
		VALUES ($1, $2, 'storefront_a', 'Acme Shop', $3, $4)`, f.bridgeID, f.orgID, map[string]any{"shopDomain": f.shop}, sealed)
	require.NoError(t, err)
	return f
}

// catalogID is the external id of the i-th order of the bridge's sandbox
// store (read through the connector).
func (f *fixture) catalogID(i int) string {
	f.t.Helper()
	conn, err := f.acts.Platforms.Get(platforms.TypeStorefrontA)
	require.NoError(f.t, err)
	orders, _, err := conn.ListOrders(context.Background(), platforms.Bridge{Type: platforms.TypeStorefrontA,
		Config: map[string]any{"shopDomain": f.shop, "accessToken": "shpat_test"}}, time.Time{}, "")
	require.NoError(f.t, err)
	require.Greater(f.t, len(orders), i)
	return orders[i].ExternalID
}

// insertOrder inserts an order whose data deliberately differs from the
// platform's.
func (f *fixture) insertOrder(externalID string) uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	_, err := f.st.Pool.Exec(context.Background(), `
		INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email,
		                    customer_name, line_items, totals, total, currency, ordered_at)
		VALUES ($1, $2, $3, $4, 'OLD-1', 'on_hold', '{"email": "old@example.com", "firstName": "Old", "lastName": "Name"}',
		        'old@example.com', 'Old Name',
		        '[{"sku": "OLD", "name": "Old item", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}]',
		        '{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1}', 1, 'EUR', '2020-01-01T00:00:00Z')`,
		id, f.orgID, f.bridgeID, externalID)
	require.NoError(f.t, err)
	return id
}

func (f *fixture) input(orderID uuid.UUID, runID string) ResyncOrderInput {
	return ResyncOrderInput{
		OrganizationID: f.orgID.String(),
		OrderID:        orderID.String(),
		WorkflowID:     "order-resync/" + orderID.String(),
		RunID:          runID,
		RequestedBy:    Actor{Type: "user", ID: uuid.NewString(), Name: "Ada Lovelace"},
	}
}

type activityRow struct {
	Type        string
	Description string
	ActorType   string
	ActorID     *string
	ActorName   *string
	Metadata    map[string]any
}

func (f *fixture) activities(orderID uuid.UUID, typ string) []activityRow {
	f.t.Helper()
	rows, err := f.st.Pool.Query(context.Background(), `
		SELECT type, description, actor_type, actor_id, actor_name, metadata
		FROM order_activities WHERE order_id = $1 AND type = $2 ORDER BY created_at`, orderID, typ)
	require.NoError(f.t, err)
	defer rows.Close()
	var out []activityRow
	for rows.Next() {
		var r activityRow
		require.NoError(f.t, rows.Scan(&r.Type, &r.Description, &r.ActorType, &r.ActorID, &r.ActorName, &r.Metadata))
		out = append(out, r)
	}
	require.NoError(f.t, rows.Err())
	return out
}

// requireAppError asserts err is an application error of type typ with
// the given retryability.
func requireAppError(t *testing.T, err error, typ string, nonRetryable bool) *temporal.ApplicationError {
	t.Helper()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an application error, got %T: %v", err, err)
	require.Equal(t, typ, appErr.Type(), "%v", err)
	require.Equal(t, nonRetryable, appErr.NonRetryable(), "%v", err)
	return appErr
}

func TestResyncOrderAppliesPlatformDataOnce(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	ext := f.catalogID(3)
	orderID := f.insertOrder(ext)

	// What the platform holds.
	conn, err := f.acts.Platforms.Get(platforms.TypeStorefrontA)
	require.NoError(t, err)
	want, err := conn.FetchOrder(ctx, platforms.Bridge{Type: platforms.TypeStorefrontA, Config: map[string]any{"shopDomain": f.shop, "accessToken": "shpat_test"}}, ext)
	require.NoError(t, err)

	in := f.input(orderID, "run-1")
	res, err := f.acts.ResyncOrder(ctx, in)
	require.NoError(t, err)
	require.Equal(t, orderID.String(), res.OrderID)
	require.Equal(t, f.bridgeID.String(), res.BridgeID)
	require.Equal(t, ext, res.ExternalID)
	require.False(t, res.AlreadyApplied)
	require.Subset(t, res.ChangedFields, []string{"order_number", "status", "customer", "line_items", "totals", "currency", "ordered_at", "source_data"})
	requireCanonicalOrder(t, res.ChangedFields)

	// The order now has the platform's data.
	var (
		number, status, payment, fulfillment, email, name, currency string
		customer                                                    platforms.Customer
		items                                                       []platforms.LineItem
		totals                                                      platforms.Totals
		total                                                       float64
		sourceData                                                  map[string]any
		orderedAt                                                   time.Time
		lastSync                                                    *time.Time
	)
	require.NoError(t, f.st.Pool.QueryRow(ctx, `
		SELECT o.order_number, o.status, o.payment_status, o.fulfillment_status, o.customer_email, o.customer_name,
		       o.currency, o.customer, o.line_items, o.totals, o.total::float8, o.source_data, o.ordered_at, b.last_sync_at
		FROM orders o JOIN bridges b ON b.id = o.bridge_id WHERE o.id = $1`, orderID).
		Scan(&number, &status, &payment, &fulfillment, &email, &name, &currency, &customer, &items, &totals, &total, &sourceData, &orderedAt, &lastSync))
	require.Equal(t, want.OrderNumber, number)
	require.Equal(t, want.Status, status)
	require.Equal(t, want.PaymentStatus, payment)
	require.Equal(t, want.FulfillmentStatus, fulfillment)
	require.Equal(t, want.Customer, customer)
	require.Equal(t, want.Customer.Email, email)
	require.Equal(t, want.Customer.FirstName+" "+want.Customer.LastName, name)
	require.Equal(t, want.Currency, currency)
	require.Equal(t, want.LineItems, items)
	require.Equal(t, want.Totals, totals)
	require.InDelta(t, want.Totals.Total, total, 0.001)
	require.Equal(t, ext, fmt.Sprintf("%.0f", sourceData["id"]))
	require.True(t, want.OrderedAt.Equal(orderedAt))
	require.NotNil(t, lastSync, "the bridge's last_sync_at is set")

	// One sync activity, attributed to the system, naming the run.
	acts := f.activities(orderID, "sync")
	require.Len(t, acts, 1)
	a := acts[0]
	require.Equal(t, "Re-synced from Acme Shop", a.Description)
	require.Equal(t, "system", a.ActorType)
	require.Nil(t, a.ActorID)
	require.Equal(t, ResyncActorName, *a.ActorName)
	require.Equal(t, f.bridgeID.String(), a.Metadata["bridgeId"])
	require.Equal(t, in.WorkflowID, a.Metadata["workflowId"])
	require.Equal(t, "run-1", a.Metadata["runId"])
	require.Len(t, a.Metadata["changedFields"], len(res.ChangedFields))
	requestedBy := a.Metadata["requestedBy"].(map[string]any)
	require.Equal(t, "user", requestedBy["type"])
	require.Equal(t, "Ada Lovelace", requestedBy["name"])

	// A retried attempt of the same run writes nothing more and reports the
	// same changes.
	again, err := f.acts.ResyncOrder(ctx, in)
	require.NoError(t, err)
	require.True(t, again.AlreadyApplied)
	require.Equal(t, res.ChangedFields, again.ChangedFields)
	require.Len(t, f.activities(orderID, "sync"), 1)

	// A new run finds the order up to date.
	next, err := f.acts.ResyncOrder(ctx, f.input(orderID, "run-2"))
	require.NoError(t, err)
	require.False(t, next.AlreadyApplied)
	require.Empty(t, next.ChangedFields)
	require.Len(t, f.activities(orderID, "sync"), 2)
}

func requireCanonicalOrder(t *testing.T, fields []string) {
	t.Helper()
	pos := map[string]int{}
	for i, f := range store.OrderSyncFields {
		pos[f] = i
	}
	for i := 1; i < len(fields); i++ {
		require.Less(t, pos[fields[i-1]], pos[fields[i]], "fields in canonical order: %v", fields)
	}
}

func TestResyncOrderInActivityEnvironment(t *testing.T) {
	f := newFixture(t, nil)
	orderID := f.insertOrder(f.catalogID(0))
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	in := f.input(orderID, "")
	in.WorkflowID = "" // taken from the activity info
	val, err := env.ExecuteActivity(f.acts.ResyncOrder, in)
	require.NoError(t, err)
	var res ResyncOrderResult
	require.NoError(t, val.Get(&res))
	require.NotEmpty(t, res.ChangedFields)
	acts := f.activities(orderID, "sync")
	require.Len(t, acts, 1)
	require.Equal(t, "default-test-workflow-id", acts[0].Metadata["workflowId"])
	require.Equal(t, "default-test-run-id", acts[0].Metadata["runId"])
}

func TestResyncOrderRefusedCredentialsIsPermanent(t *testing.T) {
	f := newFixture(t, map[string]any{"accessToken": sandboxapi.FailValue})
	orderID := f.insertOrder(f.catalogID(0))
	_, err := f.acts.ResyncOrder(context.Background(), f.input(orderID, "run-1"))
	appErr := requireAppError(t, err, ErrTypePlatformPermanent, true)
	require.Contains(t, appErr.Message(), "refused its credentials")
	require.Empty(t, f.activities(orderID, "sync"))
}

func TestResyncOrderUnknownExternalIDIsPermanent(t *testing.T) {
	f := newFixture(t, nil)
	orderID := f.insertOrder("999")
	_, err := f.acts.ResyncOrder(context.Background(), f.input(orderID, "run-1"))
	appErr := requireAppError(t, err, ErrTypePlatformPermanent, true)
	require.True(t, errors.Is(err, platforms.ErrOrderNotFound), "the platform error is the cause")
	require.Contains(t, appErr.Message(), "order 999 not found")
}

func TestResyncOrderPlatformDownIsRetryable(t *testing.T) {
	f := newFixture(t, nil)
	orderID := f.insertOrder(f.catalogID(0))
	// The sandbox answers a shop named sandbox-fail.… with a 503.
	_, err := f.st.Pool.Exec(context.Background(), `UPDATE bridges SET config = '{"shopDomain": "sandbox-fail.example.com"}' WHERE id = $1`, f.bridgeID)
	require.NoError(t, err)
	_, err = f.acts.ResyncOrder(context.Background(), f.input(orderID, "run-1"))
	requireAppError(t, err, ErrTypePlatformUnavailable, false)
}

func TestResyncOrderBridgeUnavailable(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	orderID := f.insertOrder(f.catalogID(0))

	_, err := f.st.Pool.Exec(ctx, `UPDATE bridges SET status = 'paused' WHERE id = $1`, f.bridgeID)
	require.NoError(t, err)
	_, err = f.acts.ResyncOrder(ctx, f.input(orderID, "run-1"))
	appErr := requireAppError(t, err, ErrTypeBridgeUnavailable, true)
	require.Contains(t, appErr.Message(), "paused")

	_, err = f.st.Pool.Exec(ctx, `DELETE FROM bridges WHERE id = $1`, f.bridgeID)
	require.NoError(t, err)
	_, err = f.acts.ResyncOrder(ctx, f.input(orderID, "run-2"))
	appErr = requireAppError(t, err, ErrTypeBridgeUnavailable, true)
	require.Equal(t, "order has no source bridge", appErr.Message())
}

func TestResyncOrderOtherOrganization(t *testing.T) {
	f := newFixture(t, nil)
	other := newFixture(t, nil)
	orderID := f.insertOrder(f.catalogID(0))
	in := other.input(orderID, "run-1")
	_, err := f.acts.ResyncOrder(context.Background(), in)
	requireAppError(t, err, ErrTypeOrderNotFound, true)

	in.OrderID = "not-a-uuid"
	_, err = f.acts.ResyncOrder(context.Background(), in)
	requireAppError(t, err, ErrTypeInvalidInput, true)
}

func TestRecordResyncFailureOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	orderID := f.insertOrder("999")
	in := RecordResyncFailureInput{
		OrganizationID: f.orgID.String(),
		OrderID:        orderID.String(),
		WorkflowID:     "order-resync/" + orderID.String(),
		RunID:          "run-1",
		Error:          "order 999 not found on bridge \"Acme Shop\"",
		ErrorType:      ErrTypePlatformPermanent,
		RequestedBy:    Actor{Type: "api_key", ID: uuid.NewString(), Name: "ci"},
	}
	for range 2 {
		res, err := f.acts.RecordResyncFailure(ctx, in)
		require.NoError(t, err)
		require.True(t, res.Recorded)
	}
	acts := f.activities(orderID, "sync_failed")
	require.Len(t, acts, 1)
	require.Equal(t, "Re-sync from Acme Shop failed: order 999 not found on bridge \"Acme Shop\"", acts[0].Description)
	require.Equal(t, "system", acts[0].ActorType)
	require.Equal(t, in.Error, acts[0].Metadata["error"])
	require.Equal(t, ErrTypePlatformPermanent, acts[0].Metadata["errorType"])
	require.Equal(t, f.bridgeID.String(), acts[0].Metadata["bridgeId"])

	// An order that is gone records nothing, without failing.
	in.OrderID = uuid.NewString()
	res, err := f.acts.RecordResyncFailure(ctx, in)
	require.NoError(t, err)
	require.False(t, res.Recorded)
}

// With FOS_SANDBOX=0 a bridge type without a real connector fails its
// resync at once, non-retryably, without a call to the sandbox, and the
// failure is recorded on the order like other permanent platform errors.
func TestResyncOrderConnectorNotAvailableIsPermanent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	var sandboxCalls atomic.Int32
	inner := f.sandbox.Config.Handler
	f.sandbox.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sandboxCalls.Add(1)
		inner.ServeHTTP(w, r)
	})
	f.acts.Platforms = platforms.NewRegistry()
	f.acts.Platforms.Register(platforms.TypeStorefrontA, platforms.NewUnavailableConnector(platforms.TypeStorefrontA))
	orderID := f.insertOrder("1001")

	_, err := f.acts.ResyncOrder(ctx, f.input(orderID, "run-1"))
	appErr := requireAppError(t, err, ErrTypePlatformPermanent, true)
	require.True(t, errors.Is(err, platforms.ErrNotAvailable), "the platform error is the cause: %v", err)
	require.Equal(t, `bridge "Acme Shop" cannot sync: its platform connector is not available`, appErr.Message())
	require.Zero(t, sandboxCalls.Load(), "nothing may talk to the sandbox with FOS_SANDBOX=0")
	require.Empty(t, f.activities(orderID, "sync"))

	// What the OrderResync workflow then records.
	_, err = f.acts.RecordResyncFailure(ctx, RecordResyncFailureInput{
		OrganizationID: f.orgID.String(), OrderID: orderID.String(),
		WorkflowID: "order-resync/" + orderID.String(), RunID: "run-1",
		Error: appErr.Message(), ErrorType: appErr.Type(),
	})
	require.NoError(t, err)
	acts := f.activities(orderID, "sync_failed")
	require.Len(t, acts, 1)
	require.Equal(t, `Re-sync from Acme Shop failed: bridge "Acme Shop" cannot sync: its platform connector is not available`, acts[0].Description)
}

// A platform failure whose text names an internal address is recorded on
// the order with a stable message; the text stays in the logs.
func TestRecordResyncFailureHidesInternals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	orderID := f.insertOrder("998")
	refused, addr := refusedErr(t)
	// What ResyncOrder's platformError makes of a network failure.
	appErr := platformError(&platforms.Error{Code: platforms.CodeNetwork, Message: "platform unreachable: " + refused.Error(), Retryable: true},
		store.OrderSyncSource{ExternalID: "998"})
	var ae *temporal.ApplicationError
	require.ErrorAs(t, appErr, &ae)
	// The workflow records the message (failureOf), not the cause.
	in := RecordResyncFailureInput{
		OrganizationID: f.orgID.String(), OrderID: orderID.String(),
		WorkflowID: "order-resync/" + orderID.String(), RunID: "run-1",
		Error: ae.Message(), ErrorType: ErrTypePlatformUnavailable,
	}
	require.Equal(t, "the platform failed: the platform could not be reached", in.Error)
	// Even a raw Go error text handed in is not stored.
	in.Error = "bridge failed: " + refused.Error()
	_, err := f.acts.RecordResyncFailure(ctx, in)
	require.NoError(t, err)
	acts := f.activities(orderID, "sync_failed")
	require.Len(t, acts, 1)
	require.NotContains(t, acts[0].Description, addr)
	require.NotContains(t, acts[0].Description, "connection refused")
	require.Equal(t, InternalFailureMessage, acts[0].Metadata["error"])
}
