package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestRobustnessPublished: the published values come out of the verb, for
// both semantics, to 1e-9.
func TestRobustnessPublished(t *testing.T) {
	file := "../../../shared/examples/iccs2020-mapping-a.pepa"
	if _, err := os.Stat(file); err != nil {
		t.Skip(err)
	}
	want := map[string][]float64{
		"initial": {0.9479664996, 0.9999999573, 0.9998649087, 0.8677076536, 0.9963294003},
		"plugin":  {0.9611916506, 0.9999999798, 0.9999157699, 0.8392089592, 0.9963099695},
	}
	type machine struct {
		Name    string   `json:"name"`
		Last    []string `json:"last_actions"`
		PByBeta float64  `json:"p_by_beta"`
		Mean    float64  `json:"mean"`
		Q99     float64  `json:"q99"`
	}
	// The plug-in figures of the two paths, compared with each other
	// (their start distributions come from different computations: the
	// product chain's steady state, or the parts' mean exit rates).
	plugin := map[bool][]machine{}
	for _, flat := range []bool{false, true} {
		for sem, ps := range want {
			args := []string{"robustness", "--beta", "45", "--semantics", sem, "--format", "json", file}
			solved := "decomposed"
			if flat {
				args = append(args, "--flat")
				solved = "flat"
			}
			code, out, stderr := runPepa(t, "", args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var r struct {
				Machines   []machine `json:"machines"`
				Robustness float64   `json:"robustness"`
				PAll       float64   `json:"p_all_by_beta"`
				Makespan   float64   `json:"expected_makespan"`
				Solved     string    `json:"solved"`
				Semantics  string    `json:"semantics"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Machines) != len(ps) {
				t.Fatalf("%s: %d machines, want %d", sem, len(r.Machines), len(ps))
			}
			prod := 1.0
			for j, m := range r.Machines {
				if math.Abs(m.PByBeta-ps[j]) > 1e-9 {
					t.Errorf("%s %s: %.10f, published %.10f", sem, m.Name, m.PByBeta, ps[j])
				}
				prod *= m.PByBeta
				if sem == "initial" {
					// The means and quantiles were not published: the
					// reference semantics gives them.
					checkMachine(t, newRefMachine(t, file, m.Name, m.Last), fmt.Sprintf("%s %s (flat %v)", sem, m.Name, flat), 45, m.PByBeta, m.Mean, m.Q99)
				}
			}
			if sem == "plugin" {
				plugin[flat] = r.Machines
			}
			if math.Abs(r.Robustness-ps[3]) > 1e-9 || math.Abs(r.PAll-prod) > 1e-12 || r.Semantics != sem || r.Solved != solved {
				t.Errorf("%s: %+v", sem, r)
			}
		}
	}
	for j, d := range plugin[false] {
		f := plugin[true][j]
		if math.Abs(d.Mean-f.Mean) > 1e-9*d.Mean || math.Abs(d.Q99-f.Q99) > 1e-7*d.Q99 {
			t.Errorf("plugin %s: decomposed mean %.12g q99 %.12g, flat %.12g and %.12g", d.Name, d.Mean, d.Q99, f.Mean, f.Q99)
		}
	}
}

// TestRankingGolden: the ranking of the bundled cluster mappings, as JSON,
// against a golden file (whose per-machine values the models package tests
// independently); and the same bytes on every run.
func TestRankingGolden(t *testing.T) {
	t.Chdir("../..")
	files, _ := filepath.Glob("testdata/cluster/*.pepa")
	args := append([]string{"robustness", "--beta", "40", "--format", "json"}, files...)
	code, out, stderr := runPepa(t, "", args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, again, _ := runPepa(t, "", args...)
	if out != again {
		t.Errorf("two runs differ")
	}
	golden := "testdata/golden/cluster-ranking.json"
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("ranking differs from %s:\n%s", golden, out)
	}
}

// TestClusterModelsInSync: the bundled cluster models are what gen writes
// from the example specification.
func TestClusterModelsInSync(t *testing.T) {
	t.Chdir("../..")
	for spec, ms := range map[string][]string{
		"testdata/spec-example.json": {"cluster/round-robin", "cluster/paired", "cluster/uneven"},
		"testdata/spec-owners.json":  {"owners/spread", "owners/desktops", "owners/server-heavy"},
	} {
		for _, m := range ms {
			code, out, stderr := runPepa(t, "", "gen", spec, "--mapping", filepath.Base(m))
			if code != exitOK {
				t.Fatalf("gen %s: exit %d: %s", m, code, stderr)
			}
			want, _ := os.ReadFile("testdata/" + m + ".pepa")
			if out != string(want) {
				t.Errorf("testdata/%s.pepa is not what gen writes now", m)
			}
		}
	}
}

// TestOwnersRanking: the example with owner processes ranks, reports the
// owners' availability, and a machine with a stationary owner start gets
// the start applied (its pragma is read).
func TestOwnersRanking(t *testing.T) {
	t.Chdir("../..")
	code, out, stderr := runPepa(t, "", "robustness", "--beta", "25", "--format", "json", "testdata/owners/spread.pepa")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Machines []struct {
			Name         string   `json:"name"`
			Availability *float64 `json:"availability"`
			Slowdown     *float64 `json:"slowdown"`
		} `json:"machines"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// Desk1: an on/off owner, availability mu/(lambda+mu) = 0.2/0.25.
	for _, m := range r.Machines {
		switch m.Name {
		case "Server":
			if m.Availability != nil {
				t.Errorf("Server has no owner, yet availability %v", *m.Availability)
			}
		case "Desk1":
			if m.Availability == nil || math.Abs(*m.Availability-0.8) > 1e-15 || math.Abs(*m.Slowdown-1.25) > 1e-14 {
				t.Errorf("Desk1 availability %v slowdown %v", m.Availability, m.Slowdown)
			}
		}
	}
}

func TestRobustnessUsage(t *testing.T) {
	model := "../../testdata/mapping-a.pepa"
	for _, args := range [][]string{
		{"robustness", model},
		{"robustness", "--beta", "-1", model},
		{"robustness", "--beta", "10", "--semantics", "other", model},
		{"robustness", "--beta", "10", "--plot", "x.gif", model},
		{"robustness", "--beta", "10"},
	} {
		if code, _, _ := runPepa(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	code, _, stderr := runPepa(t, "", "robustness", "--beta", "10", "--machines", "Nope", model)
	if code != exitInvalid || !strings.Contains(stderr, `no component "Nope"`) {
		t.Errorf("bad machine: exit %d: %s", code, stderr)
	}
	noMachine := writeTemp(t, "nm.pepa", "P = (a, 1).P2; P2 = (b, 1).P; P\n")
	code, _, stderr = runPepa(t, "", "robustness", "--beta", "10", noMachine)
	if code != exitInvalid || !strings.Contains(stderr, "no machine found") {
		t.Errorf("no machine: exit %d: %s", code, stderr)
	}
}

func TestRobustnessPlotAndCSV(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "r.png")
	csvPath := filepath.Join(dir, "r.csv")
	code, _, stderr := runPepa(t, "", "robustness", "--beta", "30", "--plot", png, "--format", "csv", "-o", csvPath,
		"../../testdata/mapping-a.pepa", "../../testdata/mapping-b.pepa")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(png)
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG", png)
	}
	c, _ := os.ReadFile(csvPath)
	lines := strings.Split(strings.TrimSpace(string(c)), "\n")
	if len(lines) != 3 || lines[0] != "rank,model,robustness,p_all_by_beta,expected_makespan,group,states" || !strings.HasPrefix(lines[1], "1,") {
		t.Errorf("csv:\n%s", c)
	}
}

func TestGenVerb(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runPepa(t, "", "gen", "../../testdata/spec-example.json", "--dir", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, m := range []string{"round-robin", "paired", "uneven"} {
		if code, _, stderr := runPepa(t, "", "check", filepath.Join(dir, m+".pepa")); code != exitOK {
			t.Errorf("%s: %s", m, stderr)
		}
	}
	// A specification gen would have turned into an invalid model is
	// rejected with its line, and nothing is written.
	clash := writeTemp(t, "clash.json", "{\"applications\": [\"X\"],\n \"machines\": [\"X\"],\n \"etc\": [[1]],\n \"mappings\": [{\"allocation\": {\"X\": [\"X\"]}}]}\n")
	target := filepath.Join(dir, "clash.pepa")
	if code, _, stderr := runPepa(t, "", "gen", clash, "-o", target); code != exitInvalid || !strings.Contains(stderr, clash+":2:15: error: machines[0]: machine \"X\" has the name of an application") {
		t.Errorf("name clash: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("gen wrote %s from a bad specification", target)
	}
	// What gen writes is in canonical layout: pepa fmt -l lists nothing.
	var written []string
	for _, m := range []string{"round-robin", "paired", "uneven"} {
		written = append(written, filepath.Join(dir, m+".pepa"))
	}
	for _, spec := range []string{"../../testdata/spec-owners.json", bigSpec(t, 30, 2)} {
		p := filepath.Join(dir, fmt.Sprintf("x%d.pepa", len(written)))
		args := []string{"gen", spec, "-o", p}
		if strings.HasSuffix(spec, "big.json") {
			// No mapping in it: gen says so with the line, writes nothing.
			code, _, stderr := runPepa(t, "", args...)
			if code != exitInvalid || !strings.Contains(stderr, spec+":2:1: error: mappings: no mapping") {
				t.Errorf("gen without a mapping: exit %d: %s", code, stderr)
			}
			if _, err := os.Stat(p); err == nil {
				t.Errorf("gen without a mapping wrote %s", p)
			}
			continue
		}
		if code, _, stderr := runPepa(t, "", append(args, "--mapping", "spread")...); code != exitOK {
			t.Fatalf("gen %s: %s", spec, stderr)
		}
		written = append(written, p)
	}
	if code, out, stderr := runPepa(t, "", append([]string{"fmt", "-l"}, written...)...); code != exitOK || out != "" {
		t.Errorf("fmt -l on gen's output: exit %d, listed %q %s", code, out, stderr)
	}
	code, _, stderr = runPepa(t, "", "gen", "../../testdata/spec-example.json")
	if code != exitInvalid || !strings.Contains(stderr, "has 3 mappings") {
		t.Errorf("several mappings without --mapping: exit %d: %s", code, stderr)
	}
	bad := writeTemp(t, "bad.json", "{\n \"etc\": [[1, -2]],\n \"mappings\": [{\"name\": \"m\", \"allocation\": {\"M1\": [\"A1\"]}}]\n}\n")
	code, _, stderr = runPepa(t, "", "gen", bad)
	if code != exitInvalid || !strings.Contains(stderr, bad+":2:14: error: etc[0][1]: ETC[1][2] is -2") {
		t.Errorf("bad spec: exit %d: %s", code, stderr)
	}
}

// TestOptimizeSharedVerb: optimize on a specification with a shared
// network solves groups (group_solves), writes a model whose robustness,
// analysed the usual way (by groups: M1-M3 with Net), is the one it
// reports, and a specification of the mapping (resources included) from
// which gen writes the same model.
func TestOptimizeSharedVerb(t *testing.T) {
	dir := t.TempDir()
	model, spec := filepath.Join(dir, "best.pepa"), filepath.Join(dir, "best.json")
	code, out, stderr := runPepa(t, "", "optimize", "../../testdata/spec-shared.json", "--beta", "40", "--budget", "1s", "--format", "json", "-o", model, "--mapping-out", spec)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Best struct {
			Robustness float64 `json:"robustness"`
			PAll       float64 `json:"p_all_by_beta"`
		} `json:"best"`
		GroupSolves int `json:"group_solves"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.GroupSolves == 0 {
		t.Errorf("no group solved: %s", out)
	}
	code, out, stderr = runPepa(t, "", "robustness", "--beta", "40", "--format", "json", model)
	if code != exitOK {
		t.Fatalf("robustness: exit %d: %s", code, stderr)
	}
	var rr struct {
		Robustness float64 `json:"robustness"`
		PAll       float64 `json:"p_all_by_beta"`
		Groups     []struct {
			Components []string `json:"components"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &rr); err != nil {
		t.Fatal(err)
	}
	if math.Abs(rr.Robustness-r.Best.Robustness) > 1e-9 || math.Abs(rr.PAll-r.Best.PAll) > 1e-9 {
		t.Errorf("optimize reports %.12g, %.12g; the written model has %.12g, %.12g", r.Best.Robustness, r.Best.PAll, rr.Robustness, rr.PAll)
	}
	coupled := false
	for _, g := range rr.Groups {
		coupled = coupled || slices.Contains(g.Components, "Net")
	}
	if !coupled {
		t.Errorf("no group with Net: %s", out)
	}
	again := filepath.Join(dir, "again.pepa")
	if code, _, stderr := runPepa(t, "", "gen", spec, "-o", again); code != exitOK {
		t.Fatalf("gen of the written specification: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(model)
	b, _ := os.ReadFile(again)
	// The first line names the specification file and the mapping.
	_, a, _ = bytes.Cut(a, []byte("\n"))
	_, b, _ = bytes.Cut(b, []byte("\n"))
	if !bytes.Equal(a, b) {
		t.Errorf("gen of the written specification writes another model:\n%s\n---\n%s", a, b)
	}
}

// TestOptimizeVerb: optimize writes a model whose robustness, analysed the
// usual way, is the one it reports, and at least the best heuristic's.
func TestOptimizeVerb(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "best.pepa")
	code, out, stderr := runPepa(t, "", "optimize", "../../testdata/spec-example.json", "--beta", "40", "--budget", "5s", "--format", "json", "-o", model)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Heuristics []struct{ Robustness float64 } `json:"heuristics"`
		Best       struct{ Robustness float64 }   `json:"best"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Heuristics {
		if r.Best.Robustness < h.Robustness-1e-12 {
			t.Errorf("best %g below a heuristic's %g", r.Best.Robustness, h.Robustness)
		}
	}
	code, out, stderr = runPepa(t, "", "robustness", "--beta", "40", "--format", "json", model)
	if code != exitOK {
		t.Fatalf("robustness: exit %d: %s", code, stderr)
	}
	var rr struct{ Robustness float64 }
	json.Unmarshal([]byte(out), &rr)
	if math.Abs(rr.Robustness-r.Best.Robustness) > 1e-9 {
		t.Errorf("optimize reports %.12g, the written model has %.12g", r.Best.Robustness, rr.Robustness)
	}
	if code, _, _ := runPepa(t, "", "optimize", "../../testdata/spec-example.json"); code != exitUsage {
		t.Errorf("missing --beta: exit %d", code)
	}
}

func TestSensitivityFlag(t *testing.T) {
	model := "../../testdata/mapping-a.pepa"
	code, out, stderr := runPepa(t, "", "robustness", "--beta", "30", "--sensitivity", model)
	if code != exitOK || !strings.Contains(out, "bottleneck machine:") || !strings.Contains(out, "costliest application:") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	code, out, _ = runPepa(t, "", "robustness", "--beta", "30", "--sensitivity", "--format", "json", model)
	if code != exitOK || !strings.Contains(out, `"radius"`) || !strings.Contains(out, `"derivative"`) {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	if code, _, _ := runPepa(t, "", "robustness", "--beta", "30", "--sensitivity", "--flat", model); code != exitUsage {
		t.Errorf("--sensitivity --flat: exit %d", code)
	}
}

// bigSpec writes a specification of apps applications on machines machines
// without a mapping (optimize needs none).
func bigSpec(t *testing.T, apps, machines int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("// made up\n{\"etc\": [\n")
	for i := 0; i < apps; i++ {
		b.WriteString("  [")
		for j := 0; j < machines; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%g", 1+float64((i*7+j*3)%11)/4)
		}
		b.WriteString("],\n") // a trailing comma: JWCC
	}
	b.WriteString("],\n\"workload\": {\"nominal\": 1, \"perturbed\": {\"uniform\": [1, 1.5]}}}\n")
	return writeTemp(t, "big.json", b.String())
}

// TestOptimizeStops: on an instance too large to prove, optimize runs for
// its budget and says so with the gap; interrupted, it writes the best
// mapping so far and exits 130; an unwritable -o fails before searching.
func TestOptimizeStops(t *testing.T) {
	spec := bigSpec(t, 40, 5)
	code, out, stderr := runPepa(t, "", "optimize", spec, "--beta", "30", "--budget", "1500ms")
	if code != exitOK || !strings.Contains(out, "stopped: budget spent after") || !strings.Contains(out, "within ") {
		t.Errorf("budget: exit %d\n%s\n%s", code, out, stderr)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "best.pepa")
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	var o, eb bytes.Buffer
	code = run(ctx, &env{stdin: strings.NewReader(""), stdout: &o, stderr: &eb}, []string{"optimize", spec, "--beta", "30", "--budget", "1m", "-o", model})
	if code != exitInterrupted || !strings.Contains(o.String(), "stopped: interrupted") || !strings.Contains(eb.String(), "interrupted") {
		t.Errorf("interrupt: exit %d\n%s\n%s", code, o.String(), eb.String())
	}
	if code, _, stderr := runPepa(t, "", "check", model); code != exitOK {
		t.Errorf("the model written on interrupt does not check: %s", stderr)
	}
	start := time.Now()
	code, _, stderr = runPepa(t, "", "optimize", spec, "--beta", "30", "-o", filepath.Join(dir, "missing", "x.pepa"))
	if code != exitInvalid || !strings.Contains(stderr, "cannot write") || time.Since(start) > 5*time.Second {
		t.Errorf("unwritable -o: exit %d after %v: %s", code, time.Since(start), stderr)
	}
}

// TestRobustnessSeriesProgress: a series of uniformization that runs for
// hours (stiff-net forced to uniformization: about 8.6e9 steps) says how
// it is going under --verbose, the group, the step and why that engine,
// and an interrupt ends it with exit 130.
func TestRobustnessSeriesProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var o, eb bytes.Buffer
	code := run(ctx, &env{stdin: strings.NewReader(""), stdout: &o, stderr: &eb},
		[]string{"robustness", "--beta", "40000", "--verbose", "--transient", "uniformization", "../../testdata/coupled/stiff-net.pepa"})
	want := "group M1, M2, M3: uniformization: step "
	if code != exitInterrupted || !strings.Contains(eb.String(), want) || !strings.Contains(eb.String(), "(--transient uniformization)") {
		t.Errorf("exit %d, want %d and a line with %q\n%s", code, exitInterrupted, want, eb.String())
	}
}
