// Package sandbox runs tenant JavaScript (transformations) in goja
// (github.com/dop251/goja), an ECMAScript interpreter written in Go.
//
// The contract (CONTRACT 8a): the code defines `function transform(data)`;
// Run calls it with a copy of a JSON object and answers the returned value,
// or the (possibly mutated) copy when it returns undefined. The value must
// be a plain object; it is exported back to JSON.
//
// What a run is given and what bounds it:
//
//   - A program is compiled once per code version (cached by the SHA-256 of
//     the code) and every run gets a fresh goja.Runtime: nothing survives
//     from one run to the next.
//   - The runtime holds the ECMAScript built-ins only: no require, console,
//     timers, process, file system or network, and no Go value from the host
//     (the input enters as JSON text parsed inside the runtime).
//   - Time: a watchdog interrupts the script at the deadline (1 s default).
//     goja can interrupt JavaScript but not a running built-in, so Run also
//     answers at the deadline (plus a short grace) whatever the script's
//     goroutine is doing; that goroutine keeps its concurrency slot until it
//     ends, so stuck runs cannot pile up. Backtracking regular expressions
//     (regexp2) have a match timeout.
//   - Call depth: SetMaxCallStackSize.
//   - Size: the code, the input (bytes and nesting) and the output (bytes and
//     nesting) are capped; an oversized input is refused before any code runs.
//   - Memory: goja has no memory limit. The watchdog samples the process's
//     heap (runtime/metrics, no stop-the-world) every 2 ms of a run and
//     interrupts a run whose heap growth passes MaxHeapGrowth. The built-ins
//     that allocate or loop a lot in one uninterruptible call are capped
//     before they run: String repeat, padStart, padEnd and split and Array
//     join (result length), every Array method, Array.from, array and string
//     iteration (spread, Set and Map constructors), Function.prototype.apply,
//     Reflect.apply and Reflect.construct (the length of the array,
//     array-like or string they are given); built-ins that recurse in Go
//     stop at MaxCallStack levels (JSON.stringify, JSON.parse, nested join
//     and toString); ArrayBuffer, DataView, the typed arrays (they allocate
//     their whole size at once) and Proxy (a chain of proxies recurses in
//     Go) are removed. The heap is shared by the whole process, so the
//     growth seen by a run may include other runs' allocations (a concurrent
//     runaway can fail an innocent run); at most MaxConcurrent runs execute
//     at once. Not bounded before the fact: a single built-in call whose
//     result is the product of two in-range sizes (a global replace with a
//     long replacement over a long string); such a call is stopped right
//     after it returns, when the heap check sees it, or answered at the
//     deadline. Other deep recursion inside goja's built-ins that this list
//     misses is the residual risk of running tenant code in-process.
package sandbox

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Limits bound a run. Zero fields take the defaults.
type Limits struct {
	// Timeout is a run's deadline (default 1 s).
	Timeout time.Duration
	// MaxCodeBytes caps the source (default 100,000 bytes).
	MaxCodeBytes int
	// MaxInputBytes and MaxOutputBytes cap the JSON in and out (default
	// 1 MiB each).
	MaxInputBytes  int
	MaxOutputBytes int
	// MaxDepth caps the nesting of the input and the output (default 64).
	MaxDepth int
	// MaxCallStack is the JavaScript call depth (default 1,000).
	MaxCallStack int
	// MaxHeapGrowth is the heap growth, in bytes, at which a run is
	// interrupted (default 256 MiB).
	MaxHeapGrowth int64
	// MaxStringLength caps the strings the guarded built-ins build (default
	// 2 Mi characters: more than any input or output may hold);
	// MaxArrayLength the arrays and array-likes they take or build (default
	// 1,000,000 elements).
	MaxStringLength int
	MaxArrayLength  int
	// MaxConcurrent runs execute at once in one process (default 2 ×
	// GOMAXPROCS); the others wait for a slot within their deadline. With
	// a Pool, the pool's size and per-tenant share bound the runs instead.
	MaxConcurrent int
	// Unguarded turns the in-runtime guards of built-ins off. Only for
	// tests that prove the process limits hold on their own.
	Unguarded bool `json:",omitempty"`

	// child: this is the engine of a sandbox process (no pool, and a
	// built-in that outlives its deadline is left to the parent's kill).
	child bool
}

// Defaults for Limits.
const (
	DefaultTimeout         = time.Second
	DefaultMaxCodeBytes    = 100_000
	DefaultMaxInputBytes   = 1 << 20
	DefaultMaxOutputBytes  = 1 << 20
	DefaultMaxDepth        = 64
	DefaultMaxCallStack    = 1000
	DefaultMaxHeapGrowth   = 256 << 20
	DefaultMaxStringLength = 2 << 20
	DefaultMaxArrayLength  = 1_000_000
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	def(&l.MaxCodeBytes, DefaultMaxCodeBytes)
	def(&l.MaxInputBytes, DefaultMaxInputBytes)
	def(&l.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxCallStack, DefaultMaxCallStack)
	def(&l.MaxStringLength, DefaultMaxStringLength)
	def(&l.MaxArrayLength, DefaultMaxArrayLength)
	def(&l.MaxConcurrent, 2*runtime.GOMAXPROCS(0))
	if l.MaxHeapGrowth <= 0 {
		l.MaxHeapGrowth = DefaultMaxHeapGrowth
	}
	return l
}

// Error kinds.
const (
	KindSyntax         = "syntax"           // the code does not compile or defines no transform function
	KindInput          = "invalid_input"    // the input is not a JSON object within the limits
	KindTimeout        = "timeout"          // the deadline passed
	KindMemory         = "memory"           // the heap grew past the cap, or a guarded built-in refused
	KindException      = "exception"        // the script threw
	KindOutput         = "invalid_output"   // the result is not a plain object
	KindOutputTooLarge = "output_too_large" // the result exceeds MaxOutputBytes or MaxDepth
	KindCanceled       = "canceled"         // the caller's context ended first
)

// Error is a failed check or run. Line and Column (1-based) are set when
// the problem has a place in the code.
type Error struct {
	Kind    string
	Message string
	Line    int
	Column  int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return e.Message
}

// IsKind reports whether err is a sandbox *Error of the kind.
func IsKind(err error, kind string) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == kind
}

// Sandbox compiles and runs transformations. Safe for concurrent use.
// With a Pool (the default when ServeIfChild was called in this binary)
// each run goes to a sandbox process of the pool; otherwise it runs in
// this process.
type Sandbox struct {
	limits Limits
	slots  chan struct{}
	pool   *Pool
	wire   []byte // limits, as sent to the pool's processes

	// cache is an LRU, not an oncemap.Map: it evicts past cacheSize and
	// does not keep failed compiles.
	mu    sync.Mutex
	cache map[[32]byte]*list.Element
	lru   *list.List // of *compiled, most recent first
}

type compiled struct {
	key  [32]byte
	prog *goja.Program
}

// cacheSize bounds the compiled programs kept.
const cacheSize = 512

// regexMatchTimeout bounds one backtracking (regexp2) match. goja treats a
// timed-out match as no match. regexp2 is used by goja only.
const regexMatchTimeout = 250 * time.Millisecond

func init() { regexp2.DefaultMatchTimeout = regexMatchTimeout }

// New returns a sandbox with the limits (zero fields: defaults) over
// DefaultPool (in-process when there is none).
func New(l Limits) *Sandbox {
	if l.child {
		return NewWithPool(l, nil)
	}
	return NewWithPool(l, DefaultPool())
}

// NewWithPool returns a sandbox whose runs go to the pool's processes
// (p nil: in this process).
func NewWithPool(l Limits, p *Pool) *Sandbox {
	l = l.withDefaults()
	s := &Sandbox{limits: l, slots: make(chan struct{}, l.MaxConcurrent), cache: map[[32]byte]*list.Element{}, lru: list.New()}
	if p != nil && !l.child {
		s.pool = p
		s.wire, _ = json.Marshal(l)
	}
	return s
}

// Limits returns the limits in force.
func (s *Sandbox) Limits() Limits { return s.limits }

// Isolated reports whether runs go to sandbox processes.
func (s *Sandbox) Isolated() bool { return s.pool != nil }

// compile returns the program of code, compiled once per code version.
func (s *Sandbox) compile(code string) (*goja.Program, error) {
	if len(code) > s.limits.MaxCodeBytes {
		return nil, &Error{Kind: KindSyntax, Message: fmt.Sprintf("code exceeds %d bytes", s.limits.MaxCodeBytes)}
	}
	key := sha256.Sum256([]byte(code))
	s.mu.Lock()
	if el, ok := s.cache[key]; ok {
		s.lru.MoveToFront(el)
		s.mu.Unlock()
		return el.Value.(*compiled).prog, nil
	}
	s.mu.Unlock()

	prog, err := compileCode(code)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.cache[key]; ok {
		return el.Value.(*compiled).prog, nil
	}
	s.cache[key] = s.lru.PushFront(&compiled{key: key, prog: prog})
	for s.lru.Len() > cacheSize {
		old := s.lru.Remove(s.lru.Back()).(*compiled)
		delete(s.cache, old.key)
	}
	return prog, nil
}

// compileCode parses and compiles, reporting the place of a syntax error.
func compileCode(code string) (*goja.Program, error) {
	ast, err := parser.ParseFile(nil, "transform.js", code, 0)
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			return nil, &Error{Kind: KindSyntax, Message: list[0].Message, Line: list[0].Position.Line, Column: list[0].Position.Column}
		}
		return nil, &Error{Kind: KindSyntax, Message: err.Error()}
	}
	prog, err := goja.CompileAST(ast, false)
	if err != nil {
		var cerr *goja.CompilerSyntaxError
		if errors.As(err, &cerr) {
			e := &Error{Kind: KindSyntax, Message: cerr.Message}
			if cerr.File != nil {
				pos := cerr.File.Position(cerr.Offset)
				e.Line, e.Column = pos.Line, pos.Column
			}
			return nil, e
		}
		return nil, &Error{Kind: KindSyntax, Message: strings.TrimPrefix(err.Error(), "SyntaxError: ")}
	}
	return prog, nil
}

// Check validates code for saving: it compiles, its top level runs within
// the limits, and it defines a transform function. A failure is a
// *Error of KindSyntax (with the line when the compiler gave one).
func (s *Sandbox) Check(ctx context.Context, code string) error {
	return s.CheckFor(ctx, "", code, nil)
}

// CheckFor is Check for a tenant (its share of the pool) that also runs
// transform over sample (a JSON object; nil: none): a run over the sample
// that passes the deadline or the memory or output limits refuses the
// code; an exception does not (the sample is not the tenant's data).
func (s *Sandbox) CheckFor(ctx context.Context, tenant, code string, sample []byte) error {
	if len(code) > s.limits.MaxCodeBytes {
		return &Error{Kind: KindSyntax, Message: fmt.Sprintf("code exceeds %d bytes", s.limits.MaxCodeBytes)}
	}
	if sample != nil {
		if err := s.checkInput(sample); err != nil {
			return err
		}
	}
	if s.pool == nil {
		return s.checkLocal(ctx, code, sample)
	}
	var inputs [][]byte
	if sample != nil {
		inputs = [][]byte{sample}
	}
	res := make([]result, 1)
	s.pool.do(ctx, tenant, opCheck, s.wire, 2*s.limits.Timeout, code, inputs, res)
	err := res[0].err
	var e *Error
	if errors.As(err, &e) && e.Kind != KindCanceled && e.Kind != KindSyntax {
		c := *e
		c.Kind, c.Message = KindSyntax, "the code failed its check: "+e.Message
		return &c
	}
	return err
}

// checkLocal is the check in this process.
func (s *Sandbox) checkLocal(ctx context.Context, code string, sample []byte) error {
	prog, err := s.compile(code)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, prog, nil)
	var e *Error
	if errors.As(err, &e) && e.Kind != KindCanceled && e.Kind != KindSyntax {
		c := *e
		c.Kind, c.Message = KindSyntax, "the code's top level failed: "+e.Message
		return &c
	}
	if err != nil || sample == nil {
		return err
	}
	_, err = s.exec(ctx, prog, sample)
	if errors.As(err, &e) && (e.Kind == KindTimeout || e.Kind == KindMemory || e.Kind == KindOutputTooLarge) {
		c := *e
		c.Kind, c.Message = KindSyntax, "the code failed on a sample order: "+e.Message
		return &c
	}
	if errors.As(err, &e) && e.Kind == KindCanceled {
		return err
	}
	return nil
}

// Run calls the code's transform with a copy of input (a JSON object) and
// returns the result as JSON. A failure is a *Error.
func (s *Sandbox) Run(ctx context.Context, code string, input []byte) ([]byte, error) {
	return s.RunFor(ctx, "", code, input)
}

// RunFor is Run within tenant's share of the pool.
func (s *Sandbox) RunFor(ctx context.Context, tenant, code string, input []byte) ([]byte, error) {
	res := s.RunBatch(ctx, tenant, code, [][]byte{input})
	return res[0].Out, res[0].Err
}

// BatchResult is one input's outcome in RunBatch.
type BatchResult struct {
	Out []byte
	Err error
}

// RunBatch runs the code over each input (one request to a sandbox
// process for the lot; each input has the full deadline). Results are in
// the inputs' order.
func (s *Sandbox) RunBatch(ctx context.Context, tenant, code string, inputs [][]byte) []BatchResult {
	out := make([]BatchResult, len(inputs))
	if len(code) > s.limits.MaxCodeBytes {
		for i := range out {
			out[i].Err = &Error{Kind: KindSyntax, Message: fmt.Sprintf("code exceeds %d bytes", s.limits.MaxCodeBytes)}
		}
		return out
	}
	send := make([][]byte, 0, len(inputs))
	at := make([]int, 0, len(inputs))
	for i, in := range inputs {
		if err := s.checkInput(in); err != nil {
			out[i].Err = err
			continue
		}
		if s.pool == nil {
			out[i].Out, out[i].Err = s.runLocal(ctx, code, in)
			continue
		}
		send = append(send, in)
		at = append(at, i)
	}
	if len(send) == 0 {
		return out
	}
	res := make([]result, len(send))
	s.pool.do(ctx, tenant, opRun, s.wire, s.limits.Timeout, code, send, res)
	for j, r := range res {
		out[at[j]] = BatchResult{Out: r.out, Err: r.err}
	}
	return out
}

// runLocal runs in this process.
func (s *Sandbox) runLocal(ctx context.Context, code string, input []byte) ([]byte, error) {
	prog, err := s.compile(code)
	if err != nil {
		return nil, err
	}
	return s.exec(ctx, prog, input)
}

// checkInput refuses an input that is too large, too deep, or not an object.
func (s *Sandbox) checkInput(input []byte) error {
	if len(input) > s.limits.MaxInputBytes {
		return &Error{Kind: KindInput, Message: fmt.Sprintf("input exceeds %d bytes", s.limits.MaxInputBytes)}
	}
	first, depth := jsonShape(input)
	if first != '{' {
		return &Error{Kind: KindInput, Message: "input must be a JSON object"}
	}
	if depth > s.limits.MaxDepth {
		return &Error{Kind: KindInput, Message: fmt.Sprintf("input is nested deeper than %d levels", s.limits.MaxDepth)}
	}
	return nil
}

// jsonShape returns the first non-space byte of a JSON text and its
// deepest nesting of objects and arrays (strings skipped).
func jsonShape(b []byte) (first byte, maxDepth int) {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		if first == 0 && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			first = c
		}
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			maxDepth = max(maxDepth, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return first, maxDepth
}

// interrupt reasons.
var (
	errDeadline = &Error{Kind: KindTimeout, Message: "the transformation ran longer than its deadline"}
	errHeap     = &Error{Kind: KindMemory, Message: "the transformation allocated too much memory"}
)

// deadlineGrace is how long Run waits, after interrupting at the deadline,
// for a script stuck in a built-in before it answers anyway.
const deadlineGrace = 50 * time.Millisecond

type outcome struct {
	out []byte
	err error
}

// exec runs prog's top level in a fresh runtime and, when input is not nil,
// its transform on a copy of input.
func (s *Sandbox) exec(ctx context.Context, prog *goja.Program, input []byte) ([]byte, error) {
	deadline := time.Now().Add(s.limits.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case s.slots <- struct{}{}:
	case <-wait.C:
		c := *errDeadline
		return nil, &c
	case <-ctx.Done():
		return nil, &Error{Kind: KindCanceled, Message: ctx.Err().Error()}
	}

	vm := goja.New()
	done := make(chan outcome, 1)
	disarm := s.watch(vm, deadline)
	go func() {
		defer func() { <-s.slots }()
		defer disarm()
		defer func() {
			if p := recover(); p != nil {
				if err, ok := p.(error); ok {
					done <- outcome{err: errorFrom(err)}
					return
				}
				done <- outcome{err: &Error{Kind: KindException, Message: fmt.Sprint("the transformation failed: ", p)}}
			}
		}()
		out, err := s.runIn(vm, prog, input)
		done <- outcome{out, err}
	}()
	if s.limits.child {
		// A built-in that runs past the deadline is the parent's to kill.
		o := <-done
		return o.out, o.err
	}
	select {
	case o := <-done:
		return o.out, o.err
	case <-ctx.Done():
		vm.Interrupt(&Error{Kind: KindCanceled, Message: ctx.Err().Error()})
	case <-time.After(time.Until(deadline) + deadlineGrace):
	}
	// Interrupted; a built-in may still be running. Answer within the grace.
	select {
	case o := <-done:
		return o.out, o.err
	case <-time.After(deadlineGrace):
		vm.Interrupt(errDeadline)
		c := *errDeadline
		return nil, &c
	}
}

// heapSampleEvery is the watchdog's sampling period.
const heapSampleEvery = 2 * time.Millisecond

// watch arms the watchdog: vm is interrupted at the deadline, or once the
// heap has grown past the cap (sampled every heapSampleEvery after the run
// has lasted that long: a short run costs two timers, no goroutine). The
// returned func disarms it.
func (s *Sandbox) watch(vm *goja.Runtime, deadline time.Time) (disarm func()) {
	base := heapBytes()
	var mu sync.Mutex
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	atDeadline := time.AfterFunc(time.Until(deadline), func() { vm.Interrupt(errDeadline) })
	var sample *time.Timer
	sample = time.AfterFunc(heapSampleEvery, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if heapBytes()-base > s.limits.MaxHeapGrowth {
			vm.Interrupt(errHeap)
			return
		}
		sample.Reset(heapSampleEvery)
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		atDeadline.Stop()
		sample.Stop()
	}
}

const heapMetric = "/memory/classes/heap/objects:bytes"

var samplePool = sync.Pool{New: func() any { return []metrics.Sample{{Name: heapMetric}} }}

// heapBytes is the memory occupied by heap objects, live or not yet swept.
func heapBytes() int64 {
	s := samplePool.Get().([]metrics.Sample)
	metrics.Read(s)
	v := int64(s[0].Value.Uint64())
	samplePool.Put(s)
	return v
}

// errorFrom turns what goja returned into a *Error.
func errorFrom(err error) error {
	var intr *goja.InterruptedError
	if errors.As(err, &intr) {
		if e, ok := intr.Value().(*Error); ok {
			c := *e
			return &c
		}
		return errDeadline
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Error{Kind: KindException, Message: "maximum call stack size exceeded"}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		e := &Error{Kind: KindException, Message: ex.Value().String()}
		if e.Message == "" || e.Message == "undefined" {
			e.Message = "the transformation threw"
		}
		for _, f := range ex.Stack() {
			pos := f.Position()
			if pos.Line > 0 {
				e.Line, e.Column = pos.Line, pos.Column
				break
			}
		}
		if isGuardError(ex) {
			e.Kind = KindMemory
		}
		return e
	}
	return &Error{Kind: KindException, Message: err.Error()}
}
