package carriers

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // label images of carrier_b
	_ "image/png"

	"github.com/fos-dev/fos/pdfdoc"
)

// imageLabelPDF wraps a label image (GIF or PNG) into a one-page 4x6 inch
// PDF, with caption printed under it. Carriers whose thermal-free format is
// an image (carrier_b sends GIF) thus still yield a PDF label.
func imageLabelPDF(imgData []byte, caption string) ([]byte, error) {
	img, _, err := image.Decode(bytes.NewReader(imgData))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w == 0 || h == 0 {
		return nil, fmt.Errorf("empty label image")
	}
	gray := make([]byte, 0, w*h)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			gray = append(gray, color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y)
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(gray)
	_ = zw.Close()

	// 4x6 inch page; the image fits above a 14 pt caption band.
	const pageW, pageH, band = 288.0, 432.0, 14.0
	scale := min(pageW/float64(w), (pageH-band)/float64(h))
	dw, dh := float64(w)*scale, float64(h)*scale
	x0, y0 := (pageW-dw)/2, band+(pageH-band-dh)/2
	content := fmt.Sprintf("q %.2f 0 0 %.2f %.2f %.2f cm /Im1 Do Q\nBT /F1 8 Tf 8 4 Td (%s) Tj ET\n",
		dw, dh, x0, y0, pdfdoc.Text(caption))

	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.0f %.0f] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>", pageW, pageH),
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", w, h, z.Len(), z.String()),
	}
	return pdfdoc.Assemble(objs), nil
}
