// Package proccpu reads a process's CPU time from /proc, for benchmarks
// that split a load's cost between processes (the service, PostgreSQL,
// the load generator).
package proccpu

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// Of is the CPU time (user + system) process pid ("self" for this one)
// has used, from /proc/PID/stat in clock ticks of 10 ms.
func Of(pid string) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold
	// spaces): state is the 3rd field, utime and stime the 14th and 15th.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("proccpu: no command in /proc/" + pid + "/stat")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("proccpu: short /proc/" + pid + "/stat")
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// Named is the CPU time of every process whose command is name (e.g.
// "postgres": the server and all its backends).
func Named(name string) time.Duration {
	var sum time.Duration
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if comm, err := os.ReadFile("/proc/" + p.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == name {
			if t, err := Of(p.Name()); err == nil {
				sum += t
			}
		}
	}
	return sum
}
