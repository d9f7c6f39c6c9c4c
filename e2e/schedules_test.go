package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// describeSchedule describes a schedule's Temporal Schedule (nil when it
// does not exist).
func (s *stack) describeSchedule(ctx context.Context, id string) *client.ScheduleDescription {
	s.t.Helper()
	desc, err := s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(id)).Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	require.NoError(s.t, err)
	return desc
}

// runMaintenance runs one Maintenance workflow to its end.
func (s *stack) runMaintenance(ctx context.Context) {
	s.t.Helper()
	run, err := s.temporal.ExecuteWorkflow(ctx, worker.StartOptions("maintenance-test/"+uuid.NewString(), taskQueue, "system", nil), workflows.Maintenance)
	require.NoError(s.t, err)
	var res workflows.MaintenanceResult
	require.NoError(s.t, run.Get(ctx, &res))
	// A recorded history of the replay tests (FOS_UPDATE_HISTORY=1).
	writeHistory(s.t, ctx, s.temporal, run.GetID(), run.GetRunID(), "maintenance_history.json")
}

// waitScheduleRuns polls a schedule until runCount reaches n.
func (s *stack) waitScheduleRuns(key, id string, n int) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := data(s.mustCall(200, key, "GET", "/api/v1/schedules/"+id, nil))
		if d["runCount"].(float64) >= float64(n) {
			return d
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("schedule %s has run %v times after 30s, want %d", id, d["runCount"], n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSchedulesEndToEnd(t *testing.T) {
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	orgID, key := s.taskAccount()
	shop := "sched-" + uuid.NewString()[:8] + ".example.com"
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Scheduled shop", "config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))["id"].(string)

	// Yearly at midnight in Paris: the next run is Temporal's, in the zone.
	sc := data(s.mustCall(201, key, "POST", "/api/v1/schedules", map[string]any{
		"bridge_id": bridgeID, "task": "grab-orders", "cron": "0 0 1 1 *", "timezone": "Europe/Paris",
	}))
	id := sc["id"].(string)
	require.Equal(t, true, sc["isActive"])
	desc := s.describeSchedule(ctx, id)
	require.NotNil(t, desc)
	require.NotEmpty(t, desc.Info.NextActionTimes)
	next, err := time.Parse(time.RFC3339, sc["nextRunAt"].(string))
	require.NoError(t, err)
	require.True(t, next.Equal(desc.Info.NextActionTimes[0]), "%v vs %v", next, desc.Info.NextActionTimes[0])
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	inParis := next.In(paris)
	require.Equal(t, []int{1, 1, 0, 0}, []int{int(inParis.Month()), inParis.Day(), inParis.Hour(), inParis.Minute()})
	require.True(t, next.After(time.Now()))

	// trigger: 201 with the queued execution; it runs and counts.
	trig := data(s.mustCall(201, key, "POST", "/api/v1/schedules/"+id+"/trigger", nil))
	require.Equal(t, "queued", trig["status"])
	done := s.waitForExecution(key, trig["id"].(string))
	require.Equal(t, "completed", done["status"], "%v", done)
	after := s.waitScheduleRuns(key, id, 1)
	require.NotNil(t, after["lastRunAt"])
	require.Equal(t, float64(0), after["errorCount"])
	require.Equal(t, sc["nextRunAt"], after["nextRunAt"], "timing unaffected")

	// A fire of the Temporal Schedule (taken now with Temporal's trigger)
	// runs ScheduledBridgeTask: a run of the schedule, counted.
	require.NoError(t, s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(id)).Trigger(ctx, client.ScheduleTriggerOptions{}))
	after = s.waitScheduleRuns(key, id, 2)
	runs := s.mustCall(200, key, "GET", "/api/v1/schedules/"+id+"/executions", nil)["data"].([]any)
	require.Len(t, runs, 2)
	fired := runs[0].(map[string]any)
	require.Equal(t, "completed", fired["status"], "%v", fired)
	require.Equal(t, "grab-orders", fired["taskName"])
	require.Equal(t, float64(0), after["errorCount"])
	// In the Temporal UI: the fire and its child bridge task are found by
	// BridgeId and TaskName and say what they are.
	acts := s.describeSchedule(ctx, id).Info.RecentActions
	require.NotEmpty(t, acts)
	firedID := acts[0].StartWorkflowResult.WorkflowID
	s.waitClosed(firedID)
	sui := describeForUI(t, ctx, s.temporal, firedID)
	require.Equal(t, bridgeID, sui.SearchAttributes["BridgeId"])
	require.Equal(t, "grab-orders", sui.SearchAttributes["TaskName"])
	require.Contains(t, sui.Summary, "Scheduled grab-orders of bridge "+bridgeID)
	cui := describeForUI(t, ctx, s.temporal, fired["workflowId"].(string))
	require.Equal(t, bridgeID, cui.SearchAttributes["BridgeId"])
	require.Contains(t, cui.Summary, "grab-orders of bridge "+bridgeID)
	writeHistory(t, ctx, s.temporal, firedID, "", "scheduled_bridge_task_history.json")

	// pause: nextRunAt null, the Temporal Schedule paused; resume: set again.
	paused := data(s.mustCall(200, key, "POST", "/api/v1/schedules/"+id+"/pause", nil))
	require.Equal(t, false, paused["isActive"])
	require.Nil(t, paused["nextRunAt"])
	require.True(t, s.describeSchedule(ctx, id).Schedule.State.Paused)
	// A fire while paused (a Temporal trigger) runs nothing.
	require.NoError(t, s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(id)).Trigger(ctx, client.ScheduleTriggerOptions{}))
	var actions []client.ScheduleActionResult
	require.Eventually(t, func() bool {
		actions = s.describeSchedule(ctx, id).Info.RecentActions
		return len(actions) == 2
	}, 20*time.Second, 100*time.Millisecond)
	var skipped workflows.ScheduledBridgeTaskResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, actions[1].StartWorkflowResult.WorkflowID, "").Get(ctx, &skipped))
	require.Equal(t, "the schedule is paused", skipped.Skipped)
	require.True(t, strings.HasPrefix(actions[1].StartWorkflowResult.WorkflowID, "scheduled-bridge-task/"+id))
	require.Len(t, s.mustCall(200, key, "GET", "/api/v1/schedules/"+id+"/executions", nil)["data"].([]any), 2)
	resumed := data(s.mustCall(200, key, "POST", "/api/v1/schedules/"+id+"/resume", nil))
	require.Equal(t, true, resumed["isActive"])
	require.Equal(t, sc["nextRunAt"], resumed["nextRunAt"])
	require.False(t, s.describeSchedule(ctx, id).Schedule.State.Paused)

	// PATCH cron: the Temporal Schedule and nextRunAt follow.
	patched := data(s.mustCall(200, key, "PATCH", "/api/v1/schedules/"+id, map[string]any{"cron": "30 6 * * *"}))
	desc = s.describeSchedule(ctx, id)
	next, err = time.Parse(time.RFC3339, patched["nextRunAt"].(string))
	require.NoError(t, err)
	require.True(t, next.Equal(desc.Info.NextActionTimes[0]))
	require.Equal(t, 6, next.In(paris).Hour())
	require.Equal(t, 30, next.In(paris).Minute())

	// The Temporal Schedule deleted behind the service's back (a Temporal
	// restore) is created again by the reconciler, as the row says; an
	// orphan Temporal Schedule (its row gone) is deleted.
	require.NoError(t, s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(id)).Delete(ctx))
	// ... one paused in the Temporal UI after its row last changed is
	// adopted: the row follows (it is not resumed behind the operator's
	// back) ...
	other := data(s.mustCall(201, key, "POST", "/api/v1/schedules", map[string]any{
		"bridge_id": bridgeID, "task": "push-fulfillment", "cron": "0 0 1 1 *",
	}))["id"].(string)
	// ... and one whose spec was edited in the UI (its note unchanged) is
	// put back to the row's cron.
	edited := data(s.mustCall(201, key, "POST", "/api/v1/schedules", map[string]any{
		"bridge_id": bridgeID, "task": "push-fulfillment", "cron": "0 0 1 1 *",
	}))["id"].(string)
	_, err = s.store.Pool.Exec(ctx, `UPDATE schedules SET updated_at = now() - interval '2 minutes' WHERE id = ANY($1)`, []string{id, other, edited})
	require.NoError(t, err)
	require.NoError(t, s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(other)).Pause(ctx, client.SchedulePauseOptions{Note: "paused by an operator"}))
	require.NoError(t, s.temporal.ScheduleClient().GetHandle(ctx, workflows.ScheduleWorkflowID(edited)).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			in.Description.Schedule.Spec = &client.ScheduleSpec{CronExpressions: []string{"15 3 * * *"}}
			return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
		},
	}))
	editedNext := s.describeSchedule(ctx, edited).Info.NextActionTimes[0]
	require.Equal(t, 15, editedNext.Minute(), "the UI edit took")
	orphan := uuid.NewString()
	_, err = s.temporal.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: workflows.ScheduleWorkflowID(orphan), Spec: client.ScheduleSpec{CronExpressions: []string{"0 0 1 1 *"}},
		Action: &client.ScheduleWorkflowAction{Workflow: workflows.ScheduledBridgeTaskWorkflowType, TaskQueue: bulkTaskQueue,
			Args: []any{workflows.ScheduledBridgeTaskInput{OrganizationID: uuid.NewString(), ScheduleID: orphan}}},
	})
	require.NoError(t, err)
	deadline := time.Now().Add(45 * time.Second)
	for {
		s.runMaintenance(ctx)
		otherRow, err := store.ScheduleByID(ctx, s.store.Pool, uuid.MustParse(orgID), uuid.MustParse(other))
		require.NoError(t, err)
		if s.describeSchedule(ctx, id) != nil && s.describeSchedule(ctx, orphan) == nil && !otherRow.IsActive &&
			s.describeSchedule(ctx, edited).Info.NextActionTimes[0].Minute() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reconciler did not repair the schedules in 45s: id %v, orphan gone %v, other active %v, edited next %v",
				s.describeSchedule(ctx, id) != nil, s.describeSchedule(ctx, orphan) == nil, otherRow.IsActive, s.describeSchedule(ctx, edited).Info.NextActionTimes)
		}
		time.Sleep(500 * time.Millisecond)
	}
	desc = s.describeSchedule(ctx, id)
	row, err := store.ScheduleByID(ctx, s.store.Pool, uuid.MustParse(orgID), uuid.MustParse(id))
	require.NoError(t, err)
	require.Equal(t, activities.ScheduleNote(row), desc.Schedule.State.Note)
	require.False(t, desc.Schedule.State.Paused)
	require.True(t, next.Equal(desc.Info.NextActionTimes[0]), "recreated with the row's cron and zone")
	require.True(t, s.describeSchedule(ctx, other).Schedule.State.Paused, "the operator's pause stays")
	otherAPI := data(s.mustCall(200, key, "GET", "/api/v1/schedules/"+other, nil))
	require.Equal(t, false, otherAPI["isActive"], "the row follows the pause")
	require.Nil(t, otherAPI["nextRunAt"])

	// delete: the row and the Temporal Schedule go.
	require.Equal(t, true, s.mustCall(200, key, "DELETE", "/api/v1/schedules/"+id, nil)["success"])
	require.Nil(t, s.describeSchedule(ctx, id))
	s.mustCall(404, key, "GET", "/api/v1/schedules/"+id, nil)
	// Its runs stay as records.
	s.mustCall(200, key, "GET", "/api/v1/task-executions/"+fired["id"].(string), nil)
}

// Every cron expression the API accepts, Temporal accepts: random
// expressions of the standard syntax are sent to the API; each is either
// refused by the API's own check (400 naming cron, not "refused by the
// scheduler") or scheduled by Temporal with a next run.
func TestScheduleCronAcceptedByTemporal(t *testing.T) {
	s := start(t)
	_, key := s.taskAccount()
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Cron shop", "config": map[string]any{"shopDomain": "cron.example.com", "accessToken": "shpat_e2e"},
	}))["id"].(string)
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	names := map[int][]string{3: {"jan", "FEB", "Mar", "dec"}, 4: {"sun", "MON", "fri", "Sat"}}
	value := func(i int) string {
		if ns := names[i]; ns != nil && rng.IntN(3) == 0 {
			return ns[rng.IntN(len(ns))]
		}
		// Sometimes one past the bounds, to be refused.
		return fmt.Sprint(bounds[i][0] - 1 + rng.IntN(bounds[i][1]-bounds[i][0]+3))
	}
	part := func(i int) string {
		switch rng.IntN(6) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprintf("*/%d", rng.IntN(12))
		case 2:
			return value(i) + "-" + value(i)
		case 3:
			return fmt.Sprintf("%s-%s/%d", value(i), value(i), 1+rng.IntN(5))
		case 4:
			return fmt.Sprintf("%s/%d", value(i), 1+rng.IntN(10))
		}
		return value(i)
	}
	accepted := 0
	for n := 0; n < 300; n++ {
		fields := make([]string, 5)
		for i := range fields {
			fields[i] = part(i)
			if rng.IntN(4) == 0 {
				fields[i] += "," + part(i)
			}
		}
		cron := strings.Join(fields, " ")
		code, out := s.call(key, "", "POST", "/api/v1/schedules", map[string]any{"bridge_id": bridgeID, "task": "grab-orders", "cron": cron, "status": "paused"})
		switch code {
		case 201:
			accepted++
			d := data(out)
			require.NotNil(t, s.describeSchedule(context.Background(), d["id"].(string)), cron)
			s.mustCall(200, key, "DELETE", "/api/v1/schedules/"+d["id"].(string), nil)
		case 400:
			e := out["error"].(map[string]any)
			require.NotContains(t, e["message"], "refused by the scheduler", "%s: Temporal refused what the API accepted", cron)
			require.NotContains(t, fmt.Sprint(e["details"]), "refused by the scheduler", "%s: Temporal refused what the API accepted", cron)
		default:
			t.Fatalf("%s: %d %v", cron, code, out)
		}
	}
	require.Greater(t, accepted, 30, "the sample exercises accepted expressions")
}
