package activities

import (
	"context"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// trackingFixture is the sandbox carriers and organizations with carrier
// accounts.
type trackingFixture struct {
	t    *testing.T
	st   *store.Store
	box  *secrets.Box
	reg  *carriers.Registry
	acts *TrackingActivities
}

func newTrackingFixture(t *testing.T) *trackingFixture {
	t.Helper()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	return &trackingFixture{t: t, st: st, box: box, reg: reg,
		acts: &TrackingActivities{Store: st, Secrets: box, Carriers: reg}}
}

func (f *trackingFixture) org() uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	_, err := f.st.Pool.Exec(context.Background(), `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, id, "trk-"+id.String())
	require.NoError(f.t, err)
	return id
}

func (f *trackingFixture) account(org uuid.UUID, carrier string, creds map[string]any) uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	sealed, err := f.box.SealJSON(creds, store.CarrierAccountCredentialsAD(org, id))
	require.NoError(f.t, err)
	_, err = f.st.Pool.Exec(context.Background(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, status)
		VALUES ($1, $2, $3, $3, $4, 'active')`, id, org, carrier, sealed)
	require.NoError(f.t, err)
	return id
}

func (f *trackingFixture) shipment(org uuid.UUID, carrier, status, number string, account *uuid.UUID) uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	_, err := f.st.Pool.Exec(context.Background(), `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, tracking_number)
		VALUES ($1, $2, $3, $4, 'GROUND', $5, $6)`, id, org, account, carrier, status, number)
	require.NoError(f.t, err)
	return id
}

type trackingRow struct {
	Status           string
	DeliveredAt      *time.Time
	LastTrackedAt    *time.Time
	ToLat, ToLng     *float64
	FromLat, FromLng *float64
}

func (f *trackingFixture) row(id uuid.UUID) trackingRow {
	f.t.Helper()
	var r trackingRow
	require.NoError(f.t, f.st.Pool.QueryRow(context.Background(), `SELECT status, delivered_at, last_tracked_at, ship_to_lat, ship_to_lng,
		ship_from_lat, ship_from_lng FROM shipments WHERE id = $1`, id).Scan(&r.Status, &r.DeliveredAt, &r.LastTrackedAt, &r.ToLat, &r.ToLng, &r.FromLat, &r.FromLng))
	return r
}

type trackingCheckpointRow struct {
	ID       uuid.UUID
	Sequence int
	Status   string
	Source   string
	EventID  string
	Lat      *float64
}

func (f *trackingFixture) checkpoints(shipment uuid.UUID) []trackingCheckpointRow {
	f.t.Helper()
	rows, err := f.st.Pool.Query(context.Background(), `SELECT id, sequence, status, source, source_event_id, latitude
		FROM tracking_checkpoints WHERE shipment_id = $1 ORDER BY sequence`, shipment)
	require.NoError(f.t, err)
	defer rows.Close()
	var out []trackingCheckpointRow
	for rows.Next() {
		var c trackingCheckpointRow
		require.NoError(f.t, rows.Scan(&c.ID, &c.Sequence, &c.Status, &c.Source, &c.EventID, &c.Lat))
		out = append(out, c)
	}
	require.NoError(f.t, rows.Err())
	return out
}

// poll runs TrackingPollShipments in an activity environment.
func (f *trackingFixture) poll(ids ...uuid.UUID) TrackingPollResult {
	f.t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	in := TrackingPollInput{}
	for _, id := range ids {
		in.ShipmentIDs = append(in.ShipmentIDs, id.String())
	}
	val, err := env.ExecuteActivity(f.acts.TrackingPollShipments, in)
	require.NoError(f.t, err)
	var res TrackingPollResult
	require.NoError(f.t, val.Get(&res))
	return res
}

func TestTrackingPollShipmentsSandbox(t *testing.T) {
	f := newTrackingFixture(t)
	ctx := context.Background()
	org := f.org()
	acctA := f.account(org, "carrier_a", map[string]any{"accountNumber": "123456789", "childKey": "child-key-1", "childSecret": "child-secret-1"})
	acctB := f.account(org, "carrier_b", map[string]any{"accountNumber": "A1B2C3", "clientId": "client-1", "clientSecret": "secret-1"})

	delivered := f.shipment(org, "carrier_a", "label_created", "794843185271", &acctA)
	ups := f.shipment(org, "carrier_b", "in_transit", "1Z1442YY7229014688", &acctB)
	unknown := f.shipment(org, "carrier_a", "label_created", "794843180000", &acctA)
	exception := f.shipment(org, "carrier_a", "in_transit", "794843185299", &acctA)
	// No account of its own: the organization's active carrier_a account.
	orphan := f.shipment(org, "carrier_a", "label_created", "794843185123", nil)
	// carrier_c does not track.
	rating := f.shipment(org, "carrier_c", "label_created", "C123", nil)
	// Another organization whose carrier refuses its credentials.
	other := f.org()
	failing := f.account(other, "carrier_a", map[string]any{"accountNumber": "987654321", "childKey": "sandbox-fail", "childSecret": "top-secret-value"})
	refused := f.shipment(other, "carrier_a", "in_transit", "794843185555", &failing)
	// Not moving any more: left alone.
	done := f.shipment(org, "carrier_a", "delivered", "794843185777", &acctA)

	all := []uuid.UUID{delivered, ups, unknown, exception, orphan, rating, refused, done}
	res := f.poll(all...)
	require.Equal(t, 7, res.Shipments, "the delivered one is skipped")
	require.Equal(t, 4, res.Tracked)
	require.Equal(t, 1, res.NotFound)
	require.Equal(t, 1, res.Untrackable)
	require.Equal(t, 1, res.Failed)
	require.Len(t, res.Errors, 1)
	require.Contains(t, res.Errors[0], failing.String())
	require.NotContains(t, res.Errors[0], "top-secret-value")
	require.Equal(t, 3, res.Delivered, "carrier_a, carrier_b and the orphan")
	require.Equal(t, 4, res.StatusChanges)

	// The carrier's history, once, as checkpoints.
	acct, err := store.AdapterAccount(f.box, store.CarrierAccount{ID: acctA, OrganizationID: org, Carrier: "carrier_a", Credentials: mustSealed(t, f.box, org, acctA)})
	require.NoError(t, err)
	carrierA, err := f.reg.Get("carrier_a")
	require.NoError(t, err)
	want, err := carrierA.Track(ctx, acct, []string{"794843185271"})
	require.NoError(t, err)
	cps := f.checkpoints(delivered)
	require.Len(t, cps, len(want[0].Events))
	for i, c := range cps {
		require.Equal(t, i, c.Sequence)
		require.Equal(t, "carrier_a", c.Source)
		require.Equal(t, want[0].Events[i].EventID, c.EventID)
		require.Equal(t, want[0].Events[i].Status, c.Status)
		require.NotNil(t, c.Lat)
	}
	r := f.row(delivered)
	require.Equal(t, "delivered", r.Status)
	require.True(t, want[0].DeliveredAt.Equal(*r.DeliveredAt))
	require.NotNil(t, r.LastTrackedAt)
	require.NotNil(t, r.ToLat, "destination coordinates from the carrier")
	require.InDelta(t, *want[0].Destination.Latitude, *r.ToLat, 1e-9)
	require.NotNil(t, r.FromLng)

	require.Equal(t, "delivered", f.row(ups).Status)
	require.NotEmpty(t, f.checkpoints(ups))
	require.Equal(t, "carrier_b", f.checkpoints(ups)[0].Source)
	require.Equal(t, "delivered", f.row(orphan).Status)
	require.Equal(t, "exception", f.row(exception).Status)
	for _, id := range []uuid.UUID{unknown, rating, refused} {
		require.Empty(t, f.checkpoints(id))
		require.NotNil(t, f.row(id).LastTrackedAt, "stamped, so the poll moves on")
	}
	require.Equal(t, "label_created", f.row(unknown).Status)
	require.Equal(t, "in_transit", f.row(refused).Status)
	require.Nil(t, f.row(done).LastTrackedAt)

	// The activity again (a retry after it had committed): nothing is
	// recorded twice, statuses stay.
	before := map[uuid.UUID][]trackingCheckpointRow{}
	for _, id := range all {
		before[id] = f.checkpoints(id)
	}
	again := f.poll(all...)
	require.Equal(t, 0, again.StatusChanges)
	require.Equal(t, 1, again.Tracked, "only the exception is still polled")
	for _, id := range all {
		require.Equal(t, before[id], f.checkpoints(id), "shipment %s", id)
	}
	require.Equal(t, "delivered", f.row(delivered).Status)
	require.Equal(t, "exception", f.row(exception).Status)
}

func mustSealed(t *testing.T, box *secrets.Box, org, acct uuid.UUID) []byte {
	t.Helper()
	b, err := box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "child-key-1", "childSecret": "child-secret-1"}, store.CarrierAccountCredentialsAD(org, acct))
	require.NoError(t, err)
	return b
}

func TestTrackingListDue(t *testing.T) {
	f := newTrackingFixture(t)
	ctx := context.Background()
	org := f.org()
	acct := f.account(org, "carrier_a", map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"})
	a := f.shipment(org, "carrier_a", "label_created", "794843185271", &acct)
	b := f.shipment(org, "carrier_a", "in_transit", "794843185272", &acct)

	first, err := f.acts.TrackingListDue(ctx, TrackingListDueInput{Limit: 10_000})
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), first.Cutoff, time.Minute, "the database clock")
	require.Subset(t, first.ShipmentIDs, []string{a.String(), b.String()})

	// Tracked since the cutoff: no longer due in this poll.
	f.poll(a)
	next, err := f.acts.TrackingListDue(ctx, TrackingListDueInput{Cutoff: &first.Cutoff, Limit: 10_000})
	require.NoError(t, err)
	require.NotContains(t, next.ShipmentIDs, a.String())
	ids := append([]string(nil), next.ShipmentIDs...)
	sort.Strings(ids)
	require.Contains(t, ids, b.String())

	_, err = f.acts.TrackingListDue(ctx, TrackingListDueInput{Limit: 0})
	require.Error(t, err)
	_, err = f.acts.TrackingPollShipments(ctx, TrackingPollInput{ShipmentIDs: []string{"nope"}})
	require.Error(t, err)
}

func TestTrackingCheckpointsConversion(t *testing.T) {
	lat, lng, bad := 35.0, -90.0, 200.0
	sh := uuid.New()
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	got := TrackingCheckpoints(sh, "carrier_b", carriers.TrackResult{TrackingNumber: "1Z", Events: []carriers.TrackEvent{
		{EventID: "e1", Status: "label_created", CountryCode: "us", Latitude: &lat, Longitude: &lng, Time: at, City: " MEMPHIS "},
		{Status: "weird", CountryCode: "USA", Latitude: &lat, Longitude: &bad, Time: at.Add(time.Hour), IsException: true, ExceptionType: "X"},
	}})
	require.Len(t, got, 2)
	require.Equal(t, "e1", *got[0].SourceEventID)
	require.Equal(t, "US", *got[0].CountryCode)
	require.Equal(t, "MEMPHIS", *got[0].City)
	require.Equal(t, "carrier_b", got[0].Source)
	require.Equal(t, 0, got[0].Sequence)
	require.NotNil(t, got[0].Latitude)
	require.Equal(t, 1, got[1].Sequence)
	require.Equal(t, "in_transit", got[1].Status, "an unknown status is a scan in transit")
	require.NotEmpty(t, *got[1].SourceEventID, "derived when the carrier gives none")
	require.Nil(t, got[1].CountryCode)
	require.Nil(t, got[1].Latitude)
	require.Nil(t, got[1].Longitude)
	require.True(t, got[1].IsException)
	require.Nil(t, got[1].StatusDetail)
	// Deterministic.
	require.Equal(t, *got[1].SourceEventID, *TrackingCheckpoints(sh, "carrier_b", carriers.TrackResult{TrackingNumber: "1Z", Events: []carriers.TrackEvent{{}, {Status: "weird", Time: at.Add(time.Hour)}}})[1].SourceEventID)
}
