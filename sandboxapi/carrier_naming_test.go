package sandboxapi

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

// vendorWord matches a carrier vendor's name in text a client may read.
var vendorWord = regexp.MustCompile(`(?i)\bfed ?ex\b|\bups\b|\busps\b|ship ?engine`)

// TestCarrierNamesNeutral: the spec's naming note puts a neutral word where
// a vendor name would be; service names, scan descriptions and messages of
// the sandbox carriers name no vendor.
func TestCarrierNamesNeutral(t *testing.T) {
	for code, c := range sbCarriers {
		for _, s := range c.services {
			assert.False(t, vendorWord.MatchString(s.name), "%s service %s: %q", code, s.code, s.name)
		}
	}
	for ev, s := range faScans {
		assert.False(t, vendorWord.MatchString(s.desc+" "+s.derivedDesc), "carrier_a scan %s: %q", ev, s.desc)
	}
	for ev, s := range ubScans {
		assert.False(t, vendorWord.MatchString(s.desc), "carrier_b scan %s: %q", ev, s.desc)
	}

	// Every string literal of the sandbox carriers with a space in it (a
	// message or a description, not a wire key or code value).
	files, err := filepath.Glob("carrier*.go")
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
			s, err := strconv.Unquote(lit.Value)
			if err == nil && strings.Contains(s, " ") {
				assert.False(t, vendorWord.MatchString(s), "%s: %q", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}
