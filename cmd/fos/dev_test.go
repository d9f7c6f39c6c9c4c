package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fos-dev/fos/devenv"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// TestDevFromPrivateHomeAsRoot is `make run` by root in a fresh 0700 home:
// fos dev (private PostgreSQL, embedded Temporal, API, worker, seed) comes
// up, answers /readyz, and on interrupt stops, leaving no PostgreSQL behind.
func TestDevFromPrivateHomeAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: runs only as root (the postgres OS user then runs the cluster)")
	}
	if !devenv.HasPostgresBinaries() {
		t.Skip("skipped: no PostgreSQL server binaries")
	}
	home := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "fos", ".fos")
	httpAddr := freePort(t)
	t.Setenv("FOS_HTTP_ADDR", httpAddr)
	t.Setenv("FOS_SANDBOX_ADDR", freePort(t))
	t.Setenv("DATABASE_URL", "")
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("FOS_BASE_URL", "")
	t.Setenv("FOS_LOG_LEVEL", "warn")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, []string{"--seed", "--dir", dir, "--temporal-addr", freePort(t), "--ui-addr", freePort(t)})
	}()

	ready := false
	deadline := time.Now().Add(3 * time.Minute)
	for !ready && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("fos dev exited before it was ready: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		res, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		ready = res.StatusCode == http.StatusOK
		if !ready {
			t.Logf("readyz %d %s", res.StatusCode, body)
		}
	}
	if !ready {
		t.Fatal("fos dev did not become ready within 3 minutes")
	}

	pointer, err := os.ReadFile(filepath.Join(dir, "pg", devenv.LocationFileName))
	if err != nil {
		t.Fatalf("the cluster's location is not recorded under .fos/pg: %v", err)
	}
	loc := strings.TrimSpace(string(pointer))
	t.Cleanup(func() { _ = os.RemoveAll(loc) })
	if strings.HasPrefix(loc, home) {
		t.Fatalf("cluster %s inside the 0700 home", loc)
	}
	pidFile := filepath.Join(loc, "data", "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no running cluster at %s: %v", loc, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))

	cancel() // what Ctrl-C does
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("fos dev: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("fos dev did not stop within 2 minutes")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still there after stop: %v", err)
	}
	if pid > 0 {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Fatalf("postgres (pid %d) still running after fos dev stopped", pid)
		}
	}
}
