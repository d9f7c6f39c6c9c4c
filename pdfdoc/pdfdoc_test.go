package pdfdoc

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssembleWritesCorrectXrefOffsets(t *testing.T) {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"}
	doc := Assemble(objs)
	require.True(t, bytes.HasPrefix(doc, []byte("%PDF-1.4")))
	require.True(t, bytes.HasSuffix(doc, []byte("%%EOF\n")))
	for i := range objs {
		off := bytes.Index(doc, []byte(fmt.Sprintf("%d 0 obj\n", i+1)))
		require.Contains(t, string(doc), fmt.Sprintf("%010d 00000 n \n", off), "xref entry of object %d", i+1)
	}
	xref := bytes.Index(doc, []byte("xref\n"))
	require.Contains(t, string(doc), fmt.Sprintf("startxref\n%d\n", xref))
}

func TestText(t *testing.T) {
	require.Equal(t, `a\(b\)c\\d?`, Text("a(b)c\\dé"))
}
