package api

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layeringForbidden are the packages no handler file imports: handlers
// decode → call a domain service → encode (README, "Layers"); package
// wiring builds the services over the store.
var layeringForbidden = map[string]bool{
	"github.com/fos-dev/fos/store":     true,
	"github.com/fos-dev/fos/workflows": true,
}

// No non-test file of api/ imports store/ or workflows/.
func TestHandlersDoNotImportStoreOrWorkflows(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if layeringForbidden[path] || strings.HasPrefix(path, "github.com/fos-dev/fos/store/") || strings.HasPrefix(path, "github.com/fos-dev/fos/workflows/") {
				t.Errorf("%s imports %s: call a domain service instead (README, Layers)", name, path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d handler files found: the test runs in the wrong directory", checked)
	}
}
