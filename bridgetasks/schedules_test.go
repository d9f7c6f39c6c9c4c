package bridgetasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// schedules is a scheduler in memory: each synced schedule's state, err
// answered to the next sync.
type schedules struct {
	err     error
	synced  map[uuid.UUID]bridgetasks.Schedule
	deleted []uuid.UUID
}

func (f *schedules) SyncSchedule(_ context.Context, sc bridgetasks.Schedule) (*time.Time, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.synced[sc.ID] = sc
	if !sc.IsActive {
		return nil, nil
	}
	next := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	return &next, nil
}

func (f *schedules) DeleteSchedule(_ context.Context, id uuid.UUID) error {
	f.deleted = append(f.deleted, id)
	delete(f.synced, id)
	return nil
}

// An operation (or the agent) manages schedules as the API does: the
// bridge's type must schedule the task, the spec is checked, a spec the
// scheduler refuses leaves no row, a pause reaches the scheduler before
// the row, a trigger queues a run linked to the schedule, and another
// organization's schedule is not found.
func TestSchedulesAsOperation(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	o := newOrganization(t, s, "Schedules")
	b, err := store.CreateBridge(ctx, s.Pool, store.Bridge{ID: uuid.New(), OrganizationID: o.ID, Type: "storefront_a", Name: "Shop"})
	require.NoError(t, err)
	sched := &schedules{synced: map[uuid.UUID]bridgetasks.Schedule{}}
	r := &runs{}
	svc := bridgetasks.New(bridgetasks.Deps{Store: s, Runs: r, Schedules: sched})
	op := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: o.ID}

	for _, in := range []bridgetasks.ScheduleInput{
		{BridgeID: b.ID, TaskName: "grab-orders", Cron: "61 * * * *"},
		{BridgeID: b.ID, TaskName: "grab-orders", Cron: "* * * * *", Timezone: "Mars/Olympus"},
		{BridgeID: b.ID, TaskName: "process-webhook", Cron: "* * * * *"},
		{BridgeID: uuid.New(), TaskName: "grab-orders", Cron: "* * * * *"},
	} {
		_, err := svc.CreateSchedule(ctx, op, in)
		require.ErrorIs(t, err, domain.ErrInvalid, "%+v", in)
	}
	sched.err = domain.InvalidField("timezone", "is refused by the scheduler")
	_, err = svc.CreateSchedule(ctx, op, bridgetasks.ScheduleInput{BridgeID: b.ID, TaskName: "grab-orders", Cron: "0 * * * *", IsActive: true})
	require.ErrorIs(t, err, domain.ErrInvalid)
	page, err := svc.ListSchedules(ctx, op, bridgetasks.ScheduleFilter{Limit: 10})
	require.NoError(t, err)
	require.Zero(t, page.Total, "a refused spec leaves no row")
	require.Len(t, sched.deleted, 1, "nor a Temporal Schedule")
	sched.err = nil

	sc, err := svc.CreateSchedule(ctx, op, bridgetasks.ScheduleInput{BridgeID: b.ID, TaskName: "grab-orders", Cron: " 0  *  * * *", IsActive: true})
	require.NoError(t, err)
	require.Equal(t, "0 * * * *", sc.CronExpression)
	require.Equal(t, "UTC", sc.Timezone)
	require.NotNil(t, sc.NextRunAt)
	require.True(t, sched.synced[sc.ID].IsActive)

	sched.err = domain.WorkflowsUnavailable(errors.New("down"))
	_, err = svc.PauseSchedule(ctx, op, sc.ID)
	require.ErrorIs(t, err, domain.ErrUnavailable)
	got, err := svc.Schedule(ctx, op, sc.ID)
	require.NoError(t, err)
	require.True(t, got.IsActive, "a change the scheduler did not take is not written")
	sched.err = nil
	paused, err := svc.PauseSchedule(ctx, op, sc.ID)
	require.NoError(t, err)
	require.False(t, paused.IsActive)
	require.Nil(t, paused.NextRunAt)
	require.False(t, sched.synced[sc.ID].IsActive)

	e, err := svc.TriggerSchedule(ctx, op, sc.ID)
	require.NoError(t, err)
	require.Equal(t, "grab-orders", e.TaskName)
	require.Len(t, r.started, 1)
	require.Equal(t, sc.ID, *r.started[0].ScheduleID)
	_, err = svc.TriggerSchedule(ctx, op, sc.ID)
	require.ErrorIs(t, err, domain.ErrConflict, "one run of the task at a time")
	runs, err := svc.ScheduleExecutions(ctx, op, sc.ID, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, runs.Total)

	other := domain.Actor{Kind: domain.ActorOperation, OrganizationID: uuid.New()}
	_, err = svc.Schedule(ctx, other, sc.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, svc.DeleteSchedule(ctx, other, sc.ID), domain.ErrNotFound)
	reader := domain.Actor{Kind: domain.ActorAgent, OrganizationID: o.ID, Scoped: true, Scopes: []string{bridgetasks.ScopeRead}}
	_, err = svc.ResumeSchedule(ctx, reader, sc.ID)
	require.ErrorIs(t, err, domain.ErrForbidden)

	require.NoError(t, svc.DeleteSchedule(ctx, op, sc.ID))
	_, err = svc.Schedule(ctx, op, sc.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.NotContains(t, sched.synced, sc.ID)
}
