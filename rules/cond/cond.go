// Package cond is the condition engine of dispatchers and split rules: a
// pure package (no I/O) that compiles a list of conditions once into a
// Program and evaluates it against an order as the API represents it
// (camelCase, decoded from JSON into map[string]any).
//
// # Paths
//
// A field is a dot path into the order: status, totals.total,
// customer.email, shippingAddress.country, tags, metadata.channel,
// sourceData.any.key, lineItems[].sku, lineItems[0].sku. The first segment
// may also be written in snake_case (line_items.sku). An array met in the
// middle of a path is fanned out (lineItems.sku is lineItems[].sku); the
// array at the end of a path is one value (tags is the list of tags)
// unless written with [] (tags[] is each tag).
//
// # Fan-out
//
// A condition is true when any value the path reaches satisfies it
// (lineItems[].sku equals "A": some item has sku A). The negative
// operators are the exact negation of their positive twin over all values:
// not_equals, not_contains, not_in, not_in_set and not_exists are true when
// no reached value satisfies equals, contains, in, in_set or exists
// (lineItems[].sku not_in ["A","B"]: no item has sku A or B).
//
// # Types
//
// Strings compare case-sensitively, numbers as numbers. A number on one
// side and a string holding a number on the other compare as numbers
// (platforms send amounts as "25.00"); a boolean equals only a boolean.
// greater_than and the other order operators take a number, or a string:
// then two ISO 8601 timestamps (or dates) compare as instants and other
// strings compare byte-wise. contains is a substring test on a string and
// a membership test on an array; in and not_in take an array value and
// test the field (or, for an array field, any of its elements) against it.
// exists is true for a present value that is not null: a missing key and a
// JSON null both do not exist (the API writes absent fields as null),
// while "", 0, false and [] do exist. regex uses Go's RE2 syntax (linear
// time; no backreferences), is unanchored unless the pattern says so, and
// applies to strings only.
package cond

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Operators, as in Part 2's Dispatcher.
const (
	OpEquals               = "equals"
	OpNotEquals            = "not_equals"
	OpContains             = "contains"
	OpNotContains          = "not_contains"
	OpStartsWith           = "starts_with"
	OpEndsWith             = "ends_with"
	OpGreaterThan          = "greater_than"
	OpGreaterThanOrEquals  = "greater_than_or_equals"
	OpLessThan             = "less_than"
	OpLessThanOrEquals     = "less_than_or_equals"
	OpIn                   = "in"
	OpNotIn                = "not_in"
	OpExists               = "exists"
	OpNotExists            = "not_exists"
	OpRegex                = "regex"
	OpInSet                = "in_set"
	OpNotInSet             = "not_in_set"
	MatchAll               = "all"
	MatchAny               = "any"
	maxListValues          = 10_000
	maxStringValue         = 10_000
	MaxRegexLen            = 1_000
	maxRegexCache          = 1_024
	defaultRegexCacheEvict = 64
)

// Operators lists every operator (the 15 simple ones, then the 2 set ones).
var Operators = []string{
	OpEquals, OpNotEquals, OpContains, OpNotContains, OpStartsWith, OpEndsWith,
	OpGreaterThan, OpGreaterThanOrEquals, OpLessThan, OpLessThanOrEquals,
	OpIn, OpNotIn, OpExists, OpNotExists, OpRegex, OpInSet, OpNotInSet,
}

// MatchModes are the values of matchMode.
var MatchModes = []string{MatchAll, MatchAny}

// Condition is one condition as stored and as the API shows it: a simple
// condition {field, operator, value} or a set condition {field, operator
// (in_set / not_in_set), setId}.
type Condition struct {
	Field    string     `json:"field"`
	Operator string     `json:"operator"`
	Value    any        `json:"value,omitempty"`
	SetID    *uuid.UUID `json:"setId,omitempty"`
}

// MarshalJSON writes a simple condition with its value, null for exists and
// not_exists (Part 2: {field, operator, value}), and a set condition with
// its setId and no value.
func (c Condition) MarshalJSON() ([]byte, error) {
	if c.SetID != nil {
		return json.Marshal(struct {
			Field    string    `json:"field"`
			Operator string    `json:"operator"`
			SetID    uuid.UUID `json:"setId"`
		}{c.Field, c.Operator, *c.SetID})
	}
	return json.Marshal(struct {
		Field    string `json:"field"`
		Operator string `json:"operator"`
		Value    any    `json:"value"`
	}{c.Field, c.Operator, c.Value})
}

// UnmarshalJSON keeps numbers exact (json.Number).
func (c *Condition) UnmarshalJSON(raw []byte) error {
	type plain Condition
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*c = Condition(p)
	return nil
}

// FieldError names a problem with one condition by its JSON path.
type FieldError struct {
	Field   string
	Message string
}

// Error is a compile error of a condition list.
type Error struct {
	Index   int    // the condition's position
	Field   string // field, operator, value or setId
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("conditions[%d].%s %s", e.Index, e.Field, e.Message)
}

// Program is a compiled condition list; it is immutable and safe for
// concurrent use.
type Program struct {
	conds []*compiled
	any   bool
	sets  []uuid.UUID
}

// Compile checks conds and compiles them with a match mode ("all" when
// empty). An empty list matches everything under all and nothing under any.
func Compile(conds []Condition, matchMode string) (*Program, error) {
	p := &Program{}
	switch matchMode {
	case "", MatchAll:
	case MatchAny:
		p.any = true
	default:
		return nil, fmt.Errorf("matchMode must be one of %s", strings.Join(MatchModes, ", "))
	}
	for i, c := range conds {
		cc, field, err := compileOne(c)
		if err != nil {
			return nil, &Error{Index: i, Field: field, Message: err.Error()}
		}
		p.conds = append(p.conds, cc)
		if cc.set != uuid.Nil && !slices.Contains(p.sets, cc.set) {
			p.sets = append(p.sets, cc.set)
		}
	}
	return p, nil
}

// SetIDs are the condition sets the program reads, each once, in order of
// first use.
func (p *Program) SetIDs() []uuid.UUID { return slices.Clone(p.sets) }

// Match evaluates the program against doc (an order decoded from JSON:
// map[string]any, []any, string, float64 or json.Number, bool, nil). sets
// holds the sets named by SetIDs; a missing one counts as empty.
func (p *Program) Match(doc any, sets Sets) bool {
	if p.any {
		for _, c := range p.conds {
			if c.eval(doc, sets) {
				return true
			}
		}
		return false
	}
	for _, c := range p.conds {
		if !c.eval(doc, sets) {
			return false
		}
	}
	return true
}

// Len is the number of conditions.
func (p *Program) Len() int { return len(p.conds) }

// Fields are the top-level fields of the document the program reads
// (camelCase, as paths are after their aliases), each once, in order of
// first use: a document that holds only these matches as the whole one.
func (p *Program) Fields() []string {
	var out []string
	for _, c := range p.conds {
		if len(c.steps) > 0 && !slices.Contains(out, c.steps[0].key) {
			out = append(out, c.steps[0].key)
		}
	}
	return out
}

// compiled is one checked condition with its value prepared.
type compiled struct {
	steps  []step
	op     string
	negate bool
	val    scalar
	list   *valueList
	re     *regexp.Regexp
	set    uuid.UUID
	test   func(any) bool
}

// eval runs one condition.
func (c *compiled) eval(doc any, sets Sets) bool {
	var hit bool
	if c.set != uuid.Nil {
		s := sets[c.set]
		hit = walk(doc, c.steps, func(v any) bool { return s.has(v) })
	} else {
		hit = walk(doc, c.steps, c.test)
	}
	return hit != c.negate
}

// scalar is a condition value of one type.
type scalar struct {
	kind kind
	s    string
	f    float64
	b    bool
	// numeric: s holds a number (f) as well.
	numeric bool
	t       time.Time
	isTime  bool
}

type kind uint8

const (
	kindString kind = iota + 1
	kindNumber
	kindBool
)

// valueList is the value of in / not_in.
type valueList struct {
	strs    map[string]struct{}
	nums    map[float64]struct{} // JSON numbers of the list
	numStrs map[float64]struct{} // strings of the list that hold numbers
	bools   [2]bool
}

// toScalar reads one JSON value.
func toScalar(v any) (scalar, bool) {
	switch x := v.(type) {
	case string:
		s := scalar{kind: kindString, s: x}
		if f, ok := parseNumber(x); ok {
			s.numeric, s.f = true, f
		}
		return s, true
	case bool:
		return scalar{kind: kindBool, b: x}, true
	}
	if f, ok := number(v); ok {
		return scalar{kind: kindNumber, f: f}, true
	}
	return scalar{}, false
}

// number reads a JSON number of any Go representation.
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case float32:
		f = float64(x)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// parseNumber reads a string that holds a decimal number ("25.00", "-3",
// "1e3"); "", hex, "Inf" and "NaN" do not count.
func parseNumber(s string) (float64, bool) {
	if s == "" || len(s) > 64 {
		return 0, false
	}
	c := s[0]
	if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= '0' && b <= '9', b == '.', b == '-', b == '+', b == 'e', b == 'E':
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsInf(f, 0)
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	if len(s) < 10 || len(s) > 40 || s[4] != '-' {
		return time.Time{}, false
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// compileOne checks one condition; on error it names the offending member.
func compileOne(c Condition) (*compiled, string, error) {
	steps, err := parsePath(c.Field)
	if err != nil {
		return nil, "field", err
	}
	cc := &compiled{steps: steps, op: c.Operator}
	if c.SetID != nil && c.Operator != OpInSet && c.Operator != OpNotInSet {
		return nil, "setId", errors.New("is only allowed with in_set and not_in_set")
	}
	switch c.Operator {
	case OpEquals, OpNotEquals, OpContains, OpNotContains:
		s, ok := toScalar(c.Value)
		if !ok {
			return nil, "value", errors.New("must be a string, number or boolean")
		}
		if err := checkLen(s); err != nil {
			return nil, "value", err
		}
		cc.val, cc.negate = s, c.Operator == OpNotEquals || c.Operator == OpNotContains
		cc.test = cc.equals
		if c.Operator == OpContains || c.Operator == OpNotContains {
			cc.test = cc.contains
		}
	case OpStartsWith, OpEndsWith:
		s, ok := c.Value.(string)
		if !ok {
			return nil, "value", errors.New("must be a string")
		}
		cc.val = scalar{kind: kindString, s: s}
		if err := checkLen(cc.val); err != nil {
			return nil, "value", err
		}
		if c.Operator == OpStartsWith {
			cc.test = func(v any) bool { x, ok := v.(string); return ok && strings.HasPrefix(x, s) }
		} else {
			cc.test = func(v any) bool { x, ok := v.(string); return ok && strings.HasSuffix(x, s) }
		}
	case OpGreaterThan, OpGreaterThanOrEquals, OpLessThan, OpLessThanOrEquals:
		s, ok := toScalar(c.Value)
		if !ok || s.kind == kindBool {
			return nil, "value", errors.New("must be a number or a string")
		}
		if err := checkLen(s); err != nil {
			return nil, "value", err
		}
		if s.kind == kindString {
			s.t, s.isTime = parseTime(s.s)
		}
		cc.val = s
		want := c.Operator
		cc.test = func(v any) bool {
			r, ok := cc.compare(v)
			if !ok {
				return false
			}
			switch want {
			case OpGreaterThan:
				return r > 0
			case OpGreaterThanOrEquals:
				return r >= 0
			case OpLessThan:
				return r < 0
			}
			return r <= 0
		}
	case OpIn, OpNotIn:
		l, err := toList(c.Value)
		if err != nil {
			return nil, "value", err
		}
		cc.list, cc.negate = l, c.Operator == OpNotIn
		cc.test = cc.in
	case OpExists, OpNotExists:
		cc.negate = c.Operator == OpNotExists
		cc.test = func(v any) bool { return v != nil }
	case OpRegex:
		pat, ok := c.Value.(string)
		if !ok || pat == "" {
			return nil, "value", errors.New("must be a regular expression (a non-empty string)")
		}
		re, err := compileRegex(pat)
		if err != nil {
			return nil, "value", err
		}
		cc.re = re
		cc.test = func(v any) bool { x, ok := v.(string); return ok && re.MatchString(x) }
	case OpInSet, OpNotInSet:
		if c.SetID == nil || *c.SetID == uuid.Nil {
			return nil, "setId", errors.New("is required")
		}
		cc.set, cc.negate = *c.SetID, c.Operator == OpNotInSet
	case "":
		return nil, "operator", errors.New("is required")
	default:
		return nil, "operator", errors.New("must be one of " + strings.Join(Operators, ", "))
	}
	return cc, "", nil
}

func checkLen(s scalar) error {
	if s.kind == kindString && len(s.s) > maxStringValue {
		return fmt.Errorf("must be at most %d bytes", maxStringValue)
	}
	return nil
}

// toList reads the array value of in / not_in.
func toList(v any) (*valueList, error) {
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case []string:
		for _, s := range x {
			items = append(items, s)
		}
	case []float64:
		for _, f := range x {
			items = append(items, f)
		}
	default:
		return nil, errors.New("must be an array of strings or numbers")
	}
	if len(items) == 0 || len(items) > maxListValues {
		return nil, fmt.Errorf("must hold 1-%d values", maxListValues)
	}
	l := &valueList{strs: map[string]struct{}{}, nums: map[float64]struct{}{}, numStrs: map[float64]struct{}{}}
	for _, it := range items {
		s, ok := toScalar(it)
		if !ok {
			return nil, errors.New("must be an array of strings or numbers")
		}
		if err := checkLen(s); err != nil {
			return nil, err
		}
		switch s.kind {
		case kindString:
			l.strs[s.s] = struct{}{}
			if s.numeric {
				l.numStrs[s.f] = struct{}{}
			}
		case kindNumber:
			l.nums[s.f] = struct{}{}
		case kindBool:
			if s.b {
				l.bools[1] = true
			} else {
				l.bools[0] = true
			}
		}
	}
	return l, nil
}

// equals compares one field value with the condition's scalar.
func (c *compiled) equals(v any) bool {
	w := c.val
	switch x := v.(type) {
	case string:
		switch w.kind {
		case kindString:
			return x == w.s
		case kindNumber:
			f, ok := parseNumber(x)
			return ok && f == w.f
		}
		return false
	case bool:
		return w.kind == kindBool && x == w.b
	case nil, map[string]any, []any:
		return false
	}
	f, ok := number(v)
	if !ok {
		return false
	}
	switch w.kind {
	case kindNumber:
		return f == w.f
	case kindString:
		return w.numeric && f == w.f
	}
	return false
}

// contains: a substring of a string, an element of an array.
func (c *compiled) contains(v any) bool {
	switch x := v.(type) {
	case string:
		if c.val.kind == kindString {
			return strings.Contains(x, c.val.s)
		}
		return false
	case []any:
		for _, el := range x {
			if c.equals(el) {
				return true
			}
		}
	}
	return false
}

// in: the field value (or any element of an array field) is in the list.
func (c *compiled) in(v any) bool {
	if arr, ok := v.([]any); ok {
		for _, el := range arr {
			if c.inOne(el) {
				return true
			}
		}
		return false
	}
	return c.inOne(v)
}

func (c *compiled) inOne(v any) bool {
	l := c.list
	switch x := v.(type) {
	case string:
		if _, ok := l.strs[x]; ok {
			return true
		}
		if len(l.nums) > 0 {
			if f, ok := parseNumber(x); ok {
				_, hit := l.nums[f]
				return hit
			}
		}
		return false
	case bool:
		if x {
			return l.bools[1]
		}
		return l.bools[0]
	}
	f, ok := number(v)
	if !ok {
		return false
	}
	if _, hit := l.nums[f]; hit {
		return true
	}
	_, hit := l.numStrs[f]
	return hit
}

// compare orders the field value against the condition's value: <0, 0, >0;
// false when they cannot be compared.
func (c *compiled) compare(v any) (int, bool) {
	w := c.val
	if w.kind == kindNumber || w.numeric {
		f, ok := number(v)
		if x, isStr := v.(string); isStr && w.kind == kindNumber {
			f, ok = parseNumber(x)
		}
		if ok {
			return cmpFloat(f, w.f), true
		}
		if w.kind == kindNumber {
			return 0, false
		}
	}
	// A string value against a string.
	x, ok := v.(string)
	if !ok {
		return 0, false
	}
	if w.isTime {
		if t, ok := parseTime(x); ok {
			return t.Compare(w.t), true
		}
	}
	return strings.Compare(x, w.s), true
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// regexCache holds compiled patterns by source, so a pattern used by many
// programs (or recompiled after every rule load) is compiled once.
var regexCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

func compileRegex(pat string) (*regexp.Regexp, error) {
	if len(pat) > MaxRegexLen {
		return nil, fmt.Errorf("must be at most %d bytes", MaxRegexLen)
	}
	regexCache.Lock()
	re, ok := regexCache.m[pat]
	regexCache.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("is not a valid regular expression (RE2 syntax): %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	regexCache.Lock()
	if len(regexCache.m) >= maxRegexCache {
		n := 0
		for k := range regexCache.m { // evict a few arbitrary entries
			delete(regexCache.m, k)
			if n++; n >= defaultRegexCacheEvict {
				break
			}
		}
	}
	regexCache.m[pat] = re
	regexCache.Unlock()
	return re, nil
}
