package devenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartPostgres(t *testing.T) {
	if !HasPostgresBinaries() {
		t.Skip("skipped: no PostgreSQL server binaries (initdb, pg_ctl, postgres) in PATH or /usr/lib/postgresql/*/bin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	base := t.TempDir()
	// As root the cluster runs as the postgres OS user, which must reach it:
	// open up the test's own temporary directories (created 0700).
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, ".fos", "pg")
	logger := testLogger(t)

	pg, err := StartPostgres(ctx, dir, logger)
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	t.Logf("postgres at %s", pg.URL())

	exec := func(pg *Postgres, sql string, args ...any) {
		t.Helper()
		conn, err := pgx.Connect(ctx, pg.URL())
		if err != nil {
			t.Fatalf("connect %s: %v", pg.URL(), err)
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(pg, "CREATE TABLE kept (v text)")
	exec(pg, "INSERT INTO kept VALUES ($1)", "survives")

	// A second start on the same directory while the first runs is refused.
	if _, err := StartPostgres(ctx, dir, logger); err == nil {
		t.Fatal("second StartPostgres on a running cluster succeeded")
	} else {
		t.Logf("second start refused: %v", err)
	}

	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pg.DataDir(), "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid after Stop: %v", err)
	}

	// Simulate a crash: a stale postmaster.pid naming a process that is not
	// a postmaster (this test process).
	stale := strconv.Itoa(os.Getpid()) + "\n" + pg.DataDir() + "\n"
	if err := os.WriteFile(filepath.Join(pg.DataDir(), "postmaster.pid"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}

	pg2, err := StartPostgres(ctx, dir, logger)
	if err != nil {
		t.Fatalf("StartPostgres after stale pid file: %v", err)
	}
	t.Cleanup(func() { _ = pg2.Stop(context.Background()) })
	if pg2.Port() != pg.Port() {
		t.Logf("port changed from %d to %d", pg.Port(), pg2.Port())
	}
	conn, err := pgx.Connect(ctx, pg2.URL())
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	var v string
	err = conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v)
	_ = conn.Close(ctx)
	if err != nil || v != "survives" {
		t.Fatalf("data after restart: %q, %v", v, err)
	}
	if err := pg2.Stop(ctx); err != nil {
		t.Fatalf("Stop after restart: %v", err)
	}
}

// TestStartPostgresFromPrivateHomeAsRoot is `make run` by root in a 0700
// home: the postgres OS user cannot reach the checkout, so the cluster
// lives in the temporary area, survives restarts, and goes with .fos/.
func TestStartPostgresFromPrivateHomeAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: runs only as root (the postgres OS user then runs the cluster)")
	}
	if !HasPostgresBinaries() {
		t.Skip("skipped: no PostgreSQL server binaries (initdb, pg_ctl, postgres) in PATH or /usr/lib/postgresql/*/bin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	home := filepath.Join(t.TempDir(), "root-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	fosDir := filepath.Join(home, "fos", ".fos")
	dir := filepath.Join(fosDir, "pg")
	logger := testLogger(t)

	pg, err := StartPostgres(ctx, dir, logger)
	if err != nil {
		t.Fatalf("StartPostgres from a 0700 home: %v", err)
	}
	loc := filepath.Dir(pg.DataDir())
	t.Cleanup(func() { _ = os.RemoveAll(loc) })
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	if strings.HasPrefix(loc, home) {
		t.Fatalf("cluster %s is inside the unreachable home %s", loc, home)
	}
	pointer, err := os.ReadFile(filepath.Join(dir, LocationFileName))
	if err != nil || strings.TrimSpace(string(pointer)) != loc {
		t.Fatalf("%s = %q, %v; want %s", LocationFileName, pointer, err, loc)
	}
	info, err := os.Stat(loc)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); st.Uid == 0 || info.Mode().Perm()&0o077 != 0 {
		t.Fatalf("cluster dir %s: uid %d mode %v; want the postgres user's, 0700", loc, st.Uid, info.Mode().Perm())
	}
	execSQL(ctx, t, pg, "CREATE TABLE kept (v text)")
	execSQL(ctx, t, pg, "INSERT INTO kept VALUES ('survives')")
	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// A restart finds the same cluster.
	pg2, err := StartPostgres(ctx, dir, logger)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = pg2.Stop(context.Background()) })
	if got := filepath.Dir(pg2.DataDir()); got != loc {
		t.Fatalf("restart used %s, want %s", got, loc)
	}
	execSQL(ctx, t, pg2, "SELECT v FROM kept")
	if err := pg2.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// Removing .fos/ discards the cluster: the next start removes the old
	// directory and makes a fresh one.
	if err := os.RemoveAll(fosDir); err != nil {
		t.Fatal(err)
	}
	pg3, err := StartPostgres(ctx, dir, logger)
	if err != nil {
		t.Fatalf("start after removing .fos: %v", err)
	}
	loc3 := filepath.Dir(pg3.DataDir())
	t.Cleanup(func() { _ = os.RemoveAll(loc3) })
	t.Cleanup(func() { _ = pg3.Stop(context.Background()) })
	if loc3 == loc {
		t.Fatalf("start after removing .fos reused %s", loc)
	}
	if _, err := os.Stat(loc); !os.IsNotExist(err) {
		t.Fatalf("old cluster %s still there after .fos/ was removed: %v", loc, err)
	}
	if err := pg3.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// A pointer naming a directory this checkout did not make is refused.
	if err := os.WriteFile(filepath.Join(dir, LocationFileName), []byte(os.TempDir()+"/fos-pg-notours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(os.TempDir(), "fos-pg-notours"), 0o700); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(os.TempDir(), "fos-pg-notours")) })
	if pg4, err := StartPostgres(ctx, dir, logger); err == nil {
		_ = pg4.Stop(ctx)
		t.Fatal("StartPostgres accepted a location that is not a cluster of this checkout")
	} else {
		t.Logf("foreign location refused: %v", err)
	}
}

func execSQL(ctx context.Context, t *testing.T, pg *Postgres, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", pg.URL(), err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
