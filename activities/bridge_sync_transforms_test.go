package activities

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/transforms"
)

// addTransformation stores an active transformation of the fixture's
// organization (bridge-scoped when bridge is set).
func (f *taskFixture) addTransformation(name, trigger string, priority int, bridge bool, code string) store.Transformation {
	f.t.Helper()
	t := store.Transformation{ID: uuid.New(), OrganizationID: f.orgID, Name: name, TriggerPoint: trigger,
		Code: code, IsActive: true, Priority: priority}
	if bridge {
		t.BridgeID = &f.bridgeID
	}
	out, err := store.CreateTransformation(context.Background(), f.st.Pool, t)
	require.NoError(f.t, err)
	return out
}

// storedOrder reads the bridge's order with external id ext.
func (f *taskFixture) storedOrder(ext string) store.Order {
	f.t.Helper()
	var id uuid.UUID
	require.NoError(f.t, f.st.Pool.QueryRow(context.Background(),
		`SELECT id FROM orders WHERE bridge_id = $1 AND external_id = $2`, f.bridgeID, ext).Scan(&id))
	o, err := store.OrderByID(context.Background(), f.st.Pool, f.orgID, id)
	require.NoError(f.t, err)
	return o
}

func (o orderView) city(t *testing.T) string {
	var a map[string]any
	require.NoError(t, json.Unmarshal(o.ShippingAddress, &a))
	return a["city"].(string)
}

type orderView struct{ store.Order }

func transformFixture(t *testing.T) (*taskFixture, *fakePlatform) {
	f, fake, _ := fiveOrderFixture(t)
	f.acts.Transforms = transforms.New(f.st.Pool, nil)
	return f, fake
}

func TestGrabOrdersBeforeSyncReshapesIncomingOrders(t *testing.T) {
	f, fake := transformFixture(t)
	// The bridge's (priority 10) runs first; the global one gets its output.
	f.addTransformation("upper city", transforms.BeforeSync, 10, true, `function transform(d) {
		d.shippingAddress.city = d.shippingAddress.city.toUpperCase(); return d }`)
	f.addTransformation("tag city", transforms.BeforeSync, 5, false, `function transform(d) {
		d.tags = (d.tags || []).concat(['city:' + d.shippingAddress.city]) }`)
	off := f.addTransformation("inactive", transforms.BeforeSync, 20, false, `function transform(d) { d.currency = 'XXX' }`)
	_, err := store.UpdateTransformation(context.Background(), f.st.Pool, f.orgID, off.ID, store.TransformationPatch{IsActive: new(bool)})
	require.NoError(t, err)

	require.Equal(t, SyncCounts{Fetched: 5, Created: 5}, f.grab(platforms.TaskGrabOrders))
	for i := range 5 {
		o := orderView{f.storedOrder(fakeOrder(i, time.Time{}).ExternalID)}
		require.Equal(t, "OTTAWA", o.city(t))
		require.Equal(t, []string{"city:OTTAWA"}, o.Tags)
		require.Equal(t, "CAD", o.Currency)
	}
	// The platform's copy is untouched, and a sync of the same data again
	// changes nothing (the transformation gives the same result).
	require.Equal(t, "Ottawa", fake.orders[4].ShippingAddress.City)
	require.Equal(t, SyncCounts{Fetched: 1, Unchanged: 1}, f.grab(platforms.TaskGrabOrders))
}

func TestGrabOrdersAfterSyncWritesBackOncePerPage(t *testing.T) {
	f, _ := transformFixture(t)
	ctx := context.Background()
	// Not idempotent on purpose: a second application would add the tag twice.
	f.addTransformation("review", transforms.AfterSync, 0, false, `function transform(o) {
		o.metadata.reviewed = true; o.metadata.seenId = o.id; o.tags.push('synced'); return o }`)

	exec := f.newExec(platforms.TaskGrabOrders)
	in := SyncPageInput{OrganizationID: f.orgID.String(), TaskExecutionID: exec, BridgeID: f.bridgeID.String(), TaskName: platforms.TaskGrabOrders}
	first, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)
	require.Equal(t, SyncCounts{Fetched: 2, Created: 2, AfterSyncWritten: 2}, first.SyncCounts)
	// The answer was lost: the replayed page answers the same and writes nothing twice.
	again, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.SyncCounts, again.SyncCounts)

	for i := range 2 {
		o := f.storedOrder(fakeOrder(i, time.Time{}).ExternalID)
		var meta map[string]any
		require.NoError(t, json.Unmarshal(o.Metadata, &meta))
		require.Equal(t, map[string]any{"reviewed": true, "seenId": o.ID.String()}, meta)
		require.Equal(t, []string{"synced"}, o.Tags)
		acts, err := store.OrderActivities(ctx, f.st.Pool, f.orgID, o.ID)
		require.NoError(t, err)
		var n int
		for _, a := range acts {
			if a.Type == store.OrderTransformActivityType {
				n++
				require.Equal(t, "Updated tags, metadata by after_sync transformation review", a.Description)
				require.Equal(t, exec, a.Metadata["taskExecutionId"])
			}
		}
		require.Equal(t, 1, n)
	}

	// An attempt that stored the page but died before its write-back: the
	// retry writes the missing order back (simulated by undoing one).
	o := f.storedOrder("5000")
	_, err = f.st.Pool.Exec(ctx, `DELETE FROM order_activities WHERE order_id = $1 AND type = 'transform'`, o.ID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `UPDATE orders SET metadata = '{}', tags = '{}' WHERE id = $1`, o.ID)
	require.NoError(t, err)
	third, err := f.acts.SyncPage(ctx, in)
	require.NoError(t, err)
	require.True(t, third.Replayed)
	require.Equal(t, first.SyncCounts, third.SyncCounts)
	require.Equal(t, []string{"synced"}, f.storedOrder("5000").Tags)
	require.Equal(t, []string{"synced"}, f.storedOrder("5001").Tags)

	// The rest of the sync: the other pages are written back too.
	require.Equal(t, SyncCounts{Fetched: 3, Created: 3, AfterSyncWritten: 3}, f.grab(platforms.TaskGrabOrders))
}

func TestGrabOrdersFailingTransformationsLeaveOrdersUntouched(t *testing.T) {
	f, _ := transformFixture(t)
	boom := f.addTransformation("boom", transforms.BeforeSync, 0, true, `function transform(d) {
		if (d.externalId === '5001') throw new Error('no city for ' + d.externalId);
		d.shippingAddress.city = 'X' }`)
	rekey := f.addTransformation("rekey", transforms.BeforeSync, 0, false, `function transform(d) {
		if (d.externalId === '5003') d.externalId = 'other' }`)
	total := f.addTransformation("zero totals", transforms.AfterSync, 0, false, `function transform(o) {
		if (o.externalId === '5002') o.totals.total = 0;
		if (o.externalId === '5004') o.status = 'lost';
		o.metadata.ok = true }`)

	counts := f.grab(platforms.TaskGrabOrders)
	require.Equal(t, 5, counts.Created)
	require.Equal(t, 3, counts.AfterSyncWritten)
	require.Equal(t, 4, counts.TransformFailed)
	require.ElementsMatch(t, []TransformError{
		{TransformationID: boom.ID.String(), Name: "boom", TriggerPoint: "before_sync", ExternalID: "5001",
			Error: counts.TransformErrors[0].Error},
		{TransformationID: rekey.ID.String(), Name: "rekey", TriggerPoint: "before_sync", ExternalID: "5003",
			Error: "a before_sync transformation may not change externalId"},
		{TransformationID: total.ID.String(), Name: "zero totals", TriggerPoint: "after_sync", ExternalID: "5002",
			Error: "after_sync may change only status, tags, note, metadata, shippingAddress; the result changes totals"},
		{TransformationID: total.ID.String(), Name: "zero totals", TriggerPoint: "after_sync", ExternalID: "5004",
			Error: "status must be one of pending, confirmed, processing, shipped, delivered, cancelled, refunded, on_hold"},
	}, counts.TransformErrors)
	require.Equal(t, "5001", counts.TransformErrors[0].ExternalID)
	require.Contains(t, counts.TransformErrors[0].Error, "no city for 5001")
	require.ElementsMatch(t, []TransformFailures{
		{TransformationID: boom.ID.String(), Name: "boom", Failed: 1},
		{TransformationID: rekey.ID.String(), Name: "rekey", Failed: 1},
		{TransformationID: total.ID.String(), Name: "zero totals", Failed: 2},
	}, counts.FailingTransformations)

	for ext, want := range map[string]struct {
		city string
		meta string
	}{"5000": {"X", `{"ok": true}`}, "5001": {"Ottawa", `{"ok": true}`}, "5002": {"X", `{}`}, "5003": {"Ottawa", `{"ok": true}`}, "5004": {"X", `{}`}} {
		o := orderView{f.storedOrder(ext)}
		require.Equal(t, want.city, o.city(t), ext)
		require.JSONEq(t, want.meta, string(o.Metadata), ext)
		require.Equal(t, "confirmed", o.Status, ext)
		require.Contains(t, string(o.Totals), `"total": 44`, ext)
	}
}

// Issue 15, finding 2: one organization's before_sync transformation that
// overruns on every order (saved behind the save check's back) does not
// slow another organization's sync: that one runs its own transformation
// on every order, in time. The hostile sync imports its orders
// untransformed and names the failing transformation.
func TestHostileTransformationDoesNotStarveAnotherSync(t *testing.T) {
	hostile, _ := transformFixture(t)
	innocent, _ := transformFixture(t)
	bomb := hostile.addTransformation("bomb", transforms.BeforeSync, 0, false,
		`function transform(d) { var a = []; for (;;) a.push(a.length) }`)
	innocent.addTransformation("tag", transforms.BeforeSync, 0, false, `function transform(d) { d.tags = ["seen"] }`)

	done := make(chan SyncCounts, 1)
	go func() { done <- hostile.grab(platforms.TaskGrabOrders) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	counts := innocent.grab(platforms.TaskGrabOrders)
	took := time.Since(start)
	require.Equal(t, 5, counts.Created)
	require.Zero(t, counts.TransformFailed, "%+v", counts.TransformErrors)
	require.Less(t, took, 3*time.Second, "the innocent sync waited for the hostile one")
	require.Equal(t, []string{"seen"}, innocent.storedOrder("5000").Tags)

	hc := <-done
	require.Equal(t, 5, hc.Created, "the hostile organization's orders are imported untransformed")
	require.Equal(t, 5, hc.TransformFailed)
	require.Equal(t, []TransformFailures{{TransformationID: bomb.ID.String(), Name: "bomb", Failed: 5}}, hc.FailingTransformations)
}

func TestSyncCountsCapTransformErrors(t *testing.T) {
	var c SyncCounts
	for i := range MaxTransformErrors + 5 {
		var page SyncCounts
		page.transformFailed(transforms.AfterSync, "e", transforms.Result{Name: "t", Error: "x"}, "")
		page.Fetched = i
		c.Add(page)
	}
	require.Equal(t, MaxTransformErrors+5, c.TransformFailed)
	require.Len(t, c.TransformErrors, MaxTransformErrors)
	// Every failure is counted by transformation, past the cap.
	require.Equal(t, []TransformFailures{{TransformationID: uuid.Nil.String(), Name: "t", Failed: MaxTransformErrors + 5}}, c.FailingTransformations)
	raw, err := json.Marshal(SyncCounts{Fetched: 1})
	require.NoError(t, err)
	require.JSONEq(t, `{"fetched":1,"created":0,"updated":0,"unchanged":0,"failed":0}`, string(raw), "no transformation fields without transformations")
}

// BenchmarkSyncPageTransforms stores a 250-order page (every order changed
// since the last run, so each is updated) with no transformation, with
// one empty transformation at before_sync and after_sync, and with a
// 10-line one at each; ns/order is the page's time per order.
func BenchmarkSyncPageTransforms(b *testing.B) {
	const tenLines = `function transform(d) {
  var n = 0;
  for (var i = 0; i < d.lineItems.length; i++) {
    n += d.lineItems[i].quantity;
  }
  d.tags = (d.tags || []).concat(['items:' + n]);
  if (d.shippingAddress) { d.shippingAddress.city = String(d.shippingAddress.city).toUpperCase(); }
  d.metadata = d.metadata || {};
  if (d.status === 'confirmed') { d.metadata.checked = true; }
  return d;
}`
	for _, bc := range []struct{ name, code string }{{"none", ""}, {"empty", `function transform(d) { return d }`}, {"10-line", tenLines}} {
		b.Run(bc.name, func(b *testing.B) {
			st := storetest.New(b)
			t0 := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
			fake := &fakePlatform{pageSize: 250}
			for i := range 250 {
				fake.orders = append(fake.orders, fakeOrder(i, t0))
			}
			f := newTaskFixture(b, st, fake, fake)
			f.acts.Transforms = transforms.New(st.Pool, nil)
			if bc.code != "" {
				for _, trig := range []string{transforms.BeforeSync, transforms.AfterSync} {
					f.addTransformation(bc.name+" "+trig, trig, 0, true, bc.code)
				}
			}
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				for j := range fake.orders {
					fake.orders[j].Tags = []string{"rev" + strconv.Itoa(i)}
				}
				exec := f.newExec(platforms.TaskGrabOrders)
				b.StartTimer()
				res, err := f.acts.SyncPage(ctx, SyncPageInput{OrganizationID: f.orgID.String(), TaskExecutionID: exec,
					BridgeID: f.bridgeID.String(), TaskName: platforms.TaskGrabOrders})
				if err != nil || res.TransformFailed > 0 || res.Created+res.Updated != 250 {
					b.Fatalf("%v %+v", err, res.SyncCounts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*250), "ns/order")
		})
	}
}

func TestRewriteOrdersLeavesAnOrderEditedMeanwhile(t *testing.T) {
	f, _ := transformFixture(t)
	ctx := context.Background()
	f.grab(platforms.TaskGrabOrders)
	o := f.storedOrder("5000")
	rw := store.OrderRewrite{OrderID: o.ID, ActivityID: uuid.New(), ReadAt: o.UpdatedAt, Status: "on_hold",
		Metadata: json.RawMessage(`{"a": 1}`), Tags: []string{"x"}, Fields: []string{"status"}, Description: "d"}

	// Edited after the transformation read it: the edit wins.
	_, err := f.st.Pool.Exec(ctx, `UPDATE orders SET updated_at = updated_at + interval '1 second' WHERE id = $1`, o.ID)
	require.NoError(t, err)
	written, err := store.RewriteOrders(ctx, f.st.Pool, f.orgID, []store.OrderRewrite{rw}, "t", nil)
	require.NoError(t, err)
	require.Empty(t, written)
	require.Equal(t, "confirmed", f.storedOrder("5000").Status)

	// Read as it is: written once, with its activity; again: nothing.
	rw.ReadAt = f.storedOrder("5000").UpdatedAt
	for range 2 {
		written, err = store.RewriteOrders(ctx, f.st.Pool, f.orgID, []store.OrderRewrite{rw}, "t", map[string]any{"k": "v"})
		require.NoError(t, err)
		rw.ReadAt = f.storedOrder("5000").UpdatedAt
	}
	got := f.storedOrder("5000")
	require.Equal(t, "on_hold", got.Status)
	require.Equal(t, []string{"x"}, got.Tags)
	require.JSONEq(t, `{"a": 1}`, string(got.Metadata))
	require.Nil(t, got.ShippingAddress, "a nil address clears it")
	acts, err := store.OrderActivities(ctx, f.st.Pool, f.orgID, o.ID)
	require.NoError(t, err)
	var n int
	for _, a := range acts {
		if a.ID == rw.ActivityID {
			n++
			require.Equal(t, map[string]any{"k": "v", "fields": []any{"status"}}, a.Metadata)
		}
	}
	require.Equal(t, 1, n)
	require.Empty(t, written, "the second write is refused by its recorded activity")
}
