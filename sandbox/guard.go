package sandbox

import (
	"fmt"
	"reflect"
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
	reflect := vm.Get("Reflect").ToObject(vm)
	wrap(reflect, "apply", argList(2))
	wrap(reflect, "construct", argList(1))
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
		if m == "join" {
			continue
		}
		wrap(proto, m, checkArrays)
	}
	wrap(proto, "join", func(call goja.FunctionCall) {
		checkArrays(call)
		sep := int64(1)
		if a := call.Argument(0); !goja.IsUndefined(a) {
			sep = int64(len(a.String()))
		}
		if n := lenOf(call.This); n > 1 && (n-1)*sep > maxStr {
			fail("string length", (n-1)*sep, maxStr)
		}
	})
	wrap(ap, "from", checkArrays)
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
	s.harden(vm)
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
