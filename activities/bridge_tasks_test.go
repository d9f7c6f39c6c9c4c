package activities

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// fakePlatform is an in-process connector with every capability: a store
// of orders paged by an integer cursor, shipments, locations and recorded
// fulfillments. err, when set, fails every call.
type fakePlatform struct {
	mu          sync.Mutex
	orders      []platforms.Order
	shipments   []platforms.Shipment
	locations   []platforms.Location
	pageSize    int
	err         error
	calls       atomic.Int64
	fulfilled   map[string]bool // order ext + tracking
	pushes      []platforms.Fulfillment
	pushRefused map[string]bool // order ext refused for good
}

func (f *fakePlatform) FetchOrder(_ context.Context, _ platforms.Bridge, id string) (*platforms.Order, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.orders {
		if o.ExternalID == id {
			return &o, nil
		}
	}
	return nil, platforms.ErrOrderNotFound
}

func (f *fakePlatform) ListOrders(_ context.Context, _ platforms.Bridge, since time.Time, cursor string) ([]platforms.Order, string, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, "", f.err
	}
	var match []platforms.Order
	for _, o := range f.orders {
		if !o.UpdatedAt.Before(since) {
			match = append(match, o)
		}
	}
	start, _ := strconv.Atoi(cursor)
	end := min(start+f.pageSize, len(match))
	next := ""
	if end < len(match) {
		next = strconv.Itoa(end)
	}
	return append([]platforms.Order(nil), match[start:end]...), next, nil
}

func (f *fakePlatform) ListShipments(_ context.Context, _ platforms.Bridge, _ time.Time, cursor string) ([]platforms.Shipment, string, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, "", f.err
	}
	if cursor == "" && len(f.shipments) > 1 {
		return f.shipments[:1], "1", nil
	}
	if cursor == "1" {
		return f.shipments[1:], "", nil
	}
	return f.shipments, "", nil
}

func (f *fakePlatform) ListLocations(context.Context, platforms.Bridge) ([]platforms.Location, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return f.locations, nil
}

func (f *fakePlatform) PushFulfillment(_ context.Context, _ platforms.Bridge, ff platforms.Fulfillment) (platforms.FulfillmentResult, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return platforms.FulfillmentResult{}, f.err
	}
	if f.pushRefused[ff.OrderExternalID] {
		return platforms.FulfillmentResult{}, &platforms.Error{StatusCode: 422, Code: platforms.CodeNothingToFulfill, Message: "nothing left to fulfill"}
	}
	f.pushes = append(f.pushes, ff)
	key := ff.OrderExternalID + "/" + ff.TrackingNumber
	if f.fulfilled[key] {
		return platforms.FulfillmentResult{ExternalID: "f-" + key}, nil
	}
	f.fulfilled[key] = true
	return platforms.FulfillmentResult{ExternalID: "f-" + key, Created: true}, nil
}

// plainConnector has only the Connector methods.
type plainConnector struct{ platforms.Connector }

func fakeOrder(i int, updated time.Time) platforms.Order {
	ext := strconv.Itoa(5000 + i)
	return platforms.Order{
		ExternalID: ext, OrderNumber: "#" + ext, Status: platforms.StatusConfirmed, PaymentStatus: platforms.PaymentPaid,
		FulfillmentStatus: platforms.FulfillmentUnfulfilled,
		Customer:          platforms.Customer{Email: "buyer" + ext + "@example.com", FirstName: "Bea", LastName: "Lu"},
		ShippingAddress:   &platforms.Address{Name: "Bea Lu", Address1: "1 Main St", City: "Ottawa", CountryCode: "CA", Zip: "K1A0B1"},
		LineItems: []platforms.LineItem{
			{ExternalID: ext + "-1", SKU: "MUG", Name: "Mug", Quantity: 2, UnitPrice: 9.5, TotalPrice: 19, RequiresShipping: true},
			{ExternalID: ext + "-2", SKU: "TEE", Name: "Tee", Quantity: 1, UnitPrice: 20, TotalPrice: 20, RequiresShipping: true},
		},
		Totals:    platforms.Totals{Subtotal: 39, Shipping: 5, Total: 44},
		Currency:  "CAD",
		OrderedAt: updated.Add(-time.Hour), UpdatedAt: updated,
		SourceData: map[string]any{"id": ext},
	}
}

// taskFixture is an organization with an active bridge served by fake.
type taskFixture struct {
	t        testing.TB
	st       *store.Store
	acts     *BridgeTaskActivities
	fake     *fakePlatform
	orgID    uuid.UUID
	bridgeID uuid.UUID
	hooked   *[]uuid.UUID
}

type recordingHooks struct {
	mu  sync.Mutex
	ids *[]uuid.UUID
}

func (h *recordingHooks) OrderCreated(_ context.Context, _, id uuid.UUID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.ids = append(*h.ids, id)
	return nil
}

func newTaskFixture(t testing.TB, st *store.Store, conn platforms.Connector, fake *fakePlatform) *taskFixture {
	t.Helper()
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	reg := platforms.NewRegistry()
	reg.Register(platforms.TypeShippingHubA, conn)
	ids := &[]uuid.UUID{}
	f := &taskFixture{t: t, st: st, fake: fake, orgID: uuid.New(), bridgeID: uuid.New(), hooked: ids,
		acts: &BridgeTaskActivities{Store: st, Secrets: box, Platforms: reg, OrderHooks: &recordingHooks{ids: ids}}}
	ctx := context.Background()
	_, err = st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, f.orgID, "acme-"+f.orgID.String())
	require.NoError(t, err)
	sealed, err := box.SealJSON(map[string]any{"apiKey": "k", "apiSecret": "s"}, store.BridgeCredentialsAD(f.orgID, f.bridgeID))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config, credentials)
		VALUES ($1, $2, 'shipping_hub_a', 'Hub', '{}', $3)`, f.bridgeID, f.orgID, sealed)
	require.NoError(t, err)
	return f
}

// newExec inserts a running execution of task and returns its id.
func (f *taskFixture) newExec(task string) string {
	f.t.Helper()
	// One run of a task per bridge: an earlier one (a test's "crashed" run)
	// is failed first, as the reconciler would.
	_, err := f.st.Pool.Exec(context.Background(), `UPDATE task_executions SET status = 'failed'
		WHERE bridge_id = $1 AND task_name = $2 AND status IN ('queued', 'running')`, f.bridgeID, task)
	require.NoError(f.t, err)
	id := uuid.New()
	_, err = store.CreateTaskExecution(context.Background(), f.st.Pool, store.TaskExecution{
		ID: id, OrganizationID: f.orgID, BridgeID: f.bridgeID, TaskName: task, WorkflowID: "bridge-task/" + id.String()})
	require.NoError(f.t, err)
	return id.String()
}

// grab runs a whole sync the way the workflow does and returns its counts.
func (f *taskFixture) grab(task string) SyncCounts {
	f.t.Helper()
	ctx := context.Background()
	exec := f.newExec(task)
	begin, err := f.acts.BeginSync(ctx, BeginSyncInput{OrganizationID: f.orgID.String(), BridgeID: f.bridgeID.String(), TaskName: task})
	require.NoError(f.t, err)
	var total SyncCounts
	cursor := begin.Cursor
	for {
		res, err := f.acts.SyncPage(ctx, SyncPageInput{OrganizationID: f.orgID.String(), TaskExecutionID: exec,
			BridgeID: f.bridgeID.String(), TaskName: task, Since: begin.Since, Cursor: cursor})
		require.NoError(f.t, err)
		total.Add(res.SyncCounts)
		if res.Next == "" {
			return total
		}
		cursor = res.Next
	}
}

// fiveOrderFixture is a bridge whose platform holds five orders, updated a
// minute apart from t0, in pages of two.
func fiveOrderFixture(t *testing.T) (*taskFixture, *fakePlatform, time.Time) {
	t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	fake := &fakePlatform{pageSize: 2}
	for i := range 5 {
		fake.orders = append(fake.orders, fakeOrder(i, t0.Add(time.Duration(i)*time.Minute)))
	}
	return newTaskFixture(t, storetest.New(t), fake, fake), fake, t0
}

func TestGrabOrdersPagesCursorAndHooks(t *testing.T) {
	f, fake, t0 := fiveOrderFixture(t)
	st := f.st
	ctx := context.Background()

	require.Equal(t, SyncCounts{Fetched: 5, Created: 5}, f.grab(platforms.TaskGrabOrders))
	require.EqualValues(t, 3, fake.calls.Load())
	require.Len(t, *f.hooked, 5)
	b, err := store.BridgeByID(ctx, st.Pool, f.orgID, f.bridgeID)
	require.NoError(t, err)
	require.NotNil(t, b.LastSyncAt)
	c, err := store.GetSyncCursor(ctx, st.Pool, f.orgID, f.bridgeID, platforms.TaskGrabOrders)
	require.NoError(t, err)
	require.True(t, c.Since.Equal(t0.Add(4*time.Minute)), "%v", c.Since)

	// The next sync starts at the high-water mark: the newest order again
	// (inclusive, never skipped) plus what changed since.
	fake.orders[4].Status = platforms.StatusShipped
	fake.orders = append(fake.orders, fakeOrder(9, t0.Add(10*time.Minute)))
	require.Equal(t, SyncCounts{Fetched: 2, Created: 1, Updated: 1}, f.grab(platforms.TaskGrabOrders))
	require.Len(t, *f.hooked, 6, "the hook runs for new orders only")

	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM order_activities a JOIN orders o ON o.id = a.order_id
		WHERE o.bridge_id = $1 AND a.type = 'sync'`, f.bridgeID).Scan(&n))
	require.Equal(t, 7, n)
}

func TestGrabOrdersResumesAfterACrashAndReplaysAStoredPage(t *testing.T) {
	f, fake, _ := fiveOrderFixture(t)
	st := f.st
	ctx := context.Background()
	org, bridge := f.orgID.String(), f.bridgeID.String()

	// A run stores its first page, then its worker dies.
	exec := f.newExec(platforms.TaskGrabOrders)
	in := SyncPageInput{OrganizationID: org, TaskExecutionID: exec, BridgeID: bridge, TaskName: platforms.TaskGrabOrders}
	first, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "2", first.Next)
	// The attempt's answer was lost: a retry of the same page answers what
	// was stored, without a platform call.
	calls := fake.calls.Load()
	again, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.SyncCounts, again.SyncCounts)
	require.Equal(t, calls, fake.calls.Load())
	require.Len(t, *f.hooked, 4, "a replayed page calls the hook again (hooks are idempotent)")

	// The next run resumes after the stored page.
	begin, err := f.acts.BeginSync(ctx, BeginSyncInput{OrganizationID: org, BridgeID: bridge, TaskName: platforms.TaskGrabOrders})
	require.NoError(t, err)
	require.True(t, begin.Resumed)
	require.Equal(t, "2", begin.Cursor)
	require.Equal(t, SyncCounts{Fetched: 3, Created: 3}, f.grab(platforms.TaskGrabOrders))
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1`, f.bridgeID).Scan(&n))
	require.Equal(t, 5, n)
}

func TestBridgeTaskPlatformErrors(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{pageSize: 10}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	in := SyncPageInput{OrganizationID: f.orgID.String(), TaskExecutionID: f.newExec("grab-orders"), BridgeID: f.bridgeID.String(), TaskName: platforms.TaskGrabOrders}

	// Rate limited: retried after the platform's wait (through the SDK's
	// activity environment, which heartbeats).
	fake.err = &platforms.RateLimitError{Err: &platforms.Error{StatusCode: 429, Code: platforms.CodeRateLimited, Retryable: true}, RetryAfter: 7 * time.Second}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	_, err := env.ExecuteActivity(f.acts.SyncPage, in)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypePlatformUnavailable, appErr.Type())
	require.False(t, appErr.NonRetryable())
	require.Equal(t, 7*time.Second, appErr.NextRetryDelay())

	// 5xx: retryable.
	fake.err = &platforms.Error{StatusCode: 503, Code: platforms.CodePlatformUnavailable, Message: "busy", Retryable: true}
	_, err = f.acts.SyncPage(ctx, in)
	require.ErrorAs(t, err, &appErr)
	require.False(t, appErr.NonRetryable())

	// Credentials refused: non-retryable, and the bridge is in error.
	fake.err = &platforms.Error{StatusCode: 401, Code: platforms.CodeUnauthorized, Message: "invalid API key"}
	_, err = f.acts.SyncPage(ctx, in)
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())
	require.Contains(t, appErr.Message(), "refused its credentials")
	var status, reason string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT status, last_error FROM bridges WHERE id = $1`, f.bridgeID).Scan(&status, &reason))
	require.Equal(t, "error", status)
	require.Contains(t, reason, "invalid API key")

	// A bridge in error runs nothing.
	fake.err = nil
	_, err = f.acts.SyncPage(ctx, in)
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeBridgeUnavailable, appErr.Type())
	require.True(t, appErr.NonRetryable())
}

func TestGrabOrdersDropsACursorThePlatformRefuses(t *testing.T) {
	f, fake, _ := fiveOrderFixture(t)
	ctx := context.Background()
	org, bridge := f.orgID.String(), f.bridgeID.String()
	in := SyncPageInput{OrganizationID: org, TaskExecutionID: f.newExec("grab-orders"), BridgeID: bridge, TaskName: platforms.TaskGrabOrders}
	first, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)

	// The platform no longer accepts the stored cursor (expired page_info).
	fake.err = &platforms.Error{StatusCode: 400, Code: platforms.CodeInvalidRequest, Message: "page_info is invalid"}
	in.Cursor = first.Next
	_, err = f.acts.SyncPage(ctx, in)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())
	fake.err = nil

	// The next sync starts over (from the last completed sync: everything).
	begin, err := f.acts.BeginSync(ctx, BeginSyncInput{OrganizationID: org, BridgeID: bridge, TaskName: platforms.TaskGrabOrders})
	require.NoError(t, err)
	require.False(t, begin.Resumed)
	require.Equal(t, SyncCounts{Fetched: 5, Created: 3, Unchanged: 2}, f.grab(platforms.TaskGrabOrders))
}

func TestBridgeTasksNotSupportedByAPlainConnector(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{pageSize: 10}
	f := newTaskFixture(t, st, plainConnector{fake}, fake)
	ctx := context.Background()
	org, bridge := f.orgID.String(), f.bridgeID.String()
	check := func(err error, task string) {
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, ErrTypeTaskNotSupported, appErr.Type())
		require.True(t, appErr.NonRetryable())
		require.Equal(t, task+" is not supported by this bridge type (shipping_hub_a)", appErr.Message())
	}
	_, err := f.acts.WarehouseSync(ctx, WarehouseSyncInput{OrganizationID: org, BridgeID: bridge})
	check(err, "warehouse-sync")
	_, err = f.acts.PushFulfillments(ctx, PushFulfillmentsInput{OrganizationID: org, BridgeID: bridge})
	check(err, "push-fulfillment")
	_, err = f.acts.SyncPage(ctx, SyncPageInput{OrganizationID: org, TaskExecutionID: f.newExec("grab-shipments"), BridgeID: bridge, TaskName: "grab-shipments"})
	check(err, "grab-shipments")
	require.Zero(t, fake.calls.Load())
}

func TestWarehouseSyncUpsertsLocations(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{locations: []platforms.Location{
		{ExternalID: "W1", Name: "Main", Active: true, Address: &platforms.Address{Address1: "1 Dock Rd", City: "Austin", ProvinceCode: "TX", Zip: "78701", CountryCode: "US"}},
		{ExternalID: "W2", Name: "", Active: true},
	}}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	in := WarehouseSyncInput{OrganizationID: f.orgID.String(), BridgeID: f.bridgeID.String()}

	res, err := f.acts.WarehouseSync(ctx, in)
	require.NoError(t, err)
	require.Equal(t, 2, res.Created)
	require.Len(t, res.LocationIDs, 2)
	l, err := store.LocationByID(ctx, st.Pool, f.orgID, uuid.MustParse(res.LocationIDs[0]))
	require.NoError(t, err)
	require.Equal(t, "Main", l.Name)
	require.Equal(t, "1 Dock Rd", *l.Street)
	require.Equal(t, "TX", *l.Province)
	require.Equal(t, "W1", *l.ExternalID)

	fake.locations[1].Name = "Overflow"
	again, err := f.acts.WarehouseSync(ctx, in)
	require.NoError(t, err)
	require.Equal(t, 0, again.Created)
	require.Equal(t, 1, again.Updated)
	require.Equal(t, 1, again.Unchanged)
	require.Equal(t, res.LocationIDs, again.LocationIDs)
}

func TestGrabShipmentsAttachesToOrders(t *testing.T) {
	st := storetest.New(t)
	t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	fake := &fakePlatform{pageSize: 10, orders: []platforms.Order{fakeOrder(1, t0)}}
	fake.shipments = []platforms.Shipment{
		{ExternalID: "S1", OrderExternalID: "5001", TrackingNumber: "1Z999", CarrierCode: "ups", ServiceCode: "ups_ground", ShipDate: t0, CreatedAt: t0, Cost: 7.5},
		{ExternalID: "S2", OrderExternalID: "nope", TrackingNumber: "9400", CarrierCode: "usps", CreatedAt: t0.Add(time.Minute)},
		{ExternalID: "S3", OrderExternalID: "5001", Voided: true},
	}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	f.grab(platforms.TaskGrabOrders)
	heard := &recordedEvents{}
	f.acts.Events = heard

	require.Equal(t, SyncCounts{Fetched: 3, Created: 2, Unchanged: 1}, f.grab(platforms.TaskGrabShipments))
	// The page's new shipments are told once (on_shipment_created).
	require.Len(t, heard.of(rules.EventShipmentCreated), 2)
	var orderExt *string
	var tracking string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT o.external_id, s.tracking_number FROM shipments s LEFT JOIN orders o ON o.id = s.order_id
		WHERE s.bridge_id = $1 AND s.external_id = 'S1'`, f.bridgeID).Scan(&orderExt, &tracking))
	require.Equal(t, "5001", *orderExt)
	require.Equal(t, "1Z999", tracking)
	require.Equal(t, SyncCounts{Fetched: 3, Unchanged: 3}, f.grab(platforms.TaskGrabShipments))
	require.Len(t, heard.of(rules.EventShipmentCreated), 2, "a page told again creates no shipment and tells nothing")
}

// recordedEvents records what rules.Events heard.
type recordedEvents struct {
	mu  sync.Mutex
	ids map[string][]uuid.UUID
}

func (r *recordedEvents) Happened(_ context.Context, _ uuid.UUID, trigger string, ids []uuid.UUID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string][]uuid.UUID{}
	}
	r.ids[trigger] = append(r.ids[trigger], ids...)
}

func (r *recordedEvents) of(trigger string) []uuid.UUID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[trigger]
}

func TestPushFulfillmentsOnceEach(t *testing.T) {
	st := storetest.New(t)
	t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	fake := &fakePlatform{pageSize: 10, fulfilled: map[string]bool{"5002/TRK2": true}, pushRefused: map[string]bool{"5003": true}}
	for i := 1; i <= 3; i++ {
		fake.orders = append(fake.orders, fakeOrder(i, t0))
	}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	f.grab(platforms.TaskGrabOrders)
	// The service's shipments with tracking numbers (one without).
	for i, trk := range []string{"TRK1", "TRK2", "TRK3", ""} {
		ext := strconv.Itoa(5001 + min(i, 2))
		var tn *string
		if trk != "" {
			tn = &trk
		}
		_, err := st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, order_id, bridge_id, carrier, service, status, tracking_number)
			SELECT $1, $2, o.id, o.bridge_id, 'carrier_a', 'ground', 'label_created', $4 FROM orders o WHERE o.bridge_id = $3 AND o.external_id = $5`,
			uuid.New(), f.orgID, f.bridgeID, tn, ext)
		require.NoError(t, err)
	}
	in := PushFulfillmentsInput{OrganizationID: f.orgID.String(), BridgeID: f.bridgeID.String()}
	res, err := f.acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, 1, res.Pushed)
	require.Equal(t, 1, res.AlreadyThere)
	require.Equal(t, 1, res.Refused)
	require.Contains(t, res.Problems[0], "nothing left to fulfill")
	require.False(t, res.NothingPushed())
	var sent int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1 AND sent_to_fulfillment IS NOT NULL`, f.bridgeID).Scan(&sent))
	require.Equal(t, 2, sent)

	// Again: only the refused one is tried again.
	pushes := len(fake.pushes)
	res, err = f.acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, PushFulfillmentsResult{Refused: 1, Problems: res.Problems}, res)
	require.True(t, res.NothingPushed())
	require.Contains(t, res.Failure(), "refused all 1 fulfillment pushes: shipment")
	require.Equal(t, pushes, len(fake.pushes))
	// The connector gets the service's carrier code and service; it names
	// them for its platform (platforms.CarrierName).
	require.Equal(t, "carrier_a", fake.pushes[0].Carrier)
	require.Equal(t, "ground", fake.pushes[0].Service)
}

// The reconciler's task execution kind on a real database with a mocked
// Temporal client: a missing run and a run terminated in the UI fail their
// execution with the reason; an open run and a young row are left alone.
func TestReconcileTaskExecutions(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	tc := mocks.NewClient(t)
	m := &MaintenanceActivities{Store: st, Temporal: tc}
	ids := map[string]string{}
	tasks := map[string]string{"missing": "grab-orders", "running": "grab-shipments", "terminated": "warehouse-sync", "fresh": "push-fulfillment"}
	for _, k := range []string{"missing", "running", "terminated", "fresh"} {
		ids[k] = f.newExec(tasks[k])
		if k != "fresh" {
			_, err := st.Pool.Exec(ctx, `UPDATE task_executions SET created_at = now() - interval '1 hour' WHERE id = $1`, ids[k])
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() { // leave no stale row to the package's other reconciler tests
		_, _ = st.Pool.Exec(context.Background(), `UPDATE task_executions SET status = 'completed' WHERE organization_id = $1`, f.orgID)
	})
	wf := func(k string) string { return "bridge-task/" + ids[k] }
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("missing"), "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("running"), "").
		Return(describeAs(wf("running"), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-time.Hour)), nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("terminated"), "").
		Return(describeAs(wf("terminated"), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, time.Now().Add(-time.Hour)), nil).Once()
	it := mocks.NewHistoryEventIterator(t)
	it.On("HasNext").Return(true).Once()
	it.On("Next").Return(&historypb.HistoryEvent{
		EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
			Reason: "stuck", Identity: "ops@example.com",
		}},
	}, nil).Once()
	it.On("HasNext").Return(false).Once()
	tc.On("GetWorkflowHistory", mock.Anything, wf("terminated"), "run-"+wf("terminated"), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()

	res, err := m.ReconcileKind(ctx, m.taskExecutionKind())
	require.NoError(t, err)
	require.Equal(t, 3, res.Checked)
	require.Equal(t, 2, res.Failed)
	for k, want := range map[string]string{"missing": "the workflow never started", "terminated": "stopped by an operator: stuck", "running": "", "fresh": ""} {
		e, err := store.TaskExecutionByID(ctx, st.Pool, f.orgID, uuid.MustParse(ids[k]))
		require.NoError(t, err)
		if want == "" {
			require.Equal(t, store.TaskQueued, e.Status, k)
			continue
		}
		require.Equal(t, store.TaskFailed, e.Status, k)
		require.Contains(t, *e.Error, want, k)
		require.Contains(t, *e.Error, "the task did not finish", k)
		require.NotContains(t, *e.Error, "ops@example.com", "the operator's identity is logged, not stored")
	}
}

// BenchmarkGrabOrders10k imports a 10,000-order store through grab-orders
// (BeginSync and SyncPage as the workflow calls them) from an in-process
// connector with 250-order pages, into a fresh bridge per iteration. It
// reports the platform requests per import.
func BenchmarkGrabOrders10k(b *testing.B) {
	st := storetest.New(b)
	t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	fake := &fakePlatform{pageSize: 250}
	for i := range 10000 {
		fake.orders = append(fake.orders, fakeOrder(i, t0.Add(time.Duration(i)*time.Second)))
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		f := newTaskFixture(b, st, fake, fake)
		fake.calls.Store(0)
		b.StartTimer()
		counts := f.grab(platforms.TaskGrabOrders)
		if counts.Created != 10000 {
			b.Fatalf("created %d", counts.Created)
		}
		b.ReportMetric(float64(fake.calls.Load()), "requests/import")
	}
}
