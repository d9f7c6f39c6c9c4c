package operations_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// holdTransforms holds the before_operation of the item hold until
// release is closed.
type holdTransforms struct {
	hold    uuid.UUID
	release chan struct{}
}

func (h *holdTransforms) TransformOrder(_ context.Context, _, _, key uuid.UUID, trigger string) error {
	if key == h.hold && trigger == operations.TriggerBeforeOperation {
		select {
		case <-h.release:
		case <-time.After(time.Minute):
		}
	}
	return nil
}

// A batch's result is settled 500 ms after it arrived even when no other
// result follows: the item that ended first shows settled while the other
// still runs, and the batch's end settles the last one.
func TestProcessBatchSettlesALoneResultOnTime(t *testing.T) {
	tr := &holdTransforms{release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(tr.release) })
	t.Cleanup(release)
	svc, actor, orders := benchOrg(t, 2, operations.Deps{Transforms: tr})
	ctx := t.Context()
	op, err := svc.Create(ctx, actor, operations.CreateInput{Name: "Slow"})
	require.NoError(t, err)
	items, err := svc.AddItems(ctx, actor, op.ID, orders)
	require.NoError(t, err)
	tr.hold = items[1].ID
	_, err = svc.BeginExecution(ctx, actor, op.ID, uuid.New())
	require.NoError(t, err)

	type outcome struct {
		res operations.BatchResult
		err error
	}
	done := make(chan outcome, 1)
	began := time.Now()
	go func() {
		res, err := svc.ProcessBatch(ctx, operations.BatchInput{Actor: actor, OperationID: op.ID, Owner: "operation/" + op.ID.String(),
			Claim: "batch-1", Limit: 10, Parallelism: 2})
		done <- outcome{res, err}
	}()
	status := func(id uuid.UUID) string {
		rows, _, err := svc.ListItems(ctx, actor, op.ID, operations.ListItemsInput{Limit: 10})
		require.NoError(t, err)
		for _, r := range rows {
			if r.ID == id {
				return r.Status
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return status(items[0].ID) == "skipped" }, 5*time.Second, 20*time.Millisecond,
		"the first item's result is written while the batch's other item still runs")
	require.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond, "written by the 500 ms deadline, not at once")
	require.Equal(t, "processing", status(items[1].ID))

	release()
	out := <-done
	require.NoError(t, out.err)
	require.Equal(t, 2, out.res.Skipped)
	require.Equal(t, "skipped", status(items[1].ID))
	require.Equal(t, "completed", out.res.Status)
	require.EqualValues(t, 2, out.res.Processed)
}

// A batch reads each rate snapshot once (snapshots are immutable): one
// found gone stays gone for the batch (the next batch reads again), and a
// read that failed otherwise (here: cancelled) is made again.
func TestBatchReadsSnapshotsOnce(t *testing.T) {
	svc, actor, _ := benchOrg(t, 0, operations.Deps{})
	s := storetest.New(t)
	ctx := t.Context()
	org := actor.OrganizationID
	acct := uuid.New()
	_, err := s.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, supports_rating) VALUES ($1, $2, 'B', 'carrier_b', true)`, acct, org)
	require.NoError(t, err)
	newSnap := func(id uuid.UUID) {
		_, err := store.CreateRateSnapshot(ctx, s.Pool, store.RateSnapshot{ID: id, OrganizationID: org, CarrierAccountID: acct, Carrier: "carrier_b",
			ServiceType: "03", ServiceName: "Ground", TotalPrice: 12.34, Currency: "USD",
			ShipFrom: json.RawMessage(`{"zip": "10001"}`), ShipTo: json.RawMessage(`{"zip": "94105"}`), Packages: json.RawMessage(`[]`)})
		require.NoError(t, err)
	}
	known, later, flaky := uuid.New(), uuid.New(), uuid.New()
	newSnap(known)
	read := operations.BatchSnapshots(svc)

	snap, err := read(ctx, org, known)
	require.NoError(t, err)
	require.Equal(t, known, snap.ID)
	require.Equal(t, "03", snap.ServiceType)

	_, err = read(ctx, org, later)
	require.ErrorIs(t, err, store.ErrNotFound)
	newSnap(later)
	_, err = read(ctx, org, later)
	require.ErrorIs(t, err, store.ErrNotFound, "a snapshot found gone is kept for the batch")
	snap, err = operations.BatchSnapshots(svc)(ctx, org, later)
	require.NoError(t, err, "the next batch reads again")
	require.Equal(t, later, snap.ID)

	newSnap(flaky)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = read(cancelled, org, flaky)
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrNotFound)
	snap, err = read(ctx, org, flaky)
	require.NoError(t, err, "a failed read is not kept")
	require.Equal(t, flaky, snap.ID)
}
