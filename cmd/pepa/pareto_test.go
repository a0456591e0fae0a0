package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pepa/models/spec"
)

// TestParetoVerb: optimize --pareto on testdata/spec-energy.json enumerates
// its 729 mappings and prints the front with the keys docs/cli.md lists,
// by robustness descending, the heuristics' mappings marked; CSV has the
// same rows; --plot draws a PNG and --mapping-out writes a specification of
// the front's mappings.
func TestParetoVerb(t *testing.T) {
	const specFile = "../../testdata/spec-energy.json"
	code, out, stderr := runPepa(t, "", "optimize", specFile, "--beta", "40", "--pareto", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"front", "how", "mappings", "beta", "power", "heuristics", "stopped"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no key %q in %s", k, out)
		}
	}
	var r struct {
		How      string `json:"how"`
		Mappings int    `json:"mappings"`
		Front    []map[string]json.RawMessage
		Power    struct{ Busy, Idle []float64 }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.How != "enumerated" || r.Mappings != 729 || len(r.Front) < 3 {
		t.Fatalf("how %q, %d mappings, a front of %d", r.How, r.Mappings, len(r.Front))
	}
	if fmt.Sprint(r.Power.Busy, r.Power.Idle) != "[350 170 70] [40 20 8]" {
		t.Errorf("power %v %v, want the specification's", r.Power.Busy, r.Power.Idle)
	}
	last := 2.0
	for i, p := range r.Front {
		for _, k := range []string{"robustness", "expected_energy", "expected_makespan", "p_all_by_beta", "allocation", "heuristic"} {
			if _, ok := p[k]; !ok {
				t.Errorf("front[%d] has no %q", i, k)
			}
		}
		var psi float64
		json.Unmarshal(p["robustness"], &psi)
		if psi > last {
			t.Errorf("front[%d]: robustness %g after %g", i, psi, last)
		}
		last = psi
		var alloc map[string][]string
		if err := json.Unmarshal(p["allocation"], &alloc); err != nil || len(alloc) != 3 {
			t.Errorf("front[%d]: allocation %s", i, p["allocation"])
		}
		if h := string(p["heuristic"]); h != "null" && !strings.HasPrefix(h, `"`) {
			t.Errorf("front[%d]: heuristic %s, want a name or null", i, h)
		}
	}

	// CSV: a header and the same front.
	code, out, stderr = runPepa(t, "", "optimize", specFile, "--beta", "40", "--pareto", "--format", "csv")
	if code != exitOK {
		t.Fatalf("csv: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "rank,robustness,expected_energy,expected_makespan,p_all_by_beta,heuristic,M1,M2,M3" || len(lines) != len(r.Front)+1 {
		t.Errorf("csv: %d lines, header %q", len(lines), lines[0])
	}

	// Text, a plot and the front's specification.
	dir := t.TempDir()
	plot, front := filepath.Join(dir, "front.png"), filepath.Join(dir, "front.json")
	code, out, stderr = runPepa(t, "", "optimize", specFile, "--beta", "40", "--pareto", "--plot", plot, "--mapping-out", front)
	if code != exitOK || !strings.Contains(out, "rank") || !strings.Contains(out, "of 729 mappings") || !strings.Contains(out, "heuristics:") {
		t.Fatalf("text: exit %d: %s%s", code, out, stderr)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("--plot: %v", err)
	}
	in, err := spec.LoadSpec(front)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Mappings) != len(r.Front) || in.Mappings[0].Name != "front-1" || in.Power == nil {
		t.Errorf("--mapping-out: %d mappings (first %q), power %v; want the front's %d", len(in.Mappings), in.Mappings[0].Name, in.Power, len(r.Front))
	}

	// The flags override the specification's power.
	code, out, stderr = runPepa(t, "", "optimize", specFile, "--beta", "40", "--pareto", "--idle-power", "0,0,0", "--busy-power", "M3=90", "--format", "json")
	if code != exitOK {
		t.Fatalf("--idle-power: exit %d: %s", code, stderr)
	}
	r.Power.Busy, r.Power.Idle = nil, nil
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r.Power.Busy, r.Power.Idle) != "[350 170 90] [0 0 0]" {
		t.Errorf("power %v %v with --busy-power M3=90 --idle-power 0,0,0", r.Power.Busy, r.Power.Idle)
	}
}

// TestParetoVerbUsage: --pareto without power, the power flags or --plot
// without --pareto, and flags that do not go with it are usage errors.
func TestParetoVerbUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"../../testdata/spec-example.json", "--pareto"}, "power"},
		{[]string{"../../testdata/spec-energy.json", "--busy-power", "1,2,3"}, "--pareto"},
		{[]string{"../../testdata/spec-energy.json", "--plot", "x.png"}, "--pareto"},
		{[]string{"../../testdata/spec-energy.json", "--format", "csv"}, "--format"},
		{[]string{"../../testdata/spec-energy.json", "--pareto", "-o", "x.pepa"}, "-o"},
		{[]string{"../../testdata/spec-energy.json", "--pareto", "--objective", "joint"}, "--objective"},
		{[]string{"../../testdata/spec-energy.json", "--pareto", "--busy-power", "1,2"}, "--busy-power"},
		{[]string{"../../testdata/spec-energy.json", "--pareto", "--plot", "x.gif"}, "--plot"},
	} {
		args := append([]string{"optimize", "--beta", "40"}, c.args...)
		code, out, stderr := runPepa(t, "", args...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and a message about %s", c.args, code, out, stderr, c.want)
		}
	}
}

// TestParetoVerbSearched: past --max-enumerate the front is searched for
// --budget.
func TestParetoVerbSearched(t *testing.T) {
	code, out, stderr := runPepa(t, "", "optimize", "../../testdata/spec-energy.json", "--beta", "40", "--pareto", "--max-enumerate", "100", "--budget", "1s", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		How     string `json:"how"`
		Stopped string `json:"stopped"`
		Front   []any  `json:"front"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.How != "searched" || r.Stopped != "budget" || len(r.Front) == 0 {
		t.Errorf("how %q stopped %q, a front of %d", r.How, r.Stopped, len(r.Front))
	}
}

// TestParetoVerbInterrupted: interrupted, --pareto writes the front of the
// mappings evaluated so far and exits 130.
func TestParetoVerbInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var o, eb bytes.Buffer
	start := time.Now()
	code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &o, stderr: &eb},
		[]string{"optimize", "../../testdata/spec-energy.json", "--beta", "40", "--pareto", "--max-enumerate", "1", "--budget", "1m", "--format", "json"})
	if code != exitInterrupted || !strings.Contains(eb.String(), "interrupted") || time.Since(start) > 20*time.Second {
		t.Fatalf("exit %d after %v\n%s\n%s", code, time.Since(start), o.String(), eb.String())
	}
	var r struct {
		Stopped string `json:"stopped"`
		Front   []any  `json:"front"`
	}
	if err := json.Unmarshal(o.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Stopped != "interrupted" || len(r.Front) == 0 {
		t.Errorf("stopped %q, a front of %d", r.Stopped, len(r.Front))
	}
}
