package sandbox

import (
	"os"
	"testing"
)

// TestMain makes the test binary its own sandbox process, so the tests
// run transformations through a Pool as the service does. Each process
// may use 256 MiB over its start: the bombs below stay within the few
// hundred MB the suite may take.
func TestMain(m *testing.M) {
	ServeIfChild()
	os.Setenv("FOS_SANDBOX_MEMORY_MB", "256")
	os.Exit(m.Run())
}
