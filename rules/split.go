package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// Split rule bounds the specification leaves open.
const (
	MaxConditionGroups  = 50
	MaxGroupConditions  = 50
	MaxGroupLabelLen    = 100
	MaxSplitChildren    = 50
	RemainderLabel      = "remainder"
	MethodCondition     = "condition"
	MethodFieldGroup    = "field_group"
	splitTag            = "split"
	maxOrderTags        = 100
	splitExternalSuffix = "-split-"
)

// ConditionGroup is one element of a split rule's conditionGroups: a line
// item goes to the first group (in array order) whose conditions it
// matches; items that match no group stay together in a remainder group.
// Inside a group, a path under lineItems[] (lineItems[].sku, or
// lineItems.sku) reads the item being placed; any other path reads the
// order (shippingAddress.country).
type ConditionGroup struct {
	Label      string           `json:"label"`
	MatchMode  string           `json:"matchMode"`
	Conditions []cond.Condition `json:"conditions"`
}

// DecodeConditionGroups reads conditionGroups from a request body decoded
// into Go values and checks every element: label (1-100 characters,
// unique, not "remainder"), matchMode (all or any, default all) and
// conditions (1-50, as for dispatchers). Problems are named by path
// (conditionGroups[1].conditions[0].operator).
func DecodeConditionGroups(raw any, path string) ([]ConditionGroup, []cond.FieldError) {
	arr, ok := raw.([]any)
	if !ok {
		return nil, []cond.FieldError{{Field: path, Message: "must be an array of condition groups"}}
	}
	if len(arr) < 1 || len(arr) > MaxConditionGroups {
		return nil, []cond.FieldError{{Field: path, Message: fmt.Sprintf("must hold 1-%d condition groups", MaxConditionGroups)}}
	}
	var errs []cond.FieldError
	out := make([]ConditionGroup, 0, len(arr))
	seen := map[string]bool{}
	for i, el := range arr {
		at := fmt.Sprintf("%s[%d]", path, i)
		m, ok := el.(map[string]any)
		if !ok {
			errs = append(errs, cond.FieldError{Field: at, Message: "must be an object with label, matchMode and conditions"})
			continue
		}
		g := ConditionGroup{MatchMode: cond.MatchAll}
		label, isStr := m["label"].(string)
		label = strings.TrimSpace(label)
		switch {
		case m["label"] == nil || (isStr && label == ""):
			errs = append(errs, cond.FieldError{Field: at + ".label", Message: "is required"})
		case !isStr:
			errs = append(errs, cond.FieldError{Field: at + ".label", Message: "must be a string"})
		case utf8.RuneCountInString(label) > MaxGroupLabelLen:
			errs = append(errs, cond.FieldError{Field: at + ".label", Message: fmt.Sprintf("must be at most %d characters", MaxGroupLabelLen)})
		case label == RemainderLabel:
			errs = append(errs, cond.FieldError{Field: at + ".label", Message: `is reserved for the items no group takes`})
		case seen[label]:
			errs = append(errs, cond.FieldError{Field: at + ".label", Message: "must be unique among the groups"})
		default:
			seen[label] = true
			g.Label = label
		}
		if mm, present := m["matchMode"]; present && mm != nil {
			s, isStr := mm.(string)
			if !isStr || (s != cond.MatchAll && s != cond.MatchAny) {
				errs = append(errs, cond.FieldError{Field: at + ".matchMode", Message: "must be one of all, any"})
			} else {
				g.MatchMode = s
			}
		}
		if m["conditions"] == nil {
			errs = append(errs, cond.FieldError{Field: at + ".conditions", Message: "is required"})
		} else {
			conds, cerrs := cond.Decode(m["conditions"], at+".conditions", 1, MaxGroupConditions)
			errs = append(errs, cerrs...)
			g.Conditions = conds
		}
		out = append(out, g)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// ValidGroupField checks a field_group path: a dot path on a line item
// (vendor, properties.warehouse), optionally written under lineItems[].
func ValidGroupField(s string) error {
	return cond.ValidPath(itemPath(s))
}

// itemPath strips a lineItems[] (or line_items, lineItems.) prefix: a
// group field is read on each line item.
func itemPath(s string) string {
	for _, p := range []string{"lineItems[].", "lineItems.", "line_items[].", "line_items."} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest
		}
	}
	return s
}

// SplitRule is a split rule compiled for evaluation.
type SplitRule struct {
	Rule   store.SplitRule
	groups []compiledGroup
	sets   []uuid.UUID
}

type compiledGroup struct {
	label string
	prog  *cond.Program
}

// CompileSplitRule prepares a stored rule.
func CompileSplitRule(r store.SplitRule) (*SplitRule, error) {
	c := &SplitRule{Rule: r}
	switch r.Method {
	case MethodCondition:
		var groups []ConditionGroup
		if err := json.Unmarshal(r.ConditionGroups, &groups); err != nil {
			return nil, fmt.Errorf("split rule %s: conditionGroups: %w", r.ID, err)
		}
		for _, g := range groups {
			p, err := cond.Compile(g.Conditions, g.MatchMode)
			if err != nil {
				return nil, fmt.Errorf("split rule %s: group %q: %w", r.ID, g.Label, err)
			}
			c.groups = append(c.groups, compiledGroup{label: g.Label, prog: p})
			for _, id := range p.SetIDs() {
				if !containsID(c.sets, id) {
					c.sets = append(c.sets, id)
				}
			}
		}
	case MethodFieldGroup:
		if r.GroupField == nil || ValidGroupField(*r.GroupField) != nil {
			return nil, fmt.Errorf("split rule %s: invalid groupField", r.ID)
		}
	default:
		return nil, fmt.Errorf("split rule %s: unknown method %q", r.ID, r.Method)
	}
	return c, nil
}

// SetIDs are the condition sets the rule reads.
func (c *SplitRule) SetIDs() []uuid.UUID { return append([]uuid.UUID(nil), c.sets...) }

func containsID(ids []uuid.UUID, id uuid.UUID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Plan is what a split rule does to an order.
type Plan struct {
	WouldSplit bool
	Reason     string
	// Groups are the non-empty groups in order (the remainder last); empty
	// when the order would not split.
	Groups []PlanGroup
}

// PlanGroup is one future child order.
type PlanGroup struct {
	Label string
	Items []any
}

// Plan evaluates the rule on an order (decoded with OrderDoc).
func (c *SplitRule) Plan(doc map[string]any, sets cond.Sets) Plan {
	items, _ := doc["lineItems"].([]any)
	if len(items) < 2 {
		return Plan{Reason: "the order has fewer than two line items"}
	}
	var groups []PlanGroup
	var remainder []any
	switch c.Rule.Method {
	case MethodCondition:
		groups = make([]PlanGroup, len(c.groups))
		scoped := make(map[string]any, len(doc))
		for k, v := range doc {
			scoped[k] = v
		}
		for _, it := range items {
			scoped["lineItems"] = []any{it}
			placed := false
			for gi, g := range c.groups {
				if g.prog.Match(scoped, sets) {
					groups[gi].Label = g.label
					groups[gi].Items = append(groups[gi].Items, it)
					placed = true
					break
				}
			}
			if !placed {
				remainder = append(remainder, it)
			}
		}
	case MethodFieldGroup:
		path := itemPath(*c.Rule.GroupField)
		index := map[string]int{}
		for _, it := range items {
			key, ok := groupKey(cond.Values(it, path))
			if !ok {
				remainder = append(remainder, it)
				continue
			}
			gi, seen := index[key]
			if !seen {
				gi = len(groups)
				index[key] = gi
				groups = append(groups, PlanGroup{Label: key})
			}
			groups[gi].Items = append(groups[gi].Items, it)
		}
	}
	out := make([]PlanGroup, 0, len(groups)+1)
	for _, g := range groups {
		if len(g.Items) > 0 {
			out = append(out, g)
		}
	}
	if len(remainder) > 0 {
		out = append(out, PlanGroup{Label: RemainderLabel, Items: remainder})
	}
	switch {
	case len(out) <= 1:
		return Plan{Reason: "all line items fall in one group"}
	case len(out) > MaxSplitChildren:
		return Plan{Reason: fmt.Sprintf("the order would split into %d orders; at most %d are made", len(out), MaxSplitChildren)}
	}
	return Plan{WouldSplit: true, Reason: fmt.Sprintf("the line items fall in %d groups", len(out)), Groups: out}
}

// groupKey is the text of the first non-null value a group field reaches:
// a string as is, a number in its shortest form, true/false, an object or
// array as JSON. No value: the item goes to the remainder.
func groupKey(vals []any) (string, bool) {
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			continue
		case string:
			return x, true
		case bool:
			if x {
				return "true", true
			}
			return "false", true
		case json.Number:
			if k, err := cond.Canonical(cond.TypeNumber, string(x)); err == nil {
				return k, true
			}
			return string(x), true
		case float64:
			k, _ := cond.Canonical(cond.TypeNumber, fmt.Sprint(x))
			return k, true
		default:
			raw, _ := json.Marshal(x)
			return string(raw), true
		}
	}
	return "", false
}

// OrderDoc is an order as the API represents it (camelCase), decoded for
// the condition engine with numbers kept exact.
func OrderDoc(o store.Order) (map[string]any, error) { return orderDoc(o, nil) }

// orderDoc is OrderDoc; with decode non-nil, only the JSON fields
// (customer, lineItems, sourceData, ...) it holds are decoded, the others
// left out: the conditions that read only those (cond.Program.Fields)
// match it as the whole document, without decoding an order's source data
// for each of a sync page's orders.
func orderDoc(o store.Order, decode map[string]bool) (map[string]any, error) {
	doc := map[string]any{
		"id": o.ID.String(), "organizationId": o.OrganizationID.String(), "externalId": o.ExternalID,
		"status": o.Status, "paymentStatus": o.PaymentStatus, "fulfillmentStatus": o.FulfillmentStatus,
		"currency": o.Currency, "orderedAt": o.OrderedAt.UTC().Format(time.RFC3339Nano),
		"createdAt": o.CreatedAt.UTC().Format(time.RFC3339Nano),
		"updatedAt": o.UpdatedAt.UTC().Format(time.RFC3339Nano),
		"bridgeId":  nil, "orderNumber": nil, "note": nil,
	}
	if o.BridgeID != nil {
		doc["bridgeId"] = o.BridgeID.String()
	}
	if o.OrderNumber != nil {
		doc["orderNumber"] = *o.OrderNumber
	}
	if o.Note != nil {
		doc["note"] = *o.Note
	}
	for key, t := range map[string]*time.Time{"sentToFulfillment": o.SentToFulfillment, "sentToCart": o.SentToCart} {
		doc[key] = nil
		if t != nil {
			doc[key] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	tags := make([]any, 0, len(o.Tags))
	for _, t := range o.Tags {
		tags = append(tags, t)
	}
	doc["tags"] = tags
	for key, raw := range map[string]json.RawMessage{
		"customer": o.Customer, "shippingAddress": o.ShippingAddress, "billingAddress": o.BillingAddress,
		"lineItems": o.LineItems, "totals": o.Totals, "metadata": o.Metadata, "sourceData": o.SourceData,
	} {
		if decode != nil && !decode[key] {
			continue
		}
		if len(raw) == 0 {
			doc[key] = nil
			continue
		}
		v, err := cond.DecodeDoc(raw)
		if err != nil {
			return nil, fmt.Errorf("order %s: %s: %w", o.ID, key, err)
		}
		doc[key] = v
	}
	return doc, nil
}

// IsSplitParent reports whether an order's metadata marks it as split into
// child orders (its items live on in the children: routing should follow
// them, not the parent).
func IsSplitParent(metadata json.RawMessage) bool {
	return metadataHas(metadata, "splitInto")
}

// IsSplitChild reports whether an order was made by a split.
func IsSplitChild(metadata json.RawMessage) bool {
	return metadataHas(metadata, "parentOrderId")
}

func metadataHas(metadata json.RawMessage, key string) bool {
	if len(metadata) == 0 || !bytes.Contains(metadata, []byte(key)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}

// childTotals splits the parent's totals over the groups: each child's
// subtotal is the sum of its items' totalPrice; shipping, tax, discount and
// total are shared in proportion to those subtotals (by item count when
// they are all zero), in cents, the last child taking the rounding rest, so
// each field of the children adds up to the parent's.
func childTotals(parent map[string]any, groups []PlanGroup) []map[string]any {
	weights := make([]int64, len(groups))
	var sum int64
	for i, g := range groups {
		for _, it := range g.Items {
			m, _ := it.(map[string]any)
			weights[i] += cents(m["totalPrice"])
		}
		sum += weights[i]
	}
	if sum <= 0 {
		sum = 0
		for i, g := range groups {
			weights[i] = int64(len(g.Items))
			sum += weights[i]
		}
	}
	out := make([]map[string]any, len(groups))
	for i, g := range groups {
		var sub int64
		for _, it := range g.Items {
			m, _ := it.(map[string]any)
			sub += cents(m["totalPrice"])
		}
		out[i] = map[string]any{"subtotal": money(sub)}
	}
	for _, k := range []string{"shipping", "tax", "discount", "total"} {
		whole := cents(parent[k])
		var given int64
		for i := range groups {
			share := whole - given
			if i < len(groups)-1 {
				share = int64(math.Floor(float64(whole) * float64(weights[i]) / float64(sum)))
			}
			given += share
			out[i][k] = money(share)
		}
	}
	return out
}

// cents reads a money amount (number or numeric string) in cents.
func cents(v any) int64 {
	var f float64
	switch x := v.(type) {
	case json.Number:
		f, _ = x.Float64()
	case float64:
		f = x
	case string:
		if n, err := json.Number(x).Float64(); err == nil {
			f = n
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int64(math.Round(f * 100))
}

func money(c int64) json.Number {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return json.Number(fmt.Sprintf("%s%d.%02d", sign, c/100, c%100))
}

// DryRun is the plan of one rule for one order, as POST
// /split-rules/{id}/test shows it: nothing is written. An order the rule
// would not touch (another bridge's, already split, made by a split) gets
// wouldSplit false and the reason.
func DryRun(ctx context.Context, db store.DBTX, r store.SplitRule, o store.Order) (Plan, error) {
	switch {
	case r.BridgeID != nil && (o.BridgeID == nil || *o.BridgeID != *r.BridgeID):
		return Plan{Reason: "the rule applies to orders of another bridge"}, nil
	case IsSplitParent(o.Metadata):
		return Plan{Reason: "the order was already split"}, nil
	case IsSplitChild(o.Metadata):
		return Plan{Reason: "the order was created by a split"}, nil
	}
	c, err := CompileSplitRule(r)
	if err != nil {
		return Plan{}, err
	}
	sets, err := LoadSets(ctx, db, o.OrganizationID, c.SetIDs())
	if err != nil {
		return Plan{}, err
	}
	doc, err := OrderDoc(o)
	if err != nil {
		return Plan{}, err
	}
	return c.Plan(doc, sets), nil
}
