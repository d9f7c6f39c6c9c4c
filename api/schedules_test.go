package api

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/bridgetasks"
)

// fakeSchedules is an in-memory Temporal ScheduleClient: created schedules
// are kept with their options; each describes with next fire times a
// minute apart from a fixed instant (an hour further for each change, so a
// test sees the value read back). fail, when set, is the answer of the
// next Create or Update.
type fakeSchedules struct {
	mu    sync.Mutex
	byID  map[string]*fakeSchedule
	fail  error
	calls []string
}

type fakeSchedule struct {
	opts    client.ScheduleOptions
	state   client.ScheduleState
	action  client.ScheduleAction
	spec    client.ScheduleSpec
	policy  client.SchedulePolicies
	changes int
}

var fakeNext = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func newFakeSchedules() *fakeSchedules { return &fakeSchedules{byID: map[string]*fakeSchedule{}} }

func (f *fakeSchedules) record(call string) error {
	f.calls = append(f.calls, call)
	if strings.HasPrefix(call, "create") || strings.HasPrefix(call, "update") {
		err := f.fail
		f.fail = nil
		return err
	}
	return nil
}

func (f *fakeSchedules) get(id string) *fakeSchedule {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byID[id]
}

func (f *fakeSchedules) Create(_ context.Context, o client.ScheduleOptions) (client.ScheduleHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("create " + o.ID); err != nil {
		return nil, err
	}
	if f.byID[o.ID] != nil {
		return nil, temporal.ErrScheduleAlreadyRunning
	}
	f.byID[o.ID] = &fakeSchedule{opts: o, state: client.ScheduleState{Note: o.Note, Paused: o.Paused}, action: o.Action, spec: o.Spec,
		policy: client.SchedulePolicies{Overlap: o.Overlap, CatchupWindow: o.CatchupWindow}}
	return &fakeHandle{f: f, id: o.ID}, nil
}

func (f *fakeSchedules) GetHandle(_ context.Context, id string) client.ScheduleHandle {
	return &fakeHandle{f: f, id: id}
}

func (f *fakeSchedules) List(context.Context, client.ScheduleListOptions) (client.ScheduleListIterator, error) {
	return nil, errors.New("not used")
}

type fakeHandle struct {
	client.ScheduleHandle // Backfill, Trigger, Pause, Unpause: never used
	f                     *fakeSchedules
	id                    string
}

func (h *fakeHandle) GetID() string { return h.id }

func (h *fakeHandle) Delete(context.Context) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("delete " + h.id)
	if h.f.byID[h.id] == nil {
		return serviceerror.NewNotFound("schedule not found")
	}
	delete(h.f.byID, h.id)
	return nil
}

func (h *fakeHandle) Describe(context.Context) (*client.ScheduleDescription, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.record("describe " + h.id)
	s := h.f.byID[h.id]
	if s == nil {
		return nil, serviceerror.NewNotFound("schedule not found")
	}
	spec, state, policy := s.spec, s.state, s.policy
	first := fakeNext.Add(time.Duration(s.changes) * time.Hour)
	return &client.ScheduleDescription{
		Schedule: client.Schedule{Action: s.action, Spec: &spec, State: &state, Policy: &policy},
		Info:     client.ScheduleInfo{NextActionTimes: []time.Time{first, first.Add(time.Minute)}},
	}, nil
}

func (h *fakeHandle) Update(_ context.Context, o client.ScheduleUpdateOptions) error {
	desc, err := h.Describe(context.Background())
	if err != nil {
		return err
	}
	u, err := o.DoUpdate(client.ScheduleUpdateInput{Description: *desc})
	if err != nil {
		return err
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if err := h.f.record("update " + h.id); err != nil {
		return err
	}
	s := h.f.byID[h.id]
	s.action, s.spec, s.state = u.Schedule.Action, *u.Schedule.Spec, *u.Schedule.State
	if u.Schedule.Policy != nil {
		s.policy = *u.Schedule.Policy
	}
	s.changes++
	return nil
}

// scheduleEnv is the API with a mocked Temporal client whose schedules are
// fakeSchedules, an organization and an active storefront_a bridge.
type scheduleEnv struct {
	*testEnv
	tc     *mocks.Client
	fake   *fakeSchedules
	owner  account
	bridge string
}

func newScheduleEnv(t *testing.T) *scheduleEnv {
	tc := mocks.NewClient(t)
	fake := newFakeSchedules()
	tc.On("ScheduleClient").Return(fake).Maybe()
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	return &scheduleEnv{testEnv: e, tc: tc, fake: fake, owner: owner, bridge: taskFixtureBridge(t, e, owner.org, "storefront_a", "active")}
}

func (e *scheduleEnv) create(body map[string]any) map[string]any {
	e.t.Helper()
	res := e.do(e.owner.caller, "POST", "/api/v1/schedules", body)
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

// errField is the field named by an error's first detail.
func errField(res *response) string {
	d, _ := res.Body["error"].(map[string]any)["details"].([]any)
	if len(d) == 0 {
		return ""
	}
	return d[0].(map[string]any)["field"].(string)
}

func TestScheduleCreateReadList(t *testing.T) {
	e := newScheduleEnv(t)
	d := e.create(map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "*/15  * * * MON-FRI", "timezone": "Europe/Paris"})
	id := d["id"].(string)
	require.Equal(t, map[string]any{
		"id": id, "organizationId": e.owner.org, "bridgeId": e.bridge, "taskName": "grab-orders",
		"cronExpression": "*/15 * * * MON-FRI", "timezone": "Europe/Paris", "input": map[string]any{}, "isActive": true,
		"lastRunAt": nil, "nextRunAt": fakeNext.Format(time.RFC3339), "runCount": float64(0), "errorCount": float64(0),
		"lastError": nil, "createdAt": d["createdAt"], "updatedAt": d["updatedAt"],
		"bridge": map[string]any{"name": "Shop", "type": "storefront_a"},
	}, d)

	// The Temporal Schedule: its id, the cron in the zone, a fire that
	// starts ScheduledBridgeTask on the bulk queue with the organization's
	// search attribute, overlapping fires skipped.
	s := e.fake.get("schedule/" + id)
	require.NotNil(t, s)
	require.Equal(t, []string{"*/15 * * * MON-FRI"}, s.opts.Spec.CronExpressions)
	require.Equal(t, "Europe/Paris", s.opts.Spec.TimeZoneName)
	require.False(t, s.opts.Paused)
	require.Equal(t, activities.ScheduleOverlap, s.opts.Overlap)
	org, ok := s.opts.TypedSearchAttributes.GetKeyword(temporal.NewSearchAttributeKeyKeyword("OrganizationId"))
	require.True(t, ok)
	require.Equal(t, e.owner.org, org)
	require.Equal(t, id, s.opts.Memo["scheduleId"])
	a := s.opts.Action.(*client.ScheduleWorkflowAction)
	require.Equal(t, "ScheduledBridgeTask", a.Workflow)
	require.Equal(t, "fos-test-bulk", a.TaskQueue)
	require.Equal(t, "scheduled-bridge-task/"+id, a.ID)
	require.Equal(t, []any{activities.ScheduledBridgeTaskInput{OrganizationID: e.owner.org, ScheduleID: id, TaskName: "grab-orders"}}, a.Args)
	aorg, _ := a.TypedSearchAttributes.GetKeyword(temporal.NewSearchAttributeKeyKeyword("OrganizationId"))
	require.Equal(t, e.owner.org, aorg)

	got := e.do(e.owner.caller, "GET", "/api/v1/schedules/"+id, nil)
	require.Equal(t, 200, got.Code, "%s", got.Raw)
	require.Equal(t, d, got.data())

	// Created paused, in UTC by default, with an input.
	p := e.create(map[string]any{"bridgeId": e.bridge, "taskName": "push-fulfillment", "cronExpression": "0 3 * * *", "status": "paused", "input": map[string]any{"limit": 5}})
	require.Equal(t, false, p["isActive"])
	require.Nil(t, p["nextRunAt"])
	require.Equal(t, "UTC", p["timezone"])
	require.Equal(t, map[string]any{"limit": float64(5)}, p["input"])
	require.True(t, e.fake.get("schedule/"+p["id"].(string)).opts.Paused)

	// The list: snake_case items, newest first, filters.
	key := e.apiKey(e.owner, "bridges:read")
	list := e.do(key, "GET", "/api/v1/schedules", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	require.Len(t, list.list(), 2)
	require.Equal(t, map[string]any{
		"id": p["id"], "bridge_id": e.bridge, "bridge_name": "Shop", "task": "push-fulfillment", "cron": "0 3 * * *",
		"status": "paused", "last_run_at": nil, "next_run_at": nil, "created_at": p["createdAt"],
	}, list.list()[0])
	require.Equal(t, "active", list.list()[1]["status"])
	require.Equal(t, fakeNext.Format(time.RFC3339), list.list()[1]["next_run_at"])
	active := e.do(key, "GET", "/api/v1/schedules?status=active&limit=500", nil)
	require.Len(t, active.list(), 1)
	require.Equal(t, id, active.list()[0]["id"])
	require.Equal(t, float64(100), active.Body["pagination"].(map[string]any)["limit"])
	require.Empty(t, e.do(key, "GET", "/api/v1/schedules?bridge_id="+uuid.NewString(), nil).list())
	require.Len(t, e.do(key, "GET", "/api/v1/schedules?bridge_id="+e.bridge, nil).list(), 2)
	res := e.do(key, "GET", "/api/v1/schedules?status=sleeping", nil)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "status", errField(res))
	res = e.do(key, "GET", "/api/v1/schedules?bridge_id=nope", nil)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "bridge_id", errField(res))
	requireError(t, e.do(key, "GET", "/api/v1/schedules?page=0", nil), 400, "validation_error")

	// Another organization sees none of it.
	other := e.signup()
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/schedules", nil).list())
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/schedules/" + id}, {"PATCH", "/api/v1/schedules/" + id}, {"DELETE", "/api/v1/schedules/" + id},
		{"POST", "/api/v1/schedules/" + id + "/pause"}, {"POST", "/api/v1/schedules/" + id + "/resume"},
		{"POST", "/api/v1/schedules/" + id + "/trigger"}, {"GET", "/api/v1/schedules/" + id + "/executions"},
	} {
		requireError(t, e.do(other.caller, c.method, c.path, map[string]any{"cron": "* * * * *"}), 404, "not_found")
	}
	// ... whatever the body: 404 before the body's 400.
	requireError(t, e.do(other.caller, "PATCH", "/api/v1/schedules/"+id, "{not json"), 404, "not_found")
	requireError(t, e.do(other.caller, "PATCH", "/api/v1/schedules/"+id, map[string]any{"task": "nope", "cron": "nope"}), 404, "not_found")
	requireError(t, e.do(e.owner.caller, "PATCH", "/api/v1/schedules/"+id, "{not json"), 400, "invalid_json")
	requireError(t, e.do(e.owner.caller, "GET", "/api/v1/schedules/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(e.owner.caller, "GET", "/api/v1/schedules/nope", nil), 404, "not_found")
	// ... nor can it schedule this organization's bridge.
	res = e.do(other.caller, "POST", "/api/v1/schedules", map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "bridge_id", errField(res))
}

func TestScheduleCreateValidation(t *testing.T) {
	e := newScheduleEnv(t)
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"task": "grab-orders", "cron": "* * * * *"}, "bridge_id"},
		{map[string]any{"bridge_id": "x", "task": "grab-orders", "cron": "* * * * *"}, "bridge_id"},
		{map[string]any{"bridge_id": e.bridge, "cron": "* * * * *"}, "task"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "0 * * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "@hourly"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "60 * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* 24 * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * 0 * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * 13 *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * 8"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "5-1 * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "*/0 * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "1,,2 * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "? * * * *"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * * # note"}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": 5}, "cron"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cronExpression": "x"}, "cronExpression"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *", "timezone": "Local"}, "timezone"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *", "status": "sleeping"}, "status"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *", "input": "x"}, "input"},
		{map[string]any{"bridge_id": uuid.NewString(), "task": "grab-orders", "cron": "* * * * *"}, "bridge_id"},
		{map[string]any{"bridge_id": e.bridge, "task": "grab-shipments", "cron": "* * * * *"}, "task"},
		{map[string]any{"bridge_id": e.bridge, "task": "process-webhook", "cron": "* * * * *"}, "task"},
	} {
		res := e.do(e.owner.caller, "POST", "/api/v1/schedules", c.body)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, c.field, errField(res), "%v: %s", c.body, res.Raw)
	}
	requireError(t, e.do(e.owner.caller, "POST", "/api/v1/schedules", "[]"), 400, "invalid_json")

	// Accepted: names, ranges, steps, lists, Sunday as 7.
	for _, cron := range []string{"0 9 * * 1-5", "30 2 1,15 * *", "*/5 8-18 * jan-mar sun", "0 0 * * 7", "5/10 * * * *", "0 12 31 DEC SAT"} {
		require.Empty(t, bridgetasks.CheckCron(cron), cron)
	}

	// A bridge that is not active cannot be scheduled.
	for _, st := range []string{"paused", "error", "disconnected"} {
		b := taskFixtureBridge(t, e.testEnv, e.owner.org, "storefront_a", st)
		res := e.do(e.owner.caller, "POST", "/api/v1/schedules", map[string]any{"bridge_id": b, "task": "grab-orders", "cron": "* * * * *"})
		requireError(t, res, 409, "conflict")
		require.Contains(t, res.Body["error"].(map[string]any)["message"], st)
	}
	require.Empty(t, e.fake.calls, "nothing reached Temporal")

	// Temporal refusing the spec is 400 naming it; Temporal down is 503;
	// either way no schedule is left.
	e.fake.fail = serviceerror.NewInvalidArgument("unknown time zone Europe/Nowhere")
	res := e.do(e.owner.caller, "POST", "/api/v1/schedules", map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, "timezone", errField(res))
	e.fake.fail = serviceerror.NewUnavailable("down")
	requireError(t, e.do(e.owner.caller, "POST", "/api/v1/schedules", map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *"}), 503, "temporal_unavailable")
	require.Empty(t, e.do(e.owner.caller, "GET", "/api/v1/schedules", nil).list())

	// Scopes: bridges:read reads, bridges:write writes.
	readOnly := e.apiKey(e.owner, "bridges:read")
	requireError(t, e.do(readOnly, "POST", "/api/v1/schedules", map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *"}), 403, "insufficient_scope")
	ordersOnly := e.apiKey(e.owner, "orders:read", "orders:write")
	requireError(t, e.do(ordersOnly, "GET", "/api/v1/schedules", nil), 403, "insufficient_scope")
	writer := e.apiKey(e.owner, "bridges:write")
	res = e.do(writer, "POST", "/api/v1/schedules", map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "* * * * *"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	id := res.data()["id"].(string)
	for _, path := range []string{"/pause", "/resume", "/trigger"} {
		requireError(t, e.do(readOnly, "POST", "/api/v1/schedules/"+id+path, nil), 403, "insufficient_scope")
	}
	requireError(t, e.do(readOnly, "PATCH", "/api/v1/schedules/"+id, map[string]any{"cron": "* * * * *"}), 403, "insufficient_scope")
	requireError(t, e.do(readOnly, "DELETE", "/api/v1/schedules/"+id, nil), 403, "insufficient_scope")
	requireError(t, e.do(ordersOnly, "GET", "/api/v1/schedules/"+id, nil), 403, "insufficient_scope")
	require.Equal(t, 200, e.do(readOnly, "GET", "/api/v1/schedules/"+id, nil).Code)
}

func TestSchedulePauseResumePatchDelete(t *testing.T) {
	e := newScheduleEnv(t)
	d := e.create(map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "0 * * * *"})
	id := d["id"].(string)
	path := "/api/v1/schedules/" + id

	// pause: isActive false, nextRunAt null, the Temporal Schedule paused.
	res := e.do(e.owner.caller, "POST", path+"/pause", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.ElementsMatch(t, responseKeys(d), responseKeys(res.data()), "pause answers the schedule detail")
	require.Equal(t, false, res.data()["isActive"])
	require.Nil(t, res.data()["nextRunAt"])
	require.True(t, e.fake.get("schedule/"+id).state.Paused)
	require.Equal(t, "paused", e.do(e.owner.caller, "GET", "/api/v1/schedules", nil).list()[0]["status"])
	// Pausing again changes nothing.
	require.Equal(t, 200, e.do(e.owner.caller, "POST", path+"/pause", nil).Code)

	// resume: the next run as Temporal gives it.
	res = e.do(e.owner.caller, "POST", path+"/resume", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.ElementsMatch(t, responseKeys(d), responseKeys(res.data()), "resume answers the schedule detail")
	require.Equal(t, true, res.data()["isActive"])
	require.Equal(t, fakeNext.Add(2*time.Hour).Format(time.RFC3339), res.data()["nextRunAt"])
	require.False(t, e.fake.get("schedule/"+id).state.Paused)

	// PATCH cron, task, status: the Temporal Schedule follows.
	res = e.do(e.owner.caller, "PATCH", path, map[string]any{"cron": "30 6 * * *", "task": "warehouse-sync", "timezone": "America/New_York"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "30 6 * * *", res.data()["cronExpression"])
	require.Equal(t, "warehouse-sync", res.data()["taskName"])
	require.Equal(t, "America/New_York", res.data()["timezone"])
	s := e.fake.get("schedule/" + id)
	require.Equal(t, []string{"30 6 * * *"}, s.spec.CronExpressions)
	require.Equal(t, "America/New_York", s.spec.TimeZoneName)
	require.Equal(t, "warehouse-sync", s.action.(*client.ScheduleWorkflowAction).Args[0].(activities.ScheduledBridgeTaskInput).TaskName)
	res = e.do(e.owner.caller, "PATCH", path, map[string]any{"status": "paused"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, false, res.data()["isActive"])
	require.Nil(t, res.data()["nextRunAt"])
	require.True(t, e.fake.get("schedule/"+id).state.Paused)
	for body, field := range map[string]string{
		`{"cron": "* * *"}`: "cron", `{"task": "grab-shipments"}`: "task", `{"status": "off"}`: "status",
		`{"timezone": null}`: "timezone", `{"task": ""}`: "task",
	} {
		res := e.do(e.owner.caller, "PATCH", path, body)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, field, errField(res), body)
	}
	// The task (checked against the bridge's type) is named with the other
	// fields, in the handler's order (task, cron, timezone, status, input).
	res = e.do(e.owner.caller, "PATCH", path, `{"status": "off", "cron": "* * *", "task": "grab-shipments"}`)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"task", "cron", "status"}, bridgeErrFields(t, res))

	// Temporal failing: 503 and the row as it was.
	before := e.do(e.owner.caller, "GET", path, nil).data()
	e.fake.fail = serviceerror.NewUnavailable("down")
	requireError(t, e.do(e.owner.caller, "POST", path+"/resume", nil), 503, "temporal_unavailable")
	require.Equal(t, before, e.do(e.owner.caller, "GET", path, nil).data())

	// A Temporal Schedule lost behind the service's back is created again
	// by the next change.
	e.fake.mu.Lock()
	delete(e.fake.byID, "schedule/"+id)
	e.fake.mu.Unlock()
	res = e.do(e.owner.caller, "POST", path+"/resume", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.NotNil(t, e.fake.get("schedule/"+id))
	require.Equal(t, fakeNext.Format(time.RFC3339), res.data()["nextRunAt"])

	// delete: the row and the Temporal Schedule go.
	res = e.do(e.owner.caller, "DELETE", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, true, res.Body["success"])
	require.Nil(t, e.fake.get("schedule/"+id))
	requireError(t, e.do(e.owner.caller, "GET", path, nil), 404, "not_found")
	requireError(t, e.do(e.owner.caller, "DELETE", path, nil), 404, "not_found")
}

func TestScheduleTrigger(t *testing.T) {
	e := newScheduleEnv(t)
	d := e.create(map[string]any{"bridge_id": e.bridge, "task": "grab-orders", "cron": "0 * * * *", "status": "paused", "input": map[string]any{"full": true}})
	id := d["id"].(string)

	// Allowed on a paused schedule: 201 with the queued execution, its
	// BridgeTask started; the schedule's timing is untouched.
	in := expectTaskStart(t, e.tc, e.owner.org, e.bridge, "grab-orders", nil)
	res := e.do(e.owner.caller, "POST", "/api/v1/schedules/"+id+"/trigger", nil)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	got := res.data()
	execID := got["id"].(string)
	require.Equal(t, in.TaskExecutionID, execID)
	require.Equal(t, map[string]any{
		"id": execID, "organizationId": e.owner.org, "bridgeId": e.bridge, "taskName": "grab-orders",
		"status": "queued", "input": map[string]any{"full": true}, "createdAt": got["createdAt"],
	}, got)
	after := e.do(e.owner.caller, "GET", "/api/v1/schedules/"+id, nil).data()
	require.Equal(t, false, after["isActive"])
	require.Nil(t, after["nextRunAt"])

	// The run is the schedule's; a second trigger while it is queued is 409.
	runs := e.do(e.owner.caller, "GET", "/api/v1/schedules/"+id+"/executions", nil)
	require.Equal(t, 200, runs.Code, "%s", runs.Raw)
	require.Len(t, runs.list(), 1)
	require.Equal(t, execID, runs.list()[0]["id"])
	requireError(t, e.do(e.owner.caller, "POST", "/api/v1/schedules/"+id+"/trigger", nil), 409, "conflict")

	// A bridge no longer active refuses.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE bridges SET status = 'paused' WHERE id = $1`, e.bridge)
	require.NoError(t, err)
	requireError(t, e.do(e.owner.caller, "POST", "/api/v1/schedules/"+id+"/trigger", nil), 409, "conflict")

	// A start Temporal refuses fails the execution (kept as a record).
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE bridges SET status = 'active' WHERE id = $1`, e.bridge)
	require.NoError(t, err)
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE task_executions SET status = 'completed' WHERE id = $1`, execID)
	require.NoError(t, err)
	e.tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewInvalidArgument("bad")).Once()
	res = e.do(e.owner.caller, "POST", "/api/v1/schedules/"+id+"/trigger", nil)
	require.GreaterOrEqual(t, res.Code, 400)
	runs = e.do(e.owner.caller, "GET", "/api/v1/schedules/"+id+"/executions", nil)
	require.Equal(t, "failed", runs.list()[0]["status"])
	require.Equal(t, float64(1), e.do(e.owner.caller, "GET", "/api/v1/schedules/"+id, nil).data()["errorCount"])
}
