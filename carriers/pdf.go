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

	m := labelImageMatrix(w, h)
	content := fmt.Sprintf("q %.2f %.2f %.2f %.2f %.2f %.2f cm /Im1 Do Q\nBT /F1 8 Tf 8 4 Td (%s) Tj ET\n",
		m[0], m[1], m[2], m[3], m[4], m[5], pdfdoc.Text(caption))

	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.0f %.0f] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>", labelPageW, labelPageH),
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", w, h, z.Len(), z.String()),
	}
	return pdfdoc.Assemble(objs), nil
}

// The label page: 4x6 inches (points), the image above a 14 pt caption band.
const labelPageW, labelPageH, labelBand = 288.0, 432.0, 14.0

// labelImageMatrix is the PDF transformation (cm operands a b c d e f)
// drawing a w x h pixel label image as large as it fits above the caption
// band, centred. A landscape image (carrier_b's GIF labels are the 4x6
// label lying on its side) is turned a quarter clockwise first, so the
// label fills the portrait page instead of printing 4 inches wide and
// little more than 2 high.
func labelImageMatrix(w, h int) [6]float64 {
	boxW, boxH := labelPageW, labelPageH-labelBand
	fw, fh := float64(w), float64(h)
	if w <= h {
		scale := min(boxW/fw, boxH/fh)
		dw, dh := fw*scale, fh*scale
		return [6]float64{dw, 0, 0, dh, (boxW - dw) / 2, labelBand + (boxH-dh)/2}
	}
	// Turned: the image's width runs down the page, its height across.
	scale := min(boxW/fh, boxH/fw)
	across, down := fh*scale, fw*scale
	x0, y0 := (boxW-across)/2, labelBand+(boxH-down)/2
	// Image space (u right, v up) to the page: x = x0 + across*v,
	// y = y0 + down*(1-u): the image's left edge becomes the top.
	return [6]float64{0, -down, across, 0, x0, y0 + down}
}
