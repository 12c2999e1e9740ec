package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Markdown writes the report as Markdown.
func (rep *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	m := rep.Meta
	fmt.Fprintf(&b, "# eddybench results (%s)\n\n", m.Mode)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	for _, kv := range [][2]string{
		{"Date", m.Date}, {"Machine", m.Machine}, {"Go", m.Go}, {"PostgreSQL", m.Postgres},
		{"NATS", m.NATS}, {"etcd", m.Etcd}, {"Run time", m.Took},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], cell(kv[1]))
	}
	b.WriteString("\n")
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if len(m.Notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("Ratio is always eddy's figure ÷ the peer's; for latency and memory (marked ↓) lower is better.\n\n")
	for _, s := range rep.Sections {
		s.markdown(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (s *Section) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "## %d. %s\n\n", s.ID, s.Title)
	if s.Err != "" {
		fmt.Fprintf(b, "**Failed:** %s\n\n", cell(s.Err))
	}
	if len(s.Rows) > 0 {
		b.WriteString("| Measure | eddy | figure | peer | figure | ratio | target | met |\n")
		b.WriteString("|---|---|--:|---|--:|--:|---|:-:|\n")
		for _, r := range s.Rows {
			measure := r.Measure + " (" + r.Unit + ")"
			if r.Lower {
				measure += " ↓"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
				cell(measure), cell(r.Eddy), Num(r.EddyVal), cell(r.Peer), Num(r.PeerVal),
				ratio(r.Ratio()), cell(r.Target), met(r.Met))
		}
		b.WriteString("\n")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(s.Notes) > 0 {
		b.WriteString("\n")
	}
}

// Num formats a figure with about three significant digits.
func Num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return group(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// group puts thousands separators into an integer.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// ratio formats eddy ÷ peer; a ratio under 0.1 also shows its inverse
// (1/113 reads better than 0.00885).
func ratio(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case v > 0 && v < 0.1:
		return Num(v) + "× (1/" + Num(1/v) + ")"
	}
	return Num(v) + "×"
}

func met(m *bool) string {
	switch {
	case m == nil:
		return ""
	case *m:
		return "yes"
	}
	return "**no**"
}

// cell escapes the pipes of a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
