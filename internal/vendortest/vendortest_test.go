package vendortest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	fatal, skipped string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) SkipNow()         { r.skipped = "SkipNow"; runtime.Goexit() }

// run calls fn with a recorder in a goroutine of its own (Fatalf ends it).
func run(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

// Without the vendors' examples a test fails, saying what it looked for;
// it never skips (the 32 example tests used to pass by skipping).
func TestMissingExamplesFailLoudly(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(EnvDir, empty)
	r := run(t, func(tb testing.TB) { Dir(tb, "carriers") })
	if r.skipped != "" || !strings.Contains(r.fatal, EnvDir) || !strings.Contains(r.fatal, "carriers") {
		t.Fatalf("FOS_VENDORS_DIR without carriers/: fatal %q, skipped %q", r.fatal, r.skipped)
	}

	// No env and no shared/vendors above the working directory.
	t.Setenv(EnvDir, "")
	t.Chdir(empty)
	r = run(t, func(tb testing.TB) { Example(tb, "platforms", "storefront_a", "order.json") })
	if r.skipped != "" || !strings.Contains(r.fatal, "vendor examples not found") || !strings.Contains(r.fatal, filepath.Join(empty, "shared", "vendors", "platforms")) {
		t.Fatalf("no vendors folder: fatal %q, skipped %q", r.fatal, r.skipped)
	}

	// A folder without the example file names the file.
	dir := filepath.Join(empty, "shared", "vendors", "carriers", "carrier_b", "examples")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, func(tb testing.TB) { Example(tb, "carriers", "carrier_b", "missing.json") })
	if r.skipped != "" || !strings.Contains(r.fatal, filepath.Join(dir, "missing.json")) {
		t.Fatalf("missing file: fatal %q, skipped %q", r.fatal, r.skipped)
	}
	if err := os.WriteFile(filepath.Join(dir, "rate.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := string(Example(t, "carriers", "carrier_b", "rate.json")); got != "{}" {
		t.Fatalf("found %q", got)
	}
}
