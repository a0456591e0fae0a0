package optimize

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/models/spec"
)

// sharedSpec is a small specification with a shared network: M1 and M2
// stage input over Net (A1, A2 and A3 have data, A5 none), M3 uses none.
// Rates by hand (workload 1 -> 2, availability 1 -> 0.5): r = 1 / ETC,
// p = 0.5 / (ETC * 2) = 1 / (4 ETC); a request 1 / latency = 2; a transfer
// rate / data: A1 10/20, A2 10/10, A3 10/5.
func sharedSpec(capacity int) string {
	return fmt.Sprintf(`{"etc": [[2, 4, 3], [5, 2, 4], [3, 6, 2], [4, 5, 1], [6, 4, 5]],
 "workload": {"nominal": 1, "perturbed": 2},
 "availability": {"nominal": 1, "perturbed": 0.5},
 "resources": {"Net": {"machines": ["M1", "M2"], "rate": 10, "latency": 0.5, "capacity": %d,
   "data": {"A1": 20, "A2": 10, "A3": 5}}},
 "mappings": [{"name": "m", "allocation": {"M1": ["A1", "A3"], "M2": ["A2", "A5"], "M3": ["A4"]}}]}`, capacity)
}

// handBuiltShared is sharedSpec's mapping written out by hand, with
// finished machines stopped (a terminal state MjDone with a private
// self-loop) and no application components (passive single-state
// components change no rate): Net's states count the transfers under way.
func handBuiltShared(capacity int) string {
	var b strings.Builder
	b.WriteString(`M1 = (req1, 2).(xfer1, 0.5).M1go;
M1go = (compute1, 0.5).(req3, 2).(xfer3, 2).(compute3, 0.3333333333333333).M1Done
     + (compute1, 0.125).(req3, 2).(xfer3, 2).(compute3, 0.08333333333333333).M1Done;
M2 = (req2, 2).(xfer2, 1).M2go;
M2go = (compute2, 0.5).(compute5, 0.25).M2Done + (compute2, 0.125).(compute5, 0.0625).M2Done;
M3 = (compute4, 1).M3Done + (compute4, 0.25).M3Done;
M1Done = (idle1, 1).M1Done;
M2Done = (idle2, 1).M2Done;
M3Done = (idle3, 1).M3Done;
`)
	switch capacity {
	case 1:
		b.WriteString(`Net0 = (req1, infty).Net1 + (req2, infty).Net1 + (req3, infty).Net1;
Net1 = (xfer1, infty).Net0 + (xfer2, infty).Net0 + (xfer3, infty).Net0;
`)
	case 2:
		b.WriteString(`Net0 = (req1, infty).Net1 + (req2, infty).Net1 + (req3, infty).Net1;
Net1 = (req1, infty).Net2 + (req2, infty).Net2 + (req3, infty).Net2
     + (xfer1, infty).Net0 + (xfer2, infty).Net0 + (xfer3, infty).Net0;
Net2 = (xfer1, infty).Net1 + (xfer2, infty).Net1 + (xfer3, infty).Net1;
`)
	}
	b.WriteString("(M1 <> M2 <> M3) <req1, req2, req3, xfer1, xfer2, xfer3> Net0\n")
	return b.String()
}

// TestSharedGenMatchesHandBuilt: the model gen writes for a specification
// with a shared network (capacity 1 and 2) parses, robustness solves it by
// groups (M1 and M2 with Net, M3 alone), and every figure (each machine's
// P(F <= beta) and E[F], P(all), E[makespan]) equals that of the mapping
// written out by hand with terminal states, solved by the reference
// semantics (internal/testing/reference, no code shared with ctmc or passage), to
// 1e-9.
func TestSharedGenMatchesHandBuilt(t *testing.T) {
	const beta = 6.0
	for _, capacity := range []int{1, 2} {
		in, err := spec.ParseSpec("s.json", []byte(sharedSpec(capacity)))
		if err != nil {
			t.Fatal(err)
		}
		var src strings.Builder
		if err := in.Generate(&src, in.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		m, diags := lang.Load("gen.pepa", []byte(src.String()))
		if diags.HasErrors() {
			t.Fatalf("capacity %d: %v\n%s", capacity, diags.Err(), src.String())
		}
		pragmas, err := models.ReadPragmas(m.File)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12},
			Pragmas: pragmas})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Groups) != 2 || !slices.Equal(got.Groups[0].Machines, []string{"M1", "M2"}) || got.Groups[0].Solved != "exact" ||
			!slices.Contains(got.Groups[0].Components, "Net") ||
			!slices.Equal(got.Groups[1].Machines, []string{"M3"}) || got.Groups[1].Solved != "alone" {
			t.Errorf("capacity %d: groups %+v, want M1, M2 with Net (exact) and M3 alone", capacity, got.Groups)
		}

		hm, diags := lang.Load("hand.pepa", []byte(handBuiltShared(capacity)))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		rc, err := reference.Derive(context.Background(), hm, reference.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for j, last := range []string{"compute3", "compute5", "compute4"} {
			p := rc.InitialActions([]string{last})
			v, _ := rc.CDFs(p, []float64{beta})
			mean, err := rc.Mean(p)
			if err != nil {
				t.Fatal(err)
			}
			mr := got.Machines[j]
			if math.Abs(mr.PByBeta-v[0]) > 1e-9 || math.Abs(mr.Mean-mean) > 1e-9 {
				t.Errorf("capacity %d: %s P(F <= %g) %.12g E[F] %.12g, hand-built %.12g %.12g", capacity, mr.Name, beta, mr.PByBeta, mr.Mean, v[0], mean)
			}
		}
		done := make([]bool, rc.N())
		for i, st := range rc.States {
			done[i] = st[0] == "M1Done" && st[1] == "M2Done" && st[2] == "M3Done"
		}
		all := rc.InitialStates(done)
		v, _ := rc.CDFs(all, []float64{beta})
		makespan, err := rc.Mean(all)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.PAllByBeta-v[0]) > 1e-9 || math.Abs(got.ExpectedMakespan-makespan) > 1e-9*makespan {
			t.Errorf("capacity %d: P(all) %.12g E[makespan] %.12g, hand-built %.12g %.12g", capacity, got.PAllByBeta, got.ExpectedMakespan, v[0], makespan)
		}
	}
}

// twoNetsSpec: M1 and M2 share Net, M3 and M4 share Disk (two transfers
// at a time), M5 stages nothing.
const twoNetsSpec = `{"etc": [[4, 6, 3, 5, 7], [3, 5, 4, 6, 4], [5, 3, 6, 4, 5], [6, 4, 5, 3, 6],
   [4, 4, 4, 4, 4], [5, 6, 3, 4, 5], [3, 4, 5, 6, 3], [6, 5, 4, 3, 5]],
 "workload": {"nominal": 1, "perturbed": {"uniform": [1.0, 1.5]}},
 "availability": {"nominal": [1, 0.9, 0.8, 1, 0.7], "perturbed": {"uniform": [0.55, 0.85]}},
 "seed": 7,
 "resources": {
   "Net": {"machines": ["M1", "M2"], "rate": 20, "latency": 0.3, "data": [30, 10, 20, 0, 40, 25, 15, 5]},
   "Disk": {"machines": ["M3", "M4"], "rate": 50, "latency": 0.1, "capacity": 2, "data": 40}}}`

// fullSolve is every machine's P(F <= beta) (by name) and P(all) of an
// allocation, from the whole model gen writes, by AnalyzeGroups (what pepa
// robustness prints), apart from the search's cache and its group models.
func fullSolve(t *testing.T, in *spec.Instance, alloc [][]int, beta float64) (map[string]float64, *models.Result) {
	t.Helper()
	var src strings.Builder
	if err := in.Generate(&src, in.MappingOf("fresh", alloc)); err != nil {
		t.Fatal(err)
	}
	m, diags := lang.Load("fresh.pepa", []byte(src.String()))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	r, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12},
		Pragmas: pragmas})
	if err != nil {
		t.Fatal(err)
	}
	ps := map[string]float64{}
	for _, mr := range r.Machines {
		ps[mr.Name] = mr.PByBeta
	}
	return ps, r
}

// checkState compares a search state's figures with a full solve of its
// allocation: each machine's P(F <= beta) (1 for an idle machine) and the
// joint probability, to 1e-9.
func checkState(t *testing.T, o *optimizer, st *searchState, what string) {
	t.Helper()
	ps, r := fullSolve(t, o.in, st.alloc, o.opt.Beta)
	for j, name := range o.in.Machines {
		want, ok := ps[name]
		if !ok {
			want = 1 // computes nothing: not in the model
		}
		if math.Abs(st.ps[j]-want) > 1e-9 {
			t.Errorf("%s: %s P(F <= beta) %.12g in the search, %.12g solved whole", what, name, st.ps[j], want)
		}
	}
	_, _, minP, joint := o.score(st.ps, st.grouped, st.groupAll)
	if math.Abs(joint-r.PAllByBeta) > 1e-9 || math.Abs(minP-r.Robustness) > 1e-9 {
		t.Errorf("%s: min %.12g joint %.12g in the search, %.12g %.12g solved whole", what, minP, joint, r.Robustness, r.PAllByBeta)
	}
}

// TestCoupledSearchMatchesFullSolve: the search's figures of coupled
// mappings (groups solved on models of their own, cached; lone machines by
// machineSolver) are those of the whole generated model by AnalyzeGroups,
// for random mappings and after every move tried on them, applied or not.
func TestCoupledSearchMatchesFullSolve(t *testing.T) {
	in, err := spec.ParseSpec("s.json", []byte(twoNetsSpec))
	if err != nil {
		t.Fatal(err)
	}
	o := newOptimizer(context.Background(), in, OptimizeOptions{Beta: 12, Objective: "joint", Epsilon: 1e-12, Budget: time.Minute, MakespanSlack: -1}, time.Now())
	rng := rand.New(rand.NewPCG(3, 5))
	nApps, nMach := len(in.Apps), len(in.Machines)
	for trial := 0; trial < 3; trial++ {
		alloc := make([][]int, nMach)
		for a := 0; a < nApps; a++ {
			j := rng.IntN(nMach)
			alloc[j] = append(alloc[j], a)
		}
		var st searchState
		if err := o.load(&st, alloc); err != nil {
			t.Fatal(err)
		}
		checkState(t, o, &st, fmt.Sprintf("trial %d", trial))
		var bufA, bufB []int
		for k := 0; k < 8; k++ {
			mv := move{a: int32(rng.IntN(nApps)), b: -1, to: int32(rng.IntN(nMach))}
			if k%2 == 1 {
				mv.b = int32(rng.IntN(nApps))
			}
			if _, err := o.try(&st, mv, func(float64) bool { return true }, &bufA, &bufB); err != nil {
				t.Fatal(err)
			}
			checkState(t, o, &st, fmt.Sprintf("trial %d, move %d %+v", trial, k, mv))
		}
	}
}

// TestCoupledMoveResolvesTouchedGroups: a move re-solves the group whose
// content it changes and no other, and content solved before is not
// solved again.
func TestCoupledMoveResolvesTouchedGroups(t *testing.T) {
	in, err := spec.ParseSpec("s.json", []byte(twoNetsSpec))
	if err != nil {
		t.Fatal(err)
	}
	o := newOptimizer(context.Background(), in, OptimizeOptions{Beta: 12, Objective: "min", Epsilon: 1e-10, Budget: time.Minute, MakespanSlack: -1}, time.Now())
	c := o.eval.(*groupEval)
	c.record = true
	// M1: A1 A5, M2: A2 A6, M3: A3 A7, M4: A4, M5: A8 (A4 has no data on Net
	// but 40 on Disk).
	alloc := [][]int{{0, 4}, {1, 5}, {2, 6}, {3}, {7}}
	var st searchState
	if err := o.load(&st, alloc); err != nil {
		t.Fatal(err)
	}
	if len(c.solved) != 2 || !strings.HasPrefix(c.solved[0], "0:") || !strings.HasPrefix(c.solved[1], "2:") {
		t.Fatalf("loading solved %q, want the groups of Net (M1, M2) and Disk (M3, M4)", c.solved)
	}
	var bufA, bufB []int
	always := func(float64) bool { return true }
	tryMove := func(mv move) []string {
		t.Helper()
		n := len(c.solved)
		if _, err := o.try(&st, mv, always, &bufA, &bufB); err != nil {
			t.Fatal(err)
		}
		return c.solved[n:]
	}
	// A5 from M1 to M2: Net's group only.
	if got := tryMove(move{a: 4, b: -1, to: 1}); len(got) != 1 || !strings.HasPrefix(got[0], "0:") {
		t.Errorf("moving A5 from M1 to M2 solved %q, want Net's group alone", got)
	}
	// The same move again, or back if it was applied: either way the
	// content was solved before.
	if got := tryMove(move{a: 4, b: -1, to: int32(st.where[4]) ^ 1}); len(got) != 0 {
		t.Errorf("moving A5 again solved %q, want nothing (cached)", got)
	}
	// A swap of M3's A7 with M5's A8: Disk's group only.
	if got := tryMove(move{a: 6, b: 7, to: -1}); len(got) != 1 || !strings.HasPrefix(got[0], "2:") {
		t.Errorf("swapping A7 (M3) and A8 (M5) solved %q, want Disk's group alone", got)
	}
	if got := tryMove(move{a: 6, b: 7, to: -1}); len(got) != 0 {
		t.Errorf("swapping A7 and A8 again solved %q, want nothing (cached)", got)
	}
	if c.solves != len(c.solved) || c.solves != 4 {
		t.Errorf("%d group solves, %d recorded; want 4", c.solves, len(c.solved))
	}
}

// TestCoupledOptimize: optimize on a specification with shared resources
// reports, for its best mapping, the figures of a fresh whole solve of that
// mapping (AnalyzeGroups on the model gen writes), scores it at least as
// well as every heuristic, and solves groups by their content (fewer group
// solves than moves tried: the cache answers the rest).
func TestCoupledOptimize(t *testing.T) {
	in, err := spec.ParseSpec("s.json", []byte(twoNetsSpec))
	if err != nil {
		t.Fatal(err)
	}
	for _, objective := range []string{"min", "joint"} {
		res := optimizeUntil(t, in, OptimizeOptions{Beta: 12, Objective: objective, Budget: time.Second, Seed: 1, MakespanSlack: -1}, func(res *OptimizeResult) bool {
			return res.GroupSolves > 0 && res.GroupSolves < res.Moves
		})
		_, r := fullSolve(t, in, res.Best.Allocation, 12)
		b := res.Best
		if math.Abs(b.Robustness-r.Robustness) > 1e-9 || math.Abs(b.Joint-r.PAllByBeta) > 1e-9 || math.Abs(b.Makespan-r.ExpectedMakespan) > 1e-6 {
			t.Errorf("%s: best %+v, solved whole: robustness %.12g joint %.12g makespan %.9g", objective, b, r.Robustness, r.PAllByBeta, r.ExpectedMakespan)
		}
		want := r.Robustness
		if objective == "joint" {
			want = r.PAllByBeta
		}
		if math.Abs(b.Score-want) > 1e-9 {
			t.Errorf("%s: score %.12g, solved whole %.12g", objective, b.Score, want)
		}
		for _, h := range res.Heuristics {
			if h.Score > b.Score+1e-9 {
				t.Errorf("%s: heuristic %s scores %.12g, above the best %.12g", objective, h.Name, h.Score, b.Score)
			}
		}
		t.Logf("%s: %d group solves, %d moves, %d restarts", objective, res.GroupSolves, res.Moves, res.Restarts)
		if res.GroupSolves == 0 || res.GroupSolves >= res.Moves {
			t.Errorf("%s: %d group solves for %d moves", objective, res.GroupSolves, res.Moves)
		}
	}
}

// TestSharedSpecErrors: a bad "resources" entry is reported with the file,
// line and column of the value at fault, its field path and what was
// expected.
func TestSharedSpecErrors(t *testing.T) {
	doc := func(res string) string {
		return "{\"etc\": [[1, 2], [3, 4], [5, 6]],\n \"resources\": {\"Net\":\n  " + res + "}}"
	}
	tests := []struct{ name, doc, want string }{
		{"rate", doc(`{"machines": ["M1"], "rate": -1, "latency": 1, "data": 1}`),
			"s.json:3:32: error: resources.Net.rate: resource Net: the rate (data moved per second by one transfer) must be positive, found -1"},
		{"latency", doc(`{"machines": ["M1"], "rate": 1, "data": 1}`),
			"s.json:3:3: error: resources.Net.latency: resource Net: the latency (mean time in seconds of a request for a slot) must be positive, found 0"},
		{"no such machine", doc(`{"machines": ["M1", "M9"], "rate": 1, "latency": 1, "data": 1}`),
			`s.json:3:23: error: resources.Net.machines[1]: resource Net: no machine "M9" (the machines are M1, M2)`},
		{"machine twice", doc(`{"machines": ["M1", "M1"], "rate": 1, "latency": 1, "data": 1}`),
			"s.json:3:23: error: resources.Net.machines[1]: resource Net: machine M1 is listed twice"},
		{"no machines", doc(`{"machines": [], "rate": 1, "latency": 1, "data": 1}`),
			"error: resources.Net.machines: resource Net: expected a list of the machines that stage their input through it"},
		{"data list length", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": [1, 2]}`),
			"s.json:3:57: error: resources.Net.data: resource Net: data has 2 values, one per application (3) is needed"},
		{"negative data", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": [1, -2, 0]}`),
			"s.json:3:61: error: resources.Net.data[1]: resource Net: an application's data must be a finite number >= 0 (0: no transfer), found -2"},
		{"null data", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": [1, null, 0]}`),
			"s.json:3:61: error: resources.Net.data[1]: resource Net: expected a number (0: no transfer), found null"},
		{"data of no application", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A7": 3}}`),
			`s.json:3:64: error: resources.Net.data.A7: resource Net: no application "A7"`},
		{"all data zero", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": 0}`),
			"s.json:3:57: error: resources.Net.data: resource Net: no application has data on it"},
		{"data missing", doc(`{"machines": ["M1"], "rate": 1, "latency": 1}`),
			"error: resources.Net.data: resource Net: missing data"},
		{"capacity", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "capacity": -2, "data": 1}`),
			"s.json:3:61: error: resources.Net.capacity: resource Net: capacity (transfers under way at once) must be from 1 to 1000, found -2"},
		{"unknown field", doc(`{"machines": ["M1"], "rate": 1, "latency": 1, "data": 1, "speed": 3}`),
			"resources.Net.speed"},
		{"name of a machine", "{\"etc\": [[1, 2]],\n \"resources\": {\"M2\": {\"machines\": [\"M1\"], \"rate\": 1, \"latency\": 1, \"data\": 1}}}",
			`error: resources.M2: resource "M2" has the name of a machine (machines[1])`},
		{"lower-case name", "{\"etc\": [[1, 2]],\n \"resources\": {\"net\": {\"machines\": [\"M1\"], \"rate\": 1, \"latency\": 1, \"data\": 1}}}",
			`error: resources.net: resource name "net" must start with an upper-case letter`},
		{"application named like a resource state", "{\"applications\": [\"Net_1\"], \"etc\": [[1, 2]],\n \"resources\": {\"Net\": {\"machines\": [\"M1\"], \"rate\": 1, \"latency\": 1, \"data\": 1}}}",
			`s.json:1:19: error: applications[0]: name "Net_1" is reserved for a state of resource Net`},
		{"transfer rate overflows", doc(`{"machines": ["M1"], "rate": 1e300, "latency": 1, "data": [1e-300, 1, 1]}`),
			"s.json:3:61: error: resources.Net.data: resource Net: the transfer rate of A1 (rate / data = 1e+300 / 1e-300) is out of the range of float64"},
		{"request rate overflows", doc(`{"machines": ["M1"], "rate": 1, "latency": 1e-310, "data": 1}`),
			"s.json:3:46: error: resources.Net.latency: resource Net: latency 1e-310 is too small"},
		{"empty", "{\"etc\": [[1, 2]],\n \"resources\": {}}",
			"s.json:2:15: error: resources: resources is empty"},
	}
	for _, tt := range tests {
		_, err := spec.ParseSpec("s.json", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v\nwant %q", tt.name, err, tt.want)
		}
	}
}

// TestCoupledBoundAboveBruteForce: on a small coupled instance (5
// applications, 3 machines, two of them sharing a network: 243 mappings),
// optimize's upper bound is at least the best score over every mapping,
// found by enumeration (each scored by the search's group evaluation,
// which TestCoupledSearchMatchesFullSolve ties to AnalyzeGroups), and its
// result is no better than that best score, and equal to it once the
// search has tried a thousand moves.
func TestCoupledBoundAboveBruteForce(t *testing.T) {
	const doc = `{"etc": [[3, 4, 6], [4, 3, 5], [5, 5, 4], [2, 3, 3], [6, 4, 5]],
 "workload": {"nominal": 1, "perturbed": 1.4},
 "availability": {"nominal": [1, 0.9, 0.8], "perturbed": 0.6},
 "resources": {"Net": {"machines": ["M1", "M2"], "rate": 10, "latency": 0.4, "data": [20, 5, 30, 10, 15]}}}`
	in, err := spec.ParseSpec("s.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	const beta = 14
	for _, objective := range []string{"min", "joint"} {
		o := newOptimizer(context.Background(), in, OptimizeOptions{Beta: beta, Objective: objective, Epsilon: 1e-10, Budget: time.Minute, MakespanSlack: -1}, time.Now())
		best := -1.0
		for code := 0; code < 243; code++ {
			alloc := make([][]int, 3)
			for a, c := 0, code; a < 5; a, c = a+1, c/3 {
				alloc[c%3] = append(alloc[c%3], a)
			}
			var st searchState
			if err := o.load(&st, alloc); err != nil {
				t.Fatal(err)
			}
			best = math.Max(best, st.s1)
		}
		res, err := Optimize(context.Background(), in, OptimizeOptions{Beta: beta, Objective: objective, Budget: time.Second, Seed: 1, MakespanSlack: -1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bound < best-1e-9 {
			t.Errorf("%s: upper bound %.12g below the best mapping's %.12g", objective, res.Bound, best)
		}
		// No mapping scores above the best; a search that tried enough
		// moves (not cut short on a loaded machine) finds it.
		if res.Best.Score > best+1e-9 || res.Moves >= 1000 && math.Abs(res.Best.Score-best) > 1e-9 {
			t.Errorf("%s: optimize found %.12g after %d moves, the best of every mapping is %.12g", objective, res.Best.Score, res.Moves, best)
		}
		t.Logf("%s: best %.6f, bound %.6f, %d moves, %d group solves", objective, best, res.Bound, res.Moves, res.GroupSolves)
	}
}

// TestSharedGenDifferential: random small specifications with shared
// resources (one or two, capacity 1 or 2, machines on one or both, data
// 0 for some applications, Erlang work sometimes) and random mappings: the
// model gen writes, solved by AnalyzeGroups, has the groups the
// specification implies (machines that stage through a common resource,
// transitively) and the figures of the reference semantics on the whole
// model with every machine stopped after its last application
// (reference.Options.Stop): each machine's P(F <= beta) and E[F], P(all)
// and E[makespan], to 1e-9. Both sides read the generated model, so this
// checks the groups and the solution of every shape gen writes;
// TestSharedGenMatchesHandBuilt checks that the model is the one meant
// (a resource's capacity written wrong fails there, not here).
func TestSharedGenDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 4))
	round := func(x float64) float64 { return math.Round(x*100) / 100 }
	for trial := 0; trial < 20; trial++ {
		nMach, nApps := 2+rng.IntN(2), 3+rng.IntN(3)
		etc := make([][]float64, nApps)
		for i := range etc {
			etc[i] = make([]float64, nMach)
			for j := range etc[i] {
				etc[i][j] = round(1 + 4*rng.Float64())
			}
		}
		perturbedW, perturbedA := make([]float64, nApps), make([]float64, nMach)
		for i := range perturbedW {
			perturbedW[i] = round(1 + rng.Float64())
		}
		for j := range perturbedA {
			perturbedA[j] = round(0.5 + 0.5*rng.Float64())
		}
		machines := make([]string, nMach)
		for j := range machines {
			machines[j] = fmt.Sprintf("M%d", j+1)
		}
		resources := map[string]any{}
		users := map[string][]int{}
		data := map[string][]float64{}
		for k, name := range []string{"Net", "Disk"}[:1+rng.IntN(2)] {
			var ms []string
			for j := range machines {
				if rng.IntN(3) > 0 || j == k {
					ms = append(ms, machines[j])
					users[name] = append(users[name], j)
				}
			}
			d := make([]float64, nApps)
			for i := range d {
				if rng.IntN(4) > 0 {
					d[i] = float64(5 + rng.IntN(26))
				}
			}
			d[rng.IntN(nApps)] = 10
			data[name] = d
			resources[name] = map[string]any{"machines": ms, "rate": round(5 + 15*rng.Float64()),
				"latency": round(0.1 + 0.4*rng.Float64()), "capacity": 1 + rng.IntN(2), "data": d}
		}
		alloc := map[string][]string{}
		onMachine := make([][]int, nMach)
		for i := 0; i < nApps; i++ {
			j := rng.IntN(nMach)
			alloc[machines[j]] = append(alloc[machines[j]], fmt.Sprintf("A%d", i+1))
			onMachine[j] = append(onMachine[j], i)
		}
		doc := map[string]any{"etc": etc, "workload": map[string]any{"nominal": 1, "perturbed": perturbedW},
			"availability": map[string]any{"nominal": 1, "perturbed": perturbedA}, "resources": resources,
			"mappings": []any{map[string]any{"name": "m", "allocation": alloc}}}
		if rng.IntN(4) == 0 {
			doc["work"] = map[string]any{"erlang": 2}
		}
		text, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		in, err := spec.ParseSpec("s.json", text)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		var src strings.Builder
		if err := in.Generate(&src, in.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		m, diags := lang.Load("gen.pepa", []byte(src.String()))
		if diags.HasErrors() {
			t.Fatalf("trial %d: %v\n%s", trial, diags.Err(), src.String())
		}

		// The groups the specification implies: staging machines joined
		// through the resources they stage through.
		group := make([]int, nMach)
		for j := range group {
			group[j] = j
		}
		find := func(j int) int {
			for group[j] != j {
				j = group[j]
			}
			return j
		}
		for name, us := range users {
			first := -1
			for _, j := range us {
				stages := false
				for _, i := range onMachine[j] {
					stages = stages || data[name][i] > 0
				}
				if !stages {
					continue
				}
				if first < 0 {
					first = j
				} else {
					group[find(j)] = find(first)
				}
			}
		}
		wantGroups := map[string]bool{}
		for r := 0; r < nMach; r++ {
			var g []string
			for j := 0; j < nMach; j++ {
				if len(onMachine[j]) > 0 && find(j) == r {
					g = append(g, machines[j])
				}
			}
			if len(g) > 0 {
				wantGroups[strings.Join(g, ",")] = true
			}
		}

		// The reference, every machine stopped after its last application.
		stop := map[string][]string{}
		var present []int
		for j := range machines {
			if n := len(onMachine[j]); n > 0 {
				stop[machines[j]] = []string{fmt.Sprintf("compute%d", onMachine[j][n-1]+1)}
				present = append(present, j)
			}
		}
		rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: stop})
		if err != nil {
			t.Fatalf("trial %d: reference: %v", trial, err)
		}
		var names []string
		for _, j := range present {
			names = append(names, machines[j])
		}
		done := rc.FinishedStates(names)
		all := rc.InitialStates(done)
		makespan, err := rc.Mean(all)
		if err != nil {
			t.Fatal(err)
		}
		beta := round(0.8 * makespan)

		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12}})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		t.Logf("trial %d: %d states, %d resources, phases %d, groups %v, beta %g", trial, rc.N(), len(resources), in.Phases, wantGroups, beta)
		gotGroups := map[string]bool{}
		for _, g := range got.Groups {
			gotGroups[strings.Join(g.Machines, ",")] = true
		}
		if !maps.Equal(gotGroups, wantGroups) {
			t.Errorf("trial %d: groups %v, want %v\n%s", trial, gotGroups, wantGroups, text)
		}
		for k, j := range present {
			p := rc.InitialActions(stop[machines[j]])
			v, e := rc.CDFs(p, []float64{beta})
			mean, err := rc.Mean(p)
			if err != nil {
				t.Fatal(err)
			}
			mr := got.Machines[k]
			if mr.Name != machines[j] || math.Abs(mr.PByBeta-v[0]) > 1e-9+e[0] || math.Abs(mr.Mean-mean) > 1e-9*math.Max(1, mean) {
				t.Errorf("trial %d: %s P(F <= %g) %.12g E[F] %.12g, reference (%s) %.12g %.12g\n%s", trial, mr.Name, beta, mr.PByBeta, mr.Mean, machines[j], v[0], mean, text)
			}
		}
		v, e := rc.CDFs(all, []float64{beta})
		if math.Abs(got.PAllByBeta-v[0]) > 1e-9+e[0] || math.Abs(got.ExpectedMakespan-makespan) > 1e-9*makespan+got.MakespanError {
			t.Errorf("trial %d: P(all) %.12g E[makespan] %.12g, reference %.12g %.12g\n%s", trial, got.PAllByBeta, got.ExpectedMakespan, v[0], makespan, text)
		}
	}
}

// optimizeUntil runs Optimize, and again with twice the time budget (up
// to 8 times the first) while done says its result is not yet what the
// test asks of it: the search stops at a wall-clock budget, and on a
// loaded machine one second makes few moves. The test then checks the
// last result as it would the first.
func optimizeUntil(t *testing.T, in *spec.Instance, opt OptimizeOptions, done func(*OptimizeResult) bool) *OptimizeResult {
	t.Helper()
	first := opt.Budget
	for {
		res, err := Optimize(context.Background(), in, opt)
		if err != nil {
			t.Fatal(err)
		}
		if done(res) || opt.Budget >= 8*first {
			return res
		}
		t.Logf("budget %v: %d moves, %d group solves: again with twice the budget", opt.Budget, res.Moves, res.GroupSolves)
		opt.Budget *= 2
	}
}
