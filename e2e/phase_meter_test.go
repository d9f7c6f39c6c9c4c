package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/store"
)

// phaseMeter measures the phases of a benchmark where the time goes: the
// CPU this process (the whole stack but PostgreSQL) and the machine spent
// in each, and, when FOS_BENCH_PROFILE_DIR names a directory, a CPU
// profile of the process per phase (<dir>/<phase>.pprof) and a sample of
// what the test database's sessions wait on (pg_stat_activity every 50
// ms). Without the variable it only logs the CPU: two reads of /proc and
// getrusage a phase.
type phaseMeter struct {
	b     testing.TB
	st    *store.Store
	dir   string
	name  string
	began time.Time
	proc  time.Duration
	busy  time.Duration
	db    map[int]time.Duration
	prof  *os.File
	stop  context.CancelFunc
	done  sync.WaitGroup
	waits map[string]int
}

func newPhaseMeter(b testing.TB, st *store.Store) *phaseMeter {
	m := &phaseMeter{b: b, st: st, dir: os.Getenv("FOS_BENCH_PROFILE_DIR")}
	if m.dir != "" {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			b.Fatalf("profile dir: %v", err)
		}
	}
	return m
}

// begin starts measuring phase name (end ends it).
func (m *phaseMeter) begin(name string) {
	m.name, m.began, m.proc, m.busy, m.db = name, time.Now(), processCPU(), machineBusy(), m.databaseCPU()
	if m.dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(m.dir, name+".pprof"))
	if err != nil {
		m.b.Fatalf("profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		m.b.Logf("no CPU profile of %s: %v", name, err)
		f.Close()
	} else {
		m.prof = f
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.waits = cancel, map[string]int{}
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rows, err := m.st.Pool.Query(ctx, `SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-') || ' ' ||
       left(regexp_replace(ltrim(query), '\s+', ' ', 'g'), 90)
  FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var s string
				if rows.Scan(&s) == nil {
					m.waits[s]++
				}
			}
			rows.Close()
		}
	}()
}

// end logs the phase's wall and CPU time (n: its orders, for the CPU per
// order).
func (m *phaseMeter) end(n int) {
	wall := time.Since(m.began)
	proc, busy := processCPU()-m.proc, machineBusy()-m.busy
	var db time.Duration
	for pid, t := range m.databaseCPU() {
		db += t - m.db[pid] // a session begun since: from 0
	}
	perOrder := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	m.b.Logf("phase %s: %s wall; CPU: process %.1f s (%.0f µs/order), the database's sessions %.1f s (%.0f µs/order), "+
		"the machine %.0f %% busy (%.1f s outside both)",
		m.name, wall.Round(time.Millisecond), proc.Seconds(), perOrder(proc), db.Seconds(), perOrder(db),
		100*busy.Seconds()/wall.Seconds()/float64(runtime.NumCPU()), (busy - proc - db).Seconds())
	if m.dir == "" {
		return
	}
	if m.prof != nil {
		pprof.StopCPUProfile()
		m.prof.Close()
		m.prof = nil
	}
	m.stop()
	m.done.Wait()
	type kv struct {
		k string
		v int
	}
	var list []kv
	total := 0
	for k, v := range m.waits {
		list = append(list, kv{k, v})
		total += v
	}
	slices.SortFunc(list, func(a, b kv) int { return b.v - a.v })
	var sb strings.Builder
	for i, e := range list {
		if i == 15 {
			break
		}
		fmt.Fprintf(&sb, "\n  %5d %s", e.v, e.k)
	}
	m.b.Logf("phase %s: %d active-session samples (50 ms):%s", m.name, total, sb.String())
}

// databaseCPU is the CPU time of each PostgreSQL session of the test
// database (by pid; the server on this machine: /proc), its autovacuum
// workers included.
func (m *phaseMeter) databaseCPU() map[int]time.Duration {
	out := map[int]time.Duration{}
	rows, err := m.st.Pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return out
	}
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state is field 3,
		// utime and stime fields 14 and 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(u+s) * time.Second / 100 // USER_HZ
	}
	return out
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineBusy is the machine's CPU time not idle (nor waiting on I/O)
// since boot (/proc/stat; 0 where there is none).
func machineBusy() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, s := range fields[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user
			break
		}
		busy += v
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// pageTimings sums, over every run of a bridge task's workflow (it
// continues as new), where its activities' time went: in the activity
// (started to completed), waiting in the task queue (scheduled to
// started), and between one activity's end and the next one's schedule
// (the workflow task in between).
func pageTimings(ctx context.Context, c client.Client, workflowID string) (activities int, running, queued, between time.Duration, err error) {
	runID := ""
	for {
		var prev string
		scheduled, started := map[int64]time.Time{}, map[int64]time.Time{}
		var lastEnd time.Time
		it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return 0, 0, 0, 0, err
			}
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				prev = ev.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				scheduled[ev.GetEventId()] = at
				if !lastEnd.IsZero() {
					between += at.Sub(lastEnd)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				id := ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
				started[id] = at
				queued += at.Sub(scheduled[id])
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				running += at.Sub(started[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()])
				lastEnd = at
				activities++
			}
		}
		if prev == "" {
			return activities, running, queued, between, nil
		}
		runID = prev
	}
}
