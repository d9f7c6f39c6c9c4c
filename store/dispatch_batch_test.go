package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// batchTestAssignments makes n pending assignments of new orders to a new
// hub bridge and returns the hub and the assignments.
func batchTestAssignments(t *testing.T, s *store.Store, org, shop uuid.UUID, n int) (uuid.UUID, []store.DispatchAssignment) {
	t.Helper()
	ctx := t.Context()
	hub := dispTestBridge(t, s, org)
	d, err := store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "To "+hub.String()[:8]))
	require.NoError(t, err)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, shop, fmt.Sprint("b", hub.String()[:6], i)))
		require.NoError(t, err)
		ids[i] = o.ID
	}
	as, err := store.CreateAssignments(ctx, s.Pool, d, ids, nil)
	require.NoError(t, err)
	require.Len(t, as, n)
	return hub, as
}

// Drainers claim disjoint pages (SKIP LOCKED), oldest first; a retried
// page takes its own rows back first; a claim whose lease ran out is
// claimed again; outcomes are recorded only by the claim's holder, with a
// task execution per push and the order marked sent.
func TestClaimAssignmentsAndFinish(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub, as := batchTestAssignments(t, s, org, shop, 50)
	otherHub, _ := batchTestAssignments(t, s, org, shop, 3)

	// Four claimers at once: disjoint pages covering everything.
	var mu sync.Mutex
	seen := map[uuid.UUID]string{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			tok := fmt.Sprint("tok-", i)
			got, err := store.ClaimAssignments(ctx, s.Pool, org, hub, tok, 20, time.Minute)
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			for _, c := range got {
				require.NotContains(t, seen, c.ID, "claimed twice")
				seen[c.ID] = tok
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 50, "every row claimed once, the other hub's none")
	n, err := store.CountPendingAssignments(ctx, s.Pool, org, &otherHub)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	// A retried page (same token) takes its own rows back.
	first := seen[as[0].ID]
	var mine []uuid.UUID
	for id, tok := range seen {
		if tok == first {
			mine = append(mine, id)
		}
	}
	again, err := store.ClaimAssignments(ctx, s.Pool, org, hub, first, 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, len(mine))

	// Nothing pending and no lease ran out: a new token gets nothing.
	none, err := store.ClaimAssignments(ctx, s.Pool, org, hub, "late", 100, time.Minute)
	require.NoError(t, err)
	require.Empty(t, none)

	// A lease that ran out (its run crashed): claimed again.
	_, err = s.Pool.Exec(ctx, `UPDATE dispatch_assignments SET claimed_until = now() - interval '1 second' WHERE claimed_by = $1`, first)
	require.NoError(t, err)
	taken, err := store.ClaimAssignments(ctx, s.Pool, org, hub, "rescuer", 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, taken, len(mine))

	// The old holder's outcomes are refused; the rescuer's recorded.
	outs := make([]store.BatchOutcome, len(taken))
	for i, c := range taken {
		outs[i] = store.BatchOutcome{ID: c.ID, Status: store.AssignmentCompleted, ExternalID: fmt.Sprint("ext-", i), Kind: "fulfillment"}
	}
	outs[0] = store.BatchOutcome{ID: taken[0].ID, Status: store.AssignmentFailed, ErrorMessage: "hub refused"}
	outs[1] = store.BatchOutcome{ID: taken[1].ID, Status: store.AssignmentSkipped, ErrorMessage: "the order is cancelled"}
	done, err := store.FinishClaimedAssignments(ctx, s.Pool, org, first, "push-order", "wf", outs)
	require.NoError(t, err)
	require.Zero(t, done, "the claim moved on")
	done, err = store.FinishClaimedAssignments(ctx, s.Pool, org, "rescuer", "push-order", "dispatch-batch/x", outs)
	require.NoError(t, err)
	require.Equal(t, len(outs), done)

	failed, err := store.AssignmentByID(ctx, s.Pool, org, taken[0].ID)
	require.NoError(t, err)
	require.Equal(t, store.AssignmentFailed, failed.Status)
	require.Equal(t, "hub refused", *failed.ErrorMessage)
	require.Equal(t, 1, failed.RetryCount)
	require.Nil(t, failed.ClaimedBy)
	require.NotNil(t, failed.TaskExecutionID)
	skipped, err := store.AssignmentByID(ctx, s.Pool, org, taken[1].ID)
	require.NoError(t, err)
	require.Equal(t, store.AssignmentSkipped, skipped.Status)
	require.Nil(t, skipped.TaskExecutionID)
	ok, err := store.AssignmentByID(ctx, s.Pool, org, taken[2].ID)
	require.NoError(t, err)
	require.Equal(t, store.AssignmentCompleted, ok.Status)
	require.JSONEq(t, `{"externalOrderId": "ext-2"}`, string(ok.Metadata))
	var status, wf string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status, workflow_id FROM task_executions WHERE id = $1`, ok.TaskExecutionID).Scan(&status, &wf))
	require.Equal(t, "completed", status)
	require.Equal(t, "dispatch-batch/x", wf)
	var sent *time.Time
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT sent_to_fulfillment FROM orders WHERE id = $1`, ok.OrderID).Scan(&sent))
	require.NotNil(t, sent)

	// A single run does not take a row a drainer claimed.
	other, err := store.ClaimAssignments(ctx, s.Pool, org, otherHub, "drainer", 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, other, 1)
	begun, err := store.BeginAssignment(ctx, s.Pool, org, other[0].ID)
	require.NoError(t, err)
	require.Equal(t, "drainer", *begun.ClaimedBy)
}

// A claimer still pushing its first page claims the next with
// ClaimMoreAssignments: other rows, never the ones it holds (they are in
// flight); a retry (ClaimAssignments) takes all it holds back.
func TestClaimMoreAssignments(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub, _ := batchTestAssignments(t, s, org, shop, 25)

	first, err := store.ClaimAssignments(ctx, s.Pool, org, hub, "page", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, first, 10)
	held := map[uuid.UUID]bool{}
	for _, c := range first {
		held[c.ID] = true
	}
	next, err := store.ClaimMoreAssignments(ctx, s.Pool, org, hub, "page", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, next, 10)
	for _, c := range next {
		require.False(t, held[c.ID], "a row in flight claimed again")
		held[c.ID] = true
	}
	last, err := store.ClaimMoreAssignments(ctx, s.Pool, org, hub, "page", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, last, 5, "the rest")
	none, err := store.ClaimMoreAssignments(ctx, s.Pool, org, hub, "page", 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, none)

	// The page's retry takes back every row it holds.
	again, err := store.ClaimAssignments(ctx, s.Pool, org, hub, "page", 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 25)
}

// OrdersToDispatch reads the orders as OrdersByIDs, the source data left
// out unless asked for.
func TestOrdersToDispatch(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, bridge := orderTestOrg(t, s)
	in := orderTestNew(org, bridge, "src-1")
	in.SourceData = json.RawMessage(`{"id": 1, "raw": "platform object"}`)
	o, err := store.CreateOrder(ctx, s.Pool, in)
	require.NoError(t, err)
	full, err := store.OrdersByIDs(ctx, s.Pool, org, []uuid.UUID{o.ID})
	require.NoError(t, err)
	require.Len(t, full, 1)
	require.JSONEq(t, `{"id": 1, "raw": "platform object"}`, string(full[0].SourceData))

	lean, err := store.OrdersToDispatch(ctx, s.Pool, org, []uuid.UUID{o.ID, uuid.New()}, false)
	require.NoError(t, err)
	require.Len(t, lean, 1)
	require.Empty(t, lean[0].SourceData)
	lean[0].SourceData = full[0].SourceData
	require.Equal(t, full[0], lean[0], "everything else as OrdersByIDs")
	with, err := store.OrdersToDispatch(ctx, s.Pool, org, []uuid.UUID{o.ID}, true)
	require.NoError(t, err)
	require.Equal(t, full, with)
}
