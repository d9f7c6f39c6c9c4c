package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func run(t *testing.T, sb *Sandbox, code, input string) (map[string]any, error) {
	t.Helper()
	out, err := sb.Run(context.Background(), code, []byte(input))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m), "%s", out)
	return m, nil
}

func requireKind(t *testing.T, err error, kind string) *Error {
	t.Helper()
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, kind, e.Kind, "%v", err)
	return e
}

func TestRunReturnsValueOrMutatedCopy(t *testing.T) {
	sb := New(Limits{})
	out, err := run(t, sb, `function transform(data) { return {n: data.n + 1, tags: data.tags.concat(["x"])} }`, `{"n": 1, "tags": ["a"]}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"n": 2.0, "tags": []any{"a", "x"}}, out)

	// undefined: the mutated copy.
	out, err = run(t, sb, `function transform(data) { data.seen = true; delete data.secret; }`, `{"a": 1, "secret": "s"}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": 1.0, "seen": true}, out)

	// const/let/arrow forms are found too.
	out, err = run(t, sb, `const transform = (d) => ({...d, k: 1})`, `{"a": 1}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": 1.0, "k": 1.0}, out)
}

func TestRunExportsLikeJSONStringify(t *testing.T) {
	sb := New(Limits{})
	out, err := sb.Run(context.Background(), `function transform(d) {
  return {u: undefined, f: function () {}, n: null, nan: NaN, inf: -Infinity, arr: [undefined, function () {}, 1.5],
    date: new Date(0), big: 1e21, neg: -0, s: "a\"b\n<é>", nested: {x: [1, {y: 2}]}, boxed: new String("s"),
    custom: {toJSON: function (k) { return "key:" + k }}}
}`, []byte(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"n":null,"nan":null,"inf":null,"arr":[null,null,1.5],"date":"1970-01-01T00:00:00.000Z",
		"big":1e+21,"neg":0,"s":"a\"b\n<é>","nested":{"x":[1,{"y":2}]},"boxed":"s","custom":"key:custom"}`, string(out))

	_, err = sb.Run(context.Background(), `function transform(d) { return {b: 10n} }`, []byte(`{}`))
	requireKind(t, err, KindException)
}

func TestRunRejectsNonObjectResults(t *testing.T) {
	sb := New(Limits{})
	for code, got := range map[string]string{
		`function transform(d) { return 42 }`:             "a number",
		`function transform(d) { return "x" }`:            "a string",
		`function transform(d) { return null }`:           "null",
		`function transform(d) { return [d] }`:            "an array",
		`function transform(d) { return function () {} }`: "a function",
	} {
		_, err := sb.Run(context.Background(), code, []byte(`{}`))
		e := requireKind(t, err, KindOutput)
		require.Contains(t, e.Message, got, code)
	}
}

func TestIsolation(t *testing.T) {
	sb := New(Limits{})
	out, err := run(t, sb, `function transform(d) {
  var g = (function () { return this })();
  var names = Object.getOwnPropertyNames(globalThis).filter(function (n) { return typeof globalThis[n] !== "undefined" });
  return {require: typeof require, console: typeof console, setTimeout: typeof setTimeout, setInterval: typeof setInterval,
    process: typeof process, Proxy: typeof Proxy, Uint8Array: typeof Uint8Array, ArrayBuffer: typeof ArrayBuffer, fetch: typeof fetch, module: typeof module, exports: typeof exports, XMLHttpRequest: typeof XMLHttpRequest,
    same: g === globalThis, names: names}
}`, `{}`)
	require.NoError(t, err)
	for _, k := range []string{"require", "console", "setTimeout", "setInterval", "process", "fetch", "module", "exports", "XMLHttpRequest", "Proxy", "Uint8Array", "ArrayBuffer"} {
		require.Equal(t, "undefined", out[k], k)
	}
	// Only ECMAScript built-ins on the global object.
	allowed := map[string]bool{}
	for _, n := range strings.Fields(`Object Function Array String Number BigInt RegExp Date Boolean Proxy Reflect Error AggregateError
		TypeError ReferenceError SyntaxError RangeError EvalError URIError GoError eval Math JSON Symbol WeakSet WeakMap Map Set Promise globalThis NaN undefined Infinity isNaN parseInt parseFloat isFinite
		decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape transform`) {
		allowed[n] = true
	}
	for _, n := range out["names"].([]any) {
		require.True(t, allowed[n.(string)], "unexpected global %v", n)
	}

	// Nothing survives from one run to the next.
	code := `var counter = (typeof counter === "number" ? counter : 0); Object.prototype.polluted = 1;
function transform(d) { counter++; globalThis.leak = (globalThis.leak || 0) + 1; return {counter: counter, leak: leak} }`
	for range 2 {
		out, err := run(t, sb, code, `{}`)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"counter": 1.0, "leak": 1.0}, out)
	}
	// The input is a copy: the caller's bytes are untouched and a
	// replaced JSON.parse does not see them.
	in := []byte(`{"a": 1}`)
	_, err = sb.Run(context.Background(), `JSON.parse = function () { return {hijacked: true} }; function transform(d) { d.a = 2; return d }`, in)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(in))
}

func TestCheck(t *testing.T) {
	sb := New(Limits{})
	ctx := context.Background()
	require.NoError(t, sb.Check(ctx, "function transform(data) {\n  return data\n}"))

	err := sb.Check(ctx, "function transform(data) {\n  return data +\n}\n")
	e := requireKind(t, err, KindSyntax)
	require.Equal(t, 3, e.Line, "%v", e)
	require.NotZero(t, e.Column)

	e = requireKind(t, sb.Check(ctx, "function transform(d) { let a = 1; let a = 2; }"), KindSyntax)
	require.Equal(t, 1, e.Line)

	e = requireKind(t, sb.Check(ctx, "function other(data) { return data }"), KindSyntax)
	require.Contains(t, e.Message, "transform")
	requireKind(t, sb.Check(ctx, "var transform = 5"), KindSyntax)
	// A top level that throws or never ends cannot be saved.
	requireKind(t, sb.Check(ctx, "throw new Error('boom'); function transform(d) {}"), KindSyntax)
	requireKind(t, New(Limits{Timeout: 50 * time.Millisecond}).Check(ctx, "while (true) {} function transform(d) {}"), KindSyntax)
	requireKind(t, New(Limits{MaxCodeBytes: 10}).Check(ctx, "function transform(d) {}"), KindSyntax)
}

func TestDeadline(t *testing.T) {
	sb := New(Limits{Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := sb.Run(context.Background(), `function transform(d) { while (true) {} }`, []byte(`{}`))
	requireKind(t, err, KindTimeout)
	require.Less(t, time.Since(start), time.Second)

	// A top-level loop is interrupted too, and so is one in a callback.
	_, err = sb.Run(context.Background(), `for (;;) {} function transform(d) {}`, []byte(`{}`))
	requireKind(t, err, KindTimeout)
	_, err = sb.Run(context.Background(), `function transform(d) { [1, 2].forEach(function () { for (;;) {} }) }`, []byte(`{}`))
	requireKind(t, err, KindTimeout)

	// Catastrophic regular expressions end (RE2 when the pattern allows,
	// else regexp2's match timeout: no match).
	start = time.Now()
	out, err := run(t, New(Limits{}), `function transform(d) {
  return {re2: /^(a+)+$/.test("a".repeat(40) + "b"), backref: /^(?=(a+))(a+)+\1$/.test("a".repeat(40) + "b")} }`, `{}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"re2": false, "backref": false}, out)
	require.Less(t, time.Since(start), time.Second)

	// The caller's context bounds the run as well.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = New(Limits{}).Run(ctx, `function transform(d) { while (true) {} }`, []byte(`{}`))
	require.Error(t, err)
}

func TestCallStack(t *testing.T) {
	sb := New(Limits{})
	_, err := sb.Run(context.Background(), `function f(n) { return f(n + 1) } function transform(d) { f(0) }`, []byte(`{}`))
	e := requireKind(t, err, KindException)
	require.Contains(t, e.Message, "call stack")
}

func TestExceptions(t *testing.T) {
	sb := New(Limits{})
	_, err := sb.Run(context.Background(), "function transform(d) {\n  return d.missing.field\n}", []byte(`{}`))
	e := requireKind(t, err, KindException)
	require.Contains(t, e.Message, "TypeError")
	require.Equal(t, 2, e.Line)
}

func TestSizes(t *testing.T) {
	sb := New(Limits{MaxInputBytes: 100, MaxOutputBytes: 200, MaxDepth: 5, Timeout: 5 * time.Second})
	ident := `function transform(d) { return d }`
	_, err := sb.Run(context.Background(), ident, []byte(`{"a": "`+strings.Repeat("x", 200)+`"}`))
	requireKind(t, err, KindInput)
	_, err = sb.Run(context.Background(), ident, []byte(`{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}`))
	requireKind(t, err, KindInput)
	_, err = sb.Run(context.Background(), ident, []byte(`[1]`))
	requireKind(t, err, KindInput)
	_, err = sb.Run(context.Background(), ident, []byte(`{"a": `))
	requireKind(t, err, KindInput)

	_, err = sb.Run(context.Background(), `function transform(d) { return {s: "x".repeat(300)} }`, []byte(`{}`))
	requireKind(t, err, KindOutputTooLarge)
	// Deep and circular results are refused, not recursed into.
	_, err = sb.Run(context.Background(), `function transform(d) { var o = {}; for (var i = 0; i < 100000; i++) o = {a: o}; return o }`, []byte(`{}`))
	requireKind(t, err, KindOutputTooLarge)
	_, err = sb.Run(context.Background(), `function transform(d) { d.self = d }`, []byte(`{}`))
	requireKind(t, err, KindOutputTooLarge)
	// A huge sparse array stops at the output cap.
	_, err = sb.Run(context.Background(), `function transform(d) { var a = []; a.length = 4e9; return {a: a} }`, []byte(`{}`))
	requireKind(t, err, KindOutputTooLarge)
}

func TestMemory(t *testing.T) {
	// A generous deadline: the memory limit must answer, not the clock,
	// also on a loaded machine.
	sb := New(Limits{Timeout: 10 * time.Second, MaxHeapGrowth: 64 << 20})
	for _, code := range []string{
		`function transform(d) { let a = []; while (true) a.push(new Array(1e6).fill(0)) }`,
		`function transform(d) { let a = []; while (true) a.push({x: "y".repeat(1000) + Math.random()}) }`,
		`function transform(d) { let s = "x"; while (true) s += s }`,
		`function transform(d) { let m = new Map(); for (let i = 0; ; i++) m.set(i, [i, i, i]) }`,
	} {
		start := time.Now()
		_, err := sb.Run(context.Background(), code, []byte(`{}`))
		e := requireKind(t, err, KindMemory)
		require.Less(t, time.Since(start), 10*time.Second, code)
		t.Logf("%s: %v in %v", code, e, time.Since(start))
	}
	// Under the default limits, unbounded allocation ends in a failure
	// (memory or deadline, whichever comes first) at the deadline: within
	// DefaultTimeout and a margin for a loaded machine (make test -p 2 on
	// two cores once took 1.24 s), far from an unbounded run.
	def := New(Limits{})
	for _, code := range []string{
		`function transform(d) { let a = []; while (true) a.push(new Array(1e6)) }`,
		`function transform(d) { let a = []; while (true) a.push("x".repeat(1e6) + a.length) }`,
		`function transform(d) { return {s: "x".repeat(1e9)} }`,
	} {
		start := time.Now()
		_, err := def.Run(context.Background(), code, []byte(`{}`))
		require.True(t, IsKind(err, KindMemory) || IsKind(err, KindTimeout), "%s: %v", code, err)
		require.Less(t, time.Since(start), DefaultTimeout+time.Second, code)
	}

	// One-call amplifiers are refused before they allocate.
	for _, code := range []string{
		`function transform(d) { "x".repeat(1e9) }`,
		`function transform(d) { "x".padStart(1e9) }`,
		`function transform(d) { Array(1e9).fill(0) }`,
		`function transform(d) { var a = []; a.length = 1e9; a.fill(0) }`,
		`function transform(d) { var a = []; a.length = 1e9; a.join("x") }`,
		`function transform(d) { Array.from({length: 1e9}) }`,
		`function transform(d) { new Array(1e5).join("x".repeat(1000)) }`,
		`function transform(d) { "x".repeat(2e6).split("") }`,
		`function transform(d) { var a = []; a.length = 1e7; [...a] }`,
		`function transform(d) { var a = []; a.length = 1e7; new Set(a) }`,
		`function transform(d) { [..."x".repeat(2e6)] }`,
		`function transform(d) { Math.max.apply(null, {length: 1e7}) }`,
		`function transform(d) { Reflect.apply(Math.max, null, {length: 1e7}) }`,
		`function transform(d) { var a = []; a.length = 1e7; JSON.stringify({a: a}) }`,
		// Deep structures: built-ins that recurse in Go are bounded. (5,000
		// levels is past the bound; the structures stay small so that the
		// refusal, not the memory the loop takes, is what answers.)
		`function transform(d) { var a = []; for (var i = 0; i < 5000; i++) a = [a]; String(a) }`,
		`function transform(d) { var a = {}; for (var i = 0; i < 5000; i++) a = {a: a}; JSON.stringify(a) }`,
		`function transform(d) { JSON.parse("[".repeat(1e6)) }`,
		`function transform(d) { Array.from("x".repeat(2e6)) }`,
	} {
		start := time.Now()
		_, err := sb.Run(context.Background(), code, []byte(`{}`))
		e := requireKind(t, err, KindMemory)
		require.Contains(t, e.Message, "sandbox limit", code)
		// Well within the deadline (sb's is 5 s); a run may include the
		// start of a fresh sandbox process on a loaded machine.
		require.Less(t, time.Since(start), 3*time.Second, code)
	}
	// Ordinary array and string work still passes the guards.
	out, err := run(t, sb, `function transform(d) {
  var a = new Array(3).fill(1), b = Array.from([1, 2]), c = Array(2), big = new Array(1e9);
  return {a: a, b: b.map(function (x) { return x * 2 }), c: c.length, big: big.length, isArr: Array.isArray(a),
    inst: a instanceof Array, ctor: a.constructor === Array, s: "ab".repeat(2).padStart(6, "-"), j: [1, 2].join("+"), js: JSON.stringify({a: [1, {b: 2}], u: undefined}), jsp: JSON.stringify([1], null, 1), sp2: [...[1, 2]],
    mx: Math.max.apply(null, [1, 3]), jp: JSON.parse("[[1]]"), sp: "a,b,c".split(",", 2), head: "x".repeat(2e6).split("x", 1)}
}`, `{}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": []any{1.0, 1.0, 1.0}, "b": []any{2.0, 4.0}, "c": 2.0, "big": 1e9, "isArr": true,
		"inst": true, "ctor": true, "s": "--abab", "j": "1+2", "js": `{"a":[1,{"b":2}]}`, "jsp": "[\n 1\n]", "sp2": []any{1.0, 2.0}, "mx": 3.0, "jp": []any{[]any{1.0}}, "sp": []any{"a", "b"}, "head": []any{""}}, out)
}

func TestCompiledOncePerVersion(t *testing.T) {
	sb := New(Limits{})
	code := `function transform(d) { return d }`
	p1, err := sb.compile(code)
	require.NoError(t, err)
	p2, err := sb.compile(code)
	require.NoError(t, err)
	require.Same(t, p1, p2)
	p3, err := sb.compile(code + " ")
	require.NoError(t, err)
	require.NotSame(t, p1, p3)
}

func TestConcurrentRuns(t *testing.T) {
	sb := New(Limits{Timeout: 300 * time.Millisecond, MaxConcurrent: 3})
	errs := make(chan error, 21)
	go func() {
		_, err := sb.Run(context.Background(), `function transform(d) { for (;;) {} }`, []byte(`{}`))
		if !IsKind(err, KindTimeout) {
			errs <- err
			return
		}
		errs <- nil
	}()
	for i := range 20 {
		go func() {
			code := `function transform(d) { return {i: d.i * 2} }`
			if i%2 == 0 {
				code = `const transform = (d) => ({i: d.i + d.i})` // another version
			}
			out, err := sb.Run(context.Background(), code, []byte(`{"i": `+strings.Repeat("1", 1+i%3)+`}`))
			if err == nil {
				var m map[string]float64
				if err = json.Unmarshal(out, &m); err == nil && m["i"] != 2*map[int]float64{0: 1, 1: 11, 2: 111}[i%3] {
					err = &Error{Message: "wrong result " + string(out)}
				}
			}
			errs <- err
		}()
	}
	for range 21 {
		require.NoError(t, <-errs)
	}
}

func TestExportRunsUnderTheWatchdog(t *testing.T) {
	sb := New(Limits{Timeout: 200 * time.Millisecond})
	_, err := sb.Run(context.Background(), `function transform(d) { return {get x() { throw new Error("getter") }} }`, []byte(`{}`))
	e := requireKind(t, err, KindException)
	require.Contains(t, e.Message, "getter")
	_, err = sb.Run(context.Background(), `function transform(d) { return {x: {toJSON: function () { for (;;) {} }}} }`, []byte(`{}`))
	requireKind(t, err, KindTimeout)
	_, err = sb.Run(context.Background(), `function transform(d) {
  return Object.defineProperty({}, "x", {enumerable: true, get: function () { for (;;) {} }}) }`, []byte(`{}`))
	requireKind(t, err, KindTimeout)
}
