package sandbox

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// guardPrefix starts the message of every RangeError a guard throws.
const guardPrefix = "sandbox limit: "

// removedGlobals are not given to scripts: binary buffers allocate their
// whole size in one call goja cannot interrupt, a chain of proxies recurses
// in Go, and transformations work on plain JSON data.
var removedGlobals = []string{"Proxy", "ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array",
	"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array",
	"Float64Array", "BigInt64Array", "BigUint64Array"}

// arrayMethods are the Array.prototype methods that loop over an array's
// length in Go: each is wrapped to refuse an array (this or an argument)
// longer than MaxArrayLength before it starts. A huge length costs nothing
// until such a method walks it.
var arrayMethods = []string{"at", "concat", "copyWithin", "entries", "every", "fill", "filter", "find", "findIndex",
	"findLast", "findLastIndex", "flat", "flatMap", "forEach", "includes", "indexOf", "join", "keys", "lastIndexOf",
	"map", "pop", "push", "reduce", "reduceRight", "reverse", "shift", "slice", "some", "sort", "splice",
	"toLocaleString", "toReversed", "toSorted", "toSpliced", "toString", "unshift", "values", "with"}

// totalGuarded are the Array methods whose guard checks the total size
// of their result, not only each argument's.
var totalGuarded = map[string]bool{"join": true, "concat": true, "flat": true, "flatMap": true}

// harden removes the binary buffers and wraps the built-ins that allocate
// or loop a lot in one call (goja interrupts JavaScript, not a running
// built-in) with a check of the size they are asked for. It runs in every
// fresh runtime before the tenant's code, which cannot reach the originals.
func (s *Sandbox) harden(vm *goja.Runtime) {
	g := vm.GlobalObject()
	for _, name := range removedGlobals {
		_ = g.Delete(name)
	}
	maxArr, maxStr := int64(s.limits.MaxArrayLength), int64(s.limits.MaxStringLength)
	rangeErr := vm.Get("RangeError")
	throw := func(msg string) {
		o, err := vm.New(rangeErr, vm.ToValue(guardPrefix+msg))
		if err != nil {
			panic(err)
		}
		panic(o)
	}
	fail := func(what string, n, limit int64) { throw(fmt.Sprintf("%s %d exceeds %d", what, n, limit)) }
	lenOf := func(v goja.Value) int64 {
		o, ok := v.(*goja.Object)
		if !ok {
			if v != nil && v.ExportType() != nil && v.ExportType().Kind() == reflect.String {
				return int64(len(v.String())) // an upper bound of its UTF-16 length
			}
			return 0
		}
		l := o.Get("length")
		if l == nil {
			return 0
		}
		f := l.ToFloat()
		if f != f || f < 0 {
			return 0
		}
		if f > 1<<53 {
			return 1 << 53
		}
		return int64(f)
	}
	checkArrays := func(call goja.FunctionCall) {
		if n := lenOf(call.This); n > maxArr {
			fail("array length", n, maxArr)
		}
		for _, a := range call.Arguments {
			if _, isObj := a.(*goja.Object); !isObj {
				continue // a string argument is one element (push, fill, includes)
			}
			if n := lenOf(a); n > maxArr {
				fail("array length", n, maxArr)
			}
		}
	}
	// checkIterable also counts a string argument's characters
	// (Array.from iterates it).
	checkIterable := func(call goja.FunctionCall) {
		for _, a := range call.Arguments {
			if n := lenOf(a); n > maxArr {
				fail("array length", n, maxArr)
			}
		}
	}
	// nesting counts wrapped calls in progress: a built-in that reaches
	// another through JavaScript values (join calling an element's
	// toString) recurses in Go, out of SetMaxCallStackSize's sight.
	nesting, maxNesting := 0, s.limits.MaxCallStack
	guarded := func(orig goja.Callable, check func(goja.FunctionCall)) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			check(call)
			if nesting >= maxNesting {
				fail("nesting of built-in calls", int64(nesting), int64(maxNesting))
			}
			nesting++
			defer func() { nesting-- }()
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		}
	}
	wrap := func(obj *goja.Object, name string, check func(goja.FunctionCall)) {
		orig, ok := goja.AssertFunction(obj.Get(name))
		if !ok {
			return
		}
		_ = obj.DefineDataProperty(name, vm.ToValue(guarded(orig, check)), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	wrapIterator := func(obj *goja.Object, check func(goja.FunctionCall)) {
		orig, ok := goja.AssertFunction(obj.GetSymbol(goja.SymIterator))
		if !ok {
			return
		}
		_ = obj.DefineDataPropertySymbol(goja.SymIterator, vm.ToValue(guarded(orig, check)), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	// argList checks the array-like at index i, turned into an argument list
	// in one go (apply, Reflect.apply, Reflect.construct).
	argList := func(i int) func(goja.FunctionCall) {
		return func(call goja.FunctionCall) {
			if n := lenOf(call.Argument(i)); n > maxArr {
				fail("argument list length", n, maxArr)
			}
		}
	}
	fp := vm.Get("Function").ToObject(vm).Get("prototype").ToObject(vm)
	wrap(fp, "apply", argList(1))
	reflectObj := vm.Get("Reflect").ToObject(vm)
	wrap(reflectObj, "apply", argList(2))
	wrap(reflectObj, "construct", argList(1))
	js := vm.Get("JSON").ToObject(vm)
	wrap(js, "parse", func(call goja.FunctionCall) {
		if _, depth := jsonShape([]byte(call.Argument(0).String())); depth > maxNesting {
			fail("JSON nesting", int64(depth), int64(maxNesting))
		}
	})
	// JSON.stringify recurses in Go without a depth bound and walks sparse
	// arrays to their length: a bounded dry run (the exporter of results)
	// goes first.
	wrap(js, "stringify", func(call goja.FunctionCall) {
		x := &exporter{vm: vm, maxBytes: int(maxStr), maxDepth: maxNesting}
		func() {
			defer func() {
				if p := recover(); p != nil {
					if tl, ok := p.(tooLarge); ok {
						throw("JSON.stringify: " + tl.msg)
					}
					panic(p)
				}
			}()
			if _, isFn := goja.AssertFunction(call.Argument(1)); !isFn {
				x.write(x.resolve(call.Argument(0), ""), 0)
			}
		}()
	})
	ap := vm.Get("Array").ToObject(vm)
	proto := ap.Get("prototype").ToObject(vm)
	for _, m := range arrayMethods {
		if !totalGuarded[m] {
			wrap(proto, m, checkArrays)
		}
	}
	// Totals: the built-ins below build one result from many parts in one
	// uninterruptible call; each part may be within the limits while the
	// whole is not (2,000 strings of 2 MB joined, an array concatenated
	// with 200 copies of itself).
	isArray := func(v goja.Value) bool {
		o, ok := v.(*goja.Object)
		return ok && o.ClassName() == "Array"
	}
	// strLen estimates the string an element becomes in a join or a
	// concat: its length for a string, a number's at most, an array's
	// own join (recursively, within budget); other objects are their
	// toString's (JavaScript, under the watchdog): counted as short.
	var strLen func(v goja.Value, depth int, budget *int64) int64
	strLen = func(v goja.Value, depth int, budget *int64) int64 {
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			return 0
		}
		if !isArray(v) {
			if v.ExportType() != nil && v.ExportType().Kind() == reflect.String {
				return int64(len(v.String()))
			}
			return 24
		}
		if depth >= maxNesting {
			return maxStr + 1
		}
		o := v.(*goja.Object)
		n := lenOf(o)
		total := max(n-1, 0)
		for i := int64(0); i < n && total <= maxStr; i++ {
			if *budget--; *budget < 0 {
				return maxStr + 1
			}
			total += strLen(o.Get(strconv.FormatInt(i, 10)), depth+1, budget)
		}
		return total
	}
	wrap(proto, "join", func(call goja.FunctionCall) {
		checkArrays(call)
		sep := int64(1)
		if a := call.Argument(0); !goja.IsUndefined(a) {
			sep = int64(len(a.String()))
		}
		n := lenOf(call.This)
		if n > 1 && (n-1)*sep > maxStr {
			fail("string length", (n-1)*sep, maxStr)
		}
		budget := maxArr
		o, ok := call.This.(*goja.Object)
		if !ok {
			return
		}
		total := max(n-1, 0) * sep
		for i := int64(0); i < n && total <= maxStr; i++ {
			if budget--; budget < 0 {
				break
			}
			total += strLen(o.Get(strconv.FormatInt(i, 10)), 1, &budget)
		}
		if total > maxStr {
			fail("joined string length", total, maxStr)
		}
	})
	wrap(proto, "concat", func(call goja.FunctionCall) {
		checkArrays(call)
		total := lenOf(call.This)
		for _, a := range call.Arguments {
			if isArray(a) {
				total += lenOf(a)
			} else {
				total++
			}
		}
		if total > maxArr {
			fail("concatenated array length", total, maxArr)
		}
	})
	// countFlat counts the elements flat(depth) gives, stopping past the
	// limit.
	var countFlat func(o *goja.Object, depth int64, total *int64)
	countFlat = func(o *goja.Object, depth int64, total *int64) {
		n := lenOf(o)
		for i := int64(0); i < n && *total <= maxArr; i++ {
			el := o.Get(strconv.FormatInt(i, 10))
			if depth > 0 && isArray(el) {
				*total++ // the walk itself is bounded too
				countFlat(el.(*goja.Object), depth-1, total)
				continue
			}
			*total++
		}
	}
	wrap(proto, "flat", func(call goja.FunctionCall) {
		checkArrays(call)
		depth := int64(1)
		if a := call.Argument(0); !goja.IsUndefined(a) {
			depth = min(max(a.ToInteger(), 0), int64(maxNesting))
		}
		o, ok := call.This.(*goja.Object)
		if !ok {
			return
		}
		var total int64
		countFlat(o, depth, &total)
		if total > maxArr {
			fail("flattened array length", total, maxArr)
		}
	})
	// flatMap: the callback (JavaScript) gives the parts; their lengths
	// are added up as they come.
	wrap(proto, "flatMap", func(call goja.FunctionCall) {
		checkArrays(call)
		fn, ok := goja.AssertFunction(call.Argument(0))
		if !ok || len(call.Arguments) == 0 {
			return
		}
		var total int64
		call.Arguments[0] = vm.ToValue(func(c goja.FunctionCall) goja.Value {
			v, err := fn(c.This, c.Arguments...)
			if err != nil {
				panic(err)
			}
			if isArray(v) {
				total += lenOf(v)
			} else {
				total++
			}
			if total > maxArr {
				fail("flattened array length", total, maxArr)
			}
			return v
		})
	})
	wrap(ap, "from", checkIterable)
	// Spread, Array.from, Set and Map constructors iterate in Go.
	wrapIterator(proto, checkArrays)

	sp := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	wrap(sp, "repeat", func(call goja.FunctionCall) {
		n := call.Argument(0).ToFloat()
		if n > 0 && n < 1<<53 {
			if l := int64(len(call.This.String())) * int64(n); l > maxStr {
				fail("string length", l, maxStr)
			}
		}
	})
	pad := func(call goja.FunctionCall) {
		if n := call.Argument(0).ToFloat(); n > float64(maxStr) {
			fail("string length", int64(min(n, 1<<53)), maxStr)
		}
	}
	wrap(sp, "padStart", pad)
	wrap(sp, "padEnd", pad)
	wrapIterator(sp, func(call goja.FunctionCall) {
		if n := lenOf(call.This); n > maxArr {
			fail("string length to iterate", n, maxArr)
		}
	})
	wrap(sp, "concat", func(call goja.FunctionCall) {
		budget := maxArr
		total := int64(len(call.This.String()))
		for _, a := range call.Arguments {
			total += strLen(a, 1, &budget)
		}
		if total > maxStr {
			fail("string length", total, maxStr)
		}
	})
	// replace and replaceAll: the result is at most the string, plus per
	// match the replacement, where each $-pattern expands to at most the
	// match ($& $1 $<name>: the matches add up to the string) or to the
	// string's prefix or suffix ($` $'). A replacer function's results
	// are added up as they come.
	replaceGuard := func(all bool) func(goja.FunctionCall) {
		return func(call goja.FunctionCall) {
			str := call.This.String()
			n := int64(len(str))
			if fn, ok := goja.AssertFunction(call.Argument(1)); ok {
				total := n
				call.Arguments[1] = vm.ToValue(func(c goja.FunctionCall) goja.Value {
					v, err := fn(c.This, c.Arguments...)
					if err != nil {
						panic(err)
					}
					if total += int64(len(v.String())); total > maxStr {
						fail("string length", total, maxStr)
					}
					return v
				})
				return
			}
			repl := call.Argument(1).String()
			pat := call.Argument(0)
			global := all
			if po, ok := pat.(*goja.Object); ok && po.ClassName() == "RegExp" {
				global = strings.Contains(po.Get("flags").String(), "g")
			}
			count := func() int64 {
				if !global {
					return 1
				}
				if po, ok := pat.(*goja.Object); ok && po.ClassName() == "RegExp" {
					// Counted with RE2 when the pattern is RE2's too, up to
					// what can matter; otherwise assume the worst.
					re, err := regexp.Compile(re2Flags(po.Get("flags").String()) + po.Get("source").String())
					if err != nil {
						return n + 1
					}
					limit := min(n+1, maxStr/max(int64(len(repl)), 1)+2)
					return int64(len(re.FindAllStringIndex(str, int(limit))))
				}
				p := pat.String()
				if p == "" {
					return n + 1
				}
				return int64(strings.Count(str, p))
			}
			size := func(matches int64) int64 {
				t := n + matches*int64(len(repl))
				if d := int64(strings.Count(repl, "$")); d > 0 {
					t += d * n
					if strings.Contains(repl, "$`") || strings.Contains(repl, "$'") {
						t += matches * d * n
					}
				}
				return t
			}
			upper := int64(1)
			if global {
				upper = n + 1
			}
			if size(upper) <= maxStr {
				return
			}
			if t := size(count()); t > maxStr {
				fail("string length", t, maxStr)
			}
		}
	}
	wrap(sp, "replace", replaceGuard(false))
	wrap(sp, "replaceAll", replaceGuard(true))
	// split gives up to one element per character.
	wrap(sp, "split", func(call goja.FunctionCall) {
		n := int64(len(call.This.String()))
		if l := call.Argument(1); !goja.IsUndefined(l) && l.ToFloat() >= 0 && l.ToFloat() < float64(n) {
			n = int64(l.ToFloat())
		}
		if n > maxArr {
			fail("array length", n, maxArr)
		}
	})
}

// re2Flags turns a JavaScript regular expression's flags into RE2's.
func re2Flags(flags string) string {
	out := ""
	for _, f := range "ims" {
		if strings.ContainsRune(flags, f) {
			out += string(f)
		}
	}
	if out == "" {
		return ""
	}
	return "(?" + out + ")"
}

// lookupSource finds the transform function, declared with function, var,
// let or const at the top level.
const lookupSource = `typeof transform === "function" ? transform : undefined`

var (
	lookupProgram = goja.MustCompile("sandbox-lookup.js", lookupSource, false)
)

// isGuardError reports whether a script exception is one of the guards'.
func isGuardError(ex *goja.Exception) bool {
	return strings.Contains(ex.Value().String(), guardPrefix)
}

// runIn prepares vm, runs the program's top level and, when input is not
// nil, calls transform on a fresh copy of it and exports the result.
func (s *Sandbox) runIn(vm *goja.Runtime, prog *goja.Program, input []byte) ([]byte, error) {
	vm.SetMaxCallStackSize(s.limits.MaxCallStack)
	// Taken before the tenant's code runs, so it cannot be replaced.
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	if !s.limits.Unguarded {
		s.harden(vm)
	}
	if _, err := vm.RunProgram(prog); err != nil {
		return nil, errorFrom(err)
	}
	fv, err := vm.RunProgram(lookupProgram)
	if err != nil {
		return nil, errorFrom(err)
	}
	transform, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, &Error{Kind: KindSyntax, Message: "the code must define function transform(data)"}
	}
	if input == nil {
		return nil, nil
	}
	data, err := parse(goja.Undefined(), vm.ToValue(string(input)))
	if err != nil {
		return nil, &Error{Kind: KindInput, Message: "input is not valid JSON"}
	}
	res, err := transform(goja.Undefined(), data)
	if err != nil {
		return nil, errorFrom(err)
	}
	if goja.IsUndefined(res) {
		res = data
	}
	return s.export(vm, res)
}
