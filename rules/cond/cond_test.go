package cond

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
)

const testOrder = `{
  "id": "o1", "status": "pending", "externalId": "1001", "orderNumber": null,
  "customer": {"email": "Ada@Example.com", "firstName": "Ada", "lastName": null},
  "shippingAddress": {"country": "US", "zip": "94107", "state": "CA"},
  "billingAddress": null,
  "lineItems": [
    {"sku": "MUG-1", "name": "Mug", "quantity": 2, "unitPrice": 9.5, "totalPrice": 19, "requiresShipping": true, "vendor": "acme"},
    {"sku": "TEE-2", "name": "Tee", "quantity": 1, "unitPrice": 20, "totalPrice": 20, "requiresShipping": false, "weight": null}
  ],
  "totals": {"subtotal": 39, "shipping": 5, "tax": 0, "discount": 0, "total": 44.5},
  "tags": ["vip", "rush"],
  "emptyTags": [],
  "metadata": {"channel": "web", "amount": "25.00", "big": 9007199254740993, "flag": false, "zero": 0, "empty": ""},
  "sourceData": {"id": 12345, "note_attributes": [{"name": "gift", "value": "yes"}]},
  "orderedAt": "2026-03-01T10:00:00Z"
}`

func testDoc(t testing.TB) any {
	t.Helper()
	d, err := DecodeDoc([]byte(testOrder))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOperators(t *testing.T) {
	doc := testDoc(t)
	setID := uuid.New()
	numSet := uuid.New()
	boolSet := uuid.New()
	sets := Sets{
		setID:   NewSet(TypeString, []string{"TEE-2", "X"}),
		numSet:  NewSet(TypeNumber, []string{"12345", "44.5"}),
		boolSet: NewSet(TypeBoolean, []string{"true"}),
	}
	num := func(s string) json.Number { return json.Number(s) }
	cases := []struct {
		field, op string
		value     any
		set       *uuid.UUID
		want      bool
	}{
		// equals / not_equals: typed, case-sensitive.
		{"status", OpEquals, "pending", nil, true},
		{"status", OpEquals, "Pending", nil, false},
		{"customer.email", OpEquals, "ada@example.com", nil, false},
		{"totals.total", OpEquals, 44.5, nil, true},
		{"totals.total", OpEquals, num("44.50"), nil, true},
		{"totals.total", OpEquals, "44.5", nil, true}, // a numeric string against a number
		{"metadata.amount", OpEquals, 25, nil, true},  // a number against a numeric string
		{"metadata.amount", OpEquals, "25", nil, false},
		{"metadata.flag", OpEquals, false, nil, true},
		{"metadata.flag", OpEquals, "false", nil, false},
		{"metadata.zero", OpEquals, false, nil, false},
		{"metadata.big", OpEquals, num("9007199254740993"), nil, true},
		{"status", OpNotEquals, "shipped", nil, true},
		{"status", OpNotEquals, "pending", nil, false},
		{"missing", OpEquals, "x", nil, false},
		{"missing", OpNotEquals, "x", nil, true},
		{"tags", OpEquals, "vip", nil, false}, // an array is not a scalar: use contains
		{"tags[]", OpEquals, "vip", nil, true},
		// fan-out: any item; the negation is "no item".
		{"lineItems[].sku", OpEquals, "TEE-2", nil, true},
		{"lineItems.sku", OpEquals, "TEE-2", nil, true},
		{"line_items[].sku", OpEquals, "TEE-2", nil, true},
		{"lineItems[0].sku", OpEquals, "TEE-2", nil, false},
		{"lineItems[1].sku", OpEquals, "TEE-2", nil, true},
		{"lineItems[9].sku", OpEquals, "TEE-2", nil, false},
		{"lineItems[].sku", OpNotEquals, "TEE-2", nil, false},
		{"lineItems[].sku", OpNotEquals, "NONE", nil, true},
		{"sourceData.note_attributes[].value", OpEquals, "yes", nil, true},
		// contains
		{"customer.email", OpContains, "@Example", nil, true},
		{"customer.email", OpContains, "@example", nil, false},
		{"tags", OpContains, "vip", nil, true},
		{"tags", OpContains, "vi", nil, false},
		{"tags", OpNotContains, "gift", nil, true},
		{"tags", OpNotContains, "rush", nil, false},
		{"lineItems[].name", OpContains, "ee", nil, true},
		{"totals.total", OpContains, "44", nil, false},
		{"missing", OpNotContains, "x", nil, true},
		// starts_with / ends_with: strings only.
		{"lineItems[].sku", OpStartsWith, "TEE", nil, true},
		{"lineItems[].sku", OpStartsWith, "tee", nil, false},
		{"customer.email", OpEndsWith, ".com", nil, true},
		{"totals.total", OpStartsWith, "44", nil, false},
		// order operators
		{"totals.total", OpGreaterThan, 44, nil, true},
		{"totals.total", OpGreaterThan, 44.5, nil, false},
		{"totals.total", OpGreaterThanOrEquals, 44.5, nil, true},
		{"totals.total", OpLessThan, 100, nil, true},
		{"totals.total", OpLessThan, 9, nil, false}, // numbers, not text ("44.5" > "9" byte-wise)
		{"totals.total", OpLessThanOrEquals, 44.5, nil, true},
		{"metadata.amount", OpGreaterThan, 24.99, nil, true},
		{"totals.total", OpGreaterThan, "9", nil, true}, // numeric string value vs number
		{"lineItems[].quantity", OpGreaterThan, 1, nil, true},
		{"lineItems[].quantity", OpGreaterThan, 2, nil, false},
		{"orderedAt", OpGreaterThan, "2026-02-28", nil, true},
		{"orderedAt", OpLessThan, "2026-03-01T09:00:00-02:00", nil, true},
		{"shippingAddress.zip", OpGreaterThan, "94000", nil, true},
		{"status", OpGreaterThan, "a", nil, true},
		{"customer.firstName", OpGreaterThan, 1, nil, false},
		{"missing", OpLessThan, 1, nil, false},
		// in / not_in
		{"shippingAddress.country", OpIn, []any{"US", "CA"}, nil, true},
		{"shippingAddress.country", OpIn, []any{"us"}, nil, false},
		{"shippingAddress.country", OpNotIn, []any{"DE", "FR"}, nil, true},
		{"shippingAddress.country", OpNotIn, []any{"US"}, nil, false},
		{"lineItems[].quantity", OpIn, []any{num("1"), num("5")}, nil, true},
		{"lineItems[].quantity", OpIn, []any{"2"}, nil, true}, // numeric string element vs number
		{"metadata.amount", OpIn, []any{25.0}, nil, true},
		{"metadata.amount", OpIn, []any{"25"}, nil, false},
		{"tags", OpIn, []any{"rush", "x"}, nil, true},
		{"tags", OpNotIn, []any{"x"}, nil, true},
		{"lineItems[].sku", OpNotIn, []any{"MUG-1", "TEE-2"}, nil, false},
		{"missing", OpNotIn, []any{"x"}, nil, true},
		// exists / not_exists: null and missing do not exist; "", 0, false, [] do.
		{"customer.firstName", OpExists, nil, nil, true},
		{"customer.lastName", OpExists, nil, nil, false},
		{"customer.lastName", OpNotExists, nil, nil, true},
		{"customer.middleName", OpExists, nil, nil, false},
		{"customer.middleName", OpNotExists, nil, nil, true},
		{"billingAddress", OpExists, nil, nil, false},
		{"billingAddress.country", OpExists, nil, nil, false},
		{"metadata.zero", OpExists, nil, nil, true},
		{"metadata.flag", OpExists, nil, nil, true},
		{"metadata.empty", OpExists, nil, nil, true},
		{"emptyTags", OpExists, nil, nil, true},
		{"lineItems[].weight", OpExists, nil, nil, false},
		{"lineItems[].vendor", OpExists, nil, nil, true},
		{"lineItems[].vendor", OpNotExists, nil, nil, false},
		// regex (RE2, unanchored, strings only)
		{"lineItems[].sku", OpRegex, `^TEE-\d+$`, nil, true},
		{"lineItems[].sku", OpRegex, `^tee`, nil, false},
		{"lineItems[].sku", OpRegex, `(?i)^tee`, nil, true},
		{"customer.email", OpRegex, `example`, nil, false},
		{"totals.total", OpRegex, `44`, nil, false},
		// sets
		{"lineItems[].sku", OpInSet, nil, &setID, true},
		{"lineItems[0].sku", OpInSet, nil, &setID, false},
		{"lineItems[].sku", OpNotInSet, nil, &setID, false},
		{"customer.email", OpNotInSet, nil, &setID, true},
		{"sourceData.id", OpInSet, nil, &numSet, true},
		{"totals.total", OpInSet, nil, &numSet, true},
		{"metadata.amount", OpInSet, nil, &numSet, false},
		{"lineItems[].requiresShipping", OpInSet, nil, &boolSet, true},
		{"metadata.flag", OpInSet, nil, &boolSet, false},
		{"missing", OpNotInSet, nil, &setID, true},
	}
	for _, tc := range cases {
		p, err := Compile([]Condition{{Field: tc.field, Operator: tc.op, Value: tc.value, SetID: tc.set}}, MatchAll)
		if err != nil {
			t.Fatalf("%s %s %v: %v", tc.field, tc.op, tc.value, err)
		}
		if got := p.Match(doc, sets); got != tc.want {
			t.Errorf("%s %s %v = %v, want %v", tc.field, tc.op, tc.value, got, tc.want)
		}
	}
	// An unknown set counts as empty.
	other := uuid.New()
	p, _ := Compile([]Condition{{Field: "status", Operator: OpInSet, SetID: &other}, {Field: "status", Operator: OpNotInSet, SetID: &other}}, MatchAny)
	if !p.Match(doc, nil) {
		t.Error("not_in_set of a missing set should match")
	}
}

func TestMatchModes(t *testing.T) {
	doc := testDoc(t)
	conds := []Condition{
		{Field: "status", Operator: OpEquals, Value: "pending"},
		{Field: "totals.total", Operator: OpGreaterThan, Value: 1000.0},
	}
	all, _ := Compile(conds, MatchAll)
	anyP, _ := Compile(conds, MatchAny)
	if all.Match(doc, nil) || !anyP.Match(doc, nil) {
		t.Fatal("all must fail and any must pass")
	}
	empty, _ := Compile(nil, "")
	emptyAny, _ := Compile(nil, MatchAny)
	if !empty.Match(doc, nil) || emptyAny.Match(doc, nil) {
		t.Fatal("empty all matches, empty any does not")
	}
	if _, err := Compile(conds, "some"); err == nil {
		t.Fatal("bad match mode accepted")
	}
	a, b := uuid.New(), uuid.New()
	p, _ := Compile([]Condition{
		{Field: "x", Operator: OpInSet, SetID: &a}, {Field: "y", Operator: OpNotInSet, SetID: &b}, {Field: "z", Operator: OpInSet, SetID: &a},
	}, MatchAll)
	if got := p.SetIDs(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("SetIDs = %v", got)
	}
}

func TestCompileErrors(t *testing.T) {
	id := uuid.New()
	cases := []struct {
		c     Condition
		field string
	}{
		{Condition{Field: "", Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: strings.Repeat("a", 201), Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: "a..b", Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: "a[x]", Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: "a[", Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: "a b", Operator: OpEquals, Value: "x"}, "field"},
		{Condition{Field: "a", Operator: "", Value: "x"}, "operator"},
		{Condition{Field: "a", Operator: "like", Value: "x"}, "operator"},
		{Condition{Field: "a", Operator: OpEquals}, "value"},
		{Condition{Field: "a", Operator: OpEquals, Value: []any{"x"}}, "value"},
		{Condition{Field: "a", Operator: OpStartsWith, Value: 1.0}, "value"},
		{Condition{Field: "a", Operator: OpGreaterThan, Value: true}, "value"},
		{Condition{Field: "a", Operator: OpIn, Value: "x"}, "value"},
		{Condition{Field: "a", Operator: OpIn, Value: []any{}}, "value"},
		{Condition{Field: "a", Operator: OpIn, Value: []any{map[string]any{}}}, "value"},
		{Condition{Field: "a", Operator: OpRegex, Value: "("}, "value"},
		{Condition{Field: "a", Operator: OpRegex, Value: `(\1)`}, "value"}, // no backreferences in RE2
		{Condition{Field: "a", Operator: OpRegex, Value: strings.Repeat("a", MaxRegexLen+1)}, "value"},
		{Condition{Field: "a", Operator: OpInSet}, "setId"},
		{Condition{Field: "a", Operator: OpEquals, Value: "x", SetID: &id}, "setId"},
	}
	for _, tc := range cases {
		_, err := Compile([]Condition{{Field: "ok", Operator: OpExists}, tc.c}, "")
		e, ok := err.(*Error)
		if !ok || e.Index != 1 || e.Field != tc.field {
			t.Errorf("%+v: err = %v, want conditions[1].%s", tc.c, err, tc.field)
		}
	}
}

func TestDecode(t *testing.T) {
	var body map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"conditions": [
		{"field": "totals.total", "operator": "greater_than", "value": 100},
		{"field": "tags", "operator": "exists", "value": "ignored"},
		{"field": "x", "operator": "in_set", "setId": "not-a-uuid"},
		{"field": 3, "operator": "equals", "value": "a"},
		"nope",
		{"field": "y", "operator": "regex", "value": "("}
	]}`))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	_, errs := Decode(body["conditions"], "conditions", 1, 50)
	want := []string{"conditions[2].setId", "conditions[3].field", "conditions[4]", "conditions[5].value"}
	if len(errs) != len(want) {
		t.Fatalf("errs = %+v", errs)
	}
	for i, w := range want {
		if errs[i].Field != w {
			t.Errorf("errs[%d] = %+v, want %s", i, errs[i], w)
		}
	}
	conds, errs := Decode(body["conditions"].([]any)[:2], "conditions", 1, 50)
	if errs != nil || len(conds) != 2 || conds[1].Value != nil {
		t.Fatalf("conds = %+v, errs = %+v", conds, errs)
	}
	// Stored and read back, numbers stay exact.
	raw, _ := json.Marshal(conds)
	var back []Condition
	if err := json.Unmarshal(raw, &back); err != nil || back[0].Value != json.Number("100") {
		t.Fatalf("round trip: %s -> %+v (%v)", raw, back, err)
	}
	if _, errs := Decode([]any{}, "conditions", 1, 50); len(errs) != 1 || errs[0].Field != "conditions" {
		t.Fatalf("empty list: %+v", errs)
	}
	if _, errs := Decode("x", "conditions", 1, 50); len(errs) != 1 {
		t.Fatalf("not a list: %+v", errs)
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ typ, in, want string }{
		{TypeString, " A ", " A "}, {TypeNumber, "1.50", "1.5"}, {TypeNumber, "1e3", "1000"}, {TypeNumber, "-0", "0"},
		{TypeBoolean, "TRUE", "true"}, {TypeBoolean, "false", "false"},
	} {
		if got, err := Canonical(tc.typ, tc.in); err != nil || got != tc.want {
			t.Errorf("Canonical(%s, %q) = %q, %v", tc.typ, tc.in, got, err)
		}
	}
	for _, tc := range [][2]string{{TypeNumber, "abc"}, {TypeNumber, "NaN"}, {TypeNumber, "0x10"}, {TypeBoolean, "yes"}, {"date", "x"}} {
		if _, err := Canonical(tc[0], tc[1]); err == nil {
			t.Errorf("Canonical(%s, %q) accepted", tc[0], tc[1])
		}
	}
}

func TestValues(t *testing.T) {
	doc := testDoc(t)
	got := Values(doc, "lineItems[].vendor")
	if len(got) != 1 || got[0] != "acme" {
		t.Fatalf("Values = %v", got)
	}
	if got := Values(doc, "lineItems[].weight"); len(got) != 1 || got[0] != nil {
		t.Fatalf("null is reached: %v", got)
	}
}

// FuzzCompileMatch feeds arbitrary conditions and documents to the engine:
// it must never panic, and every negative operator must be the exact
// negation of its positive twin. The seed corpus runs in every go test.
func FuzzCompileMatch(f *testing.F) {
	f.Add("lineItems[].sku", "equals", `"MUG-1"`, testOrder)
	f.Add("totals.total", "greater_than", `10`, testOrder)
	f.Add("tags", "contains", `"vip"`, testOrder)
	f.Add("tags[]", "in", `["vip", 1, true]`, testOrder)
	f.Add("metadata.amount", "less_than_or_equals", `"25"`, testOrder)
	f.Add("customer.email", "regex", `"(?i)ADA"`, testOrder)
	f.Add("a.b[3].c", "exists", `null`, `{"a": {"b": [1, 2, 3, {"c": null}]}}`)
	f.Add("x", "starts_with", `"é"`, `{"x": "éa"}`)
	f.Add("[", "equals", `1`, `[]`)
	f.Add("a", "in", `[]`, `{"a": [[[]]]}`)
	pairs := map[string]string{
		OpEquals: OpNotEquals, OpContains: OpNotContains, OpIn: OpNotIn, OpExists: OpNotExists,
	}
	f.Fuzz(func(t *testing.T, field, op, value, doc string) {
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			v = value
		}
		d, err := DecodeDoc([]byte(doc))
		if err != nil {
			d = doc
		}
		p, err := Compile([]Condition{{Field: field, Operator: op, Value: v}}, MatchAll)
		if err != nil {
			return
		}
		got := p.Match(d, nil)
		if neg, ok := pairs[op]; ok {
			q, err := Compile([]Condition{{Field: field, Operator: neg, Value: v}}, MatchAll)
			if err != nil {
				t.Fatalf("%s compiles but %s does not: %v", op, neg, err)
			}
			if q.Match(d, nil) == got {
				t.Fatalf("%s and %s agree (%v) on %q %s %s", op, neg, got, field, value, doc)
			}
		}
	})
}

// BenchmarkSimpleCondition is one simple condition (a number comparison
// on a nested field) against a realistic order.
func BenchmarkSimpleCondition(b *testing.B) {
	doc := testDoc(b)
	p, err := Compile([]Condition{{Field: "totals.total", Operator: OpGreaterThan, Value: 40.0}}, MatchAll)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if !p.Match(doc, nil) {
			b.Fatal("no match")
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "evals/s")
}

// BenchmarkLineItemFanOut is a string condition fanned out over line items.
func BenchmarkLineItemFanOut(b *testing.B) {
	doc := testDoc(b)
	p, _ := Compile([]Condition{{Field: "lineItems[].sku", Operator: OpEquals, Value: "TEE-2"}}, MatchAll)
	b.ReportAllocs()
	for b.Loop() {
		p.Match(doc, nil)
	}
}

// BenchmarkInSetLarge looks a field up in a 1,000,000-value set.
func BenchmarkInSetLarge(b *testing.B) {
	doc := testDoc(b)
	vals := make([]string, 1_000_000)
	for i := range vals {
		vals[i] = "SKU-" + strconv.Itoa(i)
	}
	vals[999_999] = "TEE-2"
	id := uuid.New()
	sets := Sets{id: NewSet(TypeString, vals)}
	p, _ := Compile([]Condition{{Field: "lineItems[].sku", Operator: OpInSet, SetID: &id}}, MatchAll)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !p.Match(doc, sets) {
			b.Fatal("no match")
		}
	}
}

// TestConditionJSONShape: a simple condition always carries value (null
// for exists), a set condition carries setId and no value.
func TestConditionJSONShape(t *testing.T) {
	set := uuid.MustParse("0193a6b2-7c4e-7d11-9f3a-5b2c8d4e6f70")
	for _, c := range []struct {
		in   Condition
		want string
	}{
		{Condition{Field: "status", Operator: OpExists}, `{"field":"status","operator":"exists","value":null}`},
		{Condition{Field: "totals.total", Operator: OpGreaterThan, Value: json.Number("100")}, `{"field":"totals.total","operator":"greater_than","value":100}`},
		{Condition{Field: "customer.email", Operator: OpInSet, SetID: &set}, `{"field":"customer.email","operator":"in_set","setId":"` + set.String() + `"}`},
	} {
		raw, err := json.Marshal(c.in)
		if err != nil || string(raw) != c.want {
			t.Errorf("%+v: %s %v, want %s", c.in, raw, err, c.want)
		}
		var back Condition
		if err := json.Unmarshal(raw, &back); err != nil || back.Field != c.in.Field || back.Operator != c.in.Operator {
			t.Errorf("%s: round trip %+v %v", raw, back, err)
		}
	}
}

// Fields are the top-level fields read, aliases resolved, each once.
func TestProgramFields(t *testing.T) {
	p, err := Compile([]Condition{
		{Field: "line_items[].sku", Operator: OpEquals, Value: "A"}, {Field: "totals.total", Operator: OpGreaterThan, Value: 1.0},
		{Field: "lineItems[0].quantity", Operator: OpExists}, {Field: "status", Operator: OpExists},
	}, MatchAny)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Fields(), ","); got != "lineItems,totals,status" {
		t.Fatalf("Fields = %s", got)
	}
}
