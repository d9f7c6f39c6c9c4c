package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// A pool's processes share one control group where this process may make
// one (the cgroups v1 memory controller, or v2), beside the per-process
// rlimits: the processes together stay under the pool's total (3/4 of
// Processes × MemoryBytes, at least one process's and 256 MiB), so that a
// pool of bombs cannot take the machine's memory; the kernel then stops a
// sandbox process, never the service. No cpu weight: in cgroups v1 a
// group's weight competes with each of the service's threads, and a lower
// one starved transformations into their deadlines under load (the CPU is
// bounded per process by RLIMIT_CPU, per tenant by the pool's share).
//
// Where no control group can be made (not root, no controller) the rlimits
// alone bound each process.

// poolGroups names the pools' groups in this process.
var poolGroups atomic.Int64

// cgroup is a pool's control group: the directories its processes are put
// in (one per v1 controller, or one v2 directory).
type cgroup struct {
	dirs []string
}

// cgroupRoot is where the file system of control groups is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// newCgroup makes the pool's group under this process's own groups, with
// the memory limit set; nil where none can be made.
func newCgroup(memoryLimit int64) *cgroup {
	name := fmt.Sprintf("fos-sandbox-%d-%d", os.Getpid(), poolGroups.Add(1))
	own := ownCgroups()
	if len(own) == 0 {
		return nil
	}
	sweepCgroups(own)
	cg := &cgroup{}
	if path, ok := own[""]; ok && fileExists(filepath.Join(cgroupRoot, "cgroup.controllers")) {
		// v2: one directory (the controllers enabled in the parent apply).
		dir := filepath.Join(cgroupRoot, path, name)
		if os.Mkdir(dir, 0o755) == nil {
			cg.dirs = append(cg.dirs, dir)
			_ = os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(memoryLimit, 10)), 0o644)
			_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
			return cg
		}
	}
	for _, c := range []struct{ controller, file, value string }{
		{"memory", "memory.limit_in_bytes", strconv.FormatInt(memoryLimit, 10)},
	} {
		path, ok := own[c.controller]
		if !ok {
			continue
		}
		dir := filepath.Join(cgroupRoot, c.controller, path, name)
		if os.Mkdir(dir, 0o755) != nil {
			continue
		}
		if os.WriteFile(filepath.Join(dir, c.file), []byte(c.value), 0o644) != nil {
			_ = os.Remove(dir)
			continue
		}
		cg.dirs = append(cg.dirs, dir)
	}
	if len(cg.dirs) == 0 {
		return nil
	}
	return cg
}

// add puts the process pid in the group (best effort: a process that is
// not put in it is still bounded by its rlimits).
func (cg *cgroup) add(pid int) {
	if cg == nil {
		return
	}
	for _, dir := range cg.dirs {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	}
}

// remove deletes the group's directories (they must hold no process).
func (cg *cgroup) remove() {
	if cg == nil {
		return
	}
	for _, dir := range cg.dirs {
		_ = os.Remove(dir)
	}
}

// ownCgroups are this process's groups by controller ("" for v2), from
// /proc/self/cgroup.
func ownCgroups() map[string]string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// sweepCgroups removes the empty groups that pools of processes gone
// left (a group lives as long as its pool's process, and the kernel keeps
// an empty one until it is removed).
func sweepCgroups(own map[string]string) {
	var parents []string
	if path, ok := own[""]; ok && fileExists(filepath.Join(cgroupRoot, "cgroup.controllers")) {
		parents = append(parents, filepath.Join(cgroupRoot, path))
	}
	for _, c := range []string{"memory", "cpu"} { // cpu: groups of earlier versions
		if path, ok := own[c]; ok {
			parents = append(parents, filepath.Join(cgroupRoot, c, path))
		}
	}
	for _, parent := range parents {
		dirs, _ := filepath.Glob(filepath.Join(parent, "fos-sandbox-*"))
		for _, dir := range dirs {
			f := strings.Split(filepath.Base(dir), "-")
			if len(f) != 4 {
				continue
			}
			if pid, err := strconv.Atoi(f[2]); err == nil && pid != os.Getpid() && !fileExists(fmt.Sprintf("/proc/%d", pid)) {
				_ = os.Remove(dir) // fails while a process is in it: kept
			}
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
