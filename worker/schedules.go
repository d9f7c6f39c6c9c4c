package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/workflows"
)

// scheduleSpec is a service-wide Temporal Schedule: one workflow started
// every interval.
type scheduleSpec struct {
	id     string // schedule/<name>
	every  time.Duration
	action *client.ScheduleWorkflowAction
	note   string
	// triggerNow also starts one run right away when the schedule is new.
	triggerNow bool
}

// ensureSchedule creates the schedule, or brings an existing one up to date
// (spec, action, policies), so it is safe at every worker start. A run
// still going when the next is due makes that one skipped; missed runs are
// not caught up beyond one interval.
func ensureSchedule(ctx context.Context, c client.Client, s scheduleSpec) error {
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: s.every}}}
	policy := client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: s.every}
	if s.action.StaticSummary == "" {
		// What each fire does, in the Temporal UI's Summary column.
		s.action.StaticSummary = DefaultSummary(s.action.ID) + ": " + s.note
	}
	sc := c.ScheduleClient()
	_, err := sc.Create(ctx, client.ScheduleOptions{
		ID:                 s.id,
		Spec:               spec,
		Action:             s.action,
		Overlap:            policy.Overlap,
		CatchupWindow:      policy.CatchupWindow,
		TriggerImmediately: s.triggerNow,
		Note:               s.note,
		Memo:               map[string]any{"scheduleId": s.id},
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", s.id, err)
	}
	err = sc.GetHandle(ctx, s.id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			cur := in.Description.Schedule
			cur.Spec = &spec
			cur.Action = s.action
			cur.Policy = &policy
			return &client.ScheduleUpdate{Schedule: &cur}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", s.id, err)
	}
	return nil
}

// MaintenanceInterval is how often the maintenance schedule runs: often
// enough that a row orphaned by a lost workflow start or a run terminated
// in the UI is settled within minutes. The purge stays cheap at this rate
// (one indexed DELETE of the keys that expired since the last run).
const MaintenanceInterval = 5 * time.Minute

// EnsureMaintenanceSchedule creates or updates schedule/maintenance, which
// starts the Maintenance workflow (purging expired records, reconciling
// rows with their runs) every MaintenanceInterval.
func EnsureMaintenanceSchedule(ctx context.Context, c client.Client, taskQueue string) error {
	return ensureSchedule(ctx, c, scheduleSpec{
		id:    workflows.MaintenanceScheduleID,
		every: MaintenanceInterval,
		action: &client.ScheduleWorkflowAction{
			ID:                       workflows.MaintenanceWorkflowID,
			Workflow:                 workflows.MaintenanceWorkflowType,
			TaskQueue:                taskQueue,
			WorkflowExecutionTimeout: 15 * time.Minute, // a stuck run holds up the next ones (skipped) for three intervals at most
		},
		note: "purges expired records (idempotency keys); reconciles rows waiting on workflows",
	})
}
