package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Where a control group can be made (root with cgroups, as on the CI
// machines), a pool's processes are in one group of their own whose
// memory limit bounds them together; a bomb in it fails its own run only; Close removes the group.
func TestPoolProcessesShareAControlGroup(t *testing.T) {
	p := testPool(t, PoolConfig{Processes: 2})
	if p.cg == nil {
		t.Skip("no control group can be made here (not root, or no cgroup controllers): the rlimits alone bound each process")
	}
	sb := NewWithPool(Limits{Timeout: 10 * time.Second}, p)
	out, err := sb.Run(context.Background(), `function transform(d) { return {n: d.n + 1} }`, []byte(`{"n": 1}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 2}`, string(out))

	p.mu.Lock()
	require.NotEmpty(t, p.idle)
	pid := p.idle[0].cmd.Process.Pid
	p.mu.Unlock()
	groups, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	require.NoError(t, err)
	name := filepath.Base(p.cg.dirs[0])
	require.Contains(t, string(groups), name, "the sandbox process is in the pool's group")
	for _, dir := range p.cg.dirs {
		procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		require.NoError(t, err)
		require.Contains(t, strings.Fields(string(procs)), strconv.Itoa(pid))
		if limit, err := os.ReadFile(filepath.Join(dir, "memory.limit_in_bytes")); err == nil {
			require.Equal(t, strconv.FormatInt(256<<20+256<<20, 10), strings.TrimSpace(string(limit)))
		}
	}

	// A bomb is stopped (memory, or the deadline on a loaded machine) and
	// only its run fails; the next run works.
	_, err = NewWithPool(Limits{Unguarded: true, Timeout: 5 * time.Second}, p).Run(context.Background(),
		`function transform(d) { let a = []; while (true) a.push(new Array(1e6).fill(0)) }`, []byte(`{}`))
	require.True(t, IsKind(err, KindMemory) || IsKind(err, KindTimeout), "%v", err)
	out, err = sb.Run(context.Background(), `function transform(d) { return {n: d.n + 1} }`, []byte(`{"n": 2}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 3}`, string(out))

	p.Close()
	for _, dir := range p.cg.dirs {
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%s is removed with the pool", dir)
	}
}
