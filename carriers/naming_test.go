package carriers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamesNeutral: the spec's naming note puts a neutral word where a
// vendor name would be. No string a client may read (a service name, a
// message: a literal with a space in it) names a vendor; wire values (service
// codes, enum values) and the default base URLs are configuration and stay.
func TestNamesNeutral(t *testing.T) {
	vendor := regexp.MustCompile(`(?i)\bfed ?ex\b|\bups\b|\busps\b|ship ?engine`)
	for code, name := range upsServiceNames {
		assert.False(t, vendor.MatchString(name), "carrier_b service %s: %q", code, name)
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, " ") {
				assert.False(t, vendor.MatchString(s), "%s: %q", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}
