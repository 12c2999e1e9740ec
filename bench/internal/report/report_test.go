package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNum(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {math.NaN(), "–"}, {0.00123, "0.00123"}, {1.234, "1.23"}, {12.34, "12.3"},
		{123.4, "123"}, {1234.5, "1,235"}, {1234567, "1,234,567"}, {-2500, "-2,500"},
	}
	for _, tc := range tests {
		if got := Num(tc.in); got != tc.want {
			t.Errorf("Num(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := Row{EddyVal: 80, PeerVal: 100}
	if m := r.RatioAtLeast(0.7, "").Met; m == nil || !*m {
		t.Error("0.8 ≥ 0.7 not met")
	}
	if m := r.RatioAtMost(0.5, "").Met; m == nil || *m {
		t.Error("0.8 ≤ 0.5 met")
	}
	if m := r.EddyAtMost(100, "").Met; m == nil || !*m {
		t.Error("80 ≤ 100 not met")
	}
	if !math.IsNaN(Row{EddyVal: 1}.Ratio()) {
		t.Error("ratio without a peer figure is a number")
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	rep := &Report{Meta: Meta{Mode: "quick", Notes: []string{"a note"}}, Sections: []Section{{
		ID: 1, Title: "T <&>", Notes: []string{"n"},
		Rows: []Row{
			Row{Measure: "m|1", Unit: "ms", Eddy: "eddy", EddyVal: 1, Peer: "peer", PeerVal: 200, Lower: true}.EddyAtMost(2, "≤ 2"),
			{Measure: "m2", Unit: "x/s", Eddy: "eddy", EddyVal: 3, Peer: "peer", PeerVal: 2},
		},
	}, {ID: 2, Title: "failed", Err: "boom"}}}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# eddybench results (quick)", "## 1. T <&>", `m\|1 (ms) ↓`, "0.005× (1/200)", "| yes |", "1.50×", "**Failed:** boom", "- a note"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var svg bytes.Buffer
	if err := rep.Sections[0].SVG(&svg); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&svg)
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
	}
}
