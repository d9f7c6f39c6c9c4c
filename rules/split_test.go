package rules

import (
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

func splitTestDoc(t *testing.T, items string) map[string]any {
	t.Helper()
	d, err := cond.DecodeDoc([]byte(`{"shippingAddress": {"country": "US"}, "lineItems": ` + items +
		`, "totals": {"subtotal": 60, "shipping": 10, "tax": 0.01, "discount": 3, "total": 67.01}}`))
	require.NoError(t, err)
	return d.(map[string]any)
}

func TestPlanFieldGroup(t *testing.T) {
	doc := splitTestDoc(t, `[
		{"sku": "A", "totalPrice": 10, "attrs": {"wh": "east"}},
		{"sku": "B", "totalPrice": 20, "attrs": {"wh": 7}},
		{"sku": "C", "totalPrice": 30},
		{"sku": "D", "totalPrice": 0, "attrs": {"wh": "east"}}]`)
	gf := "lineItems[].attrs.wh"
	r, err := CompileSplitRule(store.SplitRule{Method: MethodFieldGroup, GroupField: &gf})
	require.NoError(t, err)
	p := r.Plan(doc, nil)
	require.True(t, p.WouldSplit)
	labels := []string{}
	counts := []int{}
	for _, g := range p.Groups {
		labels = append(labels, g.Label)
		counts = append(counts, len(g.Items))
	}
	require.Equal(t, []string{"east", "7", RemainderLabel}, labels, "first appearance order; the item without the field in the remainder")
	require.Equal(t, []int{2, 1, 1}, counts)

	// Money shares add up exactly.
	tot := childTotals(doc["totals"].(map[string]any), p.Groups)
	for _, k := range []string{"shipping", "tax", "discount", "total"} {
		var sum int64
		for _, c := range tot {
			sum += cents(c[k])
		}
		require.Equal(t, cents(doc["totals"].(map[string]any)[k]), sum, k)
	}
	require.Equal(t, json.Number("10.00"), tot[0]["subtotal"])

	one := splitTestDoc(t, `[{"sku": "A", "v": 1}, {"sku": "B", "v": 1.0}]`)
	gf = "v"
	r, _ = CompileSplitRule(store.SplitRule{Method: MethodFieldGroup, GroupField: &gf})
	require.False(t, r.Plan(one, nil).WouldSplit, "1 and 1.0 are one group")
	require.Empty(t, r.Plan(one, nil).Groups)
	require.False(t, r.Plan(splitTestDoc(t, `[{"v": 1}]`), nil).WouldSplit)
}

func TestPlanConditionGroups(t *testing.T) {
	setID := uuid.New()
	groups := []ConditionGroup{
		{Label: "listed", MatchMode: "all", Conditions: []cond.Condition{{Field: "lineItems[].sku", Operator: cond.OpInSet, SetID: &setID}}},
		{Label: "us-big", MatchMode: "all", Conditions: []cond.Condition{
			{Field: "lineItems[].totalPrice", Operator: cond.OpGreaterThanOrEquals, Value: 20.0},
			{Field: "shippingAddress.country", Operator: cond.OpEquals, Value: "US"},
		}},
	}
	raw, _ := json.Marshal(groups)
	r, err := CompileSplitRule(store.SplitRule{Method: MethodCondition, ConditionGroups: raw})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{setID}, r.SetIDs())
	doc := splitTestDoc(t, `[{"sku": "A", "totalPrice": 10}, {"sku": "B", "totalPrice": 20}, {"sku": "C", "totalPrice": 30}]`)
	sets := cond.Sets{setID: cond.NewSet(cond.TypeString, []string{"C"})}
	p := r.Plan(doc, sets)
	require.True(t, p.WouldSplit)
	require.Len(t, p.Groups, 3)
	require.Equal(t, "listed", p.Groups[0].Label)
	require.Equal(t, "C", p.Groups[0].Items[0].(map[string]any)["sku"], "an item is judged alone: C is listed, B is not")
	require.Equal(t, "us-big", p.Groups[1].Label)
	require.Len(t, p.Groups[1].Items, 1)
	require.Equal(t, RemainderLabel, p.Groups[2].Label)
}

func TestDecodeConditionGroups(t *testing.T) {
	_, errs := DecodeConditionGroups([]any{
		map[string]any{"label": "a", "conditions": []any{map[string]any{"field": "x", "operator": "exists"}}},
		map[string]any{"label": "a", "matchMode": "any", "conditions": []any{map[string]any{"field": "x", "operator": "exists"}}},
	}, "conditionGroups")
	require.Equal(t, []cond.FieldError{{Field: "conditionGroups[1].label", Message: "must be unique among the groups"}}, errs)
	g, errs := DecodeConditionGroups([]any{
		map[string]any{"label": " a ", "conditions": []any{map[string]any{"field": "x", "operator": "exists"}}},
	}, "conditionGroups")
	require.Nil(t, errs)
	require.Equal(t, "a", g[0].Label)
	require.Equal(t, "all", g[0].MatchMode)
	require.NoError(t, ValidGroupField("lineItems[].vendor"))
	require.Error(t, ValidGroupField("lineItems[]."))
}

// splitTestOrder stores an order with items of two vendors.
func splitTestOrder(t *testing.T, s *store.Store) (store.Order, uuid.UUID) {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "r" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "R"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Rules "+u.Email, u.ID)
	require.NoError(t, err)
	bridge := uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Shop')`, bridge, org.ID)
	require.NoError(t, err)
	o, err := store.CreateOrder(ctx, s.Pool, store.Order{
		ID: uuid.New(), OrganizationID: org.ID, BridgeID: &bridge, ExternalID: "R-1", Status: "pending",
		PaymentStatus: "pending", FulfillmentStatus: "unfulfilled",
		Customer: json.RawMessage(`{"email":"a@example.com"}`), CustomerEmail: "a@example.com",
		LineItems: json.RawMessage(`[{"sku":"A","vendor":"n","totalPrice":1},{"sku":"B","vendor":"s","totalPrice":2}]`),
		Totals:    json.RawMessage(`{"subtotal":3,"shipping":0,"tax":0,"discount":0,"total":3}`), Total: 3, Currency: "USD",
	})
	require.NoError(t, err)
	gf := "vendor"
	rule, err := store.CreateSplitRule(ctx, s, store.SplitRule{ID: uuid.New(), OrganizationID: org.ID, Name: "v", Method: MethodFieldGroup, GroupField: &gf, IsActive: true})
	require.NoError(t, err)
	return o, rule.ID
}

// Hooks run twice at once (a retried import) split an order once.
func TestSplitOrderOnce(t *testing.T) {
	s := storetest.New(t)
	o, ruleID := splitTestOrder(t, s)
	h := &Hooks{Store: s}
	var wg sync.WaitGroup
	results := make([]SplitResult, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			results[i], err = h.SplitOrder(t.Context(), o.OrganizationID, o.ID)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	splits := 0
	for _, r := range results {
		if r.RuleID != uuid.Nil {
			splits++
			require.Equal(t, ruleID, r.RuleID)
			require.Len(t, r.ChildIDs, 2)
		}
	}
	require.Equal(t, 1, splits)
	var n int
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE organization_id = $1`, o.OrganizationID).Scan(&n))
	require.Equal(t, 3, n)
	rule, err := store.SplitRuleByID(t.Context(), s.Pool, o.OrganizationID, ruleID)
	require.NoError(t, err)
	require.Equal(t, 1, rule.OrdersSplit)
	// A child is never split again.
	var child uuid.UUID
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT id FROM orders WHERE metadata->>'parentOrderId' = $1 LIMIT 1`, o.ID.String()).Scan(&child))
	res, err := h.SplitOrder(t.Context(), o.OrganizationID, child)
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, res.RuleID)
	require.NoError(t, h.OrderCreated(t.Context(), o.OrganizationID, o.ID))
}

func TestSetCache(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	o, _ := splitTestOrder(t, s)
	org := o.OrganizationID
	set, err := store.CreateConditionSet(ctx, s.Pool, store.ConditionSet{ID: uuid.New(), OrganizationID: org, Name: "c", ValueType: cond.TypeString})
	require.NoError(t, err)
	_, err = store.AddConditionSetValues(ctx, s, org, set.ID, []store.NewConditionSetValue{{Value: "A"}})
	require.NoError(t, err)

	var c SetCache
	first, err := c.Load(ctx, s.Pool, org, []uuid.UUID{set.ID, uuid.New()})
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.True(t, first[set.ID].Has("A"))
	again, err := c.Load(ctx, s.Pool, org, []uuid.UUID{set.ID})
	require.NoError(t, err)
	require.Same(t, first[set.ID], again[set.ID], "unchanged: served from the cache")

	_, err = store.AddConditionSetValues(ctx, s, org, set.ID, []store.NewConditionSetValue{{Value: "B"}})
	require.NoError(t, err)
	fresh, err := c.Load(ctx, s.Pool, org, []uuid.UUID{set.ID})
	require.NoError(t, err)
	require.NotSame(t, first[set.ID], fresh[set.ID])
	require.True(t, fresh[set.ID].Has("B"), "a change is seen at once")

	otherOrg, _ := splitTestOrder(t, s)
	none, err := c.Load(ctx, s.Pool, otherOrg.OrganizationID, []uuid.UUID{set.ID})
	require.NoError(t, err)
	require.Empty(t, none, "another organization's set is not served")
}

// A doc with only the fields the conditions read matches as the whole
// one (DispatchOrders decodes no more for a sync page's orders).
func TestOrderDocOfFields(t *testing.T) {
	o := store.Order{ID: uuid.New(), Status: "confirmed", Currency: "USD",
		LineItems:  json.RawMessage(`[{"sku": "A", "quantity": 2}]`),
		Totals:     json.RawMessage(`{"total": 150}`),
		SourceData: json.RawMessage(`{"huge": "platform payload"}`),
		Customer:   json.RawMessage(`{"email": "a@example.com"}`)}
	full, err := OrderDoc(o)
	require.NoError(t, err)
	require.Contains(t, full, "sourceData")
	for _, tc := range []struct {
		conds []cond.Condition
		want  bool
	}{
		{[]cond.Condition{{Field: "line_items[].sku", Operator: cond.OpEquals, Value: "A"}, {Field: "status", Operator: cond.OpExists}}, true},
		{[]cond.Condition{{Field: "totals.total", Operator: cond.OpGreaterThan, Value: 200.0}}, false},
		{[]cond.Condition{{Field: "customer.email", Operator: cond.OpNotExists}}, false},
		{[]cond.Condition{{Field: "billingAddress", Operator: cond.OpNotExists}}, true},
	} {
		p, err := cond.Compile(tc.conds, cond.MatchAll)
		require.NoError(t, err)
		fields := map[string]bool{}
		for _, f := range p.Fields() {
			fields[f] = true
		}
		doc, err := orderDoc(o, fields)
		require.NoError(t, err)
		require.NotContains(t, doc, "sourceData", "not read, not decoded")
		require.Equal(t, tc.want, p.Match(doc, nil), "%v", tc.conds)
		require.Equal(t, p.Match(full, nil), p.Match(doc, nil), "%v", tc.conds)
	}
}
