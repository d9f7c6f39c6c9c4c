package storetest

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// childEnv marks the test binary run by TestRunDropsTheDatabase.
const childEnv = "FOS_STORETEST_CHILD"

// The child: a package's test that uses the database, and names it.
func TestChildUsesDatabase(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestRunDropsTheDatabase")
	}
	s := New(t)
	if err := s.Pool.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("database=%s", dbName)
}

// A package's test run drops the fos_test_* database it created, once its
// tests end (it used to leak one per run).
func TestRunDropsTheDatabase(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildUsesDatabase$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`database=(fos_test_[0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the child named no database:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, string(m[1])).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%s is left behind after its tests ended", m[1])
	}
}
