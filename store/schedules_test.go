package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func scheduleTestCreate(t *testing.T, s *store.Store, org, bridge uuid.UUID, task string, active bool) store.Schedule {
	t.Helper()
	sc, err := store.CreateSchedule(t.Context(), s.Pool, store.Schedule{
		ID: uuid.New(), OrganizationID: org, BridgeID: bridge, TaskName: task, CronExpression: "*/5 * * * *",
		Timezone: "Europe/Paris", IsActive: active,
	})
	require.NoError(t, err)
	return sc
}

func TestScheduleCreateReadListUpdateDelete(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	b2 := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Other", map[string]any{"shopDomain": "y.example.com", "accessToken": "t"})

	sc := scheduleTestCreate(t, s, org, b.ID, "grab-orders", true)
	require.Equal(t, "Shop", sc.BridgeName)
	require.Equal(t, platforms.TypeStorefrontA, sc.BridgeType)
	require.JSONEq(t, `{}`, string(sc.Input))
	require.Equal(t, 1, sc.Revision)
	require.Nil(t, sc.NextRunAt)
	paused := scheduleTestCreate(t, s, org, b2.ID, "push-fulfillment", false)

	// Another organization's bridge cannot be scheduled, nor its schedules read.
	other := bridgeTestOrg(t, s)
	_, err := store.CreateSchedule(ctx, s.Pool, store.Schedule{ID: uuid.New(), OrganizationID: other, BridgeID: b.ID, TaskName: "grab-orders", CronExpression: "* * * * *", Timezone: "UTC"})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.ScheduleByID(ctx, s.Pool, other, sc.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	list, total, err := store.ListSchedules(ctx, s.Pool, other, store.ScheduleFilter{Limit: 10})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)

	list, total, err = store.ListSchedules(ctx, s.Pool, org, store.ScheduleFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, paused.ID, list[0].ID, "newest first")
	active := true
	list, total, err = store.ListSchedules(ctx, s.Pool, org, store.ScheduleFilter{IsActive: &active, Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, sc.ID, list[0].ID)
	list, _, err = store.ListSchedules(ctx, s.Pool, org, store.ScheduleFilter{BridgeID: &b2.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, paused.ID, list[0].ID)

	// An update computed from revision 1 applies once.
	next := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	want := sc
	want.CronExpression, want.TaskName, want.NextRunAt = "0 * * * *", "warehouse-sync", &next
	up, err := store.UpdateSchedule(ctx, s.Pool, want, 1)
	require.NoError(t, err)
	require.Equal(t, 2, up.Revision)
	require.Equal(t, "0 * * * *", up.CronExpression)
	require.Equal(t, "warehouse-sync", up.TaskName)
	require.True(t, up.NextRunAt.Equal(next))
	_, err = store.UpdateSchedule(ctx, s.Pool, want, 1)
	require.ErrorIs(t, err, store.ErrConflict)
	want.OrganizationID = other
	_, err = store.UpdateSchedule(ctx, s.Pool, want, 2)
	require.ErrorIs(t, err, store.ErrNotFound)

	// A next run read for an older revision is dropped; a paused
	// schedule has none.
	later := next.Add(time.Hour)
	ok, err := store.SetScheduleNextRun(ctx, s.Pool, org, sc.ID, 1, &later, false)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = store.SetScheduleNextRun(ctx, s.Pool, org, sc.ID, 2, &later, true)
	require.NoError(t, err)
	require.True(t, ok)
	got, err := store.ScheduleByID(ctx, s.Pool, org, sc.ID)
	require.NoError(t, err)
	require.True(t, got.NextRunAt.Equal(later))
	_, err = store.SetScheduleNextRun(ctx, s.Pool, org, paused.ID, 1, &later, false)
	require.NoError(t, err)
	got, err = store.ScheduleByID(ctx, s.Pool, org, paused.ID)
	require.NoError(t, err)
	require.Nil(t, got.NextRunAt)

	// The reconciler's rotation: unchecked first, recent changes left out.
	rows, err := store.SchedulesToCheck(ctx, s.Pool, time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, paused.ID, rows[0].ID, "never checked first")
	rows, err = store.SchedulesToCheck(ctx, s.Pool, time.Now().Add(-time.Minute), 10)
	require.NoError(t, err)
	require.Empty(t, rows)
	ids, err := store.ScheduleIDsBefore(ctx, s.Pool, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{sc.ID, paused.ID}, ids)
	ids, err = store.ScheduleIDsBefore(ctx, s.Pool, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.Empty(t, ids)
	byIDs, err := store.SchedulesByIDs(ctx, s.Pool, []uuid.UUID{paused.ID, uuid.New()})
	require.NoError(t, err)
	require.Len(t, byIDs, 1)
	require.Equal(t, "Other", byIDs[0].BridgeName)
	exists, err := store.ExistingScheduleIDs(ctx, s.Pool, []uuid.UUID{sc.ID, uuid.New()})
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]bool{sc.ID: true}, exists)

	require.ErrorIs(t, store.DeleteSchedule(ctx, s.Pool, other, sc.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteSchedule(ctx, s.Pool, org, sc.ID))
	require.ErrorIs(t, store.DeleteSchedule(ctx, s.Pool, org, sc.ID), store.ErrNotFound)

	// A bridge's schedules go with it.
	_, err = s.Pool.Exec(ctx, `DELETE FROM bridges WHERE id = $1`, b2.ID)
	require.NoError(t, err)
	_, err = store.ScheduleByID(ctx, s.Pool, org, paused.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A fire queues one execution linked to its schedule (a retried fire gets
// it back); the runs write the schedule's counters as they move.
func TestScheduleRunsQueueOnceAndCount(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	sc, err := store.CreateSchedule(ctx, s.Pool, store.Schedule{
		ID: uuid.New(), OrganizationID: org, BridgeID: b.ID, TaskName: "grab-orders", CronExpression: "* * * * *",
		Timezone: "UTC", IsActive: true, Input: json.RawMessage(`{"full": true}`),
	})
	require.NoError(t, err)

	queue := func(fire string) (store.TaskExecution, bool, error) {
		id := uuid.New()
		return store.QueueScheduleRun(ctx, s.Pool, store.ScheduleRun{Schedule: sc, ExecutionID: id, WorkflowID: "bridge-task/" + id.String(), FireKey: fire})
	}
	e, created, err := queue("fire-1")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, store.TaskQueued, e.Status)
	require.Equal(t, "grab-orders", e.TaskName)
	require.JSONEq(t, `{"full": true}`, string(e.Input))
	again, created, err := queue("fire-1")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, e.ID, again.ID)
	// Another fire while the run is queued: overlap.
	_, _, err = queue("fire-2")
	require.ErrorIs(t, err, store.ErrConflict)

	_, err = store.StartTaskExecution(ctx, s.Pool, org, e.ID)
	require.NoError(t, err)
	got, err := store.ScheduleByID(ctx, s.Pool, org, sc.ID)
	require.NoError(t, err)
	require.NotNil(t, got.LastRunAt)
	require.Zero(t, got.RunCount)
	ok, err := store.FinishTaskExecution(ctx, s.Pool, org, e.ID, map[string]int{"created": 1}, "")
	require.NoError(t, err)
	require.True(t, ok)
	got, err = store.ScheduleByID(ctx, s.Pool, org, sc.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.RunCount)
	require.Zero(t, got.ErrorCount)
	require.Nil(t, got.LastError)
	// Finishing twice counts once.
	ok, err = store.FinishTaskExecution(ctx, s.Pool, org, e.ID, nil, "late")
	require.NoError(t, err)
	require.False(t, ok)

	// A run that fails (here straight from queued) counts as a run and an error.
	f, _, err := queue("fire-3")
	require.NoError(t, err)
	_, err = store.FinishTaskExecution(ctx, s.Pool, org, f.ID, nil, "the platform refused the bridge's credentials")
	require.NoError(t, err)
	got, err = store.ScheduleByID(ctx, s.Pool, org, sc.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.RunCount)
	require.Equal(t, 1, got.ErrorCount)
	require.Equal(t, "the platform refused the bridge's credentials", *got.LastError)

	runs, total, err := store.ListScheduleExecutions(ctx, s.Pool, org, sc.ID, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, f.ID, runs[0].ID)
	_, total, err = store.ListScheduleExecutions(ctx, s.Pool, bridgeTestOrg(t, s), sc.ID, 10, 0)
	require.NoError(t, err)
	require.Zero(t, total)

	// Deleting the schedule keeps its runs as records.
	require.NoError(t, store.DeleteSchedule(ctx, s.Pool, org, sc.ID))
	kept, err := store.TaskExecutionByID(ctx, s.Pool, org, e.ID)
	require.NoError(t, err)
	require.Equal(t, store.TaskCompleted, kept.Status)
}

// The reconciler checks first the schedules whose next run has passed (a
// fire Temporal skipped left it behind), then the least recently checked.
func TestSchedulesToCheckPassedNextRunFirst(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, bridgeTestBox(t), org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	stale := scheduleTestCreate(t, s, org, b.ID, "grab-orders", true)
	old := scheduleTestCreate(t, s, org, b.ID, "warehouse-sync", true)
	fresh := scheduleTestCreate(t, s, org, b.ID, "push-fulfillment", true)
	_, err := s.Pool.Exec(ctx, `UPDATE schedules SET updated_at = now() - interval '1 hour',
		checked_at = CASE id WHEN $1 THEN now() - interval '1 minute' WHEN $2 THEN now() - interval '1 hour' ELSE now() - interval '30 minutes' END,
		next_run_at = CASE id WHEN $1 THEN now() - interval '10 minutes' ELSE now() + interval '1 hour' END
		WHERE organization_id = $3`, stale.ID, old.ID, org)
	require.NoError(t, err)
	list, err := store.SchedulesToCheck(ctx, s.Pool, time.Now(), 10)
	require.NoError(t, err)
	var ids []uuid.UUID
	for _, sc := range list {
		ids = append(ids, sc.ID)
	}
	require.Equal(t, []uuid.UUID{stale.ID, old.ID, fresh.ID}, ids)
}
