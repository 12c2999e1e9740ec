package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// SVG geometry, in pixels.
const (
	svgWidth  = 820
	svgLabel  = 300 // left column for the bar labels
	svgBarMax = 400 // longest bar
	svgBar    = 16
	svgGroup  = 62 // height of one row's pair of bars with its caption
	svgTop    = 48
)

// SVG writes the section as a bar chart: per row, eddy's bar and the
// peer's, scaled to the larger of the two (rows have different units).
func (s *Section) SVG(w io.Writer) error {
	var b strings.Builder
	h := svgTop + len(s.Rows)*svgGroup + 30
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", svgWidth, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="16" font-weight="bold">%d. %s</text>`+"\n", s.ID, esc(s.Title))
	fmt.Fprintf(&b, `<text x="10" y="40" fill="#555">bars scaled per row to the larger figure; ↓ lower is better</text>`+"\n")
	for i, r := range s.Rows {
		y := svgTop + i*svgGroup
		caption := r.Measure + " (" + r.Unit + ")"
		if r.Lower {
			caption += " ↓"
		}
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y+14, esc(caption))
		top := max(r.EddyVal, r.PeerVal)
		bar(&b, y+20, r.Eddy, r.EddyVal, top, "#2b6cb0")
		bar(&b, y+20+svgBar+4, r.Peer, r.PeerVal, top, "#a0aec0")
	}
	fmt.Fprintf(&b, `<text x="10" y="%d" fill="#555">eddy in blue, peer in grey</text>`+"\n", h-10)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// bar draws one labelled bar of value v on a scale whose full length is
// top.
func bar(b *strings.Builder, y int, label string, v, top float64, color string) {
	n := 0
	if top > 0 {
		n = int(v / top * svgBarMax)
	}
	fmt.Fprintf(b, `<text x="20" y="%d">%s</text>`+"\n", y+12, esc(label))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", svgLabel, y, n, svgBar, color)
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgLabel+n+6, y+12, esc(Num(v)))
}

func esc(s string) string { return html.EscapeString(s) }
