package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/workflows"
)

func (f *fixture) standingOrder(svc *agent.Service, name, trigger, conditions, actions string) {
	text := "follow the event"
	in := agent.StandingOrderInput{Name: &name, NaturalLanguage: &text, TriggerType: &trigger}
	if conditions != "" {
		in.Conditions = json.RawMessage(conditions)
	}
	if actions != "" {
		in.Actions = json.RawMessage(actions)
	}
	_, err := svc.CreateStandingOrder(context.Background(), f.caller, in)
	require.NoError(f.t, err)
}

func (f *fixture) insertShipment(org, order uuid.UUID, status string) uuid.UUID {
	id := uuid.New()
	_, err := f.st.Pool.Exec(context.Background(), `INSERT INTO shipments (id, organization_id, order_id, carrier, service, status)
		VALUES ($1, $2, $3, 'carrier_a', 'GROUND', $4)`, id, org, order, status)
	require.NoError(f.t, err)
	return id
}

// Standing orders fired by events: one run per event and standing order
// (an event told again starts nothing), conditions on the event's object,
// another organization's objects never seen, the run's actions proposed
// as tool calls that wait for approval, and an approval that runs once.
func TestStandingOrdersFireOnceOnEvents(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &recordingRuns{}
	tools, err := agent.NewTools(agent.StoreOrders{Store: f.st}, f.ship, agent.StoreAccounts{Store: f.st}, agent.StoreMemory{Store: f.st})
	require.NoError(t, err)
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: tools, Runs: runs, Config: agent.Config{ApprovalTTL: time.Hour}})
	f.svc = svc
	ctx := context.Background()
	ev := svc.Standing()
	var _ rules.Events = ev

	got, err := ev.Fire(ctx, f.org, rules.EventOrderCreated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Empty(t, got, "no standing order: nothing")

	f.standingOrder(svc, "Note big orders", rules.EventOrderCreated, `[{"field": "total", "operator": "greater_than", "value": 5}]`,
		`[{"tool": "add_order_note", "input": {"order_id": "{{id}}", "note": "big order {{orderNumber}}"}}]`)
	// A caller that asked with its write (store.CreateOrderProbeEvents)
	// and found none spares the query; its answer is for that event only.
	got, err = ev.Fire(rules.WithStandingKnown(ctx, rules.EventOrderCreated, false), f.org, rules.EventOrderCreated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Empty(t, got, "told none listens")
	small, other, otherOrder := uuid.New(), uuid.New(), uuid.New()
	f.insertOrder(f.org, small, 3)
	f.insertOrg(other)
	f.insertOrder(other, otherOrder, 100)

	got, err = ev.Fire(ctx, f.org, rules.EventOrderCreated, []uuid.UUID{f.order, small, otherOrder})
	require.NoError(t, err)
	require.Len(t, got, 1, "the small order fails the conditions; another organization's order is not seen")
	require.Equal(t, agent.StatusProcessing, got[0].Status)
	conv := got[0].ConversationID
	ev.Happened(ctx, f.org, rules.EventOrderCreated, []uuid.UUID{f.order, small})
	require.Len(t, runs.turns, 1, "the event told again starts nothing")
	c, err := store.AgentConversationByID(ctx, f.st.Pool, f.org, conv)
	require.NoError(t, err)
	require.Equal(t, "Note big orders", c.Title)

	// The run: its first turn proposes the action, filled from the event's
	// object; the write waits for approval.
	r := f.run(conv)
	turn := runs.turns[0]
	r.in.Turn = &turn
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Minute)
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	list := f.actions(conv)
	require.Len(t, list, 1)
	require.Equal(t, "add_order_note", list[0].ToolName)
	var in struct {
		OrderID string `json:"order_id"`
		Note    string `json:"note"`
	}
	require.NoError(t, json.Unmarshal(list[0].ToolInput, &in))
	require.Equal(t, f.order.String(), in.OrderID)
	require.Equal(t, "big order #"+f.order.String()[:6], in.Note)
	require.Zero(t, f.notes(f.order), "nothing is done before approval")

	r = f.run(conv)
	u := r.decide(0, true, list[0].ID, "ok")
	r.exec()
	require.True(t, u.done)
	require.NoError(t, u.err)
	require.Equal(t, 1, f.notes(f.order))
	_, err = ev.Fire(ctx, f.org, rules.EventOrderCreated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Len(t, runs.turns, 1)
	require.Equal(t, 1, f.notes(f.order), "the approved action ran once")

	// Without actions the natural language and the event's object go to
	// the model; each update of an order is its own event.
	f.standingOrder(svc, "Watch updates", rules.EventOrderUpdated, "", "")
	got, err = ev.Fire(ctx, f.org, rules.EventOrderUpdated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Contains(t, runs.turns[1].Message, "follow the event")
	require.Contains(t, runs.turns[1].Message, f.order.String())
	got, err = ev.Fire(ctx, f.org, rules.EventOrderUpdated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Empty(t, got, "the same update told again")
	_, err = f.st.Pool.Exec(ctx, `UPDATE orders SET updated_at = updated_at + interval '1 second' WHERE id = $1`, f.order)
	require.NoError(t, err)
	got, err = ev.Fire(ctx, f.org, rules.EventOrderUpdated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Len(t, got, 1, "a later update is another event")

	// Shipment events.
	f.standingOrder(svc, "Exceptions", rules.EventTrackingException, `[{"field": "carrier", "operator": "equals", "value": "carrier_a"}]`, "")
	exc := f.insertShipment(f.org, f.order, "exception")
	moving := f.insertShipment(f.org, f.order, "in_transit")
	got, err = ev.Fire(ctx, f.org, rules.EventTrackingException, []uuid.UUID{exc, moving})
	require.NoError(t, err)
	require.Len(t, got, 1, "only the shipment in exception")
	got, err = ev.Fire(ctx, f.org, rules.EventShipmentCreated, []uuid.UUID{exc})
	require.NoError(t, err)
	require.Empty(t, got, "no standing order of on_shipment_created")
	require.Len(t, runs.turns, 4)
}

// A run whose start was lost (the activity stopped after recording it) is
// started by the reconciler, with the same first turn.
func TestReconcileStartsLostStandingRuns(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &recordingRuns{}
	tools, err := agent.NewTools(agent.StoreOrders{Store: f.st}, f.ship, agent.StoreAccounts{Store: f.st}, agent.StoreMemory{Store: f.st})
	require.NoError(t, err)
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: tools, Runs: runs})
	ctx := context.Background()
	f.standingOrder(svc, "All orders", rules.EventOrderCreated, "", "")
	lost := agent.NewStanding(f.st, nil, nil) // records, starts nothing
	got, err := lost.Fire(ctx, f.org, rules.EventOrderCreated, []uuid.UUID{f.order})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Empty(t, runs.turns)
	_, err = f.st.Pool.Exec(ctx, `UPDATE agent_standing_order_runs SET created_at = now() - interval '5 minutes' WHERE organization_id = $1`, f.org)
	require.NoError(t, err)
	res, err := svc.Reconcile(ctx, 100)
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.StandingStarted, 1)
	require.Contains(t, runs.convs, got[0].ConversationID)
}

// BenchmarkStandingEventsCost is what a batch of 100 imported orders pays
// the standing orders: with none of the trigger (one indexed query), and
// with one whose conditions match none of them (a query for the standing
// orders, one for the objects, no run):
//
//	./scripts/test-postgres.sh go test -run '^$' -bench BenchmarkStandingEventsCost -benchtime 500x ./agent/
func BenchmarkStandingEventsCost(b *testing.B) {
	st := storetest.New(b)
	f := &fixture{st: st, org: uuid.New()}
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Bench', $2)`, f.org, "bench-"+f.org.String())
	require.NoError(b, err)
	ids := make([]uuid.UUID, 100)
	for i := range ids {
		ids[i] = uuid.New()
		_, err := st.Pool.Exec(ctx, `INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, line_items, totals, total, ordered_at)
			VALUES ($1, $2, $3, $4, 'pending', '{}', 'c@example.com', '[]', '{"total": 10}', 10, now())`, ids[i], f.org, "b-"+ids[i].String()[:8], "#"+ids[i].String()[:6])
		require.NoError(b, err)
	}
	ev := agent.NewStanding(st, nil, nil)
	b.Run("none", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := ev.Fire(ctx, f.org, rules.EventOrderCreated, ids); err != nil {
				b.Fatal(err)
			}
		}
	})
	caller := domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: f.org, Role: "owner"}
	tools, err := agent.NewTools(agent.StoreOrders{Store: st}, nil, nil, nil)
	require.NoError(b, err)
	svc := agent.New(agent.Deps{Store: st, Tools: tools})
	name, text, trig := "Huge orders", "x", rules.EventOrderCreated
	_, err = svc.CreateStandingOrder(ctx, caller, agent.StandingOrderInput{Name: &name, NaturalLanguage: &text, TriggerType: &trig,
		Conditions: json.RawMessage(`[{"field": "total", "operator": "greater_than", "value": 100000}]`)})
	require.NoError(b, err)
	b.Run("no-match", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			got, err := ev.Fire(ctx, f.org, rules.EventOrderCreated, ids)
			if err != nil || len(got) != 0 {
				b.Fatal(err, len(got))
			}
		}
	})
}
