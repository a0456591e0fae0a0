package optimize

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/models/spec"
)

// ownShareSpec draws a random specification where owners and shared
// resources meet: machines with owners of their own (either discipline,
// either start, transfers continue or pause), owners whose jobs use a
// resource, a pool of users over some desktops, one or two resources, work
// in one or two phases; and one mapping, some machines possibly idle. It
// returns the specification and, per machine, its applications.
func ownShareSpec(rng *rand.Rand) (map[string]any, [][]int) {
	round := func(x float64) float64 { return math.Round(x*100) / 100 }
	nMach, nApps := 2+rng.IntN(2), 3+rng.IntN(2)
	etc := make([][]float64, nApps)
	for i := range etc {
		etc[i] = make([]float64, nMach)
		for j := range etc[i] {
			etc[i][j] = round(1 + 4*rng.Float64())
		}
	}
	machines := make([]string, nMach)
	for j := range machines {
		machines[j] = fmt.Sprintf("M%d", j+1)
	}
	resNames := []string{"Net", "Disk"}[:1+rng.IntN(2)]
	// A pool over two or three machines, a third of the time.
	inPool := make([]bool, nMach)
	pools := map[string]any{}
	if rng.IntN(3) == 0 {
		var desks []string
		for j := range machines {
			if j < 2 || rng.IntN(2) == 0 {
				inPool[j] = true
				desks = append(desks, machines[j])
			}
		}
		pool := map[string]any{"machines": desks, "users": 1 + rng.IntN(3),
			"arrival": round(0.05 + 0.3*rng.Float64()), "service": round(0.3 + rng.Float64())}
		if rng.IntN(2) == 0 {
			pool["transfers"] = "pause"
		}
		pools["Lab"] = pool
	}
	owners := map[string]any{}
	availP := make([]float64, nMach)
	for j := range machines {
		availP[j] = round(0.5 + 0.5*rng.Float64())
		if inPool[j] {
			availP[j] = 1
			continue
		}
		if rng.IntN(3) == 0 {
			continue // dedicated
		}
		availP[j] = 1
		o := map[string]any{"arrival": round(0.1 + 0.4*rng.Float64()), "service": round(0.5 + 1.5*rng.Float64()),
			"capacity": 1 + rng.IntN(2)}
		if rng.IntN(2) == 0 {
			o["start"] = "stationary"
		}
		switch rng.IntN(4) {
		case 0:
			o["discipline"] = "sharing"
		case 1:
			o["uses"] = []string{resNames[rng.IntN(len(resNames))]}
			o["data"] = float64(5 + rng.IntN(20))
		}
		if o["discipline"] != "sharing" && rng.IntN(2) == 0 {
			o["transfers"] = "pause"
		}
		owners[machines[j]] = o
	}
	resources := map[string]any{}
	for k, name := range resNames {
		var ms []string
		for j := range machines {
			if rng.IntN(3) > 0 || j == k {
				ms = append(ms, machines[j])
			}
		}
		d := make([]float64, nApps)
		for i := range d {
			if rng.IntN(3) > 0 {
				d[i] = float64(5 + rng.IntN(26))
			}
		}
		d[rng.IntN(nApps)] = 10
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
	perturbedW := make([]float64, nApps)
	for i := range perturbedW {
		perturbedW[i] = round(1 + rng.Float64())
	}
	doc := map[string]any{"machines": machines, "etc": etc, "workload": map[string]any{"nominal": 1, "perturbed": perturbedW},
		"availability": map[string]any{"nominal": 1, "perturbed": availP}, "resources": resources,
		"mappings": []any{map[string]any{"name": "m", "allocation": alloc}}}
	if len(owners) > 0 {
		doc["owners"] = owners
	}
	if len(pools) > 0 {
		doc["pools"] = pools
	}
	if rng.IntN(5) == 0 {
		doc["work"] = map[string]any{"erlang": 2}
	}
	return doc, onMachine
}

// expectedGroups are the groups of machines computing something that a
// specification implies (semantics.md section 4): machines joined through
// each resource they stage input through or their owner's jobs use, and
// the desktops of each pool; machines computing nothing left out.
func expectedGroups(in *spec.Instance, onMachine [][]int) map[string]bool {
	n := len(in.Machines)
	parent := make([]int, n)
	for j := range parent {
		parent[j] = j
	}
	find := func(j int) int {
		for parent[j] != j {
			j = parent[j]
		}
		return j
	}
	union := func(sets [][]int) {
		for _, set := range sets {
			for _, j := range set[min(1, len(set)):] {
				parent[find(j)] = find(set[0])
			}
		}
	}
	var sets [][]int
	for k, res := range in.Resources {
		var set []int
		for j := 0; j < n; j++ {
			uses := in.Owners[j] != nil && slices.Contains(in.Owners[j].Uses, res.Name())
			for _, a := range onMachine[j] {
				uses = uses || (res.Users[j] && res.AppData[a] > 0)
			}
			if uses {
				set = append(set, j)
			}
		}
		_ = k
		sets = append(sets, set)
	}
	for p := range in.Pools {
		var set []int
		for j := 0; j < n; j++ {
			if in.Pools[p].Member[j] {
				set = append(set, j)
			}
		}
		sets = append(sets, set)
	}
	union(sets)
	out := map[string]bool{}
	for r := 0; r < n; r++ {
		var g []string
		for j := 0; j < n; j++ {
			if len(onMachine[j]) > 0 && find(j) == r {
				g = append(g, in.Machines[j])
			}
		}
		if len(g) > 0 {
			out[strings.Join(g, ",")] = true
		}
	}
	return out
}

// Longer runs of TestOwnShareGenDifferential: go test ./models -run
// OwnShareGenDifferential -ownshare.n 1000 -ownshare.seed 7.
var (
	ownShareTrials = flag.Int("ownshare.n", 24, "TestOwnShareGenDifferential: random specifications")
	ownShareSeed   = flag.Uint64("ownshare.seed", 33, "TestOwnShareGenDifferential: the seed of its specifications")
)

// pragmaStart is the start distribution the pragmas give over the
// reference chain's states: each component with a //pepa:initial
// distribution in one of its states, every other in its initial one.
func pragmaStart(rc *reference.Chain, pr *models.Pragmas) []float64 {
	alpha := make([]float64, rc.N())
	for i, st := range rc.States {
		w := 1.0
		for l, name := range rc.Leaves {
			if d, ok := pr.InitialOf(name); ok {
				w *= d[st[l]]
			} else if st[l] != rc.States[0][l] {
				w = 0
			}
		}
		alpha[i] = w
	}
	return alpha
}

// TestOwnShareGenDifferential: random specifications with owners and
// shared resources together (ownShareSpec: owners of every discipline and
// start staging input, owners whose jobs use a resource, a pool), each
// generated model solved by AnalyzeGroups (what pepa robustness prints),
// against the reference semantics on the same model with every machine
// stopped after its last application and the pragmas' start: every
// machine's P(F <= beta) and E[F], P(all) and E[makespan], to 1e-9; the
// groups found are those the specification implies, and the optimizer's
// evaluation of the mapping by groups (its own group models, cached) gives
// the whole model's figures.
func TestOwnShareGenDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(*ownShareSeed, 1))
	seen := map[string]int{}
	for trial := 0; trial < *ownShareTrials; trial++ {
		doc, onMachine := ownShareSpec(rng)
		text, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		in, err := spec.ParseSpec("s.json", text)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		for j, o := range in.Owners {
			switch {
			case o == nil:
			case len(o.Uses) > 0:
				seen["owner uses a resource"]++
			case in.Stages(j, onMachine[j]):
				seen[fmt.Sprintf("owner (%s, %s, transfers %q) stages", o.Discipline, o.Start, o.Transfers)]++
			}
		}
		if len(in.Pools) > 0 {
			seen["pool"]++
		}
		var src strings.Builder
		if err := in.Generate(&src, in.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		m, diags := lang.Load("gen.pepa", []byte(src.String()))
		if diags.HasErrors() {
			t.Fatalf("trial %d: %v\n%s", trial, diags.Err(), src.String())
		}
		pragmas, err := models.ReadPragmas(m.File)
		if err != nil {
			t.Fatal(err)
		}

		stop := map[string][]string{}
		var present []string
		for j, mach := range in.Machines {
			if n := len(onMachine[j]); n > 0 {
				stop[mach] = []string{fmt.Sprintf("compute%d", onMachine[j][n-1]+1)}
				present = append(present, mach)
			}
		}
		rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: stop})
		if err != nil {
			t.Fatalf("trial %d: reference: %v", trial, err)
		}
		alpha := pragmaStart(rc, pragmas)
		all := rc.InitialStates(rc.FinishedStates(present))
		all.Alpha = alpha
		makespan, err := rc.Mean(all)
		if err != nil {
			t.Fatal(err)
		}
		beta := math.Round(80*makespan) / 100

		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12},
			Pragmas: pragmas})
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		wantGroups := expectedGroups(in, onMachine)
		gotGroups := map[string]bool{}
		for _, g := range got.Groups {
			gotGroups[strings.Join(g.Machines, ",")] = true
		}
		t.Logf("trial %d: %d states, groups %v, beta %g", trial, rc.N(), wantGroups, beta)
		if !maps.Equal(gotGroups, wantGroups) {
			t.Errorf("trial %d: groups %v, want %v\n%s", trial, gotGroups, wantGroups, text)
		}
		for k, mach := range present {
			p := rc.InitialActions(stop[mach])
			p.Alpha = alpha
			v, e := rc.CDFs(p, []float64{beta})
			mean, err := rc.Mean(p)
			if err != nil {
				t.Fatal(err)
			}
			mr := got.Machines[k]
			if mr.Name != mach || math.Abs(mr.PByBeta-v[0]) > 1e-9+e[0] || math.Abs(mr.Mean-mean) > 1e-9*math.Max(1, mean) {
				t.Errorf("trial %d: %s P(F <= %g) %.12g E[F] %.12g, reference (%s) %.12g %.12g\n%s", trial, mr.Name, beta, mr.PByBeta, mr.Mean, mach, v[0], mean, text)
			}
		}
		v, e := rc.CDFs(all, []float64{beta})
		if math.Abs(got.PAllByBeta-v[0]) > 1e-9+e[0] || math.Abs(got.ExpectedMakespan-makespan) > 1e-9*makespan+got.MakespanError {
			t.Errorf("trial %d: P(all) %.12g E[makespan] %.12g, reference %.12g %.12g\n%s", trial, got.PAllByBeta, got.ExpectedMakespan, v[0], makespan, text)
		}

		// The search's figures for this mapping, by its own groups.
		o := newOptimizer(context.Background(), in, OptimizeOptions{Beta: beta, Objective: "joint", Epsilon: 1e-12, Budget: time.Minute, MakespanSlack: -1}, time.Now())
		var st searchState
		if err := o.load(&st, onMachine); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkState(t, o, &st, fmt.Sprintf("trial %d", trial))
	}
	keys := slices.Collect(maps.Keys(seen))
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: %d", k, seen[k])
	}
	for _, want := range []string{"owner uses a resource", "pool"} {
		if seen[want] == 0 {
			t.Errorf("no trial has a case %q", want)
		}
	}
}

// TestOwnShareOptimizeFindsOptimum: on a small instance with owners and a
// network (4 applications, 3 machines: M1's own owner preempts it and
// pauses its transfers, M2's owner stages its jobs' input over the network
// too, M3 is dedicated; 81 mappings), optimize's best mapping scores what
// the best of every mapping scores, each mapping solved whole (the model
// gen writes, by AnalyzeGroups: no code of the search), for both
// objectives, and its bound is above it.
func TestOwnShareOptimizeFindsOptimum(t *testing.T) {
	const doc = `{"etc": [[3, 4, 5], [4, 3, 5], [5, 5, 4], [2, 3, 3]],
 "workload": {"nominal": 1, "perturbed": 1.4},
 "availability": {"nominal": [1, 1, 0.9], "perturbed": [1, 1, 0.6]},
 "owners": {"M1": {"arrival": 0.2, "service": 1, "transfers": "pause"},
            "M2": {"arrival": 0.25, "service": 0.8, "capacity": 2, "uses": ["Net"], "data": 20, "start": "stationary"}},
 "resources": {"Net": {"machines": ["M1", "M2", "M3"], "rate": 10, "latency": 0.4, "data": [20, 5, 30, 10]}}}`
	in, err := spec.ParseSpec("s.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	const beta = 12
	type scored struct{ min, joint float64 }
	var all []scored
	for code := 0; code < 81; code++ {
		alloc := make([][]int, 3)
		for a, c := 0, code; a < 4; a, c = a+1, c/3 {
			alloc[c%3] = append(alloc[c%3], a)
		}
		_, r := fullSolve(t, in, alloc, beta)
		all = append(all, scored{r.Robustness, r.PAllByBeta})
	}
	for _, objective := range []string{"min", "joint"} {
		best := -1.0
		for _, s := range all {
			best = math.Max(best, map[string]float64{"min": s.min, "joint": s.joint}[objective])
		}
		res := optimizeUntil(t, in, OptimizeOptions{Beta: beta, Objective: objective, Budget: time.Second, Seed: 1, MakespanSlack: -1}, func(res *OptimizeResult) bool {
			return math.Abs(res.Best.Score-best) <= 1e-9
		})
		if math.Abs(res.Best.Score-best) > 1e-9 || res.Bound < best-1e-9 {
			t.Errorf("%s: optimize found %.12g (bound %.12g) after %d moves, the best of the 81 mappings is %.12g", objective, res.Best.Score, res.Bound, res.Moves, best)
		}
		t.Logf("%s: best %.9f, bound %.6f, %d moves, %d group solves", objective, best, res.Bound, res.Moves, res.GroupSolves)
	}
}

// TestOwnShareSpecErrors: each new field's faults are reported with the
// file, line and column of the value at fault, its path and what was
// expected; one error per cause.
func TestOwnShareSpecErrors(t *testing.T) {
	doc := func(owners, pools string) string {
		s := "{\"etc\": [[1, 2, 3], [3, 4, 5]],\n \"resources\": {\"Net\": {\"machines\": [\"M1\", \"M2\"], \"rate\": 1, \"latency\": 1, \"data\": 1}}"
		if owners != "" {
			s += ",\n \"owners\": " + owners
		}
		if pools != "" {
			s += ",\n \"pools\": " + pools
		}
		return s + "}"
	}
	tests := []struct{ name, doc, want string }{
		{"transfers", doc(`{"M1": {"arrival": 1, "service": 2, "transfers": "stop"}}`, ""),
			`s.json:3:61: error: owners.M1.transfers: owner of M1: transfers must be continue (an application's transfer goes on while the owner works) or pause, found "stop"`},
		{"pause under sharing", doc(`{"M1": {"arrival": 1, "service": 2, "discipline": "sharing", "transfers": "pause"}}`, ""),
			"s.json:3:86: error: owners.M1.transfers: owner of M1: transfers pause needs discipline preemptive"},
		{"uses no such resource", doc(`{"M1": {"arrival": 1, "service": 2, "uses": ["Disk"], "data": 3}}`, ""),
			`s.json:3:57: error: owners.M1.uses[0]: owner of M1: no resource "Disk" (the resources are Net)`},
		{"uses without data", doc(`{"M1": {"arrival": 1, "service": 2, "uses": ["Net"]}}`, ""),
			"s.json:3:19: error: owners.M1.data: owner of M1: missing data"},
		{"uses under sharing", doc(`{"M1": {"arrival": 1, "service": 2, "discipline": "sharing", "uses": ["Net"], "data": 3}}`, ""),
			"s.json:3:81: error: owners.M1.uses: owner of M1: an owner whose jobs use a resource must be preemptive"},
		{"data without uses", doc(`{"M1": {"arrival": 1, "service": 2, "data": 3}}`, ""),
			"s.json:3:56: error: owners.M1.data: owner of M1: data is given but uses names no resource"},
		{"negative owner data", doc(`{"M1": {"arrival": 1, "service": 2, "uses": ["Net"], "data": {"Net": -1}}}`, ""),
			"s.json:3:81: error: owners.M1.data.Net: owner of M1: the data of a job's input on Net must be a positive number, found -1"},
		{"pool users", doc("", `{"Lab": {"machines": ["M1", "M2"], "users": 0, "arrival": 1, "service": 1}}`),
			"s.json:3:55: error: pools.Lab.users: pool Lab: users (the number of people who may come) must be from 1 to 1000, found 0"},
		{"pool sharing", doc("", `{"Lab": {"machines": ["M1"], "users": 1, "arrival": 1, "service": 1, "discipline": "sharing"}}`),
			"error: pools.Lab.discipline: pool Lab: discipline sharing is not supported for a pool"},
		{"pool stationary", doc("", `{"Lab": {"machines": ["M1"], "users": 1, "arrival": 1, "service": 1, "start": "stationary"}}`),
			"error: pools.Lab.start: pool Lab: start stationary is not supported for a pool"},
		{"pool machine with an owner", doc(`{"M1": {"arrival": 1, "service": 2}}`, `{"Lab": {"machines": ["M2", "M1"], "users": 1, "arrival": 1, "service": 1}}`),
			"s.json:4:39: error: pools.Lab.machines[1]: pool Lab: machine M1 has an owner of its own (owners.M1): a machine has one owner, its own or a pool"},
		{"pool no such machine", doc("", `{"Lab": {"machines": ["M7"], "users": 1, "arrival": 1, "service": 1}}`),
			`s.json:3:33: error: pools.Lab.machines[0]: pool Lab: no machine "M7" (the machines are M1, M2, M3)`},
		{"pool named like a machine", doc("", `{"M2": {"machines": ["M1"], "users": 1, "arrival": 1, "service": 1}}`),
			`error: pools.M2: pool "M2" has the name of a machine (machines[1])`},
		{"application named like a seat", "{\"applications\": [\"Lab_M1\", \"A2\"], \"etc\": [[1, 2], [3, 4]],\n \"pools\": {\"Lab\": {\"machines\": [\"M1\"], \"users\": 1, \"arrival\": 1, \"service\": 1}}}",
			`error: applications[0]: name "Lab_M1" is reserved for a state of pool Lab`},
		{"pool unknown field", doc("", `{"Lab": {"machines": ["M1"], "users": 1, "arrival": 1, "service": 1, "seats": 2}}`),
			"pools.Lab.seats: unknown field \"seats\" (the fields here are machines, users, arrival, service, discipline, start, transfers)"},
	}
	for _, tt := range tests {
		_, err := spec.ParseSpec("s.json", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v\nwant %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Count(err.Error(), "error:") != 1 {
			t.Errorf("%s: %d errors, want one:\n%v", tt.name, strings.Count(err.Error(), "error:"), err)
		}
	}
}

// TestOwnSharePRISM: one specification of each new case in
// testdata/ownshare (a: a machine with its own owner, stationary, pausing
// its transfers over a network it shares; b: an owner whose jobs use the
// network; c: a pool of two users over three desktops, one computing
// nothing), generated and solved by AnalyzeGroups, against the figures of
// models written by hand in PRISM's language (the .sm files there,
// prism-results.txt: PRISM within its 1e-9, and a second dense solve of
// the same chains to 12 digits, the values below), beta = 10.
func TestOwnSharePRISM(t *testing.T) {
	want := map[string][6]float64{ // P(F1 <= 10), E[F1], P(F2 <= 10), E[F2], P(all), E[makespan]
		"a": {0.354541288408, 13.8462378115, 0.497294026758, 11.5812642710, 0.190952201137, 16.5325322225},
		"b": {0.756610263357, 7.33327247504, 0.464628055044, 11.9894884532, 0.350421936435, 13.8221465791},
		"c": {0.592170854990, 10.1642022032, 0.476709018844, 11.9329179002, 0.291022097748, 14.6786275564},
	}
	for _, name := range []string{"a", "b", "c"} {
		in, err := spec.LoadSpec("../../testdata/ownshare/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		onMachine, err := in.Allocation(in.Mappings[0])
		if err != nil {
			t.Fatal(err)
		}
		_, r := fullSolve(t, in, onMachine, 10)
		w := want[name]
		got := [6]float64{r.Machines[0].PByBeta, r.Machines[0].Mean, r.Machines[1].PByBeta, r.Machines[1].Mean, r.PAllByBeta, r.ExpectedMakespan}
		for i := range got {
			if math.Abs(got[i]-w[i]) > 1e-10*math.Max(1, w[i]) {
				t.Errorf("%s: figure %d is %.12g, PRISM's model %.12g", name, i, got[i], w[i])
			}
		}
	}
}

// TestOwnShareWriteSpecRoundTrip: the specification optimize writes for a
// mapping (WriteSpec: every value resolved) generates the same model as
// the original, byte for byte, with pools, owners that use resources and
// owners that pause transfers, and the machines' power.
func TestOwnShareWriteSpecRoundTrip(t *testing.T) {
	for _, file := range []string{"../../testdata/spec-lab.json", "../../testdata/ownshare/a.json", "../../testdata/ownshare/b.json", "../../testdata/ownshare/c.json", "../../testdata/spec-energy.json"} {
		in, err := spec.LoadSpec(file)
		if err != nil {
			t.Fatal(err)
		}
		m := in.Mappings[0]
		var want, doc, got strings.Builder
		if err := in.Generate(&want, m); err != nil {
			t.Fatal(err)
		}
		if err := in.WriteSpec(&doc, m); err != nil {
			t.Fatal(err)
		}
		again, err := spec.ParseSpec(in.SpecFile, []byte(doc.String()))
		if err != nil {
			t.Fatalf("%s: written doc: %v\n%s", file, err, doc.String())
		}
		if err := again.Generate(&got, again.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: the written specification generates another model:\n%s", file, doc.String())
		}
	}
}
