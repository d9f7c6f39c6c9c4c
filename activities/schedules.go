package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/store"
)

// Schedules (spec Part 2) are rows in PostgreSQL, each mirrored as the
// Temporal Schedule schedule/<id>. The row is the system of record: the
// API writes it and brings the Temporal Schedule in line (SyncSchedule),
// and the reconciler (ReconcileSchedules, a Maintenance step) repairs the
// pairs that disagree. Each fire of a Temporal Schedule starts
// ScheduledBridgeTask, which queues a task execution linked to the row
// (QueueScheduledRun) and runs BridgeTask for it as a child.

// Names shared with package workflows (which imports this one).
const (
	// ScheduledBridgeTaskWorkflowType is the workflow a schedule's fires
	// start (workflows.ScheduledBridgeTask).
	ScheduledBridgeTaskWorkflowType = "ScheduledBridgeTask"
	// ScheduleOverlap: a fire while the previous one still runs is skipped.
	ScheduleOverlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	// ScheduleCatchupWindow: fires missed while Temporal was down are
	// taken when it is back only within this window (one, with SKIP).
	ScheduleCatchupWindow = 5 * time.Minute
	// ScheduledRunTimeout bounds a fire's workflow. Its BridgeTask child
	// is abandoned, not stopped, when it times out: the run still records
	// itself, and a later fire is skipped while it runs (one run of a task
	// per bridge at a time).
	ScheduledRunTimeout = 6 * time.Hour
	// ScheduleSyncBound: a row changed this recently is left to the
	// request that changed it; the reconciler looks at it later.
	ScheduleSyncBound = time.Minute
)

// ScheduleTemporalID is the Temporal Schedule id of a schedule (CONTRACT 5).
func ScheduleTemporalID(scheduleID string) string { return "schedule/" + scheduleID }

// ScheduledRunWorkflowID is the workflow id of a schedule's fires; Temporal
// appends each fire's time to it.
func ScheduledRunWorkflowID(scheduleID string) string { return "scheduled-bridge-task/" + scheduleID }

// organizationIDKey mirrors worker.OrganizationIDKey (worker imports this
// package).
var organizationIDKey = temporal.NewSearchAttributeKeyKeyword("OrganizationId")

// OrganizationSearchAttributes are the search attributes of an
// organization's runs and schedules.
func OrganizationSearchAttributes(orgID string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(organizationIDKey.ValueSet(orgID))
}

// BridgeSearchAttributes are the search attributes of a run that works
// for one bridge: OrganizationId, BridgeId and, when not empty, TaskName
// (worker.BridgeIDKey, worker.TaskNameKey; registered with the others).
func BridgeSearchAttributes(orgID, bridgeID, taskName string) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{organizationIDKey.ValueSet(orgID), temporal.NewSearchAttributeKeyKeyword("BridgeId").ValueSet(bridgeID)}
	if taskName != "" {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword("TaskName").ValueSet(taskName))
	}
	return temporal.NewSearchAttributes(updates...)
}

// ScheduledBridgeTaskInput is the input of ScheduledBridgeTask, set on the
// Temporal Schedule's action. TaskName is informative (the Temporal UI):
// a fire runs the row's task.
type ScheduledBridgeTaskInput struct {
	OrganizationID string `json:"organizationId"`
	ScheduleID     string `json:"scheduleId"`
	TaskName       string `json:"taskName"`
}

// ScheduleNote is the note of a schedule's Temporal Schedule: what it
// runs, when, and whether it is paused, as the row says. The reconciler
// compares it (and the paused state) with the row: a Temporal Schedule
// whose note differs is out of date.
func ScheduleNote(s store.Schedule) string {
	return fmt.Sprintf("fos schedule: %s of bridge %s, cron %q in %s", s.TaskName, s.BridgeID, s.CronExpression, s.Timezone)
}

// scheduleSpec is the Temporal spec of a schedule: its cron (five fields,
// checked by the API) in its time zone.
func scheduleSpec(s store.Schedule) client.ScheduleSpec {
	return client.ScheduleSpec{CronExpressions: []string{s.CronExpression}, TimeZoneName: s.Timezone}
}

// scheduleAction is what each fire starts: ScheduledBridgeTask on
// taskQueue, carrying the organization's search attribute and a memo.
func scheduleAction(s store.Schedule, taskQueue string) *client.ScheduleWorkflowAction {
	id := s.ID.String()
	return &client.ScheduleWorkflowAction{
		ID:                       ScheduledRunWorkflowID(id),
		Workflow:                 ScheduledBridgeTaskWorkflowType,
		Args:                     []any{ScheduledBridgeTaskInput{OrganizationID: s.OrganizationID.String(), ScheduleID: id, TaskName: s.TaskName}},
		TaskQueue:                taskQueue,
		WorkflowExecutionTimeout: ScheduledRunTimeout,
		TypedSearchAttributes:    BridgeSearchAttributes(s.OrganizationID.String(), s.BridgeID.String(), s.TaskName),
		Memo:                     map[string]any{"scheduleId": id, "bridgeId": s.BridgeID.String(), "taskName": s.TaskName},
		StaticSummary:            fmt.Sprintf("Scheduled %s of bridge %s (schedule %s)", s.TaskName, s.BridgeID, id),
	}
}

// SyncResult is what SyncSchedule did and what Temporal will do next.
type SyncResult struct {
	Created bool
	Updated bool
	// Next is the schedule's next fire as Temporal's description gives it
	// (nil when the row is paused or the cron never fires again).
	Next *time.Time
}

// SyncSchedule brings the Temporal Schedule of s in line with s: created
// when missing, replaced when its note, paused state or action differ,
// left alone otherwise. Running fires are never touched (a paused or
// changed schedule lets them finish). The next fire is read back from
// the schedule's description, so it is what Temporal will do.
func SyncSchedule(ctx context.Context, c client.Client, taskQueue string, s store.Schedule) (SyncResult, error) {
	return syncSchedule(ctx, c, taskQueue, s, true)
}

func syncSchedule(ctx context.Context, c client.Client, taskQueue string, s store.Schedule, again bool) (SyncResult, error) {
	var out SyncResult
	sc := c.ScheduleClient()
	id := ScheduleTemporalID(s.ID.String())
	h := sc.GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		h, err = sc.Create(ctx, client.ScheduleOptions{
			ID:                    id,
			Spec:                  scheduleSpec(s),
			Action:                scheduleAction(s, taskQueue),
			Overlap:               ScheduleOverlap,
			CatchupWindow:         ScheduleCatchupWindow,
			Paused:                !s.IsActive,
			Note:                  ScheduleNote(s),
			TypedSearchAttributes: OrganizationSearchAttributes(s.OrganizationID.String()),
			Memo:                  map[string]any{"scheduleId": s.ID.String(), "bridgeId": s.BridgeID.String()},
		})
		if errors.Is(err, temporal.ErrScheduleAlreadyRunning) && again {
			// Created meanwhile (a lost answer, the reconciler): bring it in line.
			return syncSchedule(ctx, c, taskQueue, s, false)
		}
		if err != nil {
			return out, fmt.Errorf("create schedule %s: %w", id, err)
		}
		out.Created = true
	case err != nil:
		return out, fmt.Errorf("describe schedule %s: %w", id, err)
	case !scheduleMatches(desc, s, taskQueue):
		err := h.Update(ctx, client.ScheduleUpdateOptions{
			DoUpdate: func(client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
				spec := scheduleSpec(s)
				return &client.ScheduleUpdate{Schedule: &client.Schedule{
					Action: scheduleAction(s, taskQueue),
					Spec:   &spec,
					Policy: &client.SchedulePolicies{Overlap: ScheduleOverlap, CatchupWindow: ScheduleCatchupWindow},
					State:  &client.ScheduleState{Note: ScheduleNote(s), Paused: !s.IsActive},
				}}, nil
			},
		})
		if err != nil {
			return out, fmt.Errorf("update schedule %s: %w", id, err)
		}
		out.Updated = true
	}
	if out.Created || out.Updated {
		if desc, err = h.Describe(ctx); err != nil {
			return out, fmt.Errorf("describe schedule %s: %w", id, err)
		}
	}
	if s.IsActive {
		out.Next = nextActionTime(desc)
	}
	return out, nil
}

// scheduleMatches reports whether the Temporal Schedule described is the
// one s asks for: its paused state, its policies (overlap, catch-up
// window), its time zone and fires (firesMatch), and its action. The note
// is not compared: an operator's pause reason in the Temporal UI replaces
// it, and an edited spec keeps it.
func scheduleMatches(desc *client.ScheduleDescription, s store.Schedule, taskQueue string) bool {
	sch := desc.Schedule
	if sch.State == nil || sch.State.Paused != !s.IsActive {
		return false
	}
	if sch.Policy == nil || sch.Policy.Overlap != ScheduleOverlap || sch.Policy.CatchupWindow != ScheduleCatchupWindow {
		return false
	}
	if sch.Spec == nil || sch.Spec.TimeZoneName != s.Timezone || !specMatches(sch.Spec, desc.Info.NextActionTimes, s) {
		return false
	}
	a, ok := sch.Action.(*client.ScheduleWorkflowAction)
	return ok && a.ID == ScheduledRunWorkflowID(s.ID.String()) && a.TaskQueue == taskQueue &&
		fmt.Sprint(a.Workflow) == ScheduledBridgeTaskWorkflowType
}

// specMatches compares the spec as Temporal keeps it with the row's cron:
// the cron strings when it keeps them, else (the server compiles them to
// calendars) by their next fires (firesMatch).
func specMatches(spec *client.ScheduleSpec, next []time.Time, s store.Schedule) bool {
	if len(spec.CronExpressions) > 0 {
		return len(spec.CronExpressions) == 1 && spec.CronExpressions[0] == s.CronExpression
	}
	return firesMatch(next, s)
}

// firesMatch compares the next fires Temporal computed from the schedule's
// spec (as it stores it: the cron compiled to calendars) with the row's
// cron in its time zone, up to three; true when Temporal lists none (a
// paused schedule) or the row's cron does not parse (the API checked it).
func firesMatch(next []time.Time, s store.Schedule) bool {
	if len(next) == 0 {
		return true
	}
	sched, err := cron.ParseStandard("CRON_TZ=" + firstNonEmptyString(s.Timezone, "UTC") + " " + s.CronExpression)
	if err != nil {
		return true
	}
	t := next[0].Add(-time.Second)
	for i := 0; i < len(next) && i < 3; i++ {
		want := sched.Next(t)
		if !want.Equal(next[i]) {
			return false
		}
		t = want
	}
	return true
}

func firstNonEmptyString(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// adoptTemporalPause makes the row follow a pause or resume made on the
// Temporal side (the Temporal UI, tctl): the paused state differs and the
// Temporal Schedule no longer carries the service's note (a pause or
// unpause there writes its own) or was updated there after the row
// changed. The row's own change that did not reach Temporal (a lost
// answer) leaves the service's note in place and is pushed as before. It
// returns the row as it now is.
func (a *ScheduleActivities) adoptTemporalPause(ctx context.Context, s store.Schedule) (store.Schedule, bool, error) {
	desc, err := a.Temporal.ScheduleClient().GetHandle(ctx, ScheduleTemporalID(s.ID.String())).Describe(ctx)
	if err != nil || desc.Schedule.State == nil {
		return s, false, nil // missing or unreadable: SyncSchedule handles it
	}
	st := desc.Schedule.State
	paused := st.Paused
	// Made on the Temporal side: a pause or unpause there replaces the
	// note the service writes with the operator's (or the tool's default),
	// or the schedule was updated there after the row changed.
	theirs := st.Note != ScheduleNote(s) || desc.Info.LastUpdateAt.After(s.UpdatedAt)
	if paused == !s.IsActive || !theirs {
		return s, false, nil
	}
	next := s
	next.IsActive = !paused
	next.NextRunAt = nil
	if !paused {
		next.NextRunAt = nextActionTime(desc)
	}
	updated, err := store.UpdateSchedule(ctx, a.Store.Pool, next, s.Revision)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return s, false, nil // changed meanwhile: the next check sees it
	}
	if err != nil {
		return s, false, fmt.Errorf("adopt the Temporal pause: %w", err)
	}
	return updated, true, nil
}

// nextActionTime is the first of the described schedule's next fires.
func nextActionTime(desc *client.ScheduleDescription) *time.Time {
	if desc == nil || len(desc.Info.NextActionTimes) == 0 {
		return nil
	}
	t := desc.Info.NextActionTimes[0].UTC()
	return &t
}

// DeleteTemporalSchedule deletes a schedule's Temporal Schedule (deleted
// false: it was already gone). Fires that are running finish.
func DeleteTemporalSchedule(ctx context.Context, c client.Client, scheduleID string) (deleted bool, err error) {
	err = c.ScheduleClient().GetHandle(ctx, ScheduleTemporalID(scheduleID)).Delete(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	return err == nil, err
}

// ScheduleActivities are the activities of ScheduledBridgeTask and the
// schedules' reconciler.
type ScheduleActivities struct {
	Store  *store.Store
	Logger *slog.Logger
	// Temporal reads and repairs the Temporal Schedules (nil: nothing is
	// read back or reconciled).
	Temporal client.Client
	// TaskQueue is where the fires run (the bulk queue, as BridgeTask).
	TaskQueue string
}

func (a *ScheduleActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// ---- a fire ----

// QueueScheduledRunInput is the input of QueueScheduledRun. FireKey names
// the fire (its workflow id, unique per fire).
type QueueScheduledRunInput struct {
	OrganizationID string `json:"organizationId"`
	ScheduleID     string `json:"scheduleId"`
	FireKey        string `json:"fireKey"`
}

// QueueScheduledRunResult is the queued execution, or why the fire is
// skipped (Skipped non-empty: nothing runs).
type QueueScheduledRunResult struct {
	TaskExecutionID string `json:"taskExecutionId"`
	BridgeID        string `json:"bridgeId"`
	TaskName        string `json:"taskName"`
	Skipped         string `json:"skipped,omitempty"`
}

// QueueScheduledRun queues the task execution of one fire, linked to its
// schedule (idempotent: a retried fire gets its execution back). The fire
// is skipped, without an execution, when the schedule is gone or paused
// (its Temporal Schedule lags behind the row; the reconciler repairs it),
// when its bridge is not active, or when a run of the same task of the
// bridge is queued or running (overlap). It also refreshes the row's next
// run from Temporal.
func (a *ScheduleActivities) QueueScheduledRun(ctx context.Context, in QueueScheduledRunInput) (QueueScheduledRunResult, error) {
	orgID, id, err := parseTaskIDs(in.OrganizationID, in.ScheduleID)
	if err != nil {
		return QueueScheduledRunResult{}, err
	}
	s, err := store.ScheduleByID(ctx, a.Store.Pool, orgID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return QueueScheduledRunResult{Skipped: "the schedule was deleted"}, nil
	case err != nil:
		return QueueScheduledRunResult{}, fmt.Errorf("read schedule: %w", err)
	}
	a.refreshNextRun(ctx, s)
	if !s.IsActive {
		return QueueScheduledRunResult{Skipped: "the schedule is paused"}, nil
	}
	b, err := store.BridgeByID(ctx, a.Store.Pool, orgID, s.BridgeID)
	if err != nil {
		return QueueScheduledRunResult{}, fmt.Errorf("read bridge: %w", err)
	}
	if b.Status != store.BridgeActive {
		return QueueScheduledRunResult{Skipped: "the bridge is " + b.Status}, nil
	}
	execID := uuid.New()
	e, _, err := store.QueueScheduleRun(ctx, a.Store.Pool, store.ScheduleRun{
		Schedule: s, ExecutionID: execID, WorkflowID: "bridge-task/" + execID.String(), FireKey: in.FireKey,
	})
	switch {
	case errors.Is(err, store.ErrConflict):
		return QueueScheduledRunResult{Skipped: "a " + s.TaskName + " run of the bridge is already queued or running"}, nil
	case err != nil:
		return QueueScheduledRunResult{}, fmt.Errorf("queue task execution: %w", err)
	}
	return QueueScheduledRunResult{TaskExecutionID: e.ID.String(), BridgeID: e.BridgeID.String(), TaskName: e.TaskName}, nil
}

// RefreshNextRunInput is the input of RefreshNextRun.
type RefreshNextRunInput struct {
	OrganizationID string `json:"organizationId"`
	ScheduleID     string `json:"scheduleId"`
}

// RefreshNextRunResult is the result of RefreshNextRun.
type RefreshNextRunResult struct{}

// RefreshNextRun records the schedule's next run as Temporal now gives it
// (a fire ends: the fires skipped while it ran have passed). Best effort:
// the reconciler refreshes it too.
func (a *ScheduleActivities) RefreshNextRun(ctx context.Context, in RefreshNextRunInput) (RefreshNextRunResult, error) {
	orgID, id, err := parseTaskIDs(in.OrganizationID, in.ScheduleID)
	if err != nil {
		return RefreshNextRunResult{}, err
	}
	s, err := store.ScheduleByID(ctx, a.Store.Pool, orgID, id)
	if err == nil {
		a.refreshNextRun(ctx, s)
	}
	return RefreshNextRunResult{}, nil
}

// refreshNextRun reads s's next fire from its Temporal Schedule and
// records it, when the Temporal Schedule is the one s asks for (else the
// reconciler repairs it first).
func (a *ScheduleActivities) refreshNextRun(ctx context.Context, s store.Schedule) {
	if a.Temporal == nil {
		return
	}
	desc, err := a.Temporal.ScheduleClient().GetHandle(ctx, ScheduleTemporalID(s.ID.String())).Describe(ctx)
	if err != nil || !scheduleMatches(desc, s, a.TaskQueue) {
		return
	}
	if _, err := store.SetScheduleNextRun(ctx, a.Store.Pool, s.OrganizationID, s.ID, s.Revision, nextActionTime(desc), false); err != nil {
		a.log().Warn("record next run", "schedule_id", s.ID, "error", err)
	}
}

// ---- reconciliation ----

// ReconcileSchedulesInput is the input of ReconcileSchedules.
type ReconcileSchedulesInput struct{}

// ReconcileSchedulesResult counts what ReconcileSchedules found and did.
type ReconcileSchedulesResult struct {
	// Checked rows; Created Temporal Schedules that were missing; Updated
	// ones that differed from their row; Deleted ones whose row is gone.
	Checked int `json:"checked"`
	Created int `json:"created"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
	// Adopted rows took a pause or resume made in the Temporal UI.
	Adopted int `json:"adopted"`
}

// ReconcileSchedules repairs the schedules whose row and Temporal Schedule
// disagree. It lists the Temporal Schedules schedule/<uuid>, then
//   - syncs (SyncSchedule) the rows the listing lacks (a Temporal Schedule
//     lost with a Temporal restore or deleted by hand is created again from
//     its row; the listing is eventually consistent, so each is described
//     first), up to ReconcileBatch,
//   - syncs the ReconcileBatch rows whose next run has passed (a fire
//     Temporal skipped leaves it behind) and then those checked least
//     recently: a pause or resume made in the Temporal UI after the row's
//     last change is adopted by the row (adoptTemporalPause); otherwise
//     one whose spec, policies, action or paused state differs from its
//     row — a change whose answer was lost, a spec edited in the UI — is
//     replaced by the row's; their next run is refreshed,
//   - deletes the Temporal Schedules whose row is gone (their fires would
//     run nothing).
//
// Rows changed within ScheduleSyncBound are left to the request changing
// them. It fails when Temporal cannot be asked at all.
func (a *ScheduleActivities) ReconcileSchedules(ctx context.Context, _ ReconcileSchedulesInput) (ReconcileSchedulesResult, error) {
	var out ReconcileSchedulesResult
	if a.Temporal == nil {
		return out, nil
	}
	listed, err := a.listTemporalSchedules(ctx)
	if err != nil {
		return out, err
	}
	cutoff := time.Now().Add(-ScheduleSyncBound)
	ids, err := store.ScheduleIDsBefore(ctx, a.Store.Pool, cutoff)
	if err != nil {
		return out, fmt.Errorf("list schedules: %w", err)
	}
	var unlisted []uuid.UUID
	for _, id := range ids {
		if !listed[id] && len(unlisted) < ReconcileBatch {
			unlisted = append(unlisted, id)
		}
	}
	if len(unlisted) > 0 {
		rows, err := store.SchedulesByIDs(ctx, a.Store.Pool, unlisted)
		if err != nil {
			return out, fmt.Errorf("read schedules: %w", err)
		}
		if err := a.syncRows(ctx, rows, &out); err != nil {
			return out, err
		}
	}
	rows, err := store.SchedulesToCheck(ctx, a.Store.Pool, cutoff, ReconcileBatch)
	if err != nil {
		return out, fmt.Errorf("list schedules: %w", err)
	}
	if err := a.syncRows(ctx, rows, &out); err != nil {
		return out, err
	}
	out.Deleted, err = a.deleteOrphans(ctx, listed)
	return out, err
}

// syncRows brings the Temporal Schedules of rows in line and records
// their check and next run.
func (a *ScheduleActivities) syncRows(ctx context.Context, rows []store.Schedule, out *ReconcileSchedulesResult) error {
	log := a.log().With("kind", "schedule")
	for _, s := range rows {
		out.Checked++
		s, adopted, err := a.adoptTemporalPause(ctx, s)
		if err != nil {
			return err
		}
		if adopted {
			log.Info("reconcile: the row follows a pause or resume made in Temporal", "id", s.ID, "active", s.IsActive)
			out.Adopted++
		}
		res, err := SyncSchedule(ctx, a.Temporal, a.TaskQueue, s)
		if err != nil {
			if ctx.Err() != nil || isUnavailable(err) {
				return err
			}
			log.Warn("reconcile: sync schedule", "id", s.ID, "error", err)
			continue
		}
		switch {
		case res.Created:
			log.Info("reconcile: created a missing Temporal Schedule", "id", s.ID)
			out.Created++
		case res.Updated:
			log.Info("reconcile: updated a Temporal Schedule that differed from its row", "id", s.ID)
			out.Updated++
		}
		if _, err := store.SetScheduleNextRun(ctx, a.Store.Pool, s.OrganizationID, s.ID, s.Revision, res.Next, true); err != nil {
			return fmt.Errorf("record schedule check: %w", err)
		}
	}
	return nil
}

// listTemporalSchedules lists the schedules' Temporal Schedules
// (schedule/<uuid>; the service-wide ones, schedule/maintenance and the
// like, are not UUIDs).
func (a *ScheduleActivities) listTemporalSchedules(ctx context.Context) (map[uuid.UUID]bool, error) {
	it, err := a.Temporal.ScheduleClient().List(ctx, client.ScheduleListOptions{PageSize: 1000})
	if err != nil {
		return nil, fmt.Errorf("list Temporal Schedules: %w", err)
	}
	out := map[uuid.UUID]bool{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("list Temporal Schedules: %w", err)
		}
		if rest, ok := strings.CutPrefix(e.ID, "schedule/"); ok {
			if id, err := uuid.Parse(rest); err == nil {
				out[id] = true
			}
		}
	}
	return out, nil
}

// deleteOrphans deletes the listed Temporal Schedules whose row is gone.
// A row is written before its Temporal Schedule is created, so a Temporal
// Schedule without a row is one whose row was deleted (or whose create
// failed and was undone).
func (a *ScheduleActivities) deleteOrphans(ctx context.Context, listed map[uuid.UUID]bool) (int, error) {
	ids := make([]uuid.UUID, 0, len(listed))
	for id := range listed {
		ids = append(ids, id)
	}
	n := 0
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 1000)]
		ids = ids[len(batch):]
		exists, err := store.ExistingScheduleIDs(ctx, a.Store.Pool, batch)
		if err != nil {
			return n, fmt.Errorf("read schedules: %w", err)
		}
		for _, id := range batch {
			if exists[id] {
				continue
			}
			deleted, err := DeleteTemporalSchedule(ctx, a.Temporal, id.String())
			switch {
			case err != nil && (ctx.Err() != nil || isUnavailable(err)):
				return n, err
			case err != nil:
				a.log().Warn("reconcile: delete orphan Temporal Schedule", "id", id, "error", err)
			case deleted:
				a.log().Info("reconcile: deleted a Temporal Schedule whose row is gone", "id", id)
				n++
			}
		}
	}
	return n, nil
}
