package api

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	storePkg     = "github.com/fos-dev/fos/store"
	workflowsPkg = "github.com/fos-dev/fos/workflows"
)

// layeringAllowlist are the handler files not yet moved onto a domain
// service, with what they may still import. The list only shrinks: a file
// moved onto its service leaves it (the test fails while a listed file no
// longer needs an entry, so the list cannot go stale).
var layeringAllowlist = map[string][]string{
	"apikey_cache.go": {storePkg}, "apikeys.go": {storePkg}, "authn.go": {storePkg},
	"errors.go": {storePkg}, "idempotency.go": {storePkg},
	"organizations.go": {storePkg},
	"router.go":        {storePkg},
	"signin.go":        {storePkg},
}

// layeringForbidden are the packages no handler file imports: handlers
// decode → call a domain service → encode (README, "Layers").
var layeringForbidden = map[string]bool{storePkg: true, workflowsPkg: true}

// No non-test file of api/ imports store/ or workflows/, except what
// layeringAllowlist still allows.
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
		allowed := layeringAllowlist[name]
		var used []string
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !layeringForbidden[path] {
				continue
			}
			used = append(used, path)
			if !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s: call a domain service instead (README, Layers)", name, path)
			}
		}
		for _, path := range allowed {
			if !slices.Contains(used, path) {
				t.Errorf("%s no longer imports %s: remove it from layeringAllowlist", name, path)
			}
		}
	}
	for name := range layeringAllowlist {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("layeringAllowlist names %s, which does not exist", name)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d handler files found: the test runs in the wrong directory", checked)
	}
}
