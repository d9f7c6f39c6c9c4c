package sandbox

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// exporter writes a JavaScript value as JSON with JSON.stringify's rules
// for plain data (toJSON honoured, so a Date becomes its ISO string;
// undefined, functions and symbols dropped from objects and null in
// arrays; NaN and infinities null; BigInt refused), bounded in size and
// depth. goja's own JSON.stringify recurses without a depth bound and
// cannot be interrupted: a script's deeply nested or huge result must not
// take the process down.
type exporter struct {
	vm       *goja.Runtime
	buf      []byte
	maxBytes int
	maxDepth int
}

// tooLarge stops an export.
type tooLarge struct{ msg string }

// export converts the transform's result. It runs on the script's
// goroutine, under the watchdog: getters and toJSON methods are JavaScript.
func (s *Sandbox) export(vm *goja.Runtime, v goja.Value) (out []byte, err error) {
	obj, isObj := v.(*goja.Object)
	if !isObj || obj.ClassName() == "Array" || isFunction(v) {
		return nil, &Error{Kind: KindOutput, Message: "transform must return an object (got " + describe(v) + ")"}
	}
	x := &exporter{vm: vm, buf: make([]byte, 0, 1024), maxBytes: s.limits.MaxOutputBytes, maxDepth: s.limits.MaxDepth}
	defer func() {
		if p := recover(); p != nil {
			out = nil
			switch e := p.(type) {
			case tooLarge:
				err = &Error{Kind: KindOutputTooLarge, Message: e.msg}
			case error:
				err = errorFrom(e)
			default:
				panic(p)
			}
		}
	}()
	x.write(x.resolve(v, ""), 0)
	return x.buf, nil
}

func isFunction(v goja.Value) bool {
	_, ok := goja.AssertFunction(v)
	return ok
}

func describe(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	case isFunction(v):
		return "a function"
	}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "Array" {
		return "an array"
	}
	switch v.ExportType().Kind().String() {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int64", "float64":
		return "a number"
	}
	return v.String()
}

func (x *exporter) check() {
	if len(x.buf) > x.maxBytes {
		panic(tooLarge{fmt.Sprintf("the output exceeds %d bytes", x.maxBytes)})
	}
}

// skip reports whether v is left out of an object (undefined, a function,
// a symbol).
func skip(v goja.Value) bool {
	if v == nil || goja.IsUndefined(v) || isFunction(v) {
		return true
	}
	_, isSym := v.(*goja.Symbol)
	return isSym
}

// resolve applies v's toJSON method, if any, as JSON.stringify does.
func (x *exporter) resolve(v goja.Value, key string) goja.Value {
	obj, ok := v.(*goja.Object)
	if !ok {
		return v
	}
	fn, ok := goja.AssertFunction(obj.Get("toJSON"))
	if !ok {
		return v
	}
	r, err := fn(obj, x.vm.ToValue(key))
	if err != nil {
		panic(err)
	}
	return r
}

// write writes a resolved value.
func (x *exporter) write(v goja.Value, depth int) {
	if skip(v) || goja.IsNull(v) {
		x.buf = append(x.buf, "null"...)
		x.check()
		return
	}
	obj, isObj := v.(*goja.Object)
	if !isObj {
		x.primitive(v)
		return
	}
	switch obj.ClassName() {
	case "String":
		x.buf = appendString(x.buf, obj.String())
		x.check()
		return
	case "Number":
		x.primitive(x.vm.ToValue(obj.ToFloat()))
		return
	case "Boolean":
		x.buf = strconv.AppendBool(x.buf, obj.ToBoolean())
		return
	}
	if depth >= x.maxDepth {
		panic(tooLarge{fmt.Sprintf("the output is nested deeper than %d levels (or is circular)", x.maxDepth)})
	}
	if obj.ClassName() == "Array" {
		n := obj.Get("length").ToInteger()
		x.buf = append(x.buf, '[')
		for i := int64(0); i < n; i++ {
			if i > 0 {
				x.buf = append(x.buf, ',')
			}
			k := strconv.FormatInt(i, 10)
			x.write(x.resolve(obj.Get(k), k), depth+1)
		}
		x.buf = append(x.buf, ']')
		x.check()
		return
	}
	x.buf = append(x.buf, '{')
	first := true
	for _, k := range obj.Keys() {
		pv := x.resolve(obj.Get(k), k)
		if skip(pv) {
			continue
		}
		if !first {
			x.buf = append(x.buf, ',')
		}
		first = false
		x.buf = appendString(x.buf, k)
		x.buf = append(x.buf, ':')
		x.write(pv, depth+1)
	}
	x.buf = append(x.buf, '}')
	x.check()
}

func (x *exporter) primitive(v goja.Value) {
	switch e := v.Export().(type) {
	case string:
		x.buf = appendString(x.buf, e)
	case bool:
		x.buf = strconv.AppendBool(x.buf, e)
	case int64:
		x.buf = strconv.AppendInt(x.buf, e, 10)
	case float64:
		if e != e || e > 1.7976931348623157e308 || e < -1.7976931348623157e308 {
			x.buf = append(x.buf, "null"...)
		} else {
			// JavaScript's Number#toString is valid JSON for finite numbers.
			x.buf = append(x.buf, v.String()...)
		}
	default:
		if _, isSym := v.(*goja.Symbol); isSym {
			x.buf = append(x.buf, "null"...)
			break
		}
		panic(x.vm.NewTypeError("Do not know how to serialize a " + describe(v)))
	}
	x.check()
}

// appendString appends s as a JSON string (no HTML escaping; invalid UTF-8
// becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
