package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PoolConfig sizes a Pool. Zero fields take the defaults.
type PoolConfig struct {
	// Processes is the number of sandbox processes, the runs that execute
	// at once (default max(2, GOMAXPROCS)).
	Processes int
	// PerTenant is how many processes one tenant (organization) may hold
	// at once (default max(1, Processes/2)): another tenant always finds
	// one free within a deadline of the overrunning runs.
	PerTenant int
	// MemoryBytes is the address space a process may add to its own at
	// start (RLIMIT_AS, default 512 MiB); past it the process dies and
	// only its run fails.
	MemoryBytes int64
	// CPUSeconds is a process's CPU budget (RLIMIT_CPU, default 600 s); it
	// is replaced after half of it.
	CPUSeconds int64
	// QueueTimeout bounds the wait for a free process (default 10 s).
	QueueTimeout time.Duration
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.Processes <= 0 {
		c.Processes = max(2, runtime.GOMAXPROCS(0))
	}
	if c.PerTenant <= 0 {
		c.PerTenant = max(1, c.Processes/2)
	}
	c.PerTenant = min(c.PerTenant, c.Processes)
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = 512 << 20
	}
	if c.CPUSeconds <= 0 {
		c.CPUSeconds = 600
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = 10 * time.Second
	}
	return c
}

// Pool is a set of sandbox processes (this binary, started with childEnv;
// see ServeIfChild) shared by the Sandboxes that use it, with a fair
// share per tenant: a tenant holds at most PerTenant processes, the
// tenants waiting are served in turn, and a process is given back only
// when its run has ended or the process has been killed at the deadline.
// A process that is killed or dies is replaced by a fresh one.
type Pool struct {
	cfg  PoolConfig
	exe  string
	args []string
	env  []string

	mu     sync.Mutex
	free   int            // slots (processes) not held by a run
	busy   map[string]int // slots held, per tenant
	queues map[string][]chan struct{}
	order  []string // tenants with waiters, served in turn
	next   int
	idle   []*proc
	closed bool

	started, killed atomic.Int64
	// cg is the processes' control group (nil: none could be made).
	cg *cgroup
}

// NewPool returns a pool that starts processes on demand. It needs
// ServeIfChild in this binary's main (or TestMain).
func NewPool(cfg PoolConfig) (*Pool, error) {
	cfg = cfg.withDefaults()
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox pool: %w", err)
	}
	conf, _ := json.Marshal(childConfig{MemoryBytes: cfg.MemoryBytes, CPUSeconds: cfg.CPUSeconds})
	// The child gets no environment of ours (no database URL, no keys):
	// only its configuration and the runtime's settings.
	env := []string{childEnv + "=" + string(conf), "GOTRACEBACK=none"}
	return &Pool{
		cfg: cfg, exe: exe, env: env,
		// A test binary whose TestMain lacks ServeIfChild runs no test.
		args: []string{"-test.run=^$"},
		free: cfg.Processes, busy: map[string]int{}, queues: map[string][]chan struct{}{},
		// The group bounds the processes together, well above what one
		// process can take (near its limit a group reclaims the binary's
		// own pages and a run crawls instead of failing).
		cg: newCgroup(max(cfg.MemoryBytes+256<<20, int64(cfg.Processes)*cfg.MemoryBytes*3/4)),
	}, nil
}

// Config returns the pool's configuration.
func (p *Pool) Config() PoolConfig { return p.cfg }

// Stats are counters of the processes started and killed.
func (p *Pool) Stats() (started, killed int64) { return p.started.Load(), p.killed.Load() }

// Close stops the idle processes; busy ones stop when their run ends.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, pr := range idle {
		pr.stop()
	}
	p.cg.remove() // kept while a busy process is in it (swept later)
}

var (
	defaultPoolOnce sync.Once
	defaultPool     *Pool
)

// DefaultPool is the process-wide pool (nil when ServeIfChild was not
// called, or processes cannot be started): its size comes from
// FOS_SANDBOX_PROCESSES, FOS_SANDBOX_PER_ORG and FOS_SANDBOX_MEMORY_MB.
func DefaultPool() *Pool {
	defaultPoolOnce.Do(func() {
		if !Isolated() {
			return
		}
		var cfg PoolConfig
		atoi := func(name string) int {
			var n int
			_, _ = fmt.Sscan(os.Getenv(name), &n)
			return n
		}
		cfg.Processes = atoi("FOS_SANDBOX_PROCESSES")
		cfg.PerTenant = atoi("FOS_SANDBOX_PER_ORG")
		cfg.MemoryBytes = int64(atoi("FOS_SANDBOX_MEMORY_MB")) << 20
		defaultPool, _ = NewPool(cfg)
	})
	return defaultPool
}

// acquire takes a slot for tenant, waiting in turn behind other tenants'
// waiters at most QueueTimeout.
func (p *Pool) acquire(ctx context.Context, tenant string) error {
	p.mu.Lock()
	if p.free > 0 && p.busy[tenant] < p.cfg.PerTenant && len(p.queues[tenant]) == 0 {
		p.free--
		p.busy[tenant]++
		p.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if len(p.queues[tenant]) == 0 {
		p.order = append(p.order, tenant)
	}
	p.queues[tenant] = append(p.queues[tenant], ch)
	p.mu.Unlock()

	wait := time.NewTimer(p.cfg.QueueTimeout)
	defer wait.Stop()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = &Error{Kind: KindCanceled, Message: ctx.Err().Error()}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = &Error{Kind: KindTimeout, Message: "no sandbox process became free before the deadline"}
		}
	case <-wait.C:
		err = &Error{Kind: KindTimeout, Message: "no sandbox process became free in time (too many transformations are running)"}
	}
	p.mu.Lock()
	q := p.queues[tenant]
	for i, c := range q {
		if c == ch {
			p.queues[tenant] = append(q[:i:i], q[i+1:]...)
			if len(p.queues[tenant]) == 0 {
				p.dropTenant(tenant)
			}
			p.mu.Unlock()
			return err
		}
	}
	p.mu.Unlock()
	// Granted meanwhile: give it back.
	<-ch
	p.release(tenant)
	return err
}

// dropTenant removes tenant from the turn order (mu held).
func (p *Pool) dropTenant(tenant string) {
	delete(p.queues, tenant)
	for i, t := range p.order {
		if t == tenant {
			p.order = append(p.order[:i], p.order[i+1:]...)
			if p.next > i {
				p.next--
			}
			break
		}
	}
}

// release gives tenant's slot back and hands free slots to the waiters,
// one tenant after another, skipping tenants at their share.
func (p *Pool) release(tenant string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free++
	if p.busy[tenant]--; p.busy[tenant] <= 0 {
		delete(p.busy, tenant)
	}
	for p.free > 0 && len(p.order) > 0 {
		granted := false
		for range len(p.order) {
			if p.next >= len(p.order) {
				p.next = 0
			}
			t := p.order[p.next]
			if p.busy[t] >= p.cfg.PerTenant {
				p.next++
				continue
			}
			q := p.queues[t]
			ch := q[0]
			p.queues[t] = q[1:]
			p.free--
			p.busy[t]++
			ch <- struct{}{}
			if len(p.queues[t]) == 0 {
				p.dropTenant(t)
			} else {
				p.next++
			}
			granted = true
			break
		}
		if !granted {
			return
		}
	}
}

// proc is one sandbox process.
type proc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	w    *bufio.Writer
	r    *bufio.Reader
	head *stderrHead
	rbuf []byte
	wbuf []byte
	// why is set once when the parent kills the process.
	why atomic.Int32
}

const (
	killDeadline int32 = 1
	killCanceled int32 = 2
)

func (p *Pool) start() (*proc, error) {
	cmd := exec.Command(p.exe, p.args...)
	cmd.Env = p.env
	cmd.Dir = "/"
	head := &stderrHead{}
	cmd.Stderr = head
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a sandbox process: %w", err)
	}
	p.started.Add(1)
	p.cg.add(cmd.Process.Pid)
	return &proc{cmd: cmd, in: in, w: bufio.NewWriterSize(in, 64<<10), r: bufio.NewReaderSize(out, 64<<10), head: head}, nil
}

// kill stops the process (once) for the reason given.
func (pr *proc) kill(why int32) {
	if pr.why.CompareAndSwap(0, why) {
		_ = pr.cmd.Process.Kill()
	}
}

// stop ends an idle process (its input closes) and reaps it.
func (pr *proc) stop() {
	_ = pr.in.Close()
	done := make(chan struct{})
	go func() { _ = pr.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		pr.kill(killDeadline)
		<-done
	}
}

// get returns an idle process or starts one.
func (p *Pool) get() (*proc, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		pr := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return pr, nil
	}
	p.mu.Unlock()
	return p.start()
}

// put keeps a healthy process for the next run; a killed or dead one is
// reaped (its memory is gone when put returns).
func (p *Pool) put(pr *proc, healthy bool) {
	if healthy {
		p.mu.Lock()
		if !p.closed {
			p.idle = append(p.idle, pr)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		pr.stop()
		return
	}
	pr.kill(killDeadline)
	_ = pr.cmd.Wait()
	p.killed.Add(1)
	go p.prestart()
}

// prestart starts a process ahead of need (after one was replaced), so
// the next run does not wait for a start.
func (p *Pool) prestart() {
	p.mu.Lock()
	enough := p.closed || len(p.idle) >= p.free
	p.mu.Unlock()
	if enough {
		return
	}
	pr, err := p.start()
	if err != nil {
		return
	}
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.cfg.Processes {
		p.idle = append(p.idle, pr)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	pr.stop()
}

// result is one record's outcome.
type result struct {
	out []byte
	err error
}

// processGrace is how long after a record's deadline the parent kills a
// process that has not answered (the process's own watchdog answers a
// JavaScript loop at the deadline; only a running built-in needs the
// kill).
const processGrace = 100 * time.Millisecond

// do runs op for tenant: each input (op run) or the check (op check, at
// most one input) on processes of the pool, filling res (one per input;
// one for a check). A process that passes a record's deadline is killed,
// that record fails, and the rest go to another process.
func (p *Pool) do(ctx context.Context, tenant string, op byte, limits []byte, timeout time.Duration, code string, inputs [][]byte, res []result) {
	fill := func(from int, err error) {
		for i := from; i < len(res); i++ {
			res[i] = result{err: err}
		}
	}
	lost := 0 // requests that found their process dead while idle
	for i := 0; i < len(res); {
		if err := p.acquire(ctx, tenant); err != nil {
			fill(i, err)
			return
		}
		pr, err := p.get()
		if err != nil {
			p.release(tenant)
			fill(i, &Error{Kind: KindException, Message: "the sandbox is unavailable: " + err.Error()})
			return
		}
		var batch [][]byte
		if op == opRun {
			batch = inputs[i:]
		} else {
			batch = inputs
		}
		n, healthy := p.exchange(ctx, pr, op, limits, timeout, code, batch, res[i:])
		p.put(pr, healthy)
		p.release(tenant)
		if n == 0 {
			if lost++; lost > 1 {
				fill(i, res[i].err)
				return
			}
			continue // once more on a fresh process
		}
		i += n
		if i < len(res) && ctx.Err() != nil {
			fill(i, canceledErr(ctx))
			return
		}
	}
}

func canceledErr(ctx context.Context) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		c := *errDeadline
		return &c
	}
	return &Error{Kind: KindCanceled, Message: ctx.Err().Error()}
}

// exchange sends one request to pr and reads its results into res: n is
// how many records it settled, healthy whether pr may serve again.
func (p *Pool) exchange(ctx context.Context, pr *proc, op byte, limits []byte, timeout time.Duration, code string, inputs [][]byte, res []result) (n int, healthy bool) {
	want := len(inputs)
	if op == opCheck {
		want = 1
	}
	timer := time.AfterFunc(timeout+processGrace, func() { pr.kill(killDeadline) })
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() { pr.kill(killCanceled) })
	defer stop()

	pr.wbuf = encodeRequest(pr.wbuf[:0], op, limits, code, inputs)
	if err := writeFrame(pr.w, pr.wbuf); err != nil {
		// The process had died while idle: nothing was run.
		res[0] = result{err: p.deathOf(ctx, pr)}
		return 0, false
	}
	retire := false
	for n = 0; n < want; n++ {
		frame, err := readFrame(pr.r, pr.rbuf)
		if err != nil {
			res[n] = result{err: p.deathOf(ctx, pr)}
			return n + 1, false
		}
		pr.rbuf = frame[:0]
		timer.Reset(timeout + processGrace)
		flags, out, rerr := decodeResult(frame)
		if rerr != nil {
			res[n] = result{err: rerr}
		} else {
			res[n] = result{out: append([]byte(nil), out...)}
		}
		if errors.Is(rerr, errFrame) {
			pr.kill(killDeadline)
			return n + 1, false
		}
		retire = retire || flags&flagRetire != 0
	}
	return n, !retire && pr.why.Load() == 0
}

// deathOf says why pr stopped answering: killed at the deadline, the
// caller gone, or the process died (out of memory or CPU).
func (p *Pool) deathOf(ctx context.Context, pr *proc) error {
	why := pr.why.Load()
	pr.kill(killDeadline) // a process that stopped answering is stopped for good
	_ = pr.cmd.Wait()
	switch why {
	case killCanceled:
		return canceledErr(ctx)
	case killDeadline:
		c := *errDeadline
		return &c
	}
	msg := "the transformation's sandbox process ran out of memory and was stopped"
	if t := pr.head.String(); !strings.Contains(t, "out of memory") && !strings.Contains(t, "cannot allocate") {
		msg = "the transformation's sandbox process stopped (memory or CPU limit)"
	}
	return &Error{Kind: KindMemory, Message: msg}
}
