package platforms_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/vendortest"
)

// unusedExamples are the published examples no test reads yet, each with
// why: the test below fails when another one is left unread, and when one
// of these is read now (take it off the list).
var unusedExamples = map[string]string{
	"marketplace_a/notification_ORDER_CHANGE_payload.json":         "notifications go to an SQS queue or EventBridge, which the service does not read (imports poll the Orders API)",
	"marketplace_a/notifications_createDestination_response.json":  "same: no notification destination is created",
	"marketplace_a/notifications_createSubscription_response.json": "same: no ORDER_CHANGE subscription is created",
	"marketplace_a/orders2026_getOrder_response.json":              "the connector reads orders with Orders v0 and a Restricted Data Token, not v2026-01-01 (issue 22 item 2 allows either)",
	"marketplace_a/orders2026_searchOrders_response.json":          "same: Orders v0 getOrders",
}

// TestEveryPublishedExampleIsUsed: every example under
// shared/vendors/platforms/*/examples is read by some test of the
// repository (its platform and file name quoted in a _test.go file), so
// a push or webhook payload the vendor publishes is checked against the
// adapter and the sandbox. It fails (never skips) when the vendors folder
// is missing.
func TestEveryPublishedExampleIsUsed(t *testing.T) {
	dir := vendortest.Dir(t, "platforms")
	examples, err := filepath.Glob(filepath.Join(dir, "*", "examples", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)

	var sources []string
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".fos" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, string(b))
		}
		return nil
	}))

	var unread, stale []string
	for _, ex := range examples {
		platform := filepath.Base(filepath.Dir(filepath.Dir(ex)))
		name := filepath.Base(ex)
		key := platform + "/" + name
		// The file named in a test that names its platform: as
		// Example(t, "platforms", "<platform>", "<file>"), or in a table
		// or helper of a test file about that platform.
		exact := regexp.MustCompile(`"` + regexp.QuoteMeta(platform) + `",\s*"` + regexp.QuoteMeta(name) + `"`)
		used := false
		for _, src := range sources {
			if exact.MatchString(src) || (strings.Contains(src, `"`+name+`"`) && strings.Contains(src, `"`+platform+`"`)) {
				used = true
				break
			}
		}
		_, listed := unusedExamples[key]
		switch {
		case !used && !listed:
			unread = append(unread, key)
		case used && listed:
			stale = append(stale, key)
		}
	}
	sort.Strings(unread)
	sort.Strings(stale)
	require.Empty(t, unread, "published examples no test reads")
	require.Empty(t, stale, "read now: take them off unusedExamples")
}
