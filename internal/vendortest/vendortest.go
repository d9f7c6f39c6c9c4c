// Package vendortest finds the vendors' published examples
// (shared/vendors/…) for the tests that check the adapters against them.
// A test that needs them fails, naming what it looked for, when they are
// missing: it never skips silently.
package vendortest

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvDir overrides where the vendors folder is (the folder holding
// carriers/ and platforms/).
const EnvDir = "FOS_VENDORS_DIR"

// Dir is the vendors' folder for sub ("carriers", "platforms"): $FOS_VENDORS_DIR/sub,
// else the first shared/vendors/sub found walking up from the test's
// folder (a checkout at any depth, a git worktree beside it). The test
// fails when there is none.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	if env := os.Getenv(EnvDir); env != "" {
		dir := filepath.Join(env, sub)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("vendor examples: %s=%s has no %s: %v", EnvDir, env, sub, err)
		}
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("vendor examples: %v", err)
	}
	var looked []string
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "vendors", sub)
		looked = append(looked, cand)
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	t.Fatalf("vendor examples not found: set %s or put shared/vendors/%s above the checkout (looked at %v)", EnvDir, sub, looked)
	return ""
}

// Example reads sub/name/examples/file, failing the test when it cannot.
func Example(t testing.TB, sub, name, file string) []byte {
	t.Helper()
	path := filepath.Join(Dir(t, sub), name, "examples", file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("vendor example %s: %v", path, err)
	}
	return b
}
