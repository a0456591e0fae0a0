//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pepa/internal/testing/reference"
	"pepa/lang"
)

// The public corpus: PEPA models written for other tools or by other
// people (the Imperial PEPA Compiler's tests and examples, pyPEPA's tests,
// PRISM's PEPA examples and tests, pepapot, two course projects, a
// selfish-mining model, a plug-in fork's examples), run through check,
// states and steady as a user would, in child processes (this test binary
// as pepa, with a time limit per run). The models are other people's: they
// live beside the project in shared/corpus (testdata/corpus/SOURCES says
// where each comes from and under which licence, if any), not in this
// repository; -corpus.dir or
// PEPA_CORPUS points elsewhere. What each model must give is written in
// testdata/corpus/MANIFEST, one line a model:
//
//	PATH  answered  states=N            check, states and steady answer; states counts N
//	PATH  refused   errors=N classes=C  check refuses with N errors, of the classes C in order
//	PATH  deadlock  states=N            states and steady refuse: a deadlock, with the state
//	PATH  large     WHAT                states --max-states 200000 refuses at once ("model too
//	                                    large"); -corpus.long runs the verbs in full, WHAT being
//	                                    what they give then (answered states=N, deadlock
//	                                    states=N; slow: over the time limit; toolarge: refused as
//	                                    "model too large" in under 2 s, sized before it is built)
//	PATH  known-steady states=N         states answers, steady fails (a known failure of the
//	                                    solvers, said in a comment); steady runs with -corpus.long
//
// Every error must be at FILE:LINE:COL and of a class a user can act on
// (errorClasses); a message of no class fails the test. The numbers are
// checked against the independent reference semantics
// (internal/testing/reference): steady's throughputs, and the state
// count where the model has no array (so that aggregation does not
// change it), on every answered model of up to 600 states.

var (
	corpusDir  = flag.String("corpus.dir", "", "directory of the public corpus (default: $PEPA_CORPUS, else shared/corpus beside the project)")
	corpusLong = flag.Bool("corpus.long", false, "run the corpus's large models and known failures in full (60 s a verb)")
)

// errorClasses names the kinds of reason a refusal gives; the first
// pattern that matches a message is its class.
var errorClasses = []struct {
	name string
	re   *regexp.Regexp
}{
	{"extension", regexp.MustCompile(`an extension of the Imperial PEPA Compiler|Stop, the Imperial PEPA Compiler's process`)},
	{"lexical", regexp.MustCompile(`^(unexpected character|illegal (byte|character|control)|malformed number|comment not terminated|a prime \(')`)},
	{"name-kind", regexp.MustCompile(`^(rate names start with a lower-case|process names start with an upper-case|action names start with a lower-case|\S+ is reserved: )`)},
	{"syntax", regexp.MustCompile(`^syntax error: expected .*, found `)},
	{"undefined", regexp.MustCompile(`^undefined (rate|process) `)},
	{"duplicate", regexp.MustCompile(`^duplicate definition of (rate|process) \S+ \(first defined at \d+:\d+\)`)},
	{"rate", regexp.MustCompile(`^(rate of action \S+ is|weight of passive action|the passive rate infty cannot|cyclic rate definitions|number \S+ is out of the range|array size of)`)},
	{"structure", regexp.MustCompile(`^(unguarded recursion|recursion through a cooperation|a prefix must be followed|both sides of a choice)`)},
	{"passive", regexp.MustCompile(`^(action \S+ is passive and never synchronised|passive action \S+ is hidden)`)},
	{"tau", regexp.MustCompile(`^tau is the silent action`)},
	{"system", regexp.MustCompile(`^(missing system equation|a model has one system equation|definition after the system equation|empty statement)`)},
	{"array", regexp.MustCompile(`^array \S+: `)},
}

func errorClass(msg string) string {
	for _, c := range errorClasses {
		if c.re.MatchString(msg) {
			return c.name
		}
	}
	return ""
}

// diagLine is one diagnostic as the verbs print it.
var diagLine = regexp.MustCompile(`^(.+):(\d+):(\d+): (error|warning): (.*)$`)

type corpusEntry struct {
	path    string
	outcome string            // answered, refused, deadlock, large, known-steady
	fields  map[string]string // states, errors, classes
	long    string            // large: the outcome in full
	line    int
}

func readManifest(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open("../../testdata/corpus/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if len(words) < 2 {
			t.Fatalf("MANIFEST:%d: want PATH OUTCOME [FIELD=VALUE ...]", n)
		}
		e := corpusEntry{path: words[0], outcome: words[1], fields: map[string]string{}, line: n}
		rest := words[2:]
		if e.outcome == "large" {
			if len(rest) == 0 {
				t.Fatalf("MANIFEST:%d: large needs the outcome in full", n)
			}
			e.long, rest = rest[0], rest[1:]
		}
		for _, w := range rest {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				t.Fatalf("MANIFEST:%d: %q is not FIELD=VALUE", n, w)
			}
			e.fields[k] = v
		}
		switch e.outcome {
		case "answered", "refused", "deadlock", "large", "known-steady":
		default:
			t.Fatalf("MANIFEST:%d: unknown outcome %q", n, e.outcome)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// findCorpus returns the corpus directory, or "" if there is none.
func findCorpus() string {
	for _, dir := range []string{*corpusDir, os.Getenv("PEPA_CORPUS"), "../../../shared/corpus", "../../../../shared/corpus"} {
		if dir == "" {
			continue
		}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	return ""
}

// verbRun is one child run of pepa.
type verbRun struct {
	code           int
	stdout, stderr string
	timedOut       bool
	took           time.Duration
}

// runVerb runs this test binary as pepa in dir, killed after limit.
func runVerb(t *testing.T, dir string, limit time.Duration, args ...string) verbRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runAsPepa+"=1")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := verbRun{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.timedOut = true
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("pepa %s: %v", strings.Join(args, " "), err)
	}
	for _, sign := range crashSigns {
		if strings.Contains(r.stderr, sign) && !r.timedOut {
			t.Errorf("pepa %s crashed (%q):\n%s", strings.Join(args, " "), sign, r.stderr)
		}
	}
	if !r.timedOut && r.code != exitOK && r.code != exitInvalid {
		t.Errorf("pepa %s: exit code %d:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// checkDiagnostics checks that every line a refusal prints is an error at
// FILE:LINE:COL of a known class, and returns the classes in order.
func checkDiagnostics(t *testing.T, file, stderr string) []string {
	t.Helper()
	var classes []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		m := diagLine.FindStringSubmatch(line)
		if m == nil || m[1] != file {
			t.Errorf("%s: not a FILE:LINE:COL diagnostic: %q", file, line)
			continue
		}
		if m[4] != "error" {
			continue
		}
		c := errorClass(m[5])
		if c == "" {
			t.Errorf("%s: an error of no known class (a reason the user can act on?): %q", file, line)
		}
		classes = append(classes, c)
	}
	return classes
}

type steadyJSON struct {
	States     int `json:"states"`
	Throughput []struct {
		Action     string  `json:"action"`
		Throughput float64 `json:"throughput"`
	} `json:"throughput"`
}

type statesJSON struct {
	States     int  `json:"states"`
	Aggregated bool `json:"aggregated"`
}

// quickLimit and longLimit bound one verb's run on one model.
const (
	quickLimit   = 30 * time.Second
	longLimit    = 60 * time.Second
	quickMax     = "200000" // --max-states of the quick runs
	referenceMax = 600      // models the reference solves densely
)

func TestCorpus(t *testing.T) {
	dir := findCorpus()
	if dir == "" {
		t.Skip("no corpus: it lives in shared/corpus beside the project (or set PEPA_CORPUS / -corpus.dir)")
	}
	entries := readManifest(t)
	listed := map[string]bool{}
	for _, e := range entries {
		if listed[e.path] {
			t.Errorf("MANIFEST:%d: %s listed twice", e.line, e.path)
		}
		listed[e.path] = true
	}
	// Every model of the corpus has an expected outcome, and the
	// corpus has every model of the manifest.
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".pepa") {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := map[string]bool{}
	for _, f := range files {
		onDisk[f] = true
		if !listed[f] {
			t.Errorf("%s is in the corpus but not in testdata/corpus/MANIFEST", f)
		}
	}
	for _, e := range entries {
		if !onDisk[e.path] {
			t.Errorf("MANIFEST:%d: %s is not in the corpus at %s", e.line, e.path, dir)
		}
	}

	var mu sync.Mutex
	var total time.Duration
	outcomes := map[string]int{}
	for _, e := range entries {
		if !onDisk[e.path] {
			continue
		}
		e := e
		t.Run(e.path, func(t *testing.T) {
			if !*corpusLong {
				t.Parallel() // the long runs are timed: one at a time
			}
			took := corpusModel(t, dir, e)
			mu.Lock()
			total += took
			outcomes[e.outcome]++
			mu.Unlock()
		})
	}
	referenceCompared.Store(0)
	t.Cleanup(func() {
		n := referenceCompared.Load()
		t.Logf("corpus: %d models (%v), %v in the verbs' child processes; %d answered models checked against the reference semantics",
			len(entries), outcomes, total.Round(time.Millisecond), n)
		// Most answered models are small: if few were compared, the
		// oracle has quietly stopped checking anything.
		if !t.Failed() && n < int64(outcomes["answered"])*3/4 {
			t.Errorf("only %d of %d answered models were checked against the reference", n, outcomes["answered"])
		}
	})
}

// corpusModel runs one model's verbs and checks them against its entry; it
// returns the time the verbs took.
func corpusModel(t *testing.T, dir string, e corpusEntry) time.Duration {
	var took time.Duration
	run := func(limit time.Duration, args ...string) verbRun {
		r := runVerb(t, dir, limit, args...)
		took += r.took
		if r.timedOut {
			t.Errorf("pepa %s: no answer in %v", strings.Join(args, " "), limit)
		}
		return r
	}
	intField := func(k string) int {
		v, err := strconv.Atoi(e.fields[k])
		if err != nil {
			t.Fatalf("MANIFEST:%d: %s=%q is not a number", e.line, k, e.fields[k])
		}
		return v
	}

	chk := run(quickLimit, "check", "-q", e.path)
	classes := checkDiagnostics(t, e.path, chk.stderr)
	if e.outcome == "refused" {
		if chk.code != exitInvalid {
			t.Fatalf("check accepts it; the manifest says refused")
		}
		if n := intField("errors"); len(classes) != n {
			t.Errorf("check gives %d errors, the manifest %d (one cause, one error):\n%s", len(classes), n, chk.stderr)
		}
		if got := strings.Join(classes, ","); got != e.fields["classes"] {
			t.Errorf("errors of classes %s, the manifest says %s:\n%s", got, e.fields["classes"], chk.stderr)
		}
		return took
	}
	if chk.code != exitOK {
		t.Fatalf("check refuses it; the manifest says %s:\n%s", e.outcome, chk.stderr)
	}
	formatRoundTrip(t, filepath.Join(dir, e.path))

	want := e.outcome
	limit, maxStates := quickLimit, []string{"--max-states", quickMax}
	if e.outcome == "large" {
		if !*corpusLong {
			st := run(quickLimit, "states", "--max-states", quickMax, e.path)
			if st.code != exitInvalid || !strings.Contains(st.stderr, "model too large") {
				t.Errorf("states --max-states %s: want \"model too large\" at once, got exit %d:\n%s", quickMax, st.code, st.stderr)
			}
			return took
		}
		want, limit, maxStates = e.long, longLimit, nil
		if want == "toolarge" {
			st := runVerb(t, dir, limit, "states", e.path)
			took += st.took
			if st.code != exitInvalid || !strings.Contains(st.stderr, "model too large") || st.took > 2*time.Second {
				t.Errorf("states (no --max-states): want \"model too large\" in under 2 s, got exit %d after %v:\n%s", st.code, st.took, st.stderr)
			}
			return took
		}
		if want == "slow" {
			st := runVerb(t, dir, limit, "states", e.path)
			took += st.took
			if !st.timedOut {
				t.Logf("known to take over %v, now done in %v (exit %d): tighten the manifest", limit, st.took, st.code)
			}
			return took
		}
	}

	st := run(limit, append(append([]string{"states", "--format", "json"}, maxStates...), e.path)...)
	var sj statesJSON
	switch want {
	case "answered", "known-steady":
		if st.code != exitOK {
			t.Fatalf("states refuses it:\n%s", st.stderr)
		}
		if err := json.Unmarshal([]byte(st.stdout), &sj); err != nil {
			t.Fatalf("states --format json: %v", err)
		}
		if e.fields["states"] != "" && sj.States != intField("states") {
			t.Errorf("states counts %d states, the manifest %s", sj.States, e.fields["states"])
		}
	case "deadlock":
		if st.code != exitInvalid || !strings.Contains(st.stderr, "deadlock in state") {
			t.Errorf("states: want a deadlock refusal, got exit %d:\n%s", st.code, st.stderr)
		}
		if json.Unmarshal([]byte(st.stdout), &sj) == nil && e.fields["states"] != "" && sj.States != intField("states") {
			t.Errorf("states counts %d states, the manifest %s", sj.States, e.fields["states"])
		}
	default:
		t.Fatalf("MANIFEST:%d: unknown outcome %q", e.line, want)
	}

	if want == "known-steady" {
		if *corpusLong {
			sd := runVerb(t, dir, longLimit, "steady", e.path)
			took += sd.took
			if sd.code == exitOK && !sd.timedOut {
				t.Logf("steady answers it now in %v (a known failure fixed?): tighten the manifest", sd.took)
			}
		}
		return took
	}
	sd := run(limit, append(append([]string{"steady", "--format", "json"}, maxStates...), e.path)...)
	switch want {
	case "answered":
		if sd.code != exitOK {
			t.Fatalf("steady refuses it:\n%s", sd.stderr)
		}
		var got steadyJSON
		if err := json.Unmarshal([]byte(sd.stdout), &got); err != nil {
			t.Fatalf("steady --format json: %v", err)
		}
		compareReference(t, filepath.Join(dir, e.path), sj, got)
	case "deadlock":
		if sd.code != exitInvalid || !strings.Contains(sd.stderr, "deadlock in state") {
			t.Errorf("steady: want a deadlock refusal, got exit %d:\n%s", sd.code, sd.stderr)
		}
	}
	return took
}

// formatRoundTrip checks that pepa fmt's layout of a model reads back as
// the same model, and that formatting it again changes nothing (the
// dialects' spellings, _ and top, ipc's P[n, {a}], have one canonical form).
func formatRoundTrip(t *testing.T, path string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := lang.Parse(path, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	out := lang.Format(f)
	g, diags := lang.Parse(path, out)
	if diags.HasErrors() {
		t.Fatalf("pepa fmt's output does not parse: %v\n%s", diags.Err(), out)
	}
	if !lang.Equal(f, g) {
		t.Errorf("pepa fmt's output is another model:\n%s", out)
	}
	if again := lang.Format(g); string(again) != string(out) {
		t.Errorf("pepa fmt is not idempotent:\n%s\nthen\n%s", out, again)
	}
}

// referenceCompared counts the models compareReference checked.
var referenceCompared atomic.Int64

// compareReference checks steady's throughputs (and states' count, where
// aggregation cannot change it) against the reference semantics.
func compareReference(t *testing.T, path string, st statesJSON, got steadyJSON) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load(path, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	c, err := reference.Derive(context.Background(), m, reference.Options{MaxStates: referenceMax})
	if errors.Is(err, reference.ErrTooManyStates) {
		return // too large for a dense oracle
	}
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	referenceCompared.Add(1)
	if !st.Aggregated && c.N() != st.States {
		t.Errorf("states counts %d states, the reference semantics %d", st.States, c.N())
	}
	pi, err := c.Steady()
	if err != nil {
		t.Fatalf("reference steady state: %v", err)
	}
	want := c.Throughputs(pi)
	seen := map[string]bool{}
	for _, tp := range got.Throughput {
		seen[tp.Action] = true
		w := want[tp.Action]
		if math.Abs(tp.Throughput-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("throughput of %s: steady %.12g, the reference %.12g", tp.Action, tp.Throughput, w)
		}
	}
	var missing []string
	for a, w := range want {
		if !seen[a] && w != 0 {
			missing = append(missing, a)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("steady gives no throughput for %v", missing)
	}
}

// TestCorpusHandChecked: numbers of corpus models worked out by hand, not
// by any solver.
func TestCorpusHandChecked(t *testing.T) {
	dir := findCorpus()
	if dir == "" {
		t.Skip("no corpus: it lives in shared/corpus beside the project (or set PEPA_CORPUS / -corpus.dir)")
	}
	type handCase struct {
		file        string
		aggregated  bool               // count states as states does by default
		states      int                // 0: not checked
		throughputs map[string]float64 // action -> value
	}
	tests := []handCase{
		// pyPEPA's tests: P = (a,1).(b,1).P beside Q = (a,1).(b,2).Q, no
		// cooperation. P spends half its time before a, Q two thirds:
		// a and b each 1/2 + 2/3 = 7/6 (pyPEPA's test_perf says
		// 1.1666), over 2 x 2 states.
		{"pyPEPA/tests/simple.pepa", false, 4, map[string]float64{"a": 7.0 / 6, "b": 7.0 / 6}},
		// The same with r = 0.5*1 + 1/2 and s = 1.0 + r.
		{"pyPEPA/tests/simple_expr.pepa", false, 4, map[string]float64{"a": 7.0 / 6, "b": 7.0 / 6}},
		// The Imperial PEPA Compiler's first test: P1 = (a,1).(b,1).P1,
		// two copies in parallel: 2^2 states, each copy does a once a
		// cycle of mean length 2: 2 x 1/2.
		{"ipclib/tests/basic/good/test01.pepa", false, 4, map[string]float64{"a": 1, "b": 1}},
		// P1 = (a,1).(b,2).P1 <a> Q1 = (a,2).(b,1).Q1: from (P1,Q1) a at
		// min(1,2) = 1 to (P2,Q2), which leaves at 2 (P's b) or 1 (Q's
		// b); balance gives pi(P1,Q1) = 6/13, pi(P2,Q2) = 2/13,
		// pi(P1,Q2) = 4/13, pi(P2,Q1) = 1/13: a = 6/13, b = 2(2+1)/13 +
		// (2+4)/13 = 12/13.
		{"ipclib/tests/basic/good/p_and_q_1.pepa", false, 4, map[string]float64{"a": 6.0 / 13, "b": 12.0 / 13}},
		// PRISM's and the Edinburgh PEPA pages' active badge model: "72
		// states" (the model's own header).
		{"prism/examples/pepa/badge.pepa", false, 72, nil},
		// Token-ring PC LANs: each PC idle or with a packet, the token
		// walking to or serving one of N PCs: 2^N x 2N.
		{"prism/examples/pepa/PC-LAN4.pepa", false, 16 * 8, nil},
		{"prism/examples/pepa/PC-LAN6.pepa", false, 64 * 12, nil},
		// A hospital's patient going round arrive (400), register
		// (2000), blood (120) and wait (2000), each shared with a
		// department at the same rate: one cycle of 1/400 + 1/2000 +
		// 1/120 + 1/2000 = 71/6000 time units, so every action 6000/71.
		{"hospital-scheduling/Patient_B.pepa", false, 4, map[string]float64{
			"arriveB": 6000.0 / 71, "register": 6000.0 / 71, "blood": 6000.0 / 71, "wait": 6000.0 / 71}},
		// The same with xray (80) for blood: 96/6000 a cycle, 62.5.
		{"hospital-scheduling/Patient_X.pepa", false, 4, map[string]float64{
			"arriveX": 62.5, "register": 62.5, "xray": 62.5, "wait": 62.5}},
		// Both tests, in either order, after a choice (decideB, T) +
		// (decideX, T) made with partners of rate 1 each (T is passive:
		// the choice takes 1/2): 1/400 + 1/2000 + 1/2 + 1/120 + 1/80 +
		// 1/2000 = 3146/6000 a cycle; each decision half the cycles.
		{"hospital-scheduling/Patient_BX.pepa", false, 9, map[string]float64{
			"arriveBX": 6000.0 / 3146, "register": 6000.0 / 3146, "blood": 6000.0 / 3146,
			"xray": 6000.0 / 3146, "wait": 6000.0 / 3146, "decideB": 3000.0 / 3146, "decideX": 3000.0 / 3146}},
		// Process1[8] <use> CPU1[4], two local states a copy: 2^12
		// states, 9 x 5 once the copies are counted.
		{"hospital-scheduling/test.pepa", false, 1 << 12, nil},
		{"hospital-scheduling/test.pepa", true, 9 * 5, nil},
		// PatientB[4] || PatientX[4] beside one-state departments: 4^8,
		// and C(7,3)^2 = 35^2 multisets. With PatientB and PatientX once
		// and PatientBX (9 local states) three times: 4 x 4 x 9^3, and
		// 4 x 4 x C(11,3) = 4 x 4 x 165.
		{"hospital-scheduling/Patient_B_X.pepa", false, 1 << 16, nil},
		{"hospital-scheduling/Patient_B_X.pepa", true, 35 * 35, nil},
		{"hospital-scheduling/Patient_B_X_BX.pepa", false, 4 * 4 * 729, nil},
		{"hospital-scheduling/Patient_B_X_BX.pepa", true, 4 * 4 * 165, nil},
		// One sequential component: NewHeight and six rounds of nine
		// derivatives (Round, three proposers, Prevote, NilPrevote,
		// Unsuccess, PreCommit, Commit).
		{"cosmos-discovery/PEPA/PEPA/non-homogeneous.pepa", false, 1 + 6*9, nil},
		// From (H, V, J), request at min(r = 1, J's 1/2 + 1/2) = 1,
		// split evenly to (H, R, A) and (H, R, RJ); each returns at rate
		// 1 (send_hv at min(t, s), punish at min(t, p); the other action
		// is blocked by J's side). pi = (1/2, 1/4, 1/4); send_vh is V's
		// self-loop at s = 1 with H passive, in the first state only.
		{"valuetools-pepa/Examples/TimeReversibility/valuetools-time-reversibility.pepa", false, 3, map[string]float64{
			"request": 0.5, "send_vh": 0.5, "send_hv": 0.25, "punish": 0.25}},
		// Three cooperating copies of one 6-state process: 6^3.
		{"valuetools-pepa/Examples/ProportionalLumpability/valuetools-proportional.pepa", false, 216, nil},
	}
	// P1[N] <a> Q1[N]: 4^N states, (N+1)^2 once the copies are counted.
	for n := 1; n <= 6; n++ {
		file := fmt.Sprintf("ipclib/tests/basic/good/p_and_q_%d.pepa", n)
		tests = append(tests, handCase{file, false, 1 << (2 * n), nil}, handCase{file, true, (n + 1) * (n + 1), nil})
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/aggregated=%v", tt.file, tt.aggregated), func(t *testing.T) {
			st := runVerb(t, dir, quickLimit, "states", "--format", "json", "--aggregate="+strconv.FormatBool(tt.aggregated), tt.file)
			var sj statesJSON
			if err := json.Unmarshal([]byte(st.stdout), &sj); err != nil {
				t.Fatalf("states: %v\n%s", err, st.stderr)
			}
			if tt.states != 0 && sj.States != tt.states {
				t.Errorf("%d states, by hand %d", sj.States, tt.states)
			}
			if tt.throughputs == nil {
				return
			}
			sd := runVerb(t, dir, quickLimit, "steady", "--format", "json", tt.file)
			var got steadyJSON
			if err := json.Unmarshal([]byte(sd.stdout), &got); err != nil {
				t.Fatalf("steady: %v\n%s", err, sd.stderr)
			}
			tps := map[string]float64{}
			for _, tp := range got.Throughput {
				tps[tp.Action] = tp.Throughput
			}
			for a, w := range tt.throughputs {
				if math.Abs(tps[a]-w) > 1e-12*w {
					t.Errorf("throughput of %s: %.15g, by hand %.15g", a, tps[a], w)
				}
			}
		})
	}
}
