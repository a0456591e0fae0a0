package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runPepa runs the command in-process and returns its exit code and output.
func runPepa(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}
	code := run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckExitCodes(t *testing.T) {
	good := writeTemp(t, "good.pepa", "r = 1; P = (a, r).P; P\n")
	warn := writeTemp(t, "warn.pepa", "r = 1; s = 2; P = (a, r).P; P\n")
	bad := writeTemp(t, "bad.pepa", "P = (a, r).P;\nP = (b, 1).Q; P\n")
	tests := []struct {
		args     []string
		code     int
		stderrRe []string
	}{
		{[]string{"check", good}, exitOK, nil},
		{[]string{"check", warn}, exitOK, []string{warn + ":1:8: warning: rate s is defined but never used"}},
		{[]string{"check", "-q", warn}, exitOK, nil},
		{[]string{"check", bad}, exitInvalid, []string{
			bad + ":1:9: error: undefined rate r",
			bad + ":2:1: error: duplicate definition of process P (first defined at 1:1)",
			bad + ":2:12: error: undefined process Q",
		}},
		{[]string{"check", good, bad}, exitInvalid, []string{bad + ":1:9: error: undefined rate r"}},
		{[]string{"check"}, exitUsage, []string{"no model file given"}},
		{[]string{"check", "--nonsense", good}, exitUsage, []string{"flag provided but not defined"}},
		{[]string{"check", filepath.Join(t.TempDir(), "missing.pepa")}, exitUsage, []string{"no such file"}},
		{[]string{"frobnicate"}, exitUsage, []string{"unknown verb"}},
		{nil, exitUsage, nil},
	}
	for _, tt := range tests {
		code, _, stderr := runPepa(t, "", tt.args...)
		if code != tt.code {
			t.Errorf("pepa %v: exit %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr)
		}
		for _, want := range tt.stderrRe {
			if !strings.Contains(stderr, want) {
				t.Errorf("pepa %v: stderr lacks %q:\n%s", tt.args, want, stderr)
			}
		}
		if tt.stderrRe == nil && tt.code == exitOK && stderr != "" {
			t.Errorf("pepa %v: unexpected stderr %q", tt.args, stderr)
		}
	}
}

func TestCheckStdin(t *testing.T) {
	code, _, stderr := runPepa(t, "P = (a, q).P; P", "check", "-")
	if code != exitInvalid || !strings.Contains(stderr, "<stdin>:1:9: error: undefined rate q") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, verb := range []string{"check", "fmt"} {
		code, out, _ := runPepa(t, "", verb, "--help")
		if code != exitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "pepa "+verb) {
			t.Errorf("pepa %s --help: exit %d, output:\n%s", verb, code, out)
		}
	}
	code, out, _ := runPepa(t, "", "--help")
	if code != exitOK || !strings.Contains(out, "check") {
		t.Errorf("pepa --help: exit %d\n%s", code, out)
	}
}

func TestFmt(t *testing.T) {
	src := "r=1;P=(a,r).P; // c\nP||P;"
	p := writeTemp(t, "m.pepa", src)
	want := "r = 1;\nP = (a, r).P;  // c\n\nP <> P\n"

	code, out, _ := runPepa(t, "", "fmt", p)
	if code != exitOK || out != want {
		t.Fatalf("fmt: exit %d, output %q", code, out)
	}
	code, out, _ = runPepa(t, "", "fmt", "-l", p)
	if code != exitOK || out != p+"\n" {
		t.Fatalf("fmt -l: exit %d, output %q", code, out)
	}
	code, _, _ = runPepa(t, "", "fmt", "-w", p)
	if b, _ := os.ReadFile(p); code != exitOK || string(b) != want {
		t.Fatalf("fmt -w: exit %d, file %q", code, b)
	}
	code, out, _ = runPepa(t, "", "fmt", "-l", p)
	if code != exitOK || out != "" {
		t.Fatalf("fmt -l after -w: exit %d, output %q", code, out)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("fmt -w left files behind: %v", entries)
	}
}

func TestFmtRefusesBrokenFile(t *testing.T) {
	src := "P = (a, 1).P +;\nP\n"
	p := writeTemp(t, "broken.pepa", src)
	code, out, stderr := runPepa(t, "", "fmt", "-w", p)
	if code != exitInvalid || out != "" || !strings.Contains(stderr, p+":1:15: error: syntax error") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(p); string(b) != src {
		t.Fatalf("broken file was rewritten: %q", b)
	}
}

// TestBundledModels: every model in testdata passes check without errors.
func TestBundledModels(t *testing.T) {
	names, _ := filepath.Glob("../../testdata/*.pepa")
	if len(names) == 0 {
		t.Fatal("no bundled models")
	}
	for _, n := range names {
		if code, _, stderr := runPepa(t, "", "check", n); code != exitOK {
			t.Errorf("pepa check %s: exit %d\n%s", n, code, stderr)
		}
	}
}

func TestStatesAndSteady(t *testing.T) {
	code, out, stderr := runPepa(t, "", "states", "--format", "json", "../../testdata/pc-lan.pepa")
	if code != exitOK || !strings.Contains(out, `"states": 128`) || !strings.Contains(out, `"transitions": 384`) {
		t.Fatalf("states: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runPepa(t, "", "steady", "--format", "csv", "../../testdata/pc-lan.pepa")
	if code != exitOK || !strings.HasPrefix(out, "measure,component,name,value\nthroughput,,arrive1,") {
		t.Fatalf("steady: exit %d\n%s\n%s", code, out, stderr)
	}
	// Every PC sees the same packet throughput, which equals the arrival
	// rate times the probability that the PC is idle.
	var idle, thr float64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) == 4 && f[0] == "throughput" && f[2] == "arrive1" {
			fmt.Sscan(f[3], &thr)
		}
		if len(f) == 4 && f[0] == "utilisation" && f[1] == "PC1" && f[2] == "PC1" {
			fmt.Sscan(f[3], &idle)
		}
	}
	if thr == 0 || math.Abs(thr-0.2*idle) > 1e-12 {
		t.Errorf("throughput(arrive1) = %g, 0.2 * P(PC1 idle) = %g", thr, 0.2*idle)
	}
}

func TestStatesExportAndLimit(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "lan")
	code, _, stderr := runPepa(t, "", "states", "--export", "prism", prefix, "../../testdata/pc-lan.pepa")
	if code != exitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	for _, ext := range []string{".tra", ".sta", ".lab"} {
		if b, err := os.ReadFile(prefix + ext); err != nil || len(b) == 0 {
			t.Errorf("%s: %v", ext, err)
		}
	}
	tra, _ := os.ReadFile(prefix + ".tra")
	if !strings.HasPrefix(string(tra), "128 384\n") {
		t.Errorf(".tra header: %q", strings.SplitN(string(tra), "\n", 2)[0])
	}
	code, _, stderr = runPepa(t, "", "states", "--max-states", "50", "../../testdata/pc-lan.pepa")
	if code != exitInvalid || !strings.Contains(stderr, "more than 50 states") {
		t.Errorf("limit: exit %d: %s", code, stderr)
	}
}

func TestDeadlockExit(t *testing.T) {
	p := writeTemp(t, "dead.pepa", "P = (a, 1).Stop; Stop = (b, infty).Stop; R = (c, 1).R2; R2 = (d, 1).R2; P <b, d> R\n")
	for _, verb := range []string{"states", "steady"} {
		code, _, stderr := runPepa(t, "", verb, p)
		if code != exitInvalid || !strings.Contains(stderr, "deadlock in state 3: Stop, R2") {
			t.Errorf("%s: exit %d: %s", verb, code, stderr)
		}
	}
}

func TestPassageVerb(t *testing.T) {
	model := writeTemp(t, "erlang.pepa", "l = 2; P0 = (step, l).P1; P1 = (step, l).P2; P2 = (done, l).P0; P0\n")
	code, out, stderr := runPepa(t, "", "passage", "--target-action", "done", "--at", "1.5", "--times", "0:1:0.5", "--format", "csv", model)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Erlang(3, 2): F(t) = 1 - e^{-2t}(1 + 2t + 2t^2).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "t,cdf" || len(lines) != 5 {
		t.Fatalf("output:\n%s", out)
	}
	for _, line := range lines[1:] {
		var tt, f float64
		if n, err := fmt.Sscanf(strings.Replace(line, ",", " ", 1), "%g %g", &tt, &f); n != 2 || err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		want := 1 - math.Exp(-2*tt)*(1+2*tt+2*tt*tt)
		if math.Abs(f-want) > 1e-10 {
			t.Errorf("F(%g) = %g, want %g", tt, f, want)
		}
	}
	code, out, _ = runPepa(t, "", "passage", "--target-action", "done", "--quantile", "0.5", "--format", "json", model)
	if code != exitOK || !strings.Contains(out, `"mean": 1.5`) || !strings.Contains(out, `"semantics": "initial"`) {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	// --mean=false: the same distribution, the mean null and said not asked.
	code, out, _ = runPepa(t, "", "passage", "--target-action", "done", "--at", "1.5", "--mean=false", "--format", "json", model)
	want := 1 - math.Exp(-3)*(1+3+4.5)
	var res struct {
		Mean            *float64 `json:"mean"`
		MeanUnavailable string   `json:"mean_unavailable"`
		Points          []struct{ T, CDF float64 }
	}
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || res.Mean != nil || !strings.Contains(res.MeanUnavailable, "not asked") ||
		len(res.Points) != 1 || math.Abs(res.Points[0].CDF-want) > 1e-10 {
		t.Fatalf("--mean=false: exit %d, %v\n%s", code, err, out)
	}
	for _, bad := range [][]string{
		{"passage", model},
		{"passage", "--target-action", "done", "--target", "P0 == P1", model},
		{"passage", "--target-action", "done", "--times", "5:1:1", model},
		{"passage", "--source-action", "step", model},
		{"passage", "--target-action", "done", "--quantile", "1.5", model},
	} {
		if code, _, _ := runPepa(t, "", bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	code, _, stderr = runPepa(t, "", "passage", "--target-action", "nosuch", model)
	if code != exitInvalid || !strings.Contains(stderr, "unknown action nosuch") {
		t.Errorf("unknown action: exit %d: %s", code, stderr)
	}
	code, _, stderr = runPepa(t, "", "passage", "--source-action", "done", "--target-action", "done", model)
	if code != exitInvalid || !strings.Contains(stderr, "source actions done, target actions done") {
		t.Errorf("same source and target: exit %d: %s", code, stderr)
	}
}

// TestPassageDecomposed: a passage whose actions belong to one independent
// part is solved on that part's chain, with the product chain's answer.
func TestPassageDecomposed(t *testing.T) {
	model := "../../testdata/mapping-b.pepa"
	for _, args := range [][]string{
		{"--target-action", "compute12", "--at", "20,40"},
		{"--source-action", "compute1", "--target-action", "compute12", "--at", "20,40"},
	} {
		var outs []string
		for _, flat := range []bool{false, true} {
			a := append([]string{"passage", "--format", "csv"}, args...)
			if flat {
				a = append(a, "--flat")
			}
			code, out, stderr := runPepa(t, "", append(a, model)...)
			if code != exitOK {
				t.Fatalf("%v: exit %d: %s", a, code, stderr)
			}
			outs = append(outs, out)
		}
		dec, flat := strings.Split(outs[0], "\n"), strings.Split(outs[1], "\n")
		for i := 1; i < 3; i++ {
			var t1, f1, t2, f2 float64
			n1, err1 := fmt.Sscanf(strings.Replace(dec[i], ",", " ", 1), "%g %g", &t1, &f1)
			n2, err2 := fmt.Sscanf(strings.Replace(flat[i], ",", " ", 1), "%g %g", &t2, &f2)
			if n1 != 2 || n2 != 2 || err1 != nil || err2 != nil {
				t.Fatalf("%v: rows %q and %q: %v, %v", args, dec[i], flat[i], err1, err2)
			}
			if t1 != t2 || math.Abs(f1-f2) > 2e-10 {
				t.Errorf("%v: decomposed %s, flat %s", args, dec[i], flat[i])
			}
		}
	}
	code, out, _ := runPepa(t, "", "passage", "--format", "json", "--target-action", "compute12", "--at", "20", model)
	if code != exitOK || !strings.Contains(out, `"solved": "decomposed"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestSteadyAccuracyAndClasses: steady states the method and the error
// estimate of every throughput, solves a chain with a transient start-up
// state (closed form: fail fires at 0.1 * 2/2.1) by every method, and
// solves two closed classes from the initial state (closed form below).
func TestSteadyAccuracyAndClasses(t *testing.T) {
	model := writeTemp(t, "boot.pepa", "Start = (boot, 1.0).Up; Up = (fail, 0.1).Down; Down = (repair, 2.0).Up; Start\n")
	code, out, stderr := runPepa(t, "", "steady", model)
	if code != exitOK || !strings.Contains(out, "closed:   2 states in the closed class, 1 transient states") ||
		!strings.Contains(out, "solver:   GTH state reduction (direct)") || !strings.Contains(out, "accuracy: estimated error of every throughput at most") {
		t.Fatalf("text: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, method := range []string{"gth", "bicgstab", "gauss-seidel"} {
		code, out, stderr = runPepa(t, "", "steady", "--format", "json", "--method", method, model)
		if code != exitOK {
			t.Fatalf("json %s: exit %d: %s", method, code, stderr)
		}
		var res struct {
			Method     string  `json:"method"`
			Transient  int     `json:"transient_states"`
			MaxError   float64 `json:"max_relative_error"`
			Throughput []struct {
				Action        string  `json:"action"`
				Throughput    float64 `json:"throughput"`
				RelativeError float64 `json:"relative_error"`
			} `json:"throughput"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if res.Method != method || res.Transient != 1 || !(res.MaxError > 0 && res.MaxError <= 1e-12) {
			t.Errorf("%s: %+v", method, res)
		}
		for _, tp := range res.Throughput {
			want := 0.1 * 2 / 2.1
			if tp.Action == "boot" {
				want = 0
			}
			if math.Abs(tp.Throughput-want) > 1e-14 || tp.RelativeError > 1e-12 {
				t.Errorf("%s: %+v, want throughput %g", method, tp, want)
			}
		}
	}
	code, out, _ = runPepa(t, "", "steady", "--format", "csv", model)
	if code != exitOK || !strings.Contains(out, "\nthroughput_relative_error,,fail,") {
		t.Errorf("csv: exit %d\n%s", code, out)
	}
	if code, _, stderr = runPepa(t, "", "steady", "--method", "lu", model); code != exitUsage {
		t.Errorf("--method lu: exit %d: %s", code, stderr)
	}
	// From Q the chain ends in R (rate 1) or in the cycle S, S2 (rate 3):
	// R with probability 1/4, then S and S2 in the ratio 2:1, so pi =
	// (0, 0, 1/4, 1/2, 1/4) and d, e, f fire at 1/4, 1/2, 1/2.
	two := writeTemp(t, "two.pepa", "P = (a, 1.0).Q; Q = (b, 1.0).R + (c, 3.0).S; R = (d, 1.0).R; S = (e, 1.0).S2; S2 = (f, 2.0).S; P\n")
	code, out, stderr = runPepa(t, "", "steady", two)
	if code != exitOK || !strings.Contains(out, "2 closed classes (3 states), 2 transient states") || !regexp.MustCompile(`(?m)^  1 +1 +0\.25 +\(R\) +2$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  2 +2 +0\.75 +\(S\) +3 4$`).MatchString(out) {
		t.Errorf("two classes: exit %d:\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runPepa(t, "", "steady", "--format", "csv", two)
	if code != exitOK || !strings.Contains(out, "\nclass_probability,,R,0.25\n") || !strings.Contains(out, "\nclass_probability,,S,0.75\n") {
		t.Errorf("two classes, csv: exit %d\n%s", code, out)
	}
	code, out, stderr = runPepa(t, "", "steady", "--format", "json", two)
	var res struct {
		Throughput []struct {
			Action     string  `json:"action"`
			Throughput float64 `json:"throughput"`
		} `json:"throughput"`
		Classes []struct {
			Name        string  `json:"name"`
			States      []int   `json:"states"`
			Probability float64 `json:"probability"`
		} `json:"closed_classes"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
		t.Fatalf("two classes, json: exit %d, %v: %s", code, err, stderr)
	}
	if len(res.Classes) != 2 || res.Classes[0].Name != "R" || math.Abs(res.Classes[0].Probability-0.25) > 1e-15 ||
		res.Classes[1].Name != "S" || len(res.Classes[1].States) != 2 || math.Abs(res.Classes[1].Probability-0.75) > 1e-15 {
		t.Errorf("two classes, json: %+v", res.Classes)
	}
	want := map[string]float64{"a": 0, "b": 0, "c": 0, "d": 0.25, "e": 0.5, "f": 0.5}
	for _, tp := range res.Throughput {
		if math.Abs(tp.Throughput-want[tp.Action]) > 1e-15 {
			t.Errorf("two classes: throughput(%s) = %g, want %g", tp.Action, tp.Throughput, want[tp.Action])
		}
	}
}
