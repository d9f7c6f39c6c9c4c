package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestTrackingStatusRule(t *testing.T) {
	const (
		pend = store.TrackingPending
		lc   = store.TrackingLabelCreated
		it   = store.TrackingInTransit
		ofd  = store.TrackingOutForDelivery
		del  = store.TrackingDelivered
		exc  = store.TrackingException
	)
	cases := []struct{ current, checkpoint, want string }{
		// Forward only.
		{pend, lc, lc}, {pend, it, it}, {pend, del, del},
		{lc, it, it}, {lc, ofd, ofd}, {lc, del, del},
		{it, ofd, ofd}, {it, del, del}, {ofd, del, del},
		{it, lc, it}, {ofd, it, ofd}, {ofd, lc, ofd}, {it, it, it}, {lc, pend, lc},
		// Exception from any non-delivered state.
		{pend, exc, exc}, {lc, exc, exc}, {it, exc, exc}, {ofd, exc, exc}, {exc, exc, exc},
		// Delivered is final.
		{del, exc, del}, {del, it, del}, {del, lc, del}, {del, del, del},
		// A later scan takes a shipment out of exception when it moves again.
		{exc, it, it}, {exc, ofd, ofd}, {exc, del, del}, {exc, lc, exc}, {exc, pend, exc},
	}
	for _, c := range cases {
		require.Equal(t, c.want, store.ShipmentStatusAfter(c.current, c.checkpoint), "%s + %s", c.current, c.checkpoint)
	}

	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	steps := []store.TrackingStep{
		{Status: del, Time: at(5), Sequence: 4}, // given out of order: sorted by time
		{Status: lc, Time: at(0), Sequence: 0},
		{Status: it, Time: at(1), Sequence: 1},
		{Status: exc, Time: at(3), Sequence: 2},
		{Status: ofd, Time: at(4), Sequence: 3},
	}
	got, deliveredAt := store.ShipmentStatusAfterSteps(lc, nil, steps)
	require.Equal(t, del, got)
	require.Equal(t, at(5), *deliveredAt)

	// Only steps newer than what the shipment shows count.
	since := at(3)
	got, deliveredAt = store.ShipmentStatusAfterSteps(it, &since, steps[1:4])
	require.Equal(t, it, got, "nothing newer than 12:00")
	require.Nil(t, deliveredAt)
	got, _ = store.ShipmentStatusAfterSteps(exc, &since, steps)
	require.Equal(t, del, got)

	// Out for delivery, then a failed attempt, then back in transit.
	got, _ = store.ShipmentStatusAfterSteps(ofd, nil, []store.TrackingStep{{Status: exc, Time: at(1)}, {Status: it, Time: at(2)}})
	require.Equal(t, it, got)
	// Same time: sequence decides.
	got, _ = store.ShipmentStatusAfterSteps(lc, nil, []store.TrackingStep{{Status: it, Time: at(1), Sequence: 2}, {Status: exc, Time: at(1), Sequence: 1}})
	require.Equal(t, it, got)
}

// TestTrackingIsExceptionRule: a checkpoint flagged isException counts as
// an exception in the status rule, whatever its status, except a delivery.
func TestTrackingIsExceptionRule(t *testing.T) {
	const (
		pend = store.TrackingPending
		lc   = store.TrackingLabelCreated
		it   = store.TrackingInTransit
		ofd  = store.TrackingOutForDelivery
		del  = store.TrackingDelivered
		exc  = store.TrackingException
	)
	for _, c := range []struct {
		status string
		isExc  bool
		want   string
	}{
		{pend, false, pend}, {lc, false, lc}, {it, false, it}, {ofd, false, ofd}, {del, false, del}, {exc, false, exc},
		{pend, true, exc}, {lc, true, exc}, {it, true, exc}, {ofd, true, exc}, {exc, true, exc},
		{del, true, del},
	} {
		require.Equal(t, c.want, store.CheckpointRuleStatus(c.status, c.isExc), "%s isException=%v", c.status, c.isExc)
	}

	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		current string
		step    store.TrackingStep
		want    string
	}{
		{lc, store.TrackingStep{Status: it, IsException: true, Time: t0}, exc},
		{it, store.TrackingStep{Status: it, IsException: true, Time: t0}, exc},
		{ofd, store.TrackingStep{Status: ofd, IsException: true, Time: t0}, exc},
		{ofd, store.TrackingStep{Status: lc, IsException: true, Time: t0}, exc},
		{exc, store.TrackingStep{Status: it, IsException: true, Time: t0}, exc},
		{exc, store.TrackingStep{Status: it, Time: t0}, it},
		{it, store.TrackingStep{Status: del, IsException: true, Time: t0}, del},
		{del, store.TrackingStep{Status: it, IsException: true, Time: t0}, del},
	} {
		got, _ := store.ShipmentStatusAfterSteps(c.current, nil, []store.TrackingStep{c.step})
		require.Equal(t, c.want, got, "%s + %s isException=%v", c.current, c.step.Status, c.step.IsException)
	}
}

// trackingTestOrg creates an organization.
func trackingTestOrg(t *testing.T, s *store.Store) uuid.UUID {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "t" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "T"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Tracking "+u.Email, u.ID)
	require.NoError(t, err)
	return org.ID
}

// trackingTestShipment inserts a shipment.
func trackingTestShipment(t *testing.T, s *store.Store, orgID uuid.UUID, status string, tracking *string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	_, err := s.Pool.Exec(t.Context(), `INSERT INTO shipments (id, organization_id, carrier, service, status, tracking_number)
		VALUES ($1, $2, 'carrier_a', 'FEDEX_GROUND', $3, $4)`, id, orgID, status, tracking)
	require.NoError(t, err)
	return id
}

type trackingShipmentRow struct {
	Status        string
	DeliveredAt   *time.Time
	LastTrackedAt *time.Time
	ToLat, ToLng  *float64
	FromLat       *float64
	UpdatedAt     time.Time
}

func trackingTestRow(t *testing.T, s *store.Store, id uuid.UUID) trackingShipmentRow {
	t.Helper()
	var r trackingShipmentRow
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT status, delivered_at, last_tracked_at, ship_to_lat, ship_to_lng, ship_from_lat, updated_at
		FROM shipments WHERE id = $1`, id).Scan(&r.Status, &r.DeliveredAt, &r.LastTrackedAt, &r.ToLat, &r.ToLng, &r.FromLat, &r.UpdatedAt))
	return r
}

func trackingTestCount(t *testing.T, s *store.Store, shipmentID uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM tracking_checkpoints WHERE shipment_id = $1`, shipmentID).Scan(&n))
	return n
}

func trackingPtr[T any](v T) *T { return &v }

func trackingCP(shipment uuid.UUID, seq int, status string, at time.Time, event string) store.Checkpoint {
	c := store.Checkpoint{ShipmentID: shipment, Sequence: seq, Status: status, CheckpointTime: at, Source: "carrier_a",
		City: trackingPtr("MEMPHIS"), CountryCode: trackingPtr("US"), Latitude: trackingPtr(35.1), Longitude: trackingPtr(-90.0)}
	if event != "" {
		c.SourceEventID = trackingPtr(event)
	}
	return c
}

func TestTrackingRecordUpsert(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	sh := trackingTestShipment(t, s, org, store.TrackingLabelCreated, trackingPtr("794843185271"))
	t0 := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

	batch := []store.Checkpoint{
		trackingCP(sh, 0, store.TrackingLabelCreated, t0, "e0"),
		trackingCP(sh, 1, store.TrackingInTransit, t0.Add(10*time.Hour), "e1"),
		trackingCP(sh, 2, store.TrackingOutForDelivery, t0.Add(48*time.Hour), "e2"),
		trackingCP(sh, 3, store.TrackingDelivered, t0.Add(53*time.Hour), "e3"),
	}
	batch[3].RawData = json.RawMessage(`{"scan": "DL"}`)
	res, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: batch})
	require.NoError(t, err)
	require.Len(t, res.Checkpoints, 4)
	for i, c := range res.Checkpoints {
		require.NotEqual(t, uuid.Nil, c.ID)
		require.Equal(t, org, c.OrganizationID)
		require.Equal(t, sh, c.ShipmentID)
		require.Equal(t, i, c.Sequence, "input order")
		require.Equal(t, batch[i].Status, c.Status)
		require.True(t, batch[i].CheckpointTime.Equal(c.CheckpointTime))
	}
	require.JSONEq(t, `{"scan": "DL"}`, string(res.Checkpoints[3].RawData))
	require.Equal(t, []store.StatusChange{{ShipmentID: sh, From: store.TrackingLabelCreated, To: store.TrackingDelivered, DeliveredAt: trackingPtr(t0.Add(53 * time.Hour))}}, res.Changes)
	row := trackingTestRow(t, s, sh)
	require.Equal(t, store.TrackingDelivered, row.Status)
	require.True(t, t0.Add(53*time.Hour).Equal(*row.DeliveredAt))
	require.Nil(t, row.LastTrackedAt, "the API does not stamp last_tracked_at")
	require.Equal(t, 4, trackingTestCount(t, s, sh))

	// The same batch again: the same rows, nothing new, updated_at unchanged.
	again, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: batch})
	require.NoError(t, err)
	require.Empty(t, again.Changes)
	for i := range batch {
		require.Equal(t, res.Checkpoints[i].ID, again.Checkpoints[i].ID)
		require.Equal(t, res.Checkpoints[i].UpdatedAt, again.Checkpoints[i].UpdatedAt, "unchanged rows keep updated_at")
	}
	require.Equal(t, 4, trackingTestCount(t, s, sh))

	// A changed report updates the row in place.
	changed := batch[1]
	changed.Description = trackingPtr("Departed FedEx hub")
	changed.Sequence = 7
	up, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{changed}})
	require.NoError(t, err)
	require.Equal(t, res.Checkpoints[1].ID, up.Checkpoints[0].ID)
	require.Equal(t, 7, up.Checkpoints[0].Sequence)
	require.Equal(t, "Departed FedEx hub", *up.Checkpoints[0].Description)
	require.True(t, up.Checkpoints[0].UpdatedAt.After(res.Checkpoints[1].UpdatedAt))
	require.Equal(t, res.Checkpoints[1].CreatedAt, up.Checkpoints[0].CreatedAt)

	// The same key twice in one batch is stored once (the last wins); a
	// checkpoint without sourceEventId is always inserted.
	dupA := trackingCP(sh, 10, store.TrackingInTransit, t0, "dup")
	dupB := trackingCP(sh, 11, store.TrackingInTransit, t0, "dup")
	noID := trackingCP(sh, 12, store.TrackingInTransit, t0, "")
	out, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{dupA, dupB, noID, noID}})
	require.NoError(t, err)
	require.Len(t, out.Checkpoints, 4)
	require.Equal(t, out.Checkpoints[0].ID, out.Checkpoints[1].ID)
	require.Equal(t, 11, out.Checkpoints[0].Sequence)
	require.NotEqual(t, out.Checkpoints[2].ID, out.Checkpoints[3].ID)
	require.Nil(t, out.Checkpoints[2].SourceEventID)
	require.Equal(t, 4+1+2, trackingTestCount(t, s, sh))
}

func TestTrackingRecordInsertOnlyAndUnknown(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	other := trackingTestOrg(t, s)
	sh := trackingTestShipment(t, s, org, store.TrackingPending, nil)
	foreign := trackingTestShipment(t, s, other, store.TrackingPending, nil)
	t0 := time.Now().UTC().Truncate(time.Second)

	cp := trackingCP(sh, 0, store.TrackingInTransit, t0, "evt-1")
	res, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{cp}, InsertOnly: true})
	require.NoError(t, err)
	require.Equal(t, store.TrackingInTransit, trackingTestRow(t, s, sh).Status)

	// A duplicate: ErrConflict, nothing changes.
	dup := cp
	dup.Status = store.TrackingDelivered
	dup.CheckpointTime = t0.Add(time.Hour)
	_, err = store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{dup}, InsertOnly: true})
	require.ErrorIs(t, err, store.ErrConflict)
	require.Equal(t, store.TrackingInTransit, trackingTestRow(t, s, sh).Status, "rolled back")
	require.Equal(t, 1, trackingTestCount(t, s, sh))
	// Another source with the same event id is another checkpoint.
	dup.Source = "manual"
	_, err = store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{dup}, InsertOnly: true})
	require.NoError(t, err)
	require.Equal(t, store.TrackingDelivered, trackingTestRow(t, s, sh).Status)
	require.NotEqual(t, uuid.Nil, res.Checkpoints[0].ID)

	// Unknown and foreign shipments reject the whole write, naming them.
	missing := uuid.New()
	_, err = store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{
		trackingCP(sh, 5, store.TrackingInTransit, t0, "x1"),
		trackingCP(foreign, 0, store.TrackingInTransit, t0, "x2"),
		trackingCP(missing, 0, store.TrackingInTransit, t0, "x3"),
	}})
	var unknown *store.UnknownShipmentsError
	require.True(t, errors.As(err, &unknown), "%v", err)
	require.ElementsMatch(t, []uuid.UUID{foreign, missing}, unknown.IDs)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 2, trackingTestCount(t, s, sh), "nothing written")

	// Without an organization (the poller) the foreign shipment is fine and
	// its checkpoint takes the shipment's organization.
	out, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{Checkpoints: []store.Checkpoint{trackingCP(foreign, 0, store.TrackingInTransit, t0, "x2")}})
	require.NoError(t, err)
	require.Equal(t, other, out.Checkpoints[0].OrganizationID)
}

func TestTrackingRecordProgression(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	sh := trackingTestShipment(t, s, org, store.TrackingLabelCreated, trackingPtr("1Z999"))
	t0 := time.Date(2025, 5, 5, 8, 0, 0, 0, time.UTC)
	rec := func(cps ...store.Checkpoint) []store.StatusChange {
		t.Helper()
		res, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: cps})
		require.NoError(t, err)
		return res.Changes
	}
	status := func() string { return trackingTestRow(t, s, sh).Status }

	rec(trackingCP(sh, 1, store.TrackingInTransit, t0.Add(2*time.Hour), "a"))
	require.Equal(t, store.TrackingInTransit, status())
	// An older checkpoint, even of a later stage, does not move it: it is
	// not newer than what the shipment shows.
	require.Empty(t, rec(trackingCP(sh, 2, store.TrackingOutForDelivery, t0.Add(time.Hour), "b")))
	require.Equal(t, store.TrackingInTransit, status())
	// A newer earlier-stage checkpoint does not move it back.
	require.Empty(t, rec(trackingCP(sh, 3, store.TrackingLabelCreated, t0.Add(3*time.Hour), "c")))
	require.Equal(t, store.TrackingInTransit, status())
	// Exception, then a later scan leaves it.
	rec(trackingCP(sh, 4, store.TrackingException, t0.Add(4*time.Hour), "d"))
	require.Equal(t, store.TrackingException, status())
	rec(trackingCP(sh, 5, store.TrackingOutForDelivery, t0.Add(5*time.Hour), "e"))
	require.Equal(t, store.TrackingOutForDelivery, status())
	ch := rec(trackingCP(sh, 6, store.TrackingDelivered, t0.Add(6*time.Hour), "f"))
	require.Len(t, ch, 1)
	require.Equal(t, store.TrackingOutForDelivery, ch[0].From)
	row := trackingTestRow(t, s, sh)
	require.Equal(t, store.TrackingDelivered, row.Status)
	require.True(t, t0.Add(6*time.Hour).Equal(*row.DeliveredAt))
	// Delivered is final.
	require.Empty(t, rec(trackingCP(sh, 7, store.TrackingException, t0.Add(7*time.Hour), "g")))
	require.Equal(t, store.TrackingDelivered, status())
}

// TestTrackingRecordFutureCheckpoint: a checkpoint dated in the future does
// not count as the shipment's newest, so it cannot freeze the status; a
// checkpoint flagged isException moves the shipment to exception.
func TestTrackingRecordFutureCheckpoint(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	sh := trackingTestShipment(t, s, org, store.TrackingLabelCreated, trackingPtr("794800000001"))
	rec := func(cps ...store.Checkpoint) {
		t.Helper()
		_, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: cps})
		require.NoError(t, err)
	}
	status := func() string { return trackingTestRow(t, s, sh).Status }
	now := time.Now().UTC().Truncate(time.Second)

	// A label_created scan a year ahead (stored as it came).
	rec(trackingCP(sh, 0, store.TrackingLabelCreated, now.AddDate(1, 0, 0), "future"))
	require.Equal(t, store.TrackingLabelCreated, status())
	// Today's scans still move the shipment.
	rec(trackingCP(sh, 1, store.TrackingInTransit, now.Add(-2*time.Hour), "a"))
	require.Equal(t, store.TrackingInTransit, status())
	// A scan older than a real newest one still does not.
	rec(trackingCP(sh, 2, store.TrackingOutForDelivery, now.Add(-3*time.Hour), "b"))
	require.Equal(t, store.TrackingInTransit, status())

	// isException on an in_transit scan: exception.
	c := trackingCP(sh, 3, store.TrackingInTransit, now.Add(-time.Hour), "c")
	c.IsException = true
	rec(c)
	require.Equal(t, store.TrackingException, status())
	// A later plain scan takes it out again.
	rec(trackingCP(sh, 4, store.TrackingOutForDelivery, now.Add(-30*time.Minute), "d"))
	require.Equal(t, store.TrackingOutForDelivery, status())
}

func TestTrackingRecordShipmentStamps(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	a := trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("111"))
	b := trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("222"))
	_, err := s.Pool.Exec(ctx, `UPDATE shipments SET ship_to_lat = 1, ship_to_lng = 2 WHERE id = $1`, b)
	require.NoError(t, err)
	before := trackingTestRow(t, s, a)

	_, err = store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{Shipments: []store.ShipmentTracked{
		{ShipmentID: a, Tracked: true, FromLat: trackingPtr(35.0), FromLng: trackingPtr(-90.0), ToLat: trackingPtr(47.6), ToLng: trackingPtr(-122.3)},
		{ShipmentID: b, Tracked: true, ToLat: trackingPtr(47.6), ToLng: trackingPtr(-122.3)},
	}})
	require.NoError(t, err)
	ra, rb := trackingTestRow(t, s, a), trackingTestRow(t, s, b)
	require.NotNil(t, ra.LastTrackedAt)
	require.NotNil(t, rb.LastTrackedAt)
	require.InDelta(t, 47.6, *ra.ToLat, 1e-9)
	require.InDelta(t, 35.0, *ra.FromLat, 1e-9)
	require.True(t, ra.UpdatedAt.After(before.UpdatedAt), "coordinates filled: updated")
	require.InDelta(t, 1, *rb.ToLat, 1e-9, "existing coordinates are kept")
	require.Equal(t, store.TrackingInTransit, ra.Status)

	// A stamp alone does not touch updated_at.
	_, err = store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{Shipments: []store.ShipmentTracked{{ShipmentID: b, Tracked: true}}})
	require.NoError(t, err)
	rb2 := trackingTestRow(t, s, b)
	require.Equal(t, rb.UpdatedAt, rb2.UpdatedAt)
	require.True(t, rb2.LastTrackedAt.After(*rb.LastTrackedAt))
}

func TestTrackingDueAndTrackable(t *testing.T) {
	s := storetest.New(t)
	ctx := context.Background()
	org := trackingTestOrg(t, s)
	moving := trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("M1"))
	fresh := trackingTestShipment(t, s, org, store.TrackingLabelCreated, trackingPtr("M2"))
	exc := trackingTestShipment(t, s, org, store.TrackingException, trackingPtr("M3"))
	oldExc := trackingTestShipment(t, s, org, store.TrackingException, trackingPtr("M4"))
	delivered := trackingTestShipment(t, s, org, store.TrackingDelivered, trackingPtr("M5"))
	noNumber := trackingTestShipment(t, s, org, store.TrackingInTransit, nil)
	recent := trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("M6"))
	_, err := s.Pool.Exec(ctx, `UPDATE shipments SET last_tracked_at = now() - interval '1 hour' WHERE id = $1`, moving)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET created_at = now() - interval '40 days' WHERE id = $1`, oldExc)
	require.NoError(t, err)
	cutoff, err := store.DatabaseNow(ctx, s.Pool)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET last_tracked_at = now() + interval '1 second' WHERE id = $1`, recent)
	require.NoError(t, err)

	ids, err := store.ShipmentsDueForTracking(ctx, s.Pool, cutoff, 10_000)
	require.NoError(t, err)
	pos := map[uuid.UUID]int{}
	for i, id := range ids {
		pos[id] = i
	}
	for _, id := range []uuid.UUID{moving, fresh, exc} {
		require.Contains(t, pos, id)
	}
	for _, id := range []uuid.UUID{oldExc, delivered, noNumber, recent} {
		require.NotContains(t, pos, id)
	}
	require.Less(t, pos[fresh], pos[moving], "never tracked first")

	// The account: the shipment's own while active, else the oldest active
	// one of the carrier.
	acct := func(status string, created time.Time) uuid.UUID {
		id := uuid.New()
		_, err := s.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, status, created_at)
			VALUES ($1, $2, 'A', 'carrier_a', '\x00', $3, $4)`, id, org, status, created)
		require.NoError(t, err)
		return id
	}
	old := acct("active", time.Now().Add(-time.Hour))
	own := acct("active", time.Now())
	inactive := acct("inactive", time.Now().Add(-2*time.Hour))
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET carrier_account_id = $2 WHERE id = $1`, moving, own)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET carrier_account_id = $2 WHERE id = $1`, fresh, inactive)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET carrier = 'carrier_b' WHERE id = $1`, exc)
	require.NoError(t, err)
	got, err := store.TrackableShipments(ctx, s.Pool, []uuid.UUID{moving, fresh, exc})
	require.NoError(t, err)
	byID := map[uuid.UUID]store.TrackableShipment{}
	for _, g := range got {
		byID[g.ID] = g
	}
	require.Equal(t, own, *byID[moving].AccountID)
	require.Equal(t, old, *byID[fresh].AccountID, "inactive own account: the oldest active one")
	require.Nil(t, byID[exc].AccountID, "no carrier_b account")
	require.Equal(t, "M1", *byID[moving].TrackingNumber)
}

func TestTrackingListAndMap(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := trackingTestOrg(t, s)
	sh := trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("L1"))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := store.RecordCheckpoints(ctx, s.Pool, store.TrackingWrite{OrganizationID: org, Checkpoints: []store.Checkpoint{
		trackingCP(sh, 2, store.TrackingInTransit, t0.Add(2*time.Hour), "c"),
		trackingCP(sh, 0, store.TrackingLabelCreated, t0, "a"),
		trackingCP(sh, 1, store.TrackingInTransit, t0.Add(time.Hour), "b"),
	}})
	require.NoError(t, err)
	list, total, err := store.ListCheckpoints(ctx, s.Pool, org, sh, 2, 0)
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Len(t, list, 2)
	require.Equal(t, []int{0, 1}, []int{list[0].Sequence, list[1].Sequence})
	list, _, err = store.ListCheckpoints(ctx, s.Pool, org, sh, 2, 2)
	require.NoError(t, err)
	require.Equal(t, 2, list[0].Sequence)
	_, total, err = store.ListCheckpoints(ctx, s.Pool, trackingTestOrg(t, s), sh, 10, 0)
	require.NoError(t, err)
	require.Zero(t, total, "scoped by organization")
	require.ErrorIs(t, store.ShipmentOfOrganization(ctx, s.Pool, uuid.New(), sh), store.ErrNotFound)

	// The map: only shipments with coordinates, newest first.
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET ship_to_lat = 47.6, ship_to_lng = -122.3,
		ship_to = '{"city": "Seattle", "provinceCode": "WA"}', ship_from = '{"city": "Memphis", "state": "TN"}' WHERE id = $1`, sh)
	require.NoError(t, err)
	newer := trackingTestShipment(t, s, org, store.TrackingDelivered, trackingPtr("L2"))
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET ship_from_lat = 35, ship_from_lng = -90, created_at = now() + interval '1 minute' WHERE id = $1`, newer)
	require.NoError(t, err)
	trackingTestShipment(t, s, org, store.TrackingInTransit, trackingPtr("L3")) // no coordinates
	items, total, err := store.TrackingMap(ctx, s.Pool, org, store.TrackingMapFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []uuid.UUID{newer, sh}, []uuid.UUID{items[0].ID, items[1].ID})
	require.Equal(t, "Seattle", *items[1].ShipToCity)
	require.Equal(t, "WA", *items[1].ShipToState)
	require.Equal(t, "TN", *items[1].ShipFromState)
	require.Nil(t, items[0].ShipToCity)
	items, total, err = store.TrackingMap(ctx, s.Pool, org, store.TrackingMapFilter{Status: store.TrackingInTransit, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, sh, items[0].ID)
	bridge := uuid.New()
	items, _, err = store.TrackingMap(ctx, s.Pool, org, store.TrackingMapFilter{BridgeID: &bridge, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, items)
}
