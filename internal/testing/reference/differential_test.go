package reference_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/internal/testing/randmodel"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
	"pepa/passage/laplace"
)

var (
	flagN          = flag.Int("reference.n", 300, "number of small random models TestDifferential runs")
	flagSeed       = flag.Int64("reference.seed", 1, "first seed of the differential test's random models")
	flagMediumN    = flag.Int("reference.medium", 3, "number of medium random models (about 1,000 to 5,000 states) TestDifferentialMedium runs")
	flagMediumSeed = flag.Int64("reference.medium.seed", 1, "first seed of TestDifferentialMedium's models")
)

// minCompared is the share of the valid generated models (those the
// reference does not refuse as invalid) that must be compared: a run whose
// models mostly fall outside the reference's reach guards nothing.
const minCompared = 0.9

// profile is a size of random model and what the test does with it.
type profile struct {
	name      string
	gen       randmodel.Profile
	refStates int // the reference's state limit
	// maxCT bounds q*t of the CDF time points, so that a stiff chain
	// does not take minutes: CDFs are compared up to that horizon.
	maxCT float64
	// forcePaths runs every path-forcing configuration on each model
	// (the Krylov steady-state solver, small derivation chunks, iterative
	// mean blocks); small models reach only some of them otherwise.
	forcePaths bool
}

var (
	smallProfile  = profile{name: "small", gen: randmodel.Small, refStates: 400, maxCT: 2e4}
	mediumProfile = profile{name: "medium", gen: randmodel.Medium, refStates: 6000, maxCT: 2000, forcePaths: true}
)

// Tolerances: each comparison allows what the real solver claims (its
// Epsilon, its throughput error estimates, its mean bounds) plus the
// reference's own error. See the comparisons for each.
const (
	// unitRoundoff is float64's, 2^-53.
	unitRoundoff = 0x1p-53
	// steadyTolerance is what the test asks of the steady-state solver
	// (SteadyOptions.Tolerance, its default).
	steadyTolerance = 1e-12
	// meanTolerance is the accuracy the mean solver states: every value
	// within 1e-12 relative (passage.MeanTimes).
	meanTolerance = 1e-12
)

// disagreement is one difference between a real solver and the reference.
type disagreement struct {
	Kind   string // "steady-refusal", "throughput", "passage-cdf", "passage-mean", "passage-error", ...
	Where  string // which configuration: "flat", "flat-aggregated", "...-part", "...-lanes", ...
	Detail string // both values
	Facts  modelFacts
}

// modelFacts describe a model for the report of a disagreement.
type modelFacts struct {
	Stiff           bool // rates of the chain span more than 1e4
	Transient       bool // the chain has transient states (one closed class)
	TargetSelfLoop  bool // some transition labelled by a target action is a self-loop
	PassageKind     string
	StiffnessRatio  float64
	ClosedClasses   int
	ReferenceStates int
	// TermMismatch: the unaggregated real chain has another number of
	// states or transitions than the reference, or the reference has
	// derivatives identified only by the term rule (issue 13).
	TermMismatch bool
}

// tally counts what a run compared.
type tally struct {
	profile                string
	models, invalid        int
	tooBig, compared       int
	refused, solved        int
	deadlocked, reducible  int
	passages, cdfPoints    int
	means                  int
	states                 []int          // reference states of every compared model
	paths                  map[string]int // solver paths exercised (passage.Result.Path, steady methods, ...)
	features               map[string]int // generator features of the compared models
	meanTimeout            time.Duration  // bound on each real mean computation (0: none)
	unknown                map[string]int
	worstCDF, worstThrough float64 // largest error as a share of the allowed tolerance
	worstMean              float64
}

func newTally(p profile) *tally {
	return &tally{profile: p.name, unknown: map[string]int{}, paths: map[string]int{}, features: map[string]int{}}
}

func (tl *tally) path(name string) { tl.paths[name]++ }

// summary says what was compared, for the test log and the issue notes.
func (tl *tally) summary() string {
	sort.Ints(tl.states)
	stat := "none"
	if n := len(tl.states); n > 0 {
		sum := 0
		for _, s := range tl.states {
			sum += s
		}
		stat = fmt.Sprintf("min %d, median %d, max %d, total %d", tl.states[0], tl.states[n/2], tl.states[n-1], sum)
	}
	var paths []string
	for k, v := range tl.paths {
		paths = append(paths, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(paths)
	var feats []string
	for k, v := range tl.features {
		feats = append(feats, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(feats)
	return fmt.Sprintf("%s profile: %d models, %d compared (%d invalid, refused by both; %d past the reference's limit); states of the compared chains: %s\n"+
		"steady state solved for %d (%d with several closed classes: the long-run distribution from the initial state), refused for %d (%d with a deadlock); %d passages, %d CDF points, %d means\n"+
		"largest error as a share of its tolerance: CDF %.3g, throughput %.3g, mean %.3g\n"+
		"solver paths: %s\nfeatures: %s",
		tl.profile, tl.models, tl.compared, tl.invalid, tl.tooBig, stat,
		tl.solved, tl.reducible, tl.refused, tl.deadlocked, tl.passages, tl.cdfPoints, tl.means,
		tl.worstCDF, tl.worstThrough, tl.worstMean,
		strings.Join(paths, ", "), strings.Join(feats, ", "))
}

// check fails the test when too few models were compared, or when a path
// that must run did not.
func (tl *tally) check(t *testing.T, mustRun []string) {
	t.Helper()
	t.Log(tl.summary())
	valid := tl.models - tl.invalid
	if float64(tl.compared) < minCompared*float64(valid) {
		t.Errorf("only %d of %d valid models were compared (%d past the reference's limit): want at least %.0f%%", tl.compared, valid, tl.tooBig, 100*minCompared)
	}
	for _, p := range mustRun {
		if tl.paths[p] == 0 {
			t.Errorf("no comparison took solver path %q", p)
		}
	}
	if n, long := tl.paths["robustness:groups"], tl.paths["robustness:too-long"]; long > n/10 {
		t.Errorf("%d of %d robustness comparisons ran out of time", long, n+long)
	}
	if u := tl.paths["mean:unavailable"]; u > tl.means/10 {
		t.Errorf("%d of %d means unavailable: the mean solvers refuse too often to be compared", u, tl.means)
	}
	if len(tl.unknown) > 0 {
		t.Logf("disagreements by class: %v", tl.unknown)
	}
}

func TestDifferential(t *testing.T) {
	n := *flagN
	if testing.Short() {
		n = 40
	}
	start := time.Now()
	tl := newTally(smallProfile)
	for i := 0; i < n; i++ {
		runModel(t, randmodel.GenerateWith(*flagSeed+int64(i), smallProfile.gen), smallProfile, tl)
	}
	t.Logf("seeds %d to %d in %v", *flagSeed, *flagSeed+int64(n)-1, time.Since(start).Round(time.Millisecond))
	var must []string
	if n >= 100 {
		// Enough models for every path the small profile reaches: the
		// dense exponential takes stiff chains of at most 64 states.
		must = []string{"passage:forward", "passage:forward-lanes", "passage:backward", "passage:dense",
			"steady:" + steady.MethodDirect, "steady:long-run", "mean:single", "mean:dense", "part",
			"robustness:groups", "robustness:flat", "robustness:coupled-machines", "robustness:machine-with-shared",
			"robustness:groups-laplace", "robustness:flat-laplace"}
	}
	tl.check(t, must)
}

// TestDifferentialMedium compares models of 1,000 to 5,000 states: seeds
// whose chain (derived by ctmc, as a size gauge only) falls outside that
// range are passed over, and the run takes the next seed until n models
// have been compared (or 40 n seeds were tried).
func TestDifferentialMedium(t *testing.T) {
	n := *flagMediumN
	if testing.Short() {
		n = 1
	}
	start := time.Now()
	tl := newTally(mediumProfile)
	outside := 0
	seed := *flagMediumSeed
	for ; tl.compared < n && seed < *flagMediumSeed+int64(40*n); seed++ {
		gm := randmodel.GenerateWith(seed, mediumProfile.gen)
		if size := chainSize(gm); size >= 0 && (size < 1000 || size > 5000) {
			outside++
			continue
		}
		runModel(t, gm, mediumProfile, tl)
	}
	t.Logf("seeds %d to %d in %v (%d passed over: chains outside 1,000 to 5,000 states)", *flagMediumSeed, seed-1, time.Since(start).Round(time.Millisecond), outside)
	if tl.compared < n {
		t.Errorf("only %d medium models compared", tl.compared)
	}
	tl.check(t, []string{"steady:" + steady.MethodIterative, "steady:" + steady.MethodSweeps, "derive:small-chunks", "passage:forward-lanes",
		"passage:backward", "mean:iterative"})
}

// chainSize is the number of states of a generated model's chain, or -1 if
// it does not derive.
func chainSize(gm randmodel.Model) int {
	lm, diags := lang.Load("rand.pepa", []byte(gm.Source))
	if diags.HasErrors() {
		return -1
	}
	s, err := ctmc.Compile(lm, ctmc.Options{Aggregate: false})
	if err != nil {
		return -1
	}
	c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{MaxStates: 100000})
	if err != nil {
		return -1
	}
	return c.N
}

func FuzzDifferential(f *testing.F) {
	for _, s := range []int64{1, 2, 3, 42, 1000} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		// The fuzzing engine counts an input that takes 10s as hung; the
		// real mean solver can spend seconds on its sweep cap on stiff
		// chains, so bound each call.
		tl := newTally(smallProfile)
		tl.meanTimeout = 300 * time.Millisecond
		runModel(t, randmodel.Generate(seed), smallProfile, tl)
	})
}

// runModel compares every real solver with the reference on one model.
func runModel(t *testing.T, gm randmodel.Model, prof profile, tl *tally) {
	t.Helper()
	tl.models++
	lm, diags := lang.Load("rand.pepa", []byte(gm.Source))
	if diags.HasErrors() {
		t.Errorf("seed %d: generated model does not check: %v\n%s", gm.Seed, diags.Err(), gm.Source)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rc, err := reference.Derive(ctx, lm, reference.Options{MaxStates: prof.refStates})
	switch {
	case errors.Is(err, reference.ErrInvalid):
		tl.invalid++
		// The real derivation must refuse it too.
		for _, agg := range []bool{false, true} {
			s, cerr := ctmc.Compile(lm, ctmc.Options{Aggregate: agg})
			if cerr == nil {
				_, cerr = ctmc.Derive(ctx, s, ctmc.DeriveOptions{MaxStates: 100000})
			}
			if cerr == nil {
				t.Errorf("seed %d: the reference refuses the model (%v), the real derivation (aggregate %v) accepts it\nmodel:\n%s", gm.Seed, err, agg, gm.Source)
			}
		}
		return
	case errors.Is(err, reference.ErrTooManyStates):
		tl.tooBig++
		return
	case err != nil:
		t.Errorf("seed %d: reference: %v\n%s", gm.Seed, err, gm.Source)
		return
	}
	tl.compared++
	tl.states = append(tl.states, rc.N())
	for _, f := range gm.Features {
		tl.features[f]++
	}
	h := &harness{t: t, gm: gm, lm: lm, rc: rc, tl: tl, prof: prof, ctx: ctx, rng: rand.New(rand.NewSource(gm.Seed))}
	h.facts()
	h.pi, h.piErr = rc.Steady()
	if h.piErr != nil {
		tl.refused++
		tl.deadlocked++
	} else {
		tl.solved++
		if h.base.ClosedClasses > 1 {
			tl.reducible++
		}
	}
	h.choosePassages()
	for _, agg := range []bool{false, true} { // unaggregated first: it sets termMismatch
		h.compareCompiled(agg)
	}
	if len(gm.Machines) > 0 {
		h.compareRobustness()
	}
}

type harness struct {
	t     *testing.T
	gm    randmodel.Model
	lm    *lang.Model
	rc    *reference.Chain
	tl    *tally
	prof  profile
	ctx   context.Context
	rng   *rand.Rand
	base  modelFacts
	pi    []float64
	piErr error
	probs []refProblem
}

// refProblem is one passage with its reference answers.
type refProblem struct {
	kind     string   // "initial-actions", "initial-states", "plugin"
	actions  []string // target actions (initial-actions, plugin)
	sources  []string // plugin
	leaf     int      // initial-states: reference leaf and its local state
	state    string
	ts       []float64
	cdf      []float64
	cdfErr   []float64 // the reference's own error bound at each time
	mean     float64
	maxRest  float64 // the largest mean remaining time over the states the start reaches
	selfLoop bool
	refusal  error   // plugin: no source of positive weight, or no target
	epsilon  float64 // what the real solver is asked for
}

func (h *harness) facts() {
	rc := h.rc
	lo, hi := math.Inf(1), 0.0
	for _, ts := range rc.Trans {
		for _, tr := range ts {
			lo, hi = math.Min(lo, tr.Rate), math.Max(hi, tr.Rate)
		}
	}
	h.base.ReferenceStates = rc.N()
	if hi > 0 {
		h.base.StiffnessRatio = hi / lo
		h.base.Stiff = hi/lo > 1e4
	}
	classes := rc.ClosedClasses()
	h.base.ClosedClasses = len(classes)
	inClass := 0
	for _, c := range classes {
		inClass += len(c)
	}
	h.base.Transient = len(classes) == 1 && inClass < rc.N()
}

func (h *harness) report(d disagreement) {
	d.Facts.Stiff, d.Facts.Transient = h.base.Stiff, h.base.Transient
	d.Facts.StiffnessRatio, d.Facts.ClosedClasses, d.Facts.ReferenceStates = h.base.StiffnessRatio, h.base.ClosedClasses, h.base.ReferenceStates
	d.Facts.TermMismatch = h.base.TermMismatch
	h.tl.unknown[d.Kind]++
	if h.tl.unknown[d.Kind] > 3 {
		// The first three of a class carry the model; the rest one line.
		h.t.Errorf("seed %d: %s on %s: %s", h.gm.Seed, d.Kind, d.Where, d.Detail)
		return
	}
	src := h.gm.Source
	if len(src) > 4000 {
		src = src[:4000] + "\n... (regenerate with randmodel.GenerateWith(seed, " + h.prof.gen.Name + "))"
	}
	h.t.Errorf("seed %d (%s %s, %v): %s on %s: %s\nfacts: %+v\nmodel:\n%s", h.gm.Seed, h.prof.name, h.gm.Family, h.gm.Features, d.Kind, d.Where, d.Detail, d.Facts, src)
}

// actionsOf lists the actions labelling transitions of the reference chain,
// and those labelling a self-loop.
func (h *harness) actionsOf() (all, loops []string) {
	seen, seenLoop := map[string]bool{}, map[string]bool{}
	for i, ts := range h.rc.Trans {
		for _, tr := range ts {
			if tr.Action == "tau" {
				continue // not nameable as a passage target
			}
			if !seen[tr.Action] {
				seen[tr.Action] = true
				all = append(all, tr.Action)
			}
			if tr.To == i && !seenLoop[tr.Action] {
				seenLoop[tr.Action] = true
				loops = append(loops, tr.Action)
			}
		}
	}
	sort.Strings(all)
	sort.Strings(loops)
	return all, loops
}

func (h *harness) selfLoopOn(actions []string) bool {
	set := map[string]bool{}
	for _, a := range actions {
		set[a] = true
	}
	for i, ts := range h.rc.Trans {
		for _, tr := range ts {
			if tr.To == i && set[tr.Action] {
				return true
			}
		}
	}
	return false
}

// choosePassages picks the passages of the model and solves them with the
// reference.
func (h *harness) choosePassages() {
	all, loops := h.actionsOf()
	if len(all) == 0 {
		return
	}
	var targets [][]string
	targets = append(targets, []string{all[h.rng.Intn(len(all))]})
	if len(loops) > 0 {
		targets = append(targets, []string{loops[h.rng.Intn(len(loops))]})
	}
	if len(all) > 1 {
		a, b := h.rng.Intn(len(all)), h.rng.Intn(len(all))
		if a != b {
			targets = append(targets, []string{all[a], all[b]})
		}
	}
	targets = append(targets, h.gm.Cycles...)
	for _, acts := range targets {
		h.addProblem(refProblem{kind: "initial-actions", actions: acts})
	}
	// A state target: a leaf in a named local state (a constant).
	for try := 0; try < 3; try++ {
		i := h.rng.Intn(h.rc.N())
		l := h.rng.Intn(len(h.rc.Leaves))
		if st := h.rc.States[i][l]; isConstant(st) {
			h.addProblem(refProblem{kind: "initial-states", leaf: l, state: st})
			break
		}
	}
	if h.piErr == nil && h.base.ClosedClasses == 1 {
		// Plug-in passages weigh by the steady state proper: one class.
		var pairs [][2][]string
		for k := range h.gm.Cycles {
			pairs = append(pairs, [2][]string{h.gm.FirstActions[k], h.gm.Cycles[k]})
		}
		if len(all) > 1 {
			a, b := h.rng.Intn(len(all)), h.rng.Intn(len(all))
			if a != b {
				pairs = append(pairs, [2][]string{{all[a]}, {all[b]}})
			}
		}
		for _, p := range pairs {
			h.addProblem(refProblem{kind: "plugin", sources: p[0], actions: p[1]})
		}
	}
}

func isConstant(key string) bool { return !strings.ContainsAny(key, "([") }

// refPassage builds the reference's version of a problem.
func (h *harness) refPassage(p *refProblem) (reference.Passage, error) {
	switch p.kind {
	case "initial-actions":
		return h.rc.InitialActions(p.actions), nil
	case "initial-states":
		target := make([]bool, h.rc.N())
		for i := range target {
			target[i] = h.rc.States[i][p.leaf] == p.state
		}
		return h.rc.InitialStates(target), nil
	default:
		return h.rc.Plugin(h.pi, p.sources, p.actions)
	}
}

// epsilons are what the passages ask of the real solver, in turn: the
// default, a tight one, and one below what float64 can deliver (the solver
// must then say what it can keep, passage.RoundingFloor).
var epsilons = []float64{1e-10, 1e-13, 1e-18}

func (h *harness) addProblem(p refProblem) {
	p.epsilon = epsilons[len(h.probs)%len(epsilons)]
	rp, err := h.refPassage(&p)
	if errors.Is(err, reference.ErrNoSource) || errors.Is(err, reference.ErrNoTarget) {
		p.refusal = err
		h.probs = append(h.probs, p)
		return
	}
	if err != nil {
		h.t.Errorf("seed %d: reference passage: %v", h.gm.Seed, err)
		return
	}
	if p.kind != "initial-states" {
		p.selfLoop = h.selfLoopOn(p.actions)
	}
	p.mean, p.maxRest, err = h.rc.MeanTimes(rp)
	if err != nil {
		h.t.Errorf("seed %d: reference mean: %v", h.gm.Seed, err)
		return
	}
	// Time points around the mean, capped so that the real solver's
	// uniformization stays within maxCT steps.
	qmax := h.maxRefRate()
	scale := p.mean
	if math.IsInf(scale, 1) || scale == 0 {
		scale = 1
	}
	limit := h.prof.maxCT / (2 * math.Max(qmax, 1e-300))
	for _, f := range []float64{0.1, 0.5, 1, 2, 5} {
		p.ts = append(p.ts, math.Min(f*scale, limit*f/5))
	}
	// On a stiff chain small enough for the dense exponential, one time
	// far out (q t = 3e6) sends the real solver down that path.
	if h.base.Stiff && h.rc.N() <= passage.DenseMaxStates && len(h.probs)%2 == 0 {
		p.ts = append(p.ts, 3e6/qmax)
	}
	p.cdf, p.cdfErr = h.rc.CDFs(rp, p.ts)
	h.probs = append(h.probs, p)
}

// maxRefRate is the largest exit rate of the reference chain, or of a
// self-loop if that is larger.
func (h *harness) maxRefRate() float64 {
	qmax := 0.0
	for i := 0; i < h.rc.N(); i++ {
		qmax = math.Max(qmax, h.rc.ExitRate(i))
		for _, tr := range h.rc.Trans[i] {
			if tr.To == i {
				qmax = math.Max(qmax, tr.Rate) // a target self-loop leaves its state
			}
		}
	}
	return qmax
}

// compareCompiled runs the real solvers on the model compiled with or
// without aggregation and compares them with the reference.
func (h *harness) compareCompiled(agg bool) {
	where := "flat"
	if agg {
		where = "flat-aggregated"
	}
	s, err := ctmc.Compile(h.lm, ctmc.Options{Aggregate: agg})
	if err != nil {
		h.report(disagreement{Kind: "compile-error", Where: where, Detail: err.Error()})
		return
	}
	c, err := ctmc.Derive(h.ctx, s, ctmc.DeriveOptions{MaxStates: 100000})
	if err != nil {
		h.report(disagreement{Kind: "derive-error", Where: where, Detail: err.Error()})
		return
	}
	if h.prof.forcePaths {
		h.compareChunked(s, c, where)
	}
	if (len(c.Deadlocks) > 0) != (len(h.rc.Deadlocks) > 0) {
		h.report(disagreement{Kind: "deadlock", Where: where,
			Detail: fmt.Sprintf("real deadlocks %v, reference %v", c.Deadlocks, h.rc.Deadlocks)})
	}
	if !agg {
		h.base.TermMismatch = c.N != h.rc.N() || c.NumTransitions() != h.rc.DistinctTransitions() || h.rc.TermIdentified > 0
	}
	h.compareSteady(c, where, steady.MethodAuto)
	// Sparse GTH forced, and forced to its scaled second reduction
	// (chains of this size never underflow unscaled): auto reaches it
	// only above 2,000 states.
	h.compareSteady(c, where, steady.MethodSparse)
	h.compareSteady(c, where, sparseRescaled)
	if h.prof.forcePaths {
		h.compareSteady(c, where, steady.MethodIterative)
		h.compareSteady(c, where, steady.MethodSweeps)
	}
	for i := range h.probs {
		h.comparePassage(c, &h.probs[i], where, nil, 0)
	}
	h.compareLanes(c, where)
	parts, err := ctmc.Decompose(s)
	if err != nil {
		return
	}
	chains := make([]*ctmc.Chain, len(parts))
	for k, p := range parts {
		chains[k] = p.Chain
	}
	for i := range h.probs {
		p := &h.probs[i]
		if p.kind == "initial-states" {
			continue
		}
		k := owningPart(s, chains, append(append([]string{}, p.sources...), p.actions...))
		if k < 0 {
			continue
		}
		h.tl.path("part")
		h.comparePassage(chains[k], p, where+"-part", chains, k)
	}
}

// compareChunked derives the chain again in chunks of 7 states taken 3 at
// a time, so that a model of a few thousand states goes through many
// pipelined chunks, and requires the same chain entry for entry.
func (h *harness) compareChunked(s *ctmc.Structure, want *ctmc.Chain, where string) {
	got, err := ctmc.Derive(h.ctx, s, ctmc.DeriveOptions{MaxStates: 100000, ChunkStates: 7, PieceStates: 3})
	if err != nil {
		h.report(disagreement{Kind: "derive-error", Where: where + "-chunks", Detail: err.Error()})
		return
	}
	h.tl.path("derive:small-chunks")
	same := got.N == want.N && slices.Equal(got.States, want.States) && slices.Equal(got.RowPtr, want.RowPtr) &&
		slices.Equal(got.Col, want.Col) && slices.Equal(got.Act, want.Act)
	for e := 0; same && e < len(got.Col); e++ {
		same = got.RateAt(int64(e)) == want.RateAt(int64(e))
	}
	if !same {
		h.report(disagreement{Kind: "derive-chunks", Where: where,
			Detail: fmt.Sprintf("small chunks give %d states and %d transitions, the default %d and %d (or other entries)", got.N, len(got.Col), want.N, len(want.Col))})
	}
}

// owningPart is the part whose chain alone carries every one of the
// actions, or -1.
func owningPart(s *ctmc.Structure, chains []*ctmc.Chain, actions []string) int {
	owner := -1
	for _, a := range actions {
		id, ok := s.ActionID(a)
		if !ok {
			return -1
		}
		for k, c := range chains {
			for _, x := range c.Act {
				if x == id {
					if owner >= 0 && owner != k {
						return -1
					}
					owner = k
					break
				}
			}
		}
	}
	return owner
}

// sparseRescaled names the lane of sparse GTH forced to its scaled
// reduction (steady.Options.SparseRescale).
const sparseRescaled = steady.MethodSparse + "-rescaled"

// compareSteady compares throughputs. The solver is asked for
// steadyTolerance: its estimates must say it met it, and every throughput
// must be within ten times its estimate plus 1e-13 (what steady_accuracy_test
// measured of the estimates against 256-bit solves) plus the reference's
// own error, 4 unit roundoffs a state (GTH adds only nonnegative numbers).
func (h *harness) compareSteady(c *ctmc.Chain, where, method string) {
	opt := steady.Options{Method: method, Tolerance: steadyTolerance}
	if method == sparseRescaled {
		opt.Method, opt.SparseRescale = steady.MethodSparse, true
	}
	res, err := steady.Solve(h.ctx, c, opt)
	if method != steady.MethodAuto {
		where += "-" + method
	}
	if h.piErr != nil {
		if err == nil {
			h.report(disagreement{Kind: "steady-accepted", Where: where,
				Detail: fmt.Sprintf("reference refuses (%v), real solver solves", h.piErr)})
		}
		return
	}
	if err != nil && method == steady.MethodSweeps && strings.Contains(err.Error(), "does not reach the tolerance: Gauss-Seidel:") {
		// Sweeps forced on a chain where they stall give up with that
		// error (auto hands such chains to BiCGSTAB, compared in its own
		// lane): a refusal, not a wrong number.
		h.tl.path("steady:gauss-seidel-stalled")
		return
	}
	if err != nil {
		h.report(disagreement{Kind: "steady-refused", Where: where,
			Detail: fmt.Sprintf("real solver: %v; the reference solves it (%d states, %d closed class)", err, h.rc.N(), h.base.ClosedClasses)})
		return
	}
	h.tl.path("steady:" + res.Method)
	if len(res.Classes) > 1 {
		h.tl.path("steady:long-run")
	}
	// With several closed classes a throughput's estimate is its class's
	// (asked for steadyTolerance) plus the class probabilities' own error
	// (a rounding bound that grows with the transient states), which the
	// solver reports apart (AbsorptionError) and the CLI prints.
	claim := steadyTolerance
	if strings.HasPrefix(method, steady.MethodSparse) {
		// A direct method computes once and reports its estimate
		// whatever it is (dense GTH estimates again in a second order
		// when the first misses; sparse GTH does not): 1e-12 is
		// missed by a little on stiff chains (seeds 7669 and 7946:
		// 1.8e-12 and 3e-12, the values themselves within their
		// estimates); a hundred times it would say something is wrong.
		claim = 100 * steadyTolerance
	}
	if len(res.Classes) > 1 {
		claim += res.AbsorptionError
	}
	if res.MaxThroughputError > claim {
		h.report(disagreement{Kind: "steady-claim", Where: where,
			Detail: fmt.Sprintf("asked for %g (%g with the class probabilities' error), the solver's estimates say %g", steadyTolerance, claim, res.MaxThroughputError)})
	}
	want := h.rc.Throughputs(h.pi)
	got := map[string]float64{}
	for _, x := range ctmc.Throughputs(c, res.Pi) {
		got[x.Action] = x.Value
	}
	var keys []string
	for a := range want {
		keys = append(keys, a)
	}
	for a := range got {
		if _, ok := want[a]; !ok {
			keys = append(keys, a)
		}
	}
	sort.Strings(keys)
	refRel := 4 * unitRoundoff * float64(h.rc.N())
	var bad []string
	for _, a := range keys {
		tol := (10*res.ThroughputError[a] + 1e-13 + refRel) * math.Abs(want[a])
		d := math.Abs(got[a] - want[a])
		if tol > 0 {
			h.tl.worstThrough = math.Max(h.tl.worstThrough, d/tol)
		}
		if d > tol || (want[a] == 0) != (got[a] == 0) {
			bad = append(bad, fmt.Sprintf("%s: real %.15g reference %.15g (rel %.2g, estimate %.2g)", a, got[a], want[a], d/math.Abs(want[a]), res.ThroughputError[a]))
		}
	}
	if len(bad) > 0 {
		h.report(disagreement{Kind: "throughput", Where: where, Detail: strings.Join(bad, "; ")})
	}
}

// realProblem builds the real solver's version of a reference problem
// (ok false when there is none to compare: a leaf inside an aggregated
// array, or a refusal both agree on).
func (h *harness) realProblem(c *ctmc.Chain, p *refProblem, parts []*ctmc.Chain, k int, fail func(kind, detail string)) (passage.Problem, bool) {
	var pr passage.Problem
	switch p.kind {
	case "initial-actions":
		ids, err := passage.ActionIDs(c.S, p.actions)
		if err != nil {
			fail("passage-error", err.Error())
			return pr, false
		}
		return passage.InitialProblem(c, ids), true
	case "initial-states":
		leaf := realLeaf(c.S, p.leaf)
		if leaf == nil {
			return pr, false // the reference leaf is inside an aggregated array
		}
		pred, err := ctmc.ParsePredicate(c.S, fmt.Sprintf("%q == %q", leaf.Name, p.state))
		if err != nil {
			fail("passage-error", "predicate: "+err.Error())
			return pr, false
		}
		return passage.StateProblem(c, ctmc.SelectStates(c, pred)), true
	}
	src, err := passage.ActionIDs(c.S, p.sources)
	if err != nil {
		fail("passage-error", err.Error())
		return pr, false
	}
	tgt, err := passage.ActionIDs(c.S, p.actions)
	if err != nil {
		fail("passage-error", err.Error())
		return pr, false
	}
	if parts == nil {
		var pi []float64
		if pi, err = passage.SteadyForPlugin(h.ctx, c); err != nil {
			fail("plugin-steady-error", err.Error())
			return pr, false
		}
		pr, err = passage.PluginProblem(c, pi, src, tgt)
	} else {
		pis, qbar, err2 := passage.PartRates(h.ctx, parts)
		if err2 != nil {
			fail("plugin-steady-error", err2.Error())
			return pr, false
		}
		others := 0.0
		for j, q := range qbar {
			if j != k {
				others += q
			}
		}
		pr, err = passage.PluginPartProblem(c, pis[k], others, src, tgt)
	}
	if p.refusal != nil {
		if err == nil {
			fail("plugin-refusal", fmt.Sprintf("the reference refuses (%v); the real solver builds a problem", p.refusal))
		}
		return pr, false
	}
	if err != nil {
		fail("passage-error", err.Error())
		return pr, false
	}
	return pr, true
}

// pluginSlack is added to the CDF tolerance of plug-in passages: their
// start distribution comes from a steady-state solve, whose vector the
// solver knows to its tolerance (steadyTolerance relative to the
// throughputs); alpha, a normalised part of pi*q, is no better.
const pluginSlack = 1e-11

// checkCDF compares the real CDFs with the reference's: each value within
// the real result's Epsilon (its claim, rounding included) plus the
// reference's own bound.
func (h *harness) checkCDF(r *passage.Result, p *refProblem, upto int, fail func(kind, detail string)) {
	var bad []string
	for i, x := range p.ts[:upto] {
		got, err := r.CDF(x)
		h.tl.cdfPoints++
		if err != nil {
			bad = append(bad, fmt.Sprintf("CDF(%g): %v", x, err))
			continue
		}
		tol := r.Epsilon + p.cdfErr[i]
		if p.kind == "plugin" {
			tol += pluginSlack
		}
		d := math.Abs(got - p.cdf[i])
		h.tl.worstCDF = math.Max(h.tl.worstCDF, d/tol)
		if d > tol {
			bad = append(bad, fmt.Sprintf("CDF(%g): real %.15g reference %.15g (difference %.3g, tolerance %.3g: epsilon %.3g, reference %.3g)", x, got, p.cdf[i], d, tol, r.Epsilon, p.cdfErr[i]))
		}
	}
	if len(bad) > 0 {
		fail("passage-cdf", strings.Join(bad, "; "))
	}
}

// comparePassage solves one passage on a real chain (the whole chain, or
// part k of parts) and compares it with the reference.
func (h *harness) comparePassage(c *ctmc.Chain, p *refProblem, where string, parts []*ctmc.Chain, k int) {
	desc := fmt.Sprintf("%s passage (sources %v, targets %v, state %q, epsilon %g)", p.kind, p.sources, p.actions, p.state, p.epsilon)
	facts := modelFacts{TargetSelfLoop: p.selfLoop, PassageKind: p.kind}
	fail := func(kind, detail string) {
		h.report(disagreement{Kind: kind, Where: where, Detail: desc + ": " + detail, Facts: facts})
	}
	pr, ok := h.realProblem(c, p, parts, k, fail)
	if !ok {
		return
	}
	h.tl.passages++
	// The dense-path time, when there is one, is solved on its own below.
	n := len(p.ts)
	long := n > 5
	if long {
		n = 5
	}
	// Complete only where it is cheap: on a stiff chain a small mass can
	// take millions of steps to drain (the solver then rightly refuses).
	opt := passage.Options{Horizon: p.ts[n-1], Epsilon: p.epsilon}
	if !math.IsInf(p.mean, 1) && p.mean*maxRate(c) < h.prof.maxCT/4 && h.base.StiffnessRatio < 1e3 {
		opt = passage.Options{Complete: true, Epsilon: p.epsilon}
	}
	rs, err := passage.Solve(h.ctx, c, []passage.Problem{pr}, opt)
	if err != nil {
		fail("passage-error", "solve: "+err.Error())
		return
	}
	h.tl.path("passage:" + rs[0].Path())
	h.checkCDF(rs[0], p, n, fail)
	if long {
		lr, err := passage.Solve(h.ctx, c, []passage.Problem{pr}, passage.Options{Horizon: p.ts[5], Epsilon: p.epsilon})
		if err != nil {
			fail("passage-error", "solve to the far time: "+err.Error())
		} else {
			h.tl.path("passage:" + lr[0].Path())
			h.checkCDF(lr[0], p, 6, fail)
			if lr[0].Complete && h.tl.passages%3 == 0 {
				// (A third of them: every dense CDF value is a matrix
				// exponential, on both sides.)
				h.compareQuantiles(lr[0], p, func(kind, detail string) { fail(kind, "to the far time: "+detail) })
			}
		}
	}
	if !opt.Complete {
		// The same horizon backward (one passage, no completion).
		bo := opt
		bo.Backward = true
		br, err := passage.Solve(h.ctx, c, []passage.Problem{pr}, bo)
		if err != nil {
			fail("passage-error", "backward solve: "+err.Error())
		} else {
			h.tl.path("passage:" + br[0].Path())
			h.checkCDF(br[0], p, n, func(kind, detail string) { fail(kind, "backward: "+detail) })
		}
	}
	if rs[0].Complete && !math.IsInf(p.mean, 1) {
		h.compareQuantiles(rs[0], p, fail)
		if rs[0].Path() != "dense" {
			h.compareSeriesMean(rs[0], p, fail)
		}
	}
	h.compareMean(c, pr, p, passage.MeanOptions{}, fail)
	h.compareMean(c, pr, p, passage.MeanOptions{DenseBlock: 4}, func(kind, detail string) { fail(kind, "dense blocks of at most 4 states: "+detail) })
}

// compareQuantiles: the reference CDF at the real quantile must be the
// probability, to the CDF's claim plus the quantile's relative 1e-9 times
// the density there.
func (h *harness) compareQuantiles(r *passage.Result, p *refProblem, fail func(kind, detail string)) {
	rp, _ := h.refPassage(p)
	for _, prob := range []float64{0.5, 0.99} {
		q, err := r.Quantile(prob)
		if err != nil {
			fail("passage-quantile", fmt.Sprintf("quantile %g: %v", prob, err))
			continue
		}
		if math.IsInf(q, 1) {
			if ever, _ := h.rc.CDFs(rp, []float64{1e300}); !math.IsInf(p.mean, 1) || ever[0] >= prob {
				fail("passage-quantile", fmt.Sprintf("quantile %g is +Inf; the reference mean is %g", prob, p.mean))
			}
			continue
		}
		dens, _ := r.PDF(q)
		got, refErr := h.rc.CDFs(rp, []float64{q})
		tol := 2*r.Epsilon + refErr[0] + 2e-9*q*math.Abs(dens)
		if p.kind == "plugin" {
			tol += pluginSlack
		}
		if math.Abs(got[0]-prob) > tol && !(q == 0 && got[0] >= prob) {
			fail("passage-quantile", fmt.Sprintf("quantile %g: real %.12g, where the reference CDF is %.12g", prob, q, got[0]))
		}
	}
}

// compareSeriesMean: the mean as the sum of a complete series. Its tail
// beyond the last step is an estimate (semantics.md, "Estimates rather than
// bounds"), which a slow state holding a sliver of the mass can defeat on a
// stiff chain (random model 100035: 1e-13 of the mass in a state left at
// rate 0.002, while the rest decays at 0.5 a step); what it can miss is at
// most the mass left, Rest, times the largest mean remaining time (the
// reference's). So the sum is required to within the estimate, that bound,
// the mean's accuracy and the rounding of the steps (four unit roundoffs
// a step, relative).
func (h *harness) compareSeriesMean(r *passage.Result, p *refProblem, fail func(kind, detail string)) {
	m, tail, err := r.SeriesMean()
	if err != nil {
		return // a series the solver cannot sum (it says why elsewhere)
	}
	h.tl.means++
	h.tl.path("mean:series")
	tol := tail + r.Rest*p.maxRest + (meanTolerance+4*unitRoundoff*float64(r.Iterations()+h.rc.N()))*math.Abs(p.mean)
	if p.kind == "plugin" {
		tol += pluginSlack * math.Abs(p.mean)
	}
	d := math.Abs(m - p.mean)
	if tol > 0 {
		h.tl.worstMean = math.Max(h.tl.worstMean, d/tol)
	}
	if d > tol {
		fail("passage-series-mean", fmt.Sprintf("real %.15g reference %.15g (difference %.3g, tolerance %.3g with tail estimate %.3g, rest %.3g, largest remaining mean %.6g)", m, p.mean, d, tol, tail, r.Rest, p.maxRest))
	}
}

// compareMean: the linear solve, within the relative meanTolerance it
// states plus the reference's elimination (additions of nonnegative
// numbers, four unit roundoffs a state).
func (h *harness) compareMean(c *ctmc.Chain, pr passage.Problem, p *refProblem, mo passage.MeanOptions, fail func(kind, detail string)) {
	mctx, cancel := h.ctx, context.CancelFunc(func() {})
	if h.tl.meanTimeout > 0 {
		mctx, cancel = context.WithTimeout(h.ctx, h.tl.meanTimeout)
	}
	mean, _, stats, err := passage.MeanTimesWith(mctx, c, pr, mo)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && h.ctx.Err() == nil {
		err = fmt.Errorf("did not converge within the test's %v: %w", h.tl.meanTimeout, err)
	}
	h.tl.means++
	for name, n := range map[string]int{"mean:single": stats.Single, "mean:dense": stats.Dense, "mean:iterative": stats.Iterative, "mean:fallback": stats.Fallback} {
		if n > 0 {
			h.tl.path(name)
		}
	}
	tol := (meanTolerance + 4*unitRoundoff*float64(h.rc.N())) * math.Abs(p.mean)
	if p.kind == "plugin" {
		tol += pluginSlack * math.Abs(p.mean)
	}
	switch {
	case errors.Is(err, passage.ErrMeanUnavailable) && !math.IsInf(p.mean, 1):
		// An honest refusal (the contract allows it, never a wrong
		// number); check says how many there were.
		h.tl.path("mean:unavailable")
	case err != nil:
		fail("passage-mean-error", fmt.Sprintf("real: %v; reference mean %.15g", err, p.mean))
	case math.IsInf(p.mean, 1) != math.IsInf(mean, 1):
		fail("passage-mean", fmt.Sprintf("real %.15g reference %.15g", mean, p.mean))
	case !math.IsInf(mean, 1):
		d := math.Abs(mean - p.mean)
		if tol > 0 {
			h.tl.worstMean = math.Max(h.tl.worstMean, d/tol)
		}
		if d > tol {
			fail("passage-mean", fmt.Sprintf("real %.15g reference %.15g (difference %.3g, tolerance %.3g)", mean, p.mean, d, tol))
		}
	}
}

// compareLanes solves every passage of the model in one call, so that
// they share the sweep (the kernel's groups of 8 lanes), to the largest
// horizon, and compares each with the reference.
func (h *harness) compareLanes(c *ctmc.Chain, where string) {
	var probs []passage.Problem
	var refs []*refProblem
	horizon := 0.0
	for i := range h.probs {
		p := &h.probs[i]
		fail := func(kind, detail string) {
			h.report(disagreement{Kind: kind, Where: where + "-lanes", Detail: detail})
		}
		pr, ok := h.realProblem(c, p, nil, 0, fail)
		if !ok {
			continue
		}
		probs = append(probs, pr)
		refs = append(refs, p)
		horizon = math.Max(horizon, p.ts[min(4, len(p.ts)-1)])
	}
	if len(probs) < 2 {
		return
	}
	rs, err := passage.Solve(h.ctx, c, probs, passage.Options{Horizon: horizon, Epsilon: 1e-13})
	if err != nil {
		h.report(disagreement{Kind: "passage-error", Where: where + "-lanes", Detail: fmt.Sprintf("%d passages in one solve: %v", len(probs), err)})
		return
	}
	for i, r := range rs {
		p := refs[i]
		h.tl.path("passage:" + r.Path())
		desc := fmt.Sprintf("%s passage %d of %d in one solve (sources %v, targets %v, state %q)", p.kind, i, len(rs), p.sources, p.actions, p.state)
		h.checkCDF(r, p, min(5, len(p.ts)), func(kind, detail string) {
			h.report(disagreement{Kind: kind, Where: where + "-lanes", Detail: desc + ": " + detail})
		})
	}
}

// maxRate is the largest exit rate of a real chain, or the largest rate of a
// self-loop if that is larger.
func maxRate(c *ctmc.Chain) float64 {
	q := 0.0
	for i := 0; i < c.N; i++ {
		q = math.Max(q, c.ExitRate(i))
	}
	for k := range c.Col {
		q = math.Max(q, c.RateAt(int64(k)))
	}
	return q
}

// realLeaf is the real structure's leaf that holds reference leaf l alone
// (nil if l is one copy of an aggregated array).
func realLeaf(s *ctmc.Structure, l int) *ctmc.Leaf {
	at := 0
	for _, leaf := range s.Leaves {
		if l < at+leaf.Copies {
			if leaf.Copies > 1 {
				return nil
			}
			return leaf
		}
		at += leaf.Copies
	}
	return nil
}

// compareRobustness compares the makespan figures of a mapping model, with
// finished machines stopped (semantics.md section 3), from models.AnalyzeGroups
// (each group of coupled machines on its own chain) and models.Analyze (the
// flat product chain), with the reference semantics applied to the whole
// model with every machine stopped (Options.Stop): each machine's
// P(F <= beta) and E[F], P(all finished by beta) (the passage into the
// states where every machine is finished) and E[makespan] (its mean).
func (h *harness) compareRobustness() {
	gm := h.gm
	// On a stiff chain too large for the dense exponential, every series
	// of uniformization runs to completion over millions of steps, and on
	// a small one every CDF value of the joint figures' integral is a
	// matrix exponential (the figures are right, but slow to come): there
	// only the Laplace engine is compared, against the reference's stiff
	// oracles (the double-double exponential, Radau IIA).
	// The chain with finished machines stopped can be larger than the
	// cycling one (a stopped machine's states no longer merge with its
	// first ones: seed 100053, 374 states against 189), so its size
	// decides; and on a stiff one the reference's uniformization never
	// runs (there it was 10^8 steps, past CI's ten minutes).
	stiffRates := h.base.StiffnessRatio >= 1e3
	if stiffRates && gm.Family != "coupled" {
		h.tl.path("robustness:stiff-skipped")
		return
	}
	stop := map[string][]string{}
	for k, name := range gm.Machines {
		stop[name] = gm.Cycles[k]
	}
	rc, err := reference.Derive(h.ctx, h.lm, reference.Options{MaxStates: h.prof.refStates, Stop: stop})
	if err != nil {
		if !errors.Is(err, reference.ErrInvalid) && !errors.Is(err, reference.ErrTooManyStates) {
			h.t.Errorf("seed %d: reference with finished machines stopped: %v", gm.Seed, err)
		}
		return
	}
	// The reference's figures, at a goal near the mean makespan.
	stiff := stiffRates && rc.N() > passage.DenseMaxStates
	target := rc.FinishedStates(gm.Machines)
	allP := rc.InitialStates(target)
	allMean, _, err := rc.MeanTimes(allP)
	if err != nil {
		h.t.Errorf("seed %d: reference mean: %v", gm.Seed, err)
		return
	}
	beta := 1.0
	if !math.IsInf(allMean, 1) && allMean > 0 {
		beta = 0.8 * allMean
	}
	type fig struct{ p, pErr, mean float64 }
	var want []fig
	for k := range gm.Machines {
		p := rc.InitialActions(gm.Cycles[k])
		var v, e []float64
		if !stiff {
			v, e = rc.CDFs(p, []float64{beta})
		} else {
			v, e = []float64{0}, []float64{0} // the stiff oracles below
		}
		m, _, err := rc.MeanTimes(p)
		if err != nil {
			h.t.Errorf("seed %d: reference mean: %v", gm.Seed, err)
			return
		}
		want = append(want, fig{v[0], e[0], m})
	}
	var allV, allE []float64
	if !stiff {
		allV, allE = rc.CDFs(allP, []float64{beta})
	} else {
		// The stiff oracles instead (the machines' CDFs too).
		if rc.N() > 5000 {
			h.tl.path("robustness:stiff-skipped")
			return
		}
		for k := range want {
			v, e, err := rc.CDFsStiff(rc.InitialActions(gm.Cycles[k]), []float64{beta})
			if err != nil {
				h.t.Errorf("seed %d: reference stiff CDF: %v", gm.Seed, err)
				return
			}
			want[k].p, want[k].pErr = v[0], e[0]
		}
		if allV, allE, err = rc.CDFsStiff(allP, []float64{beta}); err != nil {
			h.t.Errorf("seed %d: reference stiff CDF: %v", gm.Seed, err)
			return
		}
	}
	refRel := 4 * unitRoundoff * float64(rc.N())

	s, err := ctmc.Compile(h.lm, ctmc.DefaultOptions)
	if err != nil {
		return // reported by compareCompiled
	}
	ms, err := models.FindMachines(s, nil)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if err != nil || !slices.Equal(names, gm.Machines) {
		h.report(disagreement{Kind: "machines", Where: "robustness", Detail: fmt.Sprintf("detected %v (%v), generated %v", names, err, gm.Machines)})
		return
	}
	opt := models.Options{Question: models.Question{Beta: beta, Epsilon: 1e-12}}
	// The analyses run every series to completion (quantiles, tails): on a
	// stiff chain too large for the dense exponential that can take
	// millions of steps, so they get a time limit, and a run that meets
	// it is counted, not compared.
	ctx, cancel := context.WithTimeout(h.ctx, 3*time.Second)
	defer cancel()
	timedOut := func(err error) bool {
		if ctx.Err() != nil && h.ctx.Err() == nil || errors.Is(err, passage.ErrTooManySteps) {
			h.tl.path("robustness:too-long")
			if testing.Verbose() {
				h.t.Logf("seed %d: robustness ran out of time (%v)", gm.Seed, err)
			}
			return true
		}
		return false
	}
	check := func(where string, res *models.Result) {
		h.tl.path("robustness:" + where)
		var bad []string
		for k, mr := range res.Machines {
			w := want[k]
			if d, tol := math.Abs(mr.PByBeta-w.p), res.Epsilon+w.pErr; !(d <= tol) {
				bad = append(bad, fmt.Sprintf("%s P(F <= %g): %.15g, reference %.15g", mr.Name, beta, mr.PByBeta, w.p))
			}
			if math.IsInf(w.mean, 1) != math.IsInf(mr.Mean, 1) ||
				!math.IsInf(w.mean, 1) && !(math.Abs(mr.Mean-w.mean) <= (meanTolerance+refRel)*w.mean+pluginSlack*w.mean) {
				bad = append(bad, fmt.Sprintf("%s E[F]: %.15g, reference %.15g", mr.Name, mr.Mean, w.mean))
			}
		}
		groups := max(1, len(res.Groups))
		if d, tol := math.Abs(res.PAllByBeta-allV[0]), float64(groups)*res.Epsilon+allE[0]; !(d <= tol) {
			bad = append(bad, fmt.Sprintf("P(all <= %g): %.15g, reference %.15g (tolerance %.3g)", beta, res.PAllByBeta, allV[0], tol))
		}
		if math.IsInf(allMean, 1) != math.IsInf(res.ExpectedMakespan, 1) ||
			!math.IsInf(allMean, 1) && !(math.Abs(res.ExpectedMakespan-allMean) <= res.MakespanError+(meanTolerance+refRel)*allMean) {
			bad = append(bad, fmt.Sprintf("E[makespan]: %.15g (error <= %.3g), reference %.15g", res.ExpectedMakespan, res.MakespanError, allMean))
		}
		if len(bad) > 0 {
			h.report(disagreement{Kind: "robustness", Where: where, Detail: strings.Join(bad, "; ")})
		}
	}
	// The Laplace engine forced, by groups and flat: every group (or the
	// product chain) it applies to; one it does not apply to (cycles with
	// complex eigenvalues) is counted, not compared.
	laplaceLane := func(where string, run func(models.Options) (*models.Result, error)) {
		lopt := opt
		lopt.Transient = passage.EngineLaplace
		res, err := run(lopt)
		switch {
		case errors.Is(err, laplace.ErrNotApplicable):
			h.tl.path("robustness:laplace-not-applicable")
		case err != nil:
			if !timedOut(err) {
				h.report(disagreement{Kind: "robustness-error", Where: where, Detail: err.Error()})
			}
		default:
			check(where, res)
			if stiff {
				h.tl.path("robustness:stiff-laplace")
			}
		}
	}
	laplaceLane("groups-laplace", func(o models.Options) (*models.Result, error) { return models.AnalyzeGroups(ctx, s, o) })
	if stiff {
		fs, err := models.Stopped(s, opt)
		if err != nil {
			return
		}
		c, err := ctmc.Derive(ctx, fs, ctmc.DeriveOptions{MaxStates: 100000})
		if err == nil {
			laplaceLane("flat-laplace", func(o models.Options) (*models.Result, error) { return models.Analyze(ctx, c, o) })
		}
		return // uniformization would take the stiff series' millions of steps
	}
	res, err := models.AnalyzeGroups(ctx, s, opt)
	if err != nil {
		if timedOut(err) {
			return
		}
		h.report(disagreement{Kind: "robustness-error", Where: "groups", Detail: err.Error()})
	} else {
		check("groups", res)
		for _, g := range res.Groups {
			switch {
			case len(g.Machines) > 1:
				h.tl.path("robustness:coupled-machines")
			case g.Solved == "exact":
				h.tl.path("robustness:machine-with-shared")
			}
		}
	}
	fs, err := models.Stopped(s, opt)
	if err != nil {
		h.report(disagreement{Kind: "robustness-error", Where: "flat", Detail: err.Error()})
		return
	}
	c, err := ctmc.Derive(ctx, fs, ctmc.DeriveOptions{MaxStates: 100000})
	if err != nil {
		if !timedOut(err) {
			h.report(disagreement{Kind: "robustness-error", Where: "flat", Detail: err.Error()})
		}
		return
	}
	if res, err = models.Analyze(ctx, c, opt); err != nil {
		if !timedOut(err) {
			h.report(disagreement{Kind: "robustness-error", Where: "flat", Detail: err.Error()})
		}
		return
	}
	check("flat", res)
	laplaceLane("flat-laplace", func(o models.Options) (*models.Result, error) { return models.Analyze(ctx, c, o) })
}
