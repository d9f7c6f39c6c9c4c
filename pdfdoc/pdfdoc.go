// Package pdfdoc writes the small, valid PDF documents the service makes
// itself (shipping labels in the sandbox, image labels wrapped as PDF):
// numbered objects with a correct xref table, and escaped text.
package pdfdoc

import (
	"bytes"
	"fmt"
	"strings"
)

// Assemble writes objs as objects 1…n (object 1 must be the catalog) with a
// valid cross-reference table and trailer.
func Assemble(objs []string) []byte {
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = buf.Len()
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return buf.Bytes()
}

// Text escapes s as the body of a PDF literal string. Only printable ASCII
// is kept (the standard Type1 fonts); anything else becomes '?'.
func Text(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 32 || r > 126:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
