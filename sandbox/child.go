package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The sandbox process (the child). A binary that runs transformations
// calls ServeIfChild first thing in main (and in TestMain): started by a
// Pool with childEnv set, the same binary then serves runs on stdin and
// stdout and exits, never reaching the rest of main.
//
// Wire format, both ways: frames of a 4-byte big-endian length and a
// payload. A request is
//
//	op (1 byte) | uvarint len | limits JSON | uvarint len | code | uvarint n | n × (uvarint len | input)
//
// and the child answers each input (op run) or the check (op check, with
// zero or one sample input) with one result frame as soon as it is done:
//
//	flags (1 byte) | status (1 byte) | output JSON (status 0) or error JSON (status 1)
//
// The parent kills the child at a run's deadline: one frame per record
// lets it apply the deadline to each record of a batch.

const (
	// childEnv carries the child's process limits (childConfig JSON).
	childEnv = "FOS_SANDBOX_CHILD"

	opRun   byte = 1
	opCheck byte = 2

	statusOK  byte = 0
	statusErr byte = 1

	// flagRetire on a result: the child exits after this request (it has
	// used most of its CPU budget, or a run ran out of memory); the parent
	// starts a fresh one.
	flagRetire byte = 1

	// maxFrame bounds a frame either way (a batch of inputs, one output).
	maxFrame = 256 << 20
)

// childConfig is what a child process is started with.
type childConfig struct {
	// MemoryBytes is the address space the child may add to what it has
	// at start (RLIMIT_AS); its Go memory limit is set below it.
	MemoryBytes int64 `json:"memoryBytes"`
	// CPUSeconds is the child's CPU budget (RLIMIT_CPU); it retires after
	// half of it.
	CPUSeconds int64 `json:"cpuSeconds"`
}

var hooked atomic.Bool

// ServeIfChild makes this binary its own sandbox process. Call it first in
// main and in the TestMain of packages whose tests run transformations
// through processes: in a process started by a Pool it serves runs until
// its input closes and exits; otherwise it returns at once and records
// that the binary can start sandbox processes (without it, a Pool runs
// transformations in-process).
func ServeIfChild() {
	cfg := os.Getenv(childEnv)
	if cfg == "" {
		hooked.Store(true)
		return
	}
	os.Exit(serveChild(cfg))
}

// Isolated reports whether sandbox processes are available (ServeIfChild
// was called in this binary).
func Isolated() bool { return hooked.Load() }

func serveChild(cfgJSON string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox child: bad configuration:", err)
		return 2
	}
	// Frames go to the real stdout only; anything else printed goes to
	// stderr.
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	os.Stdout = os.Stderr
	if err := limitChild(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox child: limits:", err)
		return 2
	}
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	engines := map[string]*Sandbox{}
	var buf []byte
	for {
		req, err := readFrame(in, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "sandbox child: read:", err)
			return 2
		}
		buf = req[:0]
		op, limits, code, inputs, err := decodeRequest(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox child: request:", err)
			return 2
		}
		sb := engines[string(limits)]
		if sb == nil {
			var l Limits
			if err := json.Unmarshal(limits, &l); err != nil {
				fmt.Fprintln(os.Stderr, "sandbox child: limits:", err)
				return 2
			}
			l.child = true
			if len(engines) > 16 {
				clear(engines)
			}
			sb = New(l)
			engines[string(limits)] = sb
		}
		retire := cpuSeconds() > cfg.CPUSeconds/2
		answer := func(res []byte, err error) error {
			// After a run stopped for its heap the process goes: its heap
			// and address space are the next run's to inherit. (A guard's
			// refusal allocated nothing.)
			var e *Error
			retire = retire || (errors.As(err, &e) && e.Message == errHeap.Message)
			// So does one whose run left a large heap: a Go process's
			// address space never shrinks, and RLIMIT_AS counts it.
			retire = retire || (cfg.MemoryBytes > 0 && heapBytes() > cfg.MemoryBytes/4)
			var flags byte
			if retire {
				flags = flagRetire
			}
			return writeResult(out, flags, res, err)
		}
		switch op {
		case opCheck:
			var sample []byte
			if len(inputs) > 0 {
				sample = inputs[0]
			}
			err = answer(nil, sb.checkLocal(context.Background(), code, sample))
		default:
			for _, input := range inputs {
				res, rerr := sb.runLocal(context.Background(), code, input)
				if err = answer(res, rerr); err != nil {
					break
				}
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox child: write:", err)
			return 2
		}
		if retire {
			return 0
		}
	}
}

// limitChild caps the child's address space and CPU time. There is no Go
// memory limit: near one the collector runs without pause and a runaway
// script crawls to its deadline instead of failing at once; instead the
// child retires after a run that left a large heap or ran out of memory.
func limitChild(cfg childConfig) error {
	if cfg.MemoryBytes > 0 {
		base := vmSize()
		lim := uint64(base + cfg.MemoryBytes)
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			return fmt.Errorf("RLIMIT_AS: %w", err)
		}
	}
	if cfg.CPUSeconds > 0 {
		lim := uint64(cfg.CPUSeconds)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: lim, Max: lim + 5}); err != nil {
			return fmt.Errorf("RLIMIT_CPU: %w", err)
		}
	}
	return nil
}

// vmSize is this process's address space in bytes (/proc/self/status).
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuSeconds is the CPU time this process has used.
func cpuSeconds() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Sec + ru.Stime.Sec
}

// readFrame reads one frame into buf (grown as needed).
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// writeFrame writes and flushes one frame.
func writeFrame(w *bufio.Writer, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(n))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return w.Flush()
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// encodeRequest builds a request payload.
func encodeRequest(b []byte, op byte, limits []byte, code string, inputs [][]byte) []byte {
	b = append(b, op)
	b = appendBytes(b, limits)
	b = binary.AppendUvarint(b, uint64(len(code)))
	b = append(b, code...)
	b = binary.AppendUvarint(b, uint64(len(inputs)))
	for _, in := range inputs {
		b = appendBytes(b, in)
	}
	return b
}

var errFrame = errors.New("malformed frame")

func takeBytes(b []byte) (p, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, errFrame
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func decodeRequest(b []byte) (op byte, limits []byte, code string, inputs [][]byte, err error) {
	if len(b) < 1 {
		return 0, nil, "", nil, errFrame
	}
	op, b = b[0], b[1:]
	if limits, b, err = takeBytes(b); err != nil {
		return
	}
	var c []byte
	if c, b, err = takeBytes(b); err != nil {
		return
	}
	code = string(c)
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return 0, nil, "", nil, errFrame
	}
	b = b[k:]
	inputs = make([][]byte, n)
	for i := range inputs {
		if inputs[i], b, err = takeBytes(b); err != nil {
			return
		}
	}
	return op, limits, code, inputs, nil
}

// wireError is an *Error on the wire.
type wireError struct {
	Kind    string `json:"k"`
	Message string `json:"m"`
	Line    int    `json:"l,omitempty"`
	Column  int    `json:"c,omitempty"`
}

func writeResult(w *bufio.Writer, flags byte, out []byte, err error) error {
	if err == nil {
		return writeFrame(w, []byte{flags, statusOK}, out)
	}
	we := wireError{Kind: KindException, Message: err.Error()}
	var e *Error
	if errors.As(err, &e) {
		we = wireError{Kind: e.Kind, Message: e.Message, Line: e.Line, Column: e.Column}
	}
	b, _ := json.Marshal(we)
	return writeFrame(w, []byte{flags, statusErr}, b)
}

// decodeResult reads a result payload (out aliases b).
func decodeResult(b []byte) (flags byte, out []byte, err error) {
	if len(b) < 2 {
		return 0, nil, errFrame
	}
	flags = b[0]
	if b[1] == statusOK {
		return flags, b[2:], nil
	}
	var we wireError
	if jerr := json.Unmarshal(b[2:], &we); jerr != nil {
		return flags, nil, errFrame
	}
	return flags, nil, &Error{Kind: we.Kind, Message: we.Message, Line: we.Line, Column: we.Column}
}

// stderrHead keeps the first bytes a child wrote to stderr ("fatal error:
// out of memory" and the like), to tell why it died.
type stderrHead struct {
	mu  sync.Mutex
	buf []byte
}

func (t *stderrHead) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := 2048 - len(t.buf); n > 0 {
		t.buf = append(t.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (t *stderrHead) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
