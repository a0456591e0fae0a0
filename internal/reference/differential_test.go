package reference_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/randmodel"
	"pepa/internal/reference"
	"pepa/lang"
	"pepa/passage"
)

var (
	flagN    = flag.Int("reference.n", 300, "number of random models the differential test runs")
	flagSeed = flag.Int64("reference.seed", 1, "first seed of the differential test's random models")
)

// Tolerances of the comparison (the task's contract with the solvers).
const (
	relTol     = 1e-8  // throughputs and means, relative
	absFloor   = 1e-12 // throughputs, absolute floor
	cdfTol     = 1e-9  // CDF values, absolute
	maxRefSize = 400   // reference states beyond which a model is dropped
	// maxSteps bounds q*t for the real uniformization, so a stiff chain
	// does not take minutes: CDFs are compared up to that horizon.
	maxSteps = 2e4
)

// disagreement is one difference between a real solver and the reference.
type disagreement struct {
	Kind   string // "steady-refusal", "throughput", "passage-cdf", "passage-mean", "passage-error", ...
	Where  string // which configuration: "agg", "flat", "part", ...
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

type tally struct {
	models, dropped, invalid, tooBig int
	refused, solved                  int
	deadlocked, reducible            int
	passages, cdfPoints              int
	byWhere                          map[string]int // passages compared per configuration
	meanTimeout                      time.Duration  // bound on each real mean computation (0: none)
	unknown                          map[string]int
}

func newTally() *tally {
	return &tally{unknown: map[string]int{}, byWhere: map[string]int{}}
}

func TestDifferential(t *testing.T) {
	n := *flagN
	if testing.Short() {
		n = 40
	}
	start := time.Now()
	tl := newTally()
	for i := 0; i < n; i++ {
		seed := *flagSeed + int64(i)
		m := randmodel.Generate(seed)
		runModel(t, m, tl)
	}
	t.Logf("%d models (seeds %d to %d) in %v: %d dropped by the reference (%d invalid, %d too big); steady state solved for %d, refused for %d (%d with a deadlock, %d with several closed classes); %d passages solved (%v), %d CDF points",
		tl.models, *flagSeed, *flagSeed+int64(n)-1, time.Since(start).Round(time.Millisecond), tl.dropped, tl.invalid, tl.tooBig,
		tl.solved, tl.refused, tl.deadlocked, tl.reducible, tl.passages, tl.byWhere, tl.cdfPoints)
	if len(tl.unknown) > 0 {
		t.Logf("unexplained disagreements by class: %v", tl.unknown)
	}
}

func FuzzDifferential(f *testing.F) {
	for _, s := range []int64{1, 2, 3, 42, 1000} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		// The fuzzing engine counts an input that takes 10s as hung; the
		// real mean solver spends seconds on its sweep cap on stiff
		// chains (a known bug), so bound each call.
		tl := newTally()
		tl.meanTimeout = 300 * time.Millisecond
		runModel(t, randmodel.Generate(seed), tl)
	})
}

// runModel compares every real solver with the reference on one model.
func runModel(t *testing.T, gm randmodel.Model, tl *tally) {
	t.Helper()
	tl.models++
	lm, diags := lang.Load("rand.pepa", []byte(gm.Source))
	if diags.HasErrors() {
		t.Errorf("seed %d: generated model does not check: %v\n%s", gm.Seed, diags.Err(), gm.Source)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := reference.Derive(ctx, lm, reference.Options{MaxStates: maxRefSize})
	switch {
	case errors.Is(err, reference.ErrInvalid):
		tl.dropped++
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
		tl.dropped++
		tl.tooBig++
		return
	case err != nil:
		t.Errorf("seed %d: reference: %v\n%s", gm.Seed, err, gm.Source)
		return
	}
	h := &harness{t: t, gm: gm, lm: lm, rc: rc, tl: tl, ctx: ctx, rng: rand.New(rand.NewSource(gm.Seed))}
	h.facts()
	h.pi, h.piErr = rc.Steady()
	if h.piErr != nil {
		tl.refused++
		if len(rc.Deadlocks) > 0 {
			tl.deadlocked++
		} else {
			tl.reducible++
		}
	} else {
		tl.solved++
	}
	h.choosePassages()
	for _, agg := range []bool{false, true} { // unaggregated first: it sets termMismatch
		h.compareCompiled(agg)
	}
}

type harness struct {
	t     *testing.T
	gm    randmodel.Model
	lm    *lang.Model
	rc    *reference.Chain
	tl    *tally
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
	mean     float64
	selfLoop bool
	refusal  error // plugin: no source of positive weight, or no target
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
	h.t.Errorf("seed %d (%s, %v): %s on %s: %s\nfacts: %+v\nmodel:\n%s", h.gm.Seed, h.gm.Family, h.gm.Features, d.Kind, d.Where, d.Detail, d.Facts, h.gm.Source)
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
	if h.piErr == nil {
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

func (h *harness) addProblem(p refProblem) {
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
	p.mean, err = h.rc.Mean(rp)
	if err != nil {
		h.t.Errorf("seed %d: reference mean: %v", h.gm.Seed, err)
		return
	}
	// Time points around the mean, capped so that the real solver's
	// uniformization stays within maxSteps.
	qmax := 0.0
	for i := 0; i < h.rc.N(); i++ {
		qmax = math.Max(qmax, h.rc.ExitRate(i))
		for _, tr := range h.rc.Trans[i] {
			if tr.To == i {
				qmax = math.Max(qmax, tr.Rate) // a target self-loop leaves its state
			}
		}
	}
	scale := p.mean
	if math.IsInf(scale, 1) || scale == 0 {
		scale = 1
	}
	limit := maxSteps / (2 * math.Max(qmax, 1e-300))
	for _, f := range []float64{0.1, 0.5, 1, 2, 5} {
		x := math.Min(f*scale, limit*f/5)
		p.ts = append(p.ts, x)
		p.cdf = append(p.cdf, h.rc.CDF(rp, x))
	}
	h.probs = append(h.probs, p)
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
	if (len(c.Deadlocks) > 0) != (len(h.rc.Deadlocks) > 0) {
		h.report(disagreement{Kind: "deadlock", Where: where,
			Detail: fmt.Sprintf("real deadlocks %v, reference %v", c.Deadlocks, h.rc.Deadlocks)})
	}
	if !agg {
		h.base.TermMismatch = c.N != h.rc.N() || c.NumTransitions() != h.rc.DistinctTransitions() || h.rc.TermIdentified > 0
	}
	h.compareSteady(c, where)
	for i := range h.probs {
		h.comparePassage(c, &h.probs[i], where, nil, 0)
	}
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
		h.comparePassage(chains[k], p, where+"-part", chains, k)
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

func (h *harness) compareSteady(c *ctmc.Chain, where string) {
	res, err := ctmc.Steady(h.ctx, c, ctmc.SteadyOptions{})
	if h.piErr != nil {
		if err == nil {
			h.report(disagreement{Kind: "steady-accepted", Where: where,
				Detail: fmt.Sprintf("reference refuses (%v), real solver solves", h.piErr)})
		}
		return
	}
	if err != nil {
		h.report(disagreement{Kind: "steady-refused", Where: where,
			Detail: fmt.Sprintf("real solver: %v; the reference solves it (%d states, %d closed class)", err, h.rc.N(), h.base.ClosedClasses)})
		return
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
	var bad []string
	for _, a := range keys {
		if d := math.Abs(got[a] - want[a]); d > math.Max(relTol*math.Abs(want[a]), absFloor) {
			bad = append(bad, fmt.Sprintf("%s: real %.15g reference %.15g (rel %.2g)", a, got[a], want[a], d/math.Abs(want[a])))
		}
	}
	if len(bad) > 0 {
		h.report(disagreement{Kind: "throughput", Where: where, Detail: strings.Join(bad, "; ")})
	}
}

// comparePassage solves one passage on a real chain (the whole chain, or
// part k of parts) and compares it with the reference.
func (h *harness) comparePassage(c *ctmc.Chain, p *refProblem, where string, parts []*ctmc.Chain, k int) {
	desc := fmt.Sprintf("%s passage (sources %v, targets %v, state %q)", p.kind, p.sources, p.actions, p.state)
	facts := modelFacts{TargetSelfLoop: p.selfLoop, PassageKind: p.kind}
	fail := func(kind, detail string) {
		h.report(disagreement{Kind: kind, Where: where, Detail: desc + ": " + detail, Facts: facts})
	}
	var pr passage.Problem
	switch p.kind {
	case "initial-actions":
		ids, err := passage.ActionIDs(c.S, p.actions)
		if err != nil {
			fail("passage-error", err.Error())
			return
		}
		pr = passage.InitialProblem(c, ids)
	case "initial-states":
		leaf := realLeaf(c.S, p.leaf)
		if leaf == nil {
			return // the reference leaf is inside an aggregated array
		}
		pred, err := ctmc.ParsePredicate(c.S, fmt.Sprintf("%q == %q", leaf.Name, p.state))
		if err != nil {
			fail("passage-error", "predicate: "+err.Error())
			return
		}
		pr = passage.StateProblem(c, ctmc.SelectStates(c, pred))
	case "plugin":
		src, err := passage.ActionIDs(c.S, p.sources)
		if err != nil {
			fail("passage-error", err.Error())
			return
		}
		tgt, err := passage.ActionIDs(c.S, p.actions)
		if err != nil {
			fail("passage-error", err.Error())
			return
		}
		if parts == nil {
			var pi []float64
			if pi, err = passage.SteadyForPlugin(h.ctx, c); err != nil {
				fail("plugin-steady-error", err.Error())
				return
			}
			pr, err = passage.PluginProblem(c, pi, src, tgt)
		} else {
			pis, qbar, err2 := passage.PartRates(h.ctx, parts)
			if err2 != nil {
				fail("plugin-steady-error", err2.Error())
				return
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
			return
		}
		if err != nil {
			fail("passage-error", err.Error())
			return
		}
	}
	h.tl.passages++
	h.tl.byWhere[where]++
	// Complete only where it is cheap: on a stiff chain a small mass can
	// take millions of steps to drain (the solver then rightly refuses).
	opt := passage.Options{Horizon: p.ts[len(p.ts)-1]}
	if !math.IsInf(p.mean, 1) && p.mean*maxRate(c) < maxSteps/4 && h.base.StiffnessRatio < 1e3 {
		opt = passage.Options{Complete: true}
	}
	rs, err := passage.Solve(h.ctx, c, []passage.Problem{pr}, opt)
	if err != nil {
		fail("passage-error", "solve: "+err.Error())
		return
	}
	var bad []string
	for i, x := range p.ts {
		got, err := rs[0].CDF(x)
		h.tl.cdfPoints++
		if err != nil {
			bad = append(bad, fmt.Sprintf("CDF(%g): %v", x, err))
			continue
		}
		if math.Abs(got-p.cdf[i]) > cdfTol {
			bad = append(bad, fmt.Sprintf("CDF(%g): real %.12g reference %.12g", x, got, p.cdf[i]))
		}
	}
	if len(bad) > 0 {
		fail("passage-cdf", strings.Join(bad, "; "))
	}
	if rs[0].Complete && !math.IsInf(p.mean, 1) {
		// Quantiles: the reference CDF at the real quantile must be the
		// probability, to the CDF's epsilon plus the quantile's relative
		// 1e-9 times the density there.
		rp, _ := h.refPassage(p)
		for _, prob := range []float64{0.5, 0.99} {
			q, err := rs[0].Quantile(prob)
			if err != nil {
				fail("passage-quantile", fmt.Sprintf("quantile %g: %v", prob, err))
				continue
			}
			if math.IsInf(q, 1) {
				fail("passage-quantile", fmt.Sprintf("quantile %g is +Inf; the reference mean is %g", prob, p.mean))
				continue
			}
			dens, _ := rs[0].PDF(q)
			got := h.rc.CDF(rp, q)
			if math.Abs(got-prob) > 2*cdfTol+2e-9*q*math.Abs(dens) && !(q == 0 && got >= prob) {
				fail("passage-quantile", fmt.Sprintf("quantile %g: real %.12g, where the reference CDF is %.12g", prob, q, got))
			}
		}
	}
	mctx, cancel := h.ctx, context.CancelFunc(func() {})
	if h.tl.meanTimeout > 0 {
		mctx, cancel = context.WithTimeout(h.ctx, h.tl.meanTimeout)
	}
	mean, err := passage.Mean(mctx, c, pr)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && h.ctx.Err() == nil {
		err = fmt.Errorf("did not converge within the test's %v: %w", h.tl.meanTimeout, err)
	}
	switch {
	case err != nil:
		fail("passage-mean-error", fmt.Sprintf("real: %v; reference mean %.15g", err, p.mean))
	case math.IsInf(p.mean, 1) != math.IsInf(mean, 1) ||
		!math.IsInf(mean, 1) && math.Abs(mean-p.mean) > relTol*math.Abs(p.mean)+absFloor:
		fail("passage-mean", fmt.Sprintf("real %.15g reference %.15g", mean, p.mean))
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
