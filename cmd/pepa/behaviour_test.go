package main

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestFlagErrorsGoToStderr: for every verb, a bad flag prints the error and
// the usage to stderr, nothing to stdout, and exits 2; --help prints the
// usage to stdout and exits 0.
func TestFlagErrorsGoToStderr(t *testing.T) {
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, verb := range names {
		code, out, errs := runPepa(t, "", verb, "--no-such-flag", "x.pepa")
		if code != exitUsage || out != "" || !strings.Contains(errs, "flag provided but not defined: -no-such-flag") ||
			!strings.Contains(errs, "Usage: pepa "+verb) {
			t.Errorf("pepa %s --no-such-flag: exit %d, stdout %q, stderr:\n%s", verb, code, out, errs)
		}
		code, out, errs = runPepa(t, "", verb, "--help")
		if code != exitOK || errs != "" || !strings.Contains(out, "Usage: pepa "+verb) || !strings.Contains(out, "docs/cli.md") {
			t.Errorf("pepa %s --help: exit %d, stderr %q, stdout:\n%s", verb, code, errs, out)
		}
	}
	code, out, errs := runPepa(t, "")
	if code != exitUsage || out != "" || !strings.Contains(errs, "Verbs:") {
		t.Errorf("pepa without a verb: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runPepa(t, "", "help", "frobnicate")
	if code != exitUsage || out != "" || !strings.Contains(errs, `unknown verb "frobnicate"`) {
		t.Errorf("pepa help frobnicate: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runPepa(t, "", "help", "states")
	if code != exitOK || errs != "" || !strings.Contains(out, "Usage: pepa states") {
		t.Errorf("pepa help states: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestMachinesFlagChecked(t *testing.T) {
	model := "../../testdata/cluster/paired.pepa"
	code, out, errs := runPepa(t, "", "robustness", "--beta", "40", "--machines", "M1,M2,M1", model)
	if code != exitUsage || out != "" || !strings.Contains(errs, "--machines names M1 twice") {
		t.Errorf("duplicate machine: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runPepa(t, "", "robustness", "--beta", "40", "--machines", "M1,M9", model)
	if code != exitInvalid || out != "" || !strings.Contains(errs, `no component "M9"`) {
		t.Errorf("unknown machine: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// A named subset is analysed alone: the robustness is that machine's.
	code, out, errs = runPepa(t, "", "robustness", "--beta", "40", "--machines", "M2", "--format", "csv", model)
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(out, ",M2,") {
		t.Errorf("--machines M2: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
}

// TestMachineNeverFinishingWarns: G may withdraw from c2 for good (rate 1)
// before M1 completes c1 then c2 (rate 1 each), so M1 finishes with
// probability (1/2)(1/2) = 1/4 (each step races one exponential against
// G's), and never with probability 3/4.
func TestMachineNeverFinishingWarns(t *testing.T) {
	p := writeTemp(t, "blocked.pepa", `r = 1;
A1 = (c1, infty).A1;
A2 = (c2, infty).A2;
M1 = (c1, r).(c2, r).M1;
G = (c2, infty).G + (d, 1).G2;
G2 = (e, 1).G2;
(A1 <> A2) <c1, c2> (M1 <c2> G)
`)
	code, out, errs := runPepa(t, "", "robustness", "--beta", "5", p)
	if code != exitOK || !strings.Contains(errs, p+": warning: machine M1: it may never finish: with probability 0.75 ") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	// M1 finishes by t when c1 and c2 each win their race against d (each
	// step Exp(2), won with probability 1/2): P(F <= t) = (1/4) P(Erlang(2,
	// rate 2) <= t) = (1 - e^{-2t} (1 + 2t)) / 4.
	m := regexp.MustCompile(`M1\s+2\s+(0\.\d+)\s+inf`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no M1 row:\n%s", out)
	}
	got, _ := strconv.ParseFloat(m[1], 64)
	if want := (1 - math.Exp(-10)*11) / 4; math.Abs(got-want) > 1e-9 {
		t.Errorf("P(F_M1 <= 5) = %s, want %.10f", m[1], want)
	}
}

func TestUncomputedApplicationWarns(t *testing.T) {
	p := writeTemp(t, "orphan.pepa", `r = 1;
A1 = (c1, infty).A1;
A3 = (c3, infty).A3;
M1 = (c1, r).M1;
(A1 <> A3) <c1, c3> M1
`)
	for _, flat := range []string{"--flat=false", "--flat"} {
		code, out, errs := runPepa(t, "", "robustness", "--beta", "5", flat, p)
		if code != exitOK || !strings.Contains(errs, p+": warning: application A3 is computed by no machine (no machine performs c3)") {
			t.Errorf("%s: exit %d, stderr %q\n%s", flat, code, errs, out)
		}
		code, out, _ = runPepa(t, "", "robustness", "--beta", "5", "--format", "json", flat, p)
		if code != exitOK || !strings.Contains(out, `"warnings": [`) {
			t.Errorf("%s: JSON lacks warnings:\n%s", flat, out)
		}
	}
	// A model whose every application is computed warns of nothing.
	code, _, errs := runPepa(t, "", "robustness", "--beta", "40", "../../testdata/cluster/paired.pepa")
	if code != exitOK || errs != "" {
		t.Errorf("paired: exit %d, stderr %q", code, errs)
	}
}

// TestSensitivityWithSeveralFiles: the ranking's text carries each
// mapping's sensitivity, the same as a single-file run prints.
func TestSensitivityWithSeveralFiles(t *testing.T) {
	a, b := "../../testdata/cluster/paired.pepa", "../../testdata/cluster/uneven.pepa"
	code, out, errs := runPepa(t, "", "robustness", "--beta", "40", "--sensitivity", a, b)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{a, b} {
		code, one, errs := runPepa(t, "", "robustness", "--beta", "40", "--sensitivity", f)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", f, code, errs)
		}
		i := strings.Index(one, "\nsensitivity:")
		if i < 0 {
			t.Fatalf("%s: no sensitivity in the single-file output:\n%s", f, one)
		}
		if !strings.Contains(out, "== "+f+" (rank ") || !strings.Contains(out, one[i:]) {
			t.Errorf("ranking lacks %s's sensitivity section\n%s\nranking:\n%s", f, one[i:], out)
		}
	}
	if strings.Count(out, "bottleneck machine: ") != 2 {
		t.Errorf("want two bottleneck lines:\n%s", out)
	}
}
