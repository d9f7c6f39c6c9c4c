package api

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxHandlerLines is the most lines a non-test file of api/ holds: a
// handler decodes, calls a domain service and encodes; a file that grows
// past this holds logic that belongs in a service (README, Layers).
const maxHandlerLines = 400

// handlerSizeExceptions are files other work still shrinks, with the
// lines they may have meanwhile; the list only shrinks (a listed file
// within the limit fails the test until it leaves the list).
var handlerSizeExceptions = map[string]int{}

// No non-test file of api/ is over maxHandlerLines lines.
func TestHandlerFilesAreSmall(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		lines := bytes.Count(raw, []byte("\n"))
		limit, excepted := handlerSizeExceptions[name]
		switch {
		case !excepted && lines > maxHandlerLines:
			t.Errorf("%s has %d lines (at most %d): move its logic into a domain service", name, lines, maxHandlerLines)
		case excepted && lines > limit:
			t.Errorf("%s has %d lines, more than the %d it is allowed while it shrinks", name, lines, limit)
		case excepted && lines <= maxHandlerLines:
			t.Errorf("%s has %d lines: remove it from handlerSizeExceptions", name, lines)
		}
	}
	for name := range handlerSizeExceptions {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("handlerSizeExceptions names %s, which does not exist", name)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files found: the test runs in the wrong directory", checked)
	}
}
