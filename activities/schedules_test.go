package activities

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// A fire queues one execution of the schedule's task (a retried fire gets
// it back) and is skipped, queuing nothing, when a run of the task is
// going, the bridge is not active, the schedule is paused or deleted.
func TestQueueScheduledRun(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	org, bridge := uuid.New(), uuid.New()
	_, err := st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, org, "acme-"+org.String())
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config) VALUES ($1, $2, 'storefront_a', 'Shop', '{}')`, bridge, org)
	require.NoError(t, err)
	sc, err := store.CreateSchedule(ctx, st.Pool, store.Schedule{ID: uuid.New(), OrganizationID: org, BridgeID: bridge,
		TaskName: "grab-orders", CronExpression: "* * * * *", Timezone: "UTC", IsActive: true})
	require.NoError(t, err)
	a := &ScheduleActivities{Store: st} // no Temporal: the next run is not read back
	fire := func(key string) QueueScheduledRunResult {
		t.Helper()
		res, err := a.QueueScheduledRun(ctx, QueueScheduledRunInput{OrganizationID: org.String(), ScheduleID: sc.ID.String(), FireKey: key})
		require.NoError(t, err)
		return res
	}

	first := fire("scheduled-bridge-task/x-1")
	require.Empty(t, first.Skipped)
	require.Equal(t, "grab-orders", first.TaskName)
	require.Equal(t, bridge.String(), first.BridgeID)
	require.Equal(t, first, fire("scheduled-bridge-task/x-1"), "a retried fire gets its execution back")
	e, err := store.TaskExecutionByID(ctx, st.Pool, org, uuid.MustParse(first.TaskExecutionID))
	require.NoError(t, err)
	require.Equal(t, "bridge-task/"+first.TaskExecutionID, e.WorkflowID)
	require.Contains(t, fire("scheduled-bridge-task/x-2").Skipped, "already queued or running")

	_, err = store.FinishTaskExecution(ctx, st.Pool, org, e.ID, nil, "")
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `UPDATE bridges SET status = 'paused' WHERE id = $1`, bridge)
	require.NoError(t, err)
	require.Equal(t, "the bridge is paused", fire("scheduled-bridge-task/x-3").Skipped)
	_, err = st.Pool.Exec(ctx, `UPDATE bridges SET status = 'active' WHERE id = $1`, bridge)
	require.NoError(t, err)

	sc.IsActive = false
	_, err = store.UpdateSchedule(ctx, st.Pool, sc, sc.Revision)
	require.NoError(t, err)
	require.Equal(t, "the schedule is paused", fire("scheduled-bridge-task/x-4").Skipped)
	require.NoError(t, store.DeleteSchedule(ctx, st.Pool, org, sc.ID))
	require.Equal(t, "the schedule was deleted", fire("scheduled-bridge-task/x-5").Skipped)

	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_executions WHERE bridge_id = $1`, bridge).Scan(&n))
	require.Equal(t, 1, n)

	_, err = a.QueueScheduledRun(ctx, QueueScheduledRunInput{OrganizationID: "x", ScheduleID: sc.ID.String()})
	require.Error(t, err)
}
