package devenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
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
