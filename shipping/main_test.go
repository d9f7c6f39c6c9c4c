package shipping

import (
	"os"
	"testing"

	"github.com/fos-dev/fos/store/storetest"
)

// TestMain drops the package's test database when the tests end.
func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }
