package sandboxapi

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"strings"

	"github.com/fos-dev/fos/pdfdoc"
)

// labelInfo is what a sandbox label shows.
type labelInfo struct {
	carrier     string // display name, e.g. "CARRIER A"
	service     string
	tracking    string
	shipDate    string
	weightLb    float64
	from, to    []string // address lines
	reference   string
	pieceNumber int
	pieceCount  int
}

// labelPDF renders a minimal, valid one-page 4x6 inch PDF label with the
// tracking number, the addresses and a barcode-like bar pattern.
func labelPDF(li labelInfo) []byte {
	var c strings.Builder
	text := func(x, y, size float64, s string) {
		fmt.Fprintf(&c, "BT /F1 %.0f Tf %.1f %.1f Td (%s) Tj ET\n", size, x, y, pdfdoc.Text(s))
	}
	c.WriteString("0 0 0 rg 2 w 6 6 276 420 re S\n")
	text(14, 404, 16, li.carrier+" SANDBOX LABEL")
	text(14, 388, 10, li.service)
	text(14, 374, 8, fmt.Sprintf("SHIP DATE: %s   WEIGHT: %.1f LB   PKG %d/%d", li.shipDate, li.weightLb, li.pieceNumber, li.pieceCount))
	c.WriteString("6 366 m 282 366 l S\n")
	y := 352.0
	text(14, y, 8, "FROM:")
	for _, l := range li.from {
		y -= 10
		text(24, y, 8, l)
	}
	y -= 16
	text(14, y, 10, "SHIP TO:")
	for _, l := range li.to {
		y -= 13
		text(24, y, 11, l)
	}
	c.WriteString("6 150 m 282 150 l S\n")
	text(14, 132, 14, "TRK# "+groupDigits(li.tracking))
	for _, bar := range barPattern(li.tracking) {
		fmt.Fprintf(&c, "%.1f 40 %.1f 80 re f\n", 20+bar[0], bar[1])
	}
	if li.reference != "" {
		text(14, 22, 8, "REF: "+li.reference)
	}
	content := c.String()
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 432] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	return pdfdoc.Assemble(objs)
}

func groupDigits(s string) string {
	var parts []string
	for len(s) > 4 {
		parts = append(parts, s[:4])
		s = s[4:]
	}
	return strings.Join(append(parts, s), " ")
}

// barPattern returns [x, width] bars (points, within 248 pt) derived from
// the tracking number: a stand-in for a real barcode.
func barPattern(tn string) [][2]float64 {
	sum := sha256.Sum256([]byte(tn))
	var bars [][2]float64
	x := 0.0
	for i := 0; x < 240; i++ {
		b := sum[i%len(sum)] ^ byte(i)
		w := 1 + float64(b%3)
		gap := 1 + float64((b>>2)%3)
		if x+w > 248 {
			break
		}
		bars = append(bars, [2]float64{x, w})
		x += w + gap
	}
	return bars
}

// labelZPL renders a ZPL II label.
func labelZPL(li labelInfo) []byte {
	var b strings.Builder
	field := func(x, y, h int, s string) {
		fmt.Fprintf(&b, "^FO%d,%d^A0N,%d,%d^FD%s^FS\n", x, y, h, h, zplText(s))
	}
	b.WriteString("^XA\n^CI28\n^LH0,0\n^FO10,10^GB792,1198,4^FS\n")
	field(30, 30, 44, li.carrier+" SANDBOX LABEL")
	field(30, 85, 30, li.service)
	field(30, 125, 24, fmt.Sprintf("SHIP DATE: %s  WEIGHT: %.1f LB  PKG %d/%d", li.shipDate, li.weightLb, li.pieceNumber, li.pieceCount))
	y := 180
	field(30, y, 24, "FROM:")
	for _, l := range li.from {
		y += 28
		field(60, y, 24, l)
	}
	y += 50
	field(30, y, 30, "SHIP TO:")
	for _, l := range li.to {
		y += 38
		field(60, y, 34, l)
	}
	fmt.Fprintf(&b, "^FO30,800^A0N,40,40^FDTRK# %s^FS\n", zplText(groupDigits(li.tracking)))
	fmt.Fprintf(&b, "^FO60,870^BY3^BCN,200,Y,N,N^FD%s^FS\n", zplText(li.tracking))
	if li.reference != "" {
		field(30, 1140, 24, "REF: "+li.reference)
	}
	b.WriteString("^XZ\n")
	return []byte(b.String())
}

func zplText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '^' || r == '~' || r < 32 {
			return ' '
		}
		return r
	}, s)
}

// labelGIF renders a 400x600 two-colour GIF label (carrier_b's image
// format): border, rules and a bar pattern derived from the tracking
// number. It has no text: the tracking number is in the response.
func labelGIF(li labelInfo) []byte { return encodeGIF(labelImage(li)) }

// labelGIFLandscape is labelGIF turned a quarter counter-clockwise, 600x400:
// carrier_b's GIF labels are landscape images of a portrait 4x6 label, to
// be turned a quarter clockwise for printing.
func labelGIFLandscape(li labelInfo) []byte {
	src := labelImage(li)
	b := src.Bounds()
	img := image.NewPaletted(image.Rect(0, 0, b.Dy(), b.Dx()), src.Palette)
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			img.SetColorIndex(y, b.Dx()-1-x, src.ColorIndexAt(x, y))
		}
	}
	return encodeGIF(img)
}

func encodeGIF(img *image.Paletted) []byte {
	var buf bytes.Buffer
	_ = gif.Encode(&buf, img, nil)
	return buf.Bytes()
}

func labelImage(li labelInfo) *image.Paletted {
	const w, h = 400, 600
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.White, color.Black})
	fill := func(x0, y0, x1, y1 int) {
		for y := max(y0, 0); y < min(y1, h); y++ {
			for x := max(x0, 0); x < min(x1, w); x++ {
				img.SetColorIndex(x, y, 1)
			}
		}
	}
	fill(0, 0, w, 4)
	fill(0, h-4, w, h)
	fill(0, 0, 4, h)
	fill(w-4, 0, w, h)
	fill(0, 120, w, 124)
	fill(0, 330, w, 334)
	// A block "maxicode" from the hash of the number and addresses.
	sum := sha256.Sum256([]byte(li.tracking + strings.Join(li.to, "|")))
	for i := 0; i < 64; i++ {
		if sum[i%32]>>(uint(i)%8)&1 == 1 {
			x, y := 20+(i%8)*12, 140+(i/8)*12
			fill(x, y, x+10, y+10)
		}
	}
	for _, bar := range barPattern(li.tracking) {
		x := 40 + int(bar[0]*1.3)
		fill(x, 380, x+int(bar[1]*1.3+0.5), 540)
	}
	return img
}

func decodeGIF(data []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(data)) }
