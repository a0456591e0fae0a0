package plot

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"pepa/models"
)

// clusterRanking analyses the three bundled cluster mappings at beta 40.
func clusterRanking(t *testing.T) []*models.Ranked {
	t.Helper()
	var results []*models.Result
	for _, name := range []string{"round-robin", "paired", "uneven"} {
		src, err := os.ReadFile("../../testdata/cluster/" + name + ".pepa")
		if err != nil {
			t.Fatal(err)
		}
		r := analyzeDecomposed(t, string(src), models.Options{Question: models.Question{Beta: 40}})
		r.Model = "testdata/cluster/" + name + ".pepa"
		results = append(results, r)
	}
	return models.Rank(results, 0.01)
}

func TestFigureLayout(t *testing.T) {
	ranked := clusterRanking(t)
	f, err := NewFigure(ranked)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Panels) != 4 || f.Rows != 2 || f.Cols != 2 {
		t.Fatalf("%d panels in %dx%d, want 3 CDF panels and the scatter in 2x2", len(f.Panels), f.Rows, f.Cols)
	}
	// Every CDF panel has the same time range, which shows every
	// machine's 0.99 quantile and the goal.
	lastQ := 0.0
	for _, r := range ranked {
		for _, m := range r.Machines {
			lastQ = math.Max(lastQ, m.Quantile)
		}
	}
	for i, r := range ranked {
		p := f.Panels[i]
		if p.X.Min != 0 || p.X.Max != f.Panels[0].X.Max || p.Y.Min != 0 || p.Y.Max != 1.02 {
			t.Errorf("panel %d: x [%g, %g], y [%g, %g]; want x [0, %g] as panel 0, y [0, 1.02]", i, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max, f.Panels[0].X.Max)
		}
		if p.X.Max < lastQ || p.X.Max < r.Beta {
			t.Errorf("panel %d: x up to %g hides a quantile (%g) or the goal", i, p.X.Max, lastQ)
		}
		// The title carries the robustness and names the machine with
		// the smallest P(F <= beta).
		low := r.Machines[0]
		for _, m := range r.Machines {
			if m.PByBeta < low.PByBeta {
				low = m
			}
		}
		want := fmt.Sprintf("#%d %s: robustness %.4f, bottleneck %s", r.Rank, strings.TrimPrefix(r.Model, "testdata/cluster/"), r.Robustness, low.Name)
		if p.Title.Text != want {
			t.Errorf("panel %d title %q, want %q", i, p.Title.Text, want)
		}
		if f.Legends[i] == nil {
			t.Errorf("panel %d has no legend beside it", i)
		}
	}
	if f.Legends[3] != nil {
		t.Error("the scatter panel has a legend strip")
	}
}

// TestFigureFormats: PNG, SVG and PDF have the figure's size (read back
// from each file) and the same typeface and text sizes.
func TestFigureFormats(t *testing.T) {
	f, err := NewFigure(clusterRanking(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, format := range []string{"png", "svg", "pdf"} {
		var b bytes.Buffer
		if err := f.Write(&b, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		out[format] = b.Bytes()
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out["png"]))
	if err != nil {
		t.Fatal(err)
	}
	wantW, wantH := int(f.Width.Dots(PlotDPI)+0.5), int(f.Height.Dots(PlotDPI)+0.5)
	if cfg.Width != wantW || cfg.Height != wantH {
		t.Errorf("PNG %dx%d px, want %dx%d (%v x %v at %d dpi)", cfg.Width, cfg.Height, wantW, wantH, f.Width, f.Height, PlotDPI)
	}
	points := func(s string) vg.Length {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return vg.Points(x)
	}
	same := func(a, b vg.Length) bool { return math.Abs(float64(a-b)) < 0.01 }
	if m := regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`).FindSubmatch(out["svg"]); m == nil {
		t.Error("SVG: no size in points")
	} else if w, h := points(string(m[1])), points(string(m[2])); !same(w, f.Width) || !same(h, f.Height) {
		t.Errorf("SVG %v x %v, want %v x %v", w, h, f.Width, f.Height)
	}
	if m := regexp.MustCompile(`/MediaBox \[0 0 ([0-9.]+) ([0-9.]+)\]`).FindSubmatch(out["pdf"]); m == nil {
		t.Error("PDF: no MediaBox")
	} else if w, h := points(string(m[1])), points(string(m[2])); !same(w, f.Width) || !same(h, f.Height) {
		t.Errorf("PDF %v x %v, want %v x %v", w, h, f.Width, f.Height)
	}
	// One typeface, embedded, at the sizes the PNG uses.
	families := uniq(regexp.MustCompile(`font-family:"?([^;"]+)"?;`).FindAllSubmatch(out["svg"], -1))
	if families != "Liberation Sans" || !bytes.Contains(out["svg"], []byte("@font-face")) {
		t.Errorf("SVG fonts %q (embedded: %v), want Liberation Sans embedded", families, bytes.Contains(out["svg"], []byte("@font-face")))
	}
	sizes := uniq(regexp.MustCompile(`font-size:([0-9.]+)px`).FindAllSubmatch(out["svg"], -1))
	if want := fmt.Sprintf("%d %d %d", plotLabelSize, plotTitleSize, plotTickSize); sizes != want {
		t.Errorf("SVG text sizes %q, want %q", sizes, want)
	}
	if fonts := uniq(regexp.MustCompile(`/BaseFont */([A-Za-z+-]+)`).FindAllSubmatch(out["pdf"], -1)); fonts != "LiberationSans" {
		t.Errorf("PDF fonts %q, want LiberationSans", fonts)
	}
}

// uniq is the sorted distinct first groups of regexp matches, joined by
// spaces.
func uniq(ms [][][]byte) string {
	set := map[string]bool{}
	for _, m := range ms {
		set[string(m[1])] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestMachineStylesDistinct: 40 machines get 40 different (colour, line
// style) pairs, the first ten solid.
func TestMachineStylesDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 40; i++ {
		c, d := machineStyle(i)
		key := fmt.Sprint(c, d)
		if j, ok := seen[key]; ok {
			t.Errorf("machines %d and %d share a style %s", j, i, key)
		}
		seen[key] = i
		if i < 10 && d != nil {
			t.Errorf("machine %d is not solid", i)
		}
	}
}

func TestPlotFormat(t *testing.T) {
	for in, want := range map[string]string{"a.png": "png", "b/c.SVG": "svg", "d.pdf": "pdf", "e.jpg": "", "f": ""} {
		got, err := PlotFormat(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("PlotFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
