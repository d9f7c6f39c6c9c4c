package routing_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// starter records the assignments whose runs were asked for.
type starter struct {
	mu  sync.Mutex
	ids []uuid.UUID
}

func (st *starter) StartAssignments(_ context.Context, _ uuid.UUID, ids []uuid.UUID) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ids = append(st.ids, ids...)
	return len(ids), nil
}

type fixture struct {
	s            *store.Store
	org          uuid.UUID
	shop, hub    uuid.UUID
	order        uuid.UUID
	otherOrg     uuid.UUID
	otherHub     uuid.UUID
	otherOrderID uuid.UUID
}

func newOrg(t *testing.T, s *store.Store) (org, shop, hub, order uuid.UUID) {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "r" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "R"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(ctx, s, "Routing "+u.Email, u.ID)
	require.NoError(t, err)
	shop, hub = uuid.New(), uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $3, 'storefront_a', 'Shop'), ($2, $3, 'shipping_hub_a', 'Hub')`, shop, hub, o.ID)
	require.NoError(t, err)
	ord, err := store.CreateOrder(ctx, s.Pool, store.Order{
		ID: uuid.New(), OrganizationID: o.ID, BridgeID: &shop, ExternalID: "ext-" + uuid.NewString()[:8], Status: "pending",
		PaymentStatus: "pending", FulfillmentStatus: "unfulfilled",
		Customer:      json.RawMessage(`{"email":"a@example.com","firstName":"Ann","lastName":"Lee"}`),
		CustomerEmail: "a@example.com", CustomerName: "Ann Lee",
		LineItems: json.RawMessage(`[{"sku":"S","name":"N","quantity":1,"unitPrice":1,"totalPrice":1,"requiresShipping":true,"taxable":true}]`),
		Totals:    json.RawMessage(`{"subtotal":1,"shipping":0,"tax":0,"discount":0,"total":1}`), Total: 1, Currency: "USD",
	})
	require.NoError(t, err)
	return o.ID, shop, hub, ord.ID
}

func newFixture(t *testing.T) fixture {
	s := storetest.New(t)
	var f fixture
	f.s = s
	f.org, f.shop, f.hub, f.order = newOrg(t, s)
	f.otherOrg, _, f.otherHub, f.otherOrderID = newOrg(t, s)
	return f
}

// operation is how an operation's execution acts: scoped to
// operations:write, on behalf of a user.
func operation(org uuid.UUID) domain.Actor {
	return domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: org, Name: "operation",
		Scopes: []string{"operations:write"}, Scoped: true,
		OnBehalfOf: &domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: org}}
}

// DispatchToBridge as an operation makes one assignment per order and
// bridge with metadata.trigger operation and no dispatcher, starts it
// once, and answers the same assignment (Created false) when called again.
func TestDispatchToBridgeAsOperation(t *testing.T) {
	f := newFixture(t)
	st := &starter{}
	svc := routing.New(routing.Deps{Store: f.s, Starter: st})
	ctx := t.Context()
	op := operation(f.org)

	res, err := svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.hub,
		Metadata: map[string]any{"operationId": op.ID.String(), "trigger": "forged"}})
	require.NoError(t, err)
	require.True(t, res.Created)
	a := res.Assignment
	require.Nil(t, a.DispatcherID)
	require.Equal(t, routing.AssignmentPending, a.Status)
	require.Equal(t, f.hub, a.DestinationBridgeID)
	var md map[string]any
	require.NoError(t, json.Unmarshal(a.Metadata, &md))
	require.Equal(t, "operation", md["trigger"])
	require.Equal(t, op.ID.String(), md["operationId"])
	require.Equal(t, []uuid.UUID{a.ID}, st.ids)

	again, err := svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.hub})
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, a.ID, again.Assignment.ID)
	require.Len(t, st.ids, 1, "a repeated dispatch starts nothing")

	// Another organization's order or bridge is not found; so is an
	// order of this organization sent to a foreign bridge.
	_, err = svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.otherOrderID, BridgeID: f.hub})
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.otherHub})
	require.ErrorIs(t, err, domain.ErrNotFound)
	var n int
	require.NoError(t, f.s.Pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_assignments WHERE destination_bridge_id = $1`, f.otherHub).Scan(&n))
	require.Zero(t, n)

	// An operation without operations:write, or an API key without
	// dispatchers:write, is refused.
	noScope := op
	noScope.Scopes = []string{"orders:read"}
	_, err = svc.DispatchToBridge(ctx, noScope, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.shop})
	require.ErrorIs(t, err, domain.ErrForbidden)
	key := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: f.org, Scoped: true, Scopes: []string{"operations:write"}}
	_, err = svc.DispatchToBridge(ctx, key, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.shop})
	require.ErrorIs(t, err, domain.ErrForbidden)

	// A user's direct dispatch is manual.
	user := domain.Actor{Kind: domain.ActorUser, OrganizationID: f.org}
	res, err = svc.DispatchToBridge(ctx, user, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.shop})
	require.NoError(t, err)
	require.JSONEq(t, `{"trigger":"manual"}`, string(res.Assignment.Metadata))
}

// CancelAssignment skips a pending assignment once (a second cancel
// answers it unchanged), refuses one being or already pushed, and never
// reaches another organization's.
func TestCancelAssignment(t *testing.T) {
	f := newFixture(t)
	svc := routing.New(routing.Deps{Store: f.s})
	ctx := t.Context()
	op := operation(f.org)
	res, err := svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.hub})
	require.NoError(t, err)
	id := res.Assignment.ID

	_, err = svc.CancelAssignment(ctx, operation(f.otherOrg), id, "undo")
	require.ErrorIs(t, err, domain.ErrNotFound)

	a, err := svc.CancelAssignment(ctx, op, id, "undone by operation")
	require.NoError(t, err)
	require.Equal(t, routing.AssignmentSkipped, a.Status)
	require.Equal(t, "undone by operation", *a.ErrorMessage)
	var md map[string]any
	require.NoError(t, json.Unmarshal(a.Metadata, &md))
	require.Equal(t, true, md["cancelled"])
	require.Equal(t, "operation", md["trigger"])

	again, err := svc.CancelAssignment(ctx, op, id, "twice")
	require.NoError(t, err)
	require.Equal(t, "undone by operation", *again.ErrorMessage)

	// The run that starts afterwards does nothing: BeginAssignment leaves
	// a skipped assignment as it is.
	begun, err := store.BeginAssignment(ctx, f.s.Pool, f.org, id)
	require.NoError(t, err)
	require.Equal(t, routing.AssignmentSkipped, begun.Status)

	// Being pushed (processing) or pushed (completed): 409, unchanged.
	res, err = svc.DispatchToBridge(ctx, op, routing.DispatchToBridgeInput{OrderID: f.order, BridgeID: f.shop})
	require.NoError(t, err)
	_, err = store.BeginAssignment(ctx, f.s.Pool, f.org, res.Assignment.ID)
	require.NoError(t, err)
	a, err = svc.CancelAssignment(ctx, op, res.Assignment.ID, "")
	require.ErrorIs(t, err, domain.ErrConflict)
	require.Equal(t, routing.AssignmentProcessing, a.Status)

	_, err = svc.CancelAssignment(ctx, op, uuid.New(), "")
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// Dispatchers are validated by the domain (every problem named) and
// scoped to the actor's organization; an agent acting for an API key
// with only dispatchers:read cannot write.
func TestDispatcherCRUDAsAgent(t *testing.T) {
	f := newFixture(t)
	svc := routing.New(routing.Deps{Store: f.s})
	ctx := t.Context()
	agent := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org, Scoped: true, Scopes: []string{"dispatchers:read", "dispatchers:write"}}

	_, err := svc.CreateDispatcher(ctx, agent, routing.DispatcherInput{})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, domain.KindInvalid, de.Kind)
	var fields []string
	for _, fe := range de.Fields {
		fields = append(fields, fe.Field)
	}
	require.Equal(t, []string{"name", "sourceBridgeIds", "destinationBridgeId", "conditions"}, fields)

	name, srcs, prio := "Route", []uuid.UUID{f.shop, f.shop}, 7
	d, err := svc.CreateDispatcher(ctx, agent, routing.DispatcherInput{Name: &name, SourceBridgeIDs: &srcs, DestinationBridgeID: &f.hub,
		Priority: &prio, ConditionsSet: true, Conditions: []any{map[string]any{"field": "status", "operator": "exists"}}})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{f.shop}, d.SourceBridgeIDs)
	require.Equal(t, 7, d.Priority)
	require.Equal(t, []string{"order_created"}, d.TriggerOn)

	// Same destination as a source: refused by the domain.
	upd := []uuid.UUID{f.hub}
	_, err = svc.UpdateDispatcher(ctx, agent, d.ID, routing.DispatcherInput{SourceBridgeIDs: &upd})
	require.ErrorAs(t, err, &de)
	require.Equal(t, "destinationBridgeId", de.Fields[0].Field)

	// The dispatcher evaluates the order (manual) and assigns it once.
	created, err := svc.EvaluateDispatchers(ctx, agent, f.order)
	require.NoError(t, err)
	require.Len(t, created, 1)
	require.Equal(t, d.ID, *created[0].DispatcherID)
	created, err = svc.EvaluateDispatchers(ctx, agent, f.order)
	require.NoError(t, err)
	require.Empty(t, created)

	// Another organization sees nothing.
	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.otherOrg}
	_, err = svc.GetDispatcher(ctx, other, d.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.EvaluateDispatchers(ctx, other, f.order)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, svc.DeleteDispatcher(ctx, other, d.ID), domain.ErrNotFound)

	readOnly := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org, Scoped: true, Scopes: []string{"dispatchers:read"}}
	_, err = svc.UpdateDispatcher(ctx, readOnly, d.ID, routing.DispatcherInput{Priority: &prio})
	require.ErrorIs(t, err, domain.ErrForbidden)
	page, err := svc.ListDispatchers(ctx, readOnly, routing.ListDispatchersInput{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)

	// A dispatcher with a pending assignment cannot be deleted.
	require.ErrorIs(t, svc.DeleteDispatcher(ctx, agent, d.ID), domain.ErrConflict)
}

// Split rules: the domain names every problem of a create, checks the
// method's companion field against the stored rule on update, and dry runs
// only the organization's orders.
func TestSplitRulesAsAgent(t *testing.T) {
	f := newFixture(t)
	svc := routing.New(routing.Deps{Store: f.s})
	ctx := t.Context()
	agent := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org, Scoped: true, Scopes: []string{"dispatchers:read", "dispatchers:write"}}

	bad := "bogus"
	_, err := svc.CreateSplitRule(ctx, agent, routing.SplitRuleInput{Method: &bad})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "name", de.Fields[0].Field)
	require.Equal(t, "method", de.Fields[1].Field)

	name, method, field := "By vendor", "field_group", "lineItems.vendor"
	rule, err := svc.CreateSplitRule(ctx, agent, routing.SplitRuleInput{Name: &name, Method: &method, GroupField: &field, BridgeIDSet: true, BridgeID: &f.shop})
	require.NoError(t, err)
	require.Equal(t, field, *rule.GroupField)

	// Clearing the group field of a field_group rule leaves it incomplete.
	empty := ""
	_, err = svc.UpdateSplitRule(ctx, agent, rule.ID, routing.SplitRuleInput{GroupField: &empty})
	require.ErrorAs(t, err, &de)
	require.Equal(t, "groupField", de.Fields[0].Field)

	plan, err := svc.TestSplitRule(ctx, agent, rule.ID, f.order)
	require.NoError(t, err)
	require.False(t, plan.WouldSplit)
	_, err = svc.TestSplitRule(ctx, agent, rule.ID, f.otherOrderID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.GetSplitRule(ctx, domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.otherOrg}, rule.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.NoError(t, svc.DeleteSplitRule(ctx, agent, rule.ID))
	require.ErrorIs(t, svc.DeleteSplitRule(ctx, agent, rule.ID), domain.ErrNotFound)
}

// Condition sets: values are checked against the set's type by the
// domain, whoever calls (typed []string or decoded JSON), and another
// organization's set is not found.
func TestConditionSetsAsAgent(t *testing.T) {
	f := newFixture(t)
	svc := routing.New(routing.Deps{Store: f.s})
	ctx := t.Context()
	agent := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org}
	name, typ := "VIP", "number"
	set, err := svc.CreateConditionSet(ctx, agent, routing.ConditionSetInput{Name: &name, ValueType: &typ})
	require.NoError(t, err)
	_, err = svc.CreateConditionSet(ctx, agent, routing.ConditionSetInput{Name: &name, ValueType: &typ})
	require.ErrorIs(t, err, domain.ErrConflict)

	added, err := svc.AddConditionSetValues(ctx, agent, set.ID, []any{map[string]any{"value": json.Number("1.50")}, map[string]any{"value": "2", "label": "two"}, "1.5"})
	require.NoError(t, err)
	require.Equal(t, 2, added, "1.50 and 1.5 are one canonical value")
	_, err = svc.AddConditionSetValues(ctx, agent, set.ID, []string{"x"})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "values[0].value", de.Fields[0].Field)
	_, err = svc.AddConditionSetValues(ctx, agent, set.ID, nil)
	require.ErrorIs(t, err, domain.ErrInvalid)

	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.otherOrg}
	_, err = svc.AddConditionSetValues(ctx, other, set.ID, []string{"3"})
	require.ErrorIs(t, err, domain.ErrNotFound)
	removed, err := svc.RemoveConditionSetValues(ctx, agent, set.ID, []string{"2", "7"})
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	page, err := svc.ListConditionSetValues(ctx, agent, set.ID, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	require.Equal(t, "1.5", page.Items[0].Value)
}

// Transformations: code that does not compile is invalid_javascript,
// another organization's bridge is named like an unknown one, and a dry
// run reports a script's failure as a result, not an error.
func TestTransformationsAsAgent(t *testing.T) {
	f := newFixture(t)
	svc := routing.New(routing.Deps{Store: f.s})
	ctx := t.Context()
	agent := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org, Scoped: true, Scopes: []string{"transformations:read", "transformations:write"}}
	name, tp, bad := "Tag", "before_operation", "function transform(o) { return o"
	_, err := svc.CreateTransformation(ctx, agent, routing.TransformationInput{Name: &name, TriggerPoint: &tp, Code: &bad})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "invalid_javascript", de.Code)

	good := "function transform(o) { o.tags = ['x']; return o }"
	_, err = svc.CreateTransformation(ctx, agent, routing.TransformationInput{Name: &name, TriggerPoint: &tp, Code: &good, BridgeIDSet: true, BridgeID: &f.otherHub})
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "bridgeId", Message: "must be a bridge of this organization"}}, de.Fields)

	tr, err := svc.CreateTransformation(ctx, agent, routing.TransformationInput{Name: &name, TriggerPoint: &tp, Code: &good})
	require.NoError(t, err)
	res, err := svc.TestTransformation(ctx, agent, tr.ID, map[string]any{"id": "1"})
	require.NoError(t, err)
	require.True(t, res.Success)
	require.JSONEq(t, `{"id":"1","tags":["x"]}`, string(res.Output))
	throws := "function transform(o) { throw new Error('nope') }"
	res, err = svc.TestCode(ctx, agent, &throws, map[string]any{})
	require.NoError(t, err)
	require.False(t, res.Success)
	require.Contains(t, *res.Error, "nope")

	_, err = svc.TestTransformation(ctx, domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.otherOrg}, tr.ID, map[string]any{})
	require.ErrorIs(t, err, domain.ErrNotFound)
	readOnly := domain.Actor{Kind: domain.ActorAgent, OrganizationID: f.org, Scoped: true, Scopes: []string{"transformations:read"}}
	require.ErrorIs(t, svc.DeleteTransformation(ctx, readOnly, tr.ID), domain.ErrForbidden)
	require.NoError(t, svc.DeleteTransformation(ctx, agent, tr.ID))
}
