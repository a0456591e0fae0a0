package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"pepa/ctmc/simulate"
	"pepa/internal/option"
	"pepa/lang"
	"pepa/models"
	"pepa/models/spec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pepa/models/energy"
)

// The robustness/expected-energy front of a specification's mappings
// (pepa optimize --pareto).
//
// A mapping's robustness is psi = min_j P(F_j <= beta) (a machine computing
// nothing counts 1) and its expected energy E[E] = sum_j (b_j - i_j) E[F_j]
// + (sum_j i_j) E[M] (semantics.md section 5; energy.Expected), each
// machine computing its applications in specification order, as Optimize
// has them. A mapping A dominates B when psi_A >= psi_B and E[E]_A <=
// E[E]_B, one of them strictly; the front is every mapping found that no
// other mapping found dominates. The figures are known to their solvers'
// accuracy only (probabilities to Epsilon, E[M] to about 1e-8 of itself),
// so differences below ParetoTolerance (probabilities) and
// ParetoRelTolerance (energies, relative) are ties: a mapping is
// dominated only by one better beyond them in one figure and not worse
// beyond them in the other, and mappings equal within them are all kept.
//
// Which mappings are found (ParetoResult.How):
//
//   - ParetoEnumerated: every mapping, when there are at most
//     ParetoOptions.MaxEnumerate (machines^applications); the front is
//     then the exact front of all mappings (in specification order).
//   - ParetoSearched: otherwise, the heuristics' mappings (Optimize's five),
//     the most robust mapping Optimize finds in a quarter of the budget, a
//     least-energy greedy mapping (each application where busy power times
//     its expected time is least), then a Pareto local search until the
//     budget is spent: every move of one application and swap of two
//     (a random sample of them on large instances) from each front mapping
//     not yet explored, the mappings found joining the front when no
//     mapping found dominates them; when every front mapping is explored,
//     from random perturbations of front mappings. The front is then the
//     front of the mappings evaluated, not a proved one.
//
// Independent machines (no shared resources nor pools): a machine's
// figures depend on its own applications only, so P(F_j <= beta) and
// E[F_j] are solved once per machine and set (machineFinish) and cached,
// and E[M] combines the machines' distributions (Result.productJoint, as
// Optimize's makespans: an integral, the costly part). With every idle
// power 0 the energy needs no E[M], which is computed for the front's
// mappings and the heuristics' only. Otherwise E[M] >= max_j E[F_j] gives
// every mapping a lower bound on its energy, and E[M] is integrated only
// for the mappings that no mapping whose energy is known dominates with
// that bound (taken by robustness descending, the least bound first among
// equals): a mapping so dominated is off the front whatever its E[M].
// ParetoOptions.CloudSample asks for the exact energy of some of them too,
// for a plot. Coupled machines (resources, pools): each mapping's
// generated model is analysed whole, by AnalyzeGroups, as pepa robustness
// analyses it.

// How a front's mappings were found (ParetoResult.How).
const (
	ParetoEnumerated = "enumerated"
	ParetoSearched   = "searched"
)

// Defaults of ParetoOptions.MaxEnumerate: with independent machines a
// mapping costs a few cached lookups and (some idle power not 0) one
// integral of a product of distributions; with coupled machines a whole
// analysis.
const (
	DefaultParetoEnumerate        = 100_000
	DefaultParetoEnumerateCoupled = 2_000
)

// Tolerances of dominance: probabilities closer than ParetoTolerance, and
// energies closer than ParetoRelTolerance of the larger, are ties (E[M]
// is integrated to about 1e-8 of itself: pepa robustness prints its error
// bound).
const (
	ParetoTolerance    = 1e-9
	ParetoRelTolerance = 1e-8
)

// ParetoOptions controls ParetoFront.
type ParetoOptions struct {
	Beta float64
	// Power is each machine's power, in machine order; nil: the
	// specification's (in.Power) with PowerFlags applied. Without either,
	// ParetoFront fails with a PowerError (Missing).
	Power *energy.Power
	// PowerFlags are --busy-power and --idle-power as given, applied to
	// the specification's power when Power is nil (a PowerError when they
	// do not resolve).
	PowerFlags models.PowerFlags
	// Epsilon bounds the CDFs' truncation error (default 1e-10).
	Epsilon float64
	// MaxEnumerate: every mapping is evaluated when there are at most this
	// many (0: DefaultParetoEnumerate, DefaultParetoEnumerateCoupled for a
	// specification with resources or pools; negative: never).
	MaxEnumerate int
	// Budget is the time of a search (default 10 s); an enumeration runs
	// to its end (or ctx's).
	Budget time.Duration
	Seed   uint64
	// CloudSample: with some idle power not 0 (independent machines), the
	// number of mappings whose bound put them off the front that get
	// their exact energy anyway (an even sample), for a plot's cloud; 0:
	// none (the cloud then holds the mappings whose energy is known).
	CloudSample int
	// Progress, if set, is called about once a second.
	Progress func(ParetoProgress)
	// EnergyBudget, if positive, adds to each front mapping P(E <= B) and
	// P(max F <= beta and E <= B), as pepa robustness computes them on
	// its generated model (semantics.md section 5; EnergySimulate sets
	// the simulation of the joint figure where it is not exact).
	EnergyBudget   float64
	EnergySimulate simulate.Options
}

// ParetoProgress is the state of a running ParetoFront.
type ParetoProgress struct {
	Phase   string // "enumerate", "energies", "optimize", "search" or "figures"
	Done    int    // mappings evaluated
	Total   int    // mappings to evaluate (0: not known, a search)
	Front   int    // front size so far (a search; 0 during an enumeration)
	Elapsed time.Duration
}

// ParetoPoint is a mapping with its figures.
type ParetoPoint struct {
	Allocation       [][]int   // per machine, application indices in order
	Robustness       float64   // min_j P(F_j <= beta)
	PAll             float64   // P(max_j F_j <= beta)
	ExpectedEnergy   float64   // E[E], joules
	ExpectedMakespan float64   // E[max_j F_j] (NaN when not computed)
	Means            []float64 // E[F_j] by machine (0: computes nothing)
	// Heuristics names the heuristics whose mapping this is.
	Heuristics []string
	// Rank is the mapping's place on the front (1: the most robust), 0
	// if it is not on it; DominatedBy, for a mapping off the front, is the
	// rank of the first front mapping that dominates it.
	Rank, DominatedBy int
	// Energy, for a front mapping with ParetoOptions.EnergyBudget, is its
	// whole model's energy figures (nil otherwise).
	Energy *models.EnergyResult
}

// ParetoXY is one evaluated mapping's place in the plane of the front.
type ParetoXY struct{ Energy, Robustness float64 }

// ParetoResult is what ParetoFront found.
type ParetoResult struct {
	Beta  float64
	Power energy.Power
	// Front is the front, by robustness descending (energy ascending on
	// ties), each with its figures and E[makespan].
	Front []ParetoPoint
	// Heuristics are the heuristics' mappings, in Optimize's order, with
	// their figures, Rank and DominatedBy.
	Heuristics []ParetoPoint
	// Cloud is every mapping evaluated whose energy is known (the front
	// included; see CloudSample; a long search keeps an even sample).
	Cloud []ParetoXY
	How   string // ParetoEnumerated or ParetoSearched
	// Mappings is the number of mappings evaluated (a search of millions
	// may count some twice), Total the number there are
	// (machines^applications; may be +Inf).
	Mappings int
	Total    float64
	// MachineSolves counts machines solved for a set of applications
	// (independent machines), Analyses whole models analysed (coupled),
	// Integrals the E[M] integrated for independent machines.
	MachineSolves, Analyses, Integrals int
	// Stopped is ParetoComplete (every mapping enumerated), ParetoBudget
	// (a search ran its budget) or ParetoInterrupted (ctx ended either:
	// the front is that of the mappings evaluated so far).
	Stopped string
	Elapsed time.Duration
}

// PowerError is why the front has no power to use: none is known
// (Missing: the specification has no "power" and no flag gives it), or
// the flags do not resolve against the specification's machines. The
// caller's input is at fault, not the search.
type PowerError struct {
	Missing bool
	Err     error
}

func (e *PowerError) Error() string { return e.Err.Error() }
func (e *PowerError) Unwrap() error { return e.Err }

// Reasons ParetoFront stops (ParetoResult.Stopped).
const (
	ParetoComplete    = "complete" // every mapping enumerated
	ParetoBudget      = "budget"
	ParetoInterrupted = "interrupted"
)

// ParetoFront finds the robustness/expected-energy front of in's mappings
// (see the comment above).
func ParetoFront(ctx context.Context, in *spec.Instance, opt ParetoOptions) (*ParetoResult, error) {
	start := time.Now()
	if opt.Power == nil {
		pw, err := opt.PowerFlags.Resolve(in.Machines, in.Power)
		if err != nil {
			return nil, &PowerError{Err: err}
		}
		if pw == nil {
			return nil, &PowerError{Missing: true, Err: option.Errorf("the robustness/energy front needs each machine's power: a \"power\" in the specification, or {BusyPower} (and {IdlePower})")}
		}
		opt.Power = pw
	}
	if err := opt.Power.Check(len(in.Machines)); err != nil {
		return nil, err
	}
	if !(opt.Beta > 0) {
		return nil, fmt.Errorf("beta must be positive, found %g", opt.Beta)
	}
	if opt.Epsilon <= 0 {
		opt.Epsilon = 1e-10
	}
	if opt.Budget <= 0 {
		opt.Budget = 10 * time.Second
	}
	ev := newParetoEval(in, opt)
	if opt.MaxEnumerate == 0 {
		opt.MaxEnumerate = DefaultParetoEnumerate
		if ev.coupled {
			opt.MaxEnumerate = DefaultParetoEnumerateCoupled
		}
	}
	m, n := len(in.Machines), len(in.Apps)
	total := math.Pow(float64(m), float64(n))
	res := &ParetoResult{Beta: opt.Beta, Power: *opt.Power, Total: total}
	pr := &paretoProgress{fn: opt.Progress, start: start, last: start}

	var err error
	var pts []ParetoPoint // every mapping kept, for the front
	if total <= float64(opt.MaxEnumerate) {
		res.How = ParetoEnumerated
		pts, err = ev.enumerate(ctx, res, pr)
	} else {
		res.How = ParetoSearched
		pts, err = ev.search(ctx, in, opt, res, pr, start)
	}
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	if ctx.Err() != nil {
		res.Stopped = ParetoInterrupted
	}
	if err := ev.finish(ctx, res, pts, pr); err != nil {
		return nil, err
	}
	if opt.EnergyBudget > 0 && ctx.Err() == nil {
		if err := frontBudget(ctx, in, opt, res); err != nil {
			return nil, err
		}
	}
	res.MachineSolves = int(ev.solves.Load())
	res.Analyses = int(ev.analyses.Load())
	res.Integrals = int(ev.integrals.Load())
	res.Elapsed = time.Since(start)
	return res, nil
}

// paretoProgress calls the callback about once a second, from any
// goroutine.
type paretoProgress struct {
	fn          func(ParetoProgress)
	mu          sync.Mutex
	start, last time.Time
}

func (p *paretoProgress) report(phase string, done, total, front int) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	p.fn(ParetoProgress{Phase: phase, Done: done, Total: total, Front: front, Elapsed: now.Sub(p.start)})
}

// paretoEval evaluates mappings; safe for concurrent use.
type paretoEval struct {
	in        *spec.Instance
	beta, eps float64
	power     energy.Power
	// idle: some idle power is not 0, so every mapping's energy needs
	// E[M]; lazy: it is integrated only where its lower bound does not
	// settle the mapping's place (independent machines).
	idle, lazy  bool
	coupled     bool
	cloudSample int

	mu   sync.Mutex
	sets map[paretoSetKey]*paretoSet

	solves, analyses, integrals atomic.Int64
}

type paretoSetKey struct {
	j    int
	apps string
}

// paretoSet is one machine's figures for one set, solved once.
type paretoSet struct {
	once    sync.Once
	p, mean float64
	mr      *models.MachineResult // with its distribution, kept when idle
	err     error
}

func newParetoEval(in *spec.Instance, opt ParetoOptions) *paretoEval {
	e := &paretoEval{in: in, beta: opt.Beta, eps: opt.Epsilon, power: *opt.Power,
		idle: !opt.Power.IdleFree(), coupled: len(in.Resources) > 0 || len(in.Pools) > 0,
		cloudSample: opt.CloudSample, sets: map[paretoSetKey]*paretoSet{}}
	e.lazy = e.idle && !e.coupled
	return e
}

func AppsKey(apps []int) string {
	b := make([]byte, 0, 2*len(apps))
	for _, a := range apps {
		b = strconv.AppendInt(b, int64(a), 36)
		b = append(b, ',')
	}
	return string(b)
}

// machine is machine j's figures computing apps (not empty), solved on
// first use.
func (e *paretoEval) machine(ctx context.Context, j int, apps []int) (*paretoSet, error) {
	key := paretoSetKey{j, AppsKey(apps)}
	e.mu.Lock()
	s, ok := e.sets[key]
	if !ok {
		s = &paretoSet{}
		e.sets[key] = s
	}
	e.mu.Unlock()
	s.once.Do(func() {
		mr, err := machineFinish(ctx, e.in, j, apps, e.beta, e.eps, true)
		if err != nil {
			s.err = err
			return
		}
		e.solves.Add(1)
		s.p, s.mean = mr.PByBeta, mr.Mean
		if e.idle {
			s.mr = &mr
		}
	})
	if s.err != nil && (errors.Is(s.err, context.Canceled) || errors.Is(s.err, context.DeadlineExceeded)) {
		// Cut short by a context: no figure to keep. Forget it, and
		// solve again if this caller's context is still alive (the
		// figures of what an interrupted run found).
		e.mu.Lock()
		if e.sets[key] == s {
			delete(e.sets, key)
		}
		e.mu.Unlock()
		if ctx.Err() == nil {
			return e.machine(ctx, j, apps)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// point evaluates alloc: robustness, P(all), means and energy, and E[M]
// when the energy needs it or withMakespan. With bound (and e.lazy), the
// energy is a lower bound instead (E[M] >= max_j E[F_j]), E[M] left NaN.
func (e *paretoEval) point(ctx context.Context, alloc [][]int, withMakespan, bound bool) (ParetoPoint, error) {
	m := len(e.in.Machines)
	pt := ParetoPoint{Allocation: alloc, Robustness: 1, PAll: 1, ExpectedMakespan: math.NaN(), Means: make([]float64, m)}
	if e.coupled {
		r, err := newCoupling(e.in, e.beta, e.eps).analyze(ctx, alloc)
		if err != nil {
			return pt, err
		}
		e.analyses.Add(1)
		byName := map[string]*models.MachineResult{}
		for k := range r.Machines {
			byName[r.Machines[k].Name] = &r.Machines[k]
		}
		for j, name := range e.in.Machines {
			if mr := byName[name]; mr != nil && len(alloc[j]) > 0 {
				pt.Means[j] = mr.Mean
			}
		}
		pt.Robustness, pt.PAll, pt.ExpectedMakespan = r.Robustness, r.PAllByBeta, r.ExpectedMakespan
		pt.ExpectedEnergy = energy.Expected(e.power, pt.Means, pt.ExpectedMakespan)
		return pt, nil
	}
	bound = bound && e.lazy && !withMakespan
	need := (withMakespan || e.idle) && !bound
	var res *models.Result
	if need {
		res = &models.Result{}
	}
	for j, apps := range alloc {
		if len(apps) == 0 {
			continue
		}
		s, err := e.machine(ctx, j, apps)
		if err != nil {
			return pt, err
		}
		pt.Robustness = math.Min(pt.Robustness, s.p)
		pt.PAll *= s.p
		pt.Means[j] = s.mean
		if need {
			mr := s.mr
			if mr == nil {
				// Not kept (every idle power 0): solved again for the
				// few mappings whose makespan is reported.
				x, err := machineFinish(ctx, e.in, j, apps, e.beta, e.eps, true)
				if err != nil {
					return pt, err
				}
				mr = &x
			}
			res.Machines = append(res.Machines, *mr)
		}
	}
	if need {
		res.ProductJoint(1e-9)
		e.integrals.Add(1)
		pt.ExpectedMakespan = res.ExpectedMakespan
	}
	if bound {
		longest := 0.0
		for _, x := range pt.Means {
			longest = math.Max(longest, x)
		}
		pt.ExpectedEnergy = energy.Expected(e.power, pt.Means, longest)
		return pt, nil
	}
	pt.ExpectedEnergy = energy.Expected(e.power, pt.Means, pt.ExpectedMakespan)
	return pt, nil
}

// mappingOf decodes mapping number k of an enumeration (application a on
// machine (k / m^a) mod m) into alloc's slices, reused.
func mappingOf(k int, m, n int, alloc [][]int) [][]int {
	for j := range alloc {
		alloc[j] = alloc[j][:0]
	}
	for a := 0; a < n; a++ {
		j := k % m
		k /= m
		alloc[j] = append(alloc[j], a)
	}
	return alloc
}

func copyAlloc(alloc [][]int) [][]int {
	out := make([][]int, len(alloc))
	for j := range alloc {
		out[j] = append([]int{}, alloc[j]...)
	}
	return out
}

// enumerate evaluates every mapping, in parallel, and returns the
// front's points (every mapping's figures are kept as numbers; points are
// built for the front only).
func (e *paretoEval) enumerate(ctx context.Context, res *ParetoResult, pr *paretoProgress) ([]ParetoPoint, error) {
	m, n := len(e.in.Machines), len(e.in.Apps)
	total := int(res.Total)
	psi := make([]float64, total)
	en := make([]float64, total) // exact, or a lower bound when e.lazy
	for k := range psi {
		psi[k], en[k] = math.NaN(), math.NaN()
	}
	const chunk = 64
	var done atomic.Int64
	err := models.Parallel(ctx, (total+chunk-1)/chunk, func(c int) error {
		alloc := make([][]int, m)
		for k := c * chunk; k < min((c+1)*chunk, total); k++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			pt, err := e.point(ctx, mappingOf(k, m, n, alloc), false, true)
			if err != nil {
				return err
			}
			psi[k], en[k] = pt.Robustness, pt.ExpectedEnergy
		}
		d := done.Add(int64(min((c+1)*chunk, total) - c*chunk))
		pr.report("enumerate", int(d), total, 0)
		return nil
	})
	for k := range psi {
		if !math.IsNaN(psi[k]) {
			res.Mappings++
		}
	}
	switch {
	case e.lazy && err == nil:
		en, err = e.energies(ctx, psi, en, pr)
	case e.lazy:
		// Interrupted with bounds only: no energy is known.
		for k := range en {
			en[k] = math.NaN()
		}
	}
	for k := range psi {
		if !math.IsNaN(psi[k]) && !math.IsNaN(en[k]) {
			res.Cloud = append(res.Cloud, ParetoXY{en[k], psi[k]})
		}
	}
	if err == nil {
		res.Stopped = ParetoComplete
	}
	idx := paretoIndices(psi, en)
	pts := make([]ParetoPoint, 0, len(idx))
	for _, k := range idx {
		pts = append(pts, ParetoPoint{Allocation: copyAlloc(mappingOf(k, m, n, make([][]int, m))),
			Robustness: psi[k], ExpectedEnergy: en[k]})
	}
	return pts, err
}

// energies returns the exact energies of the enumerated mappings (robustness
// psi, energy bounds lb) that the bounds do not put off the front, NaN for
// the others (but CloudSample of them). Taken by robustness descending,
// the least bound first among equals, in batches integrated in parallel: a
// mapping is left out when a mapping taken before it (as robust or more)
// whose energy is known dominates its bound.
func (e *paretoEval) energies(ctx context.Context, psi, lb []float64, pr *paretoProgress) ([]float64, error) {
	m, n := len(e.in.Machines), len(e.in.Apps)
	order := make([]int, 0, len(psi))
	for k := range psi {
		order = append(order, k)
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := order[a], order[b]
		if psi[ka] != psi[kb] {
			return psi[ka] > psi[kb]
		}
		return lb[ka] < lb[kb]
	})
	exact := make([]float64, len(psi))
	for k := range exact {
		exact[k] = math.NaN()
	}
	integrate := func(ks []int) error {
		return models.Parallel(ctx, len(ks), func(i int) error {
			pt, err := e.point(ctx, mappingOf(ks[i], m, n, make([][]int, m)), false, false)
			if err == nil {
				exact[ks[i]] = pt.ExpectedEnergy
			}
			return err
		})
	}
	const t = ParetoRelTolerance
	var known []int // integrated, by robustness descending
	strict, ptr := math.Inf(1), 0
	least := math.Inf(1)
	batch := 2 * runtime.GOMAXPROCS(0)
	var skipped []int
	for i := 0; i < len(order); {
		var ks []int
		for ; i < len(order) && len(ks) < batch; i++ {
			k := order[i]
			// strict: the least known energy of the mappings more robust
			// beyond the tolerance; least: of all known (as robust within
			// it, or more).
			for ; ptr < len(known) && psi[known[ptr]] > psi[k]+ParetoTolerance; ptr++ {
				strict = math.Min(strict, exact[known[ptr]])
			}
			if strict*(1-t) <= lb[k] || least < lb[k]*(1-t) {
				skipped = append(skipped, k)
				continue
			}
			ks = append(ks, k)
		}
		if err := integrate(ks); err != nil {
			return exact, err
		}
		for _, k := range ks {
			known = append(known, k)
			least = math.Min(least, exact[k])
		}
		pr.report("energies", i, len(order), 0)
	}
	// A sample of the others, for the cloud.
	if s := min(e.cloudSample, len(skipped)); s > 0 {
		sort.Ints(skipped)
		ks := make([]int, s)
		for i := range ks {
			ks[i] = skipped[i*len(skipped)/s]
		}
		// Off the front all the same: a mapping whose bound is dominated
		// is dominated (its energy is no less).
		if err := integrate(ks); err != nil {
			return exact, err
		}
	}
	return exact, nil
}

// search finds mappings by the heuristics, Optimize and a Pareto local
// search (see the comment at the top), until the budget or ctx ends, and
// returns the front of those it evaluated.
func (e *paretoEval) search(ctx context.Context, in *spec.Instance, opt ParetoOptions, res *ParetoResult, pr *paretoProgress, start time.Time) ([]ParetoPoint, error) {
	deadline := start.Add(opt.Budget)
	s := &paretoSearch{e: e, seen: map[string]bool{}, res: res, rng: rand.New(rand.NewPCG(opt.Seed, 0xfe0e7))}
	m, n := len(in.Machines), len(in.Apps)
	// Seeds: the heuristics, the least-energy greedy mapping, Optimize's
	// most robust mapping.
	etm := in.ExpectedTimes()
	var seeds [][][]int
	for _, h := range spec.Heuristics {
		seeds = append(seeds, h.Run(in, etm))
	}
	greedy := make([]int, n)
	for a := range greedy {
		for j := range in.Machines {
			if e.power.Busy[j]*etm[a][j] < e.power.Busy[greedy[a]]*etm[a][greedy[a]] {
				greedy[a] = j
			}
		}
	}
	seeds = append(seeds, spec.AllocationOf(in, greedy))
	if err := s.add(ctx, seeds); err != nil {
		return s.front(), err
	}
	pr.report("optimize", len(s.seen), 0, len(s.archive))
	if m > 1 {
		ores, err := Optimize(ctx, in, OptimizeOptions{Beta: opt.Beta, Budget: opt.Budget / 4, Seed: opt.Seed, MakespanSlack: -1, Epsilon: opt.Epsilon})
		if err != nil {
			return s.front(), err
		}
		if err := s.add(ctx, [][][]int{ores.Best.Allocation}); err != nil {
			return s.front(), err
		}
	}
	// Pareto local search.
	for time.Now().Before(deadline) && ctx.Err() == nil && m > 1 && len(s.archive) > 0 {
		src := s.nextSource()
		if err := s.add(ctx, s.neighbours(src, m, n)); err != nil {
			return s.front(), err
		}
		pr.report("search", len(s.seen), 0, len(s.archive))
	}
	res.Stopped = ParetoBudget
	return s.front(), nil
}

// paretoSearch is a Pareto local search's state: the mappings seen (by
// machine of each application), the archive of mappings no mapping seen
// dominates, and which of them have had their neighbourhood explored.
type paretoSearch struct {
	e       *paretoEval
	seen    map[string]bool
	archive []*paretoCand
	res     *ParetoResult
	rng     *rand.Rand
	// The cloud keeps every stride-th mapping evaluated (see keep).
	stride, count int
}

type paretoCand struct {
	pt       ParetoPoint
	where    []int
	key      string
	explored bool
}

// Bounds on what a long search keeps: the mappings seen (forgotten past
// maxSeen: some may then be evaluated twice) and the cloud (thinned to
// every other point past maxCloud, and so on).
const (
	maxSeen  = 4_000_000
	maxCloud = 200_000
)

// keep records an evaluated mapping's point in the cloud.
func (s *paretoSearch) keep(q ParetoXY) {
	if s.stride == 0 {
		s.stride = 1
	}
	s.count++
	if s.count%s.stride != 0 {
		return
	}
	c := &s.res.Cloud
	*c = append(*c, q)
	if len(*c) >= maxCloud {
		for i := 0; 2*i < len(*c); i++ {
			(*c)[i] = (*c)[2*i]
		}
		*c = (*c)[:(len(*c)+1)/2]
		s.stride *= 2
	}
}

func whereOf(alloc [][]int, n int) []int {
	w := make([]int, n)
	for j, apps := range alloc {
		for _, a := range apps {
			w[a] = j
		}
	}
	return w
}

func whereKey(w []int) string {
	b := make([]byte, 0, 2*len(w))
	for _, j := range w {
		b = strconv.AppendInt(b, int64(j), 36)
		b = append(b, ',')
	}
	return string(b)
}

// add evaluates the allocations not seen yet (in parallel) and puts each
// into the archive unless a mapping there dominates it.
func (s *paretoSearch) add(ctx context.Context, allocs [][][]int) error {
	n := len(s.e.in.Apps)
	if len(s.seen) > maxSeen {
		s.seen = map[string]bool{}
	}
	var todo [][][]int
	for _, alloc := range allocs {
		k := whereKey(whereOf(alloc, n))
		if !s.seen[k] {
			s.seen[k] = true
			todo = append(todo, alloc)
		}
	}
	pts := make([]ParetoPoint, len(todo))
	ok := make([]bool, len(todo))    // evaluated
	known := make([]bool, len(todo)) // with its exact energy
	err := models.Parallel(ctx, len(todo), func(i int) error {
		// The archive is read only while this runs.
		pt, err := s.e.point(ctx, todo[i], false, true)
		if err != nil {
			return err
		}
		pts[i], ok[i] = pt, true
		if s.e.lazy {
			// Integrate E[M] only if the bound leaves the mapping a
			// chance.
			for _, c := range s.archive {
				if dominates(c.pt.Robustness, c.pt.ExpectedEnergy, pt.Robustness, pt.ExpectedEnergy) {
					return nil
				}
			}
			if pt, err = s.e.point(ctx, todo[i], false, false); err != nil {
				return err
			}
			pts[i] = pt
		}
		known[i] = true
		return nil
	})
	for i := range pts {
		if !ok[i] {
			delete(s.seen, whereKey(whereOf(todo[i], n)))
			continue
		}
		s.res.Mappings++
		if known[i] {
			s.keep(ParetoXY{pts[i].ExpectedEnergy, pts[i].Robustness})
			s.insert(pts[i])
		}
	}
	return err
}

// insert adds pt to the archive unless a member dominates it, dropping
// the members it dominates.
func (s *paretoSearch) insert(pt ParetoPoint) {
	if math.IsNaN(pt.Robustness) || math.IsNaN(pt.ExpectedEnergy) {
		return
	}
	where := whereOf(pt.Allocation, len(s.e.in.Apps))
	key := whereKey(where)
	for _, c := range s.archive {
		if c.key == key || dominates(c.pt.Robustness, c.pt.ExpectedEnergy, pt.Robustness, pt.ExpectedEnergy) {
			return
		}
	}
	kept := s.archive[:0]
	for _, c := range s.archive {
		if !dominates(pt.Robustness, pt.ExpectedEnergy, c.pt.Robustness, c.pt.ExpectedEnergy) {
			kept = append(kept, c)
		}
	}
	s.archive = append(kept, &paretoCand{pt: pt, where: where, key: key})
}

// nextSource is the next mapping whose neighbourhood to explore: an
// archive member not explored yet, else a random perturbation (a few
// random moves) of a random member.
func (s *paretoSearch) nextSource() []int {
	for _, c := range s.archive {
		if !c.explored {
			c.explored = true
			return c.where
		}
	}
	m, n := len(s.e.in.Machines), len(s.e.in.Apps)
	w := append([]int{}, s.archive[s.rng.IntN(len(s.archive))].where...)
	kicks := 2 + s.rng.IntN(max(2, min(n/10, 8)))
	for i := 0; i < kicks; i++ {
		a := s.rng.IntN(n)
		to := s.rng.IntN(m - 1)
		if to >= w[a] {
			to++
		}
		w[a] = to
	}
	return w
}

// neighbours lists the mappings one move or one swap away from w: all of
// them up to fullNeighbourhood, else a random sample of sampleMoves.
func (s *paretoSearch) neighbours(w []int, m, n int) [][][]int {
	var out [][][]int
	emit := func(a, to, b int) {
		x := append([]int{}, w...)
		if b >= 0 {
			x[a], x[b] = w[b], w[a]
		} else {
			x[a] = to
		}
		out = append(out, allocFromWhere(x, m))
	}
	if n*(m-1)+n*(n-1)/2 <= fullNeighbourhood {
		for a := 0; a < n; a++ {
			for j := 0; j < m; j++ {
				if j != w[a] {
					emit(a, j, -1)
				}
			}
			for b := a + 1; b < n; b++ {
				if w[a] != w[b] {
					emit(a, -1, b)
				}
			}
		}
		return out
	}
	for k := 0; k < sampleMoves; k++ {
		a := s.rng.IntN(n)
		if s.rng.IntN(2) == 0 {
			if j := s.rng.IntN(m); j != w[a] {
				emit(a, j, -1)
			}
		} else if b := s.rng.IntN(n); w[a] != w[b] {
			emit(a, -1, b)
		}
	}
	return out
}

func allocFromWhere(w []int, m int) [][]int {
	alloc := make([][]int, m)
	for a, j := range w {
		alloc[j] = append(alloc[j], a)
	}
	return alloc
}

// front is the archive's points.
func (s *paretoSearch) front() []ParetoPoint {
	out := make([]ParetoPoint, len(s.archive))
	for i, c := range s.archive {
		out[i] = c.pt
	}
	return out
}

// finish orders the front, gives every front mapping and every heuristic
// its full figures (E[makespan], P(all)), and marks the heuristics.
func (e *paretoEval) finish(ctx context.Context, res *ParetoResult, pts []ParetoPoint, pr *paretoProgress) error {
	if res.Stopped == ParetoInterrupted {
		ctx = context.Background() // the figures of what was found are still wanted
	}
	sort.SliceStable(pts, func(a, b int) bool {
		pa, pb := pts[a], pts[b]
		if pa.Robustness != pb.Robustness {
			return pa.Robustness > pb.Robustness
		}
		if pa.ExpectedEnergy != pb.ExpectedEnergy {
			return pa.ExpectedEnergy < pb.ExpectedEnergy
		}
		return whereKey(whereOf(pa.Allocation, len(e.in.Apps))) < whereKey(whereOf(pb.Allocation, len(e.in.Apps)))
	})
	etm := e.in.ExpectedTimes()
	hs := make([][][]int, len(spec.Heuristics))
	for k, h := range spec.Heuristics {
		hs[k] = h.Run(e.in, etm)
	}
	// Every figure of the front's and the heuristics' mappings, in
	// parallel (the same evaluation: the robustness and energy are
	// unchanged, E[M] added).
	all := append(append([][][]int{}, allocsOf(pts)...), hs...)
	full := make([]ParetoPoint, len(all))
	err := models.Parallel(ctx, len(all), func(i int) error {
		if i < len(pts) && pts[i].Means != nil && !math.IsNaN(pts[i].ExpectedMakespan) {
			full[i] = pts[i] // a search's point with every figure
			return nil
		}
		pt, err := e.point(ctx, all[i], true, false)
		full[i] = pt
		pr.report("figures", i, len(all), len(pts))
		return err
	})
	if err != nil {
		return err
	}
	res.Front = full[:len(pts)]
	n := len(e.in.Apps)
	rankOf := map[string]int{}
	for i := range res.Front {
		res.Front[i].Rank = i + 1
		rankOf[whereKey(whereOf(res.Front[i].Allocation, n))] = i + 1
	}
	for k, h := range spec.Heuristics {
		pt := full[len(pts)+k]
		pt.Heuristics = []string{h.Name}
		if r, ok := rankOf[whereKey(whereOf(pt.Allocation, n))]; ok {
			pt.Rank = r
			res.Front[r-1].Heuristics = append(res.Front[r-1].Heuristics, h.Name)
		} else {
			for _, f := range res.Front {
				if dominates(f.Robustness, f.ExpectedEnergy, pt.Robustness, pt.ExpectedEnergy) {
					pt.DominatedBy = f.Rank
					break
				}
			}
		}
		res.Heuristics = append(res.Heuristics, pt)
	}
	return nil
}

func allocsOf(pts []ParetoPoint) [][][]int {
	out := make([][][]int, len(pts))
	for i := range pts {
		out[i] = pts[i].Allocation
	}
	return out
}

// dominates reports whether (psiA, eA) dominates (psiB, eB): no worse in
// both beyond the tolerances, better beyond them in one (energies >= 0).
func dominates(psiA, eA, psiB, eB float64) bool {
	const t = ParetoRelTolerance
	noWorse := psiA >= psiB-ParetoTolerance && eA*(1-t) <= eB
	return noWorse && (psiA > psiB+ParetoTolerance || eA < eB*(1-t))
}

// paretoIndices are the indices of the points (psi[k], e[k]) that no other
// dominates (NaN figures are neither on the front nor dominate), in
// O(N log N): after sorting by psi descending, a point is dominated when
// the least energy among the points more robust beyond the tolerance is
// no larger than its own within it, or the least energy among the points
// at least as robust within it is smaller beyond it.
func paretoIndices(psi, e []float64) []int {
	var order []int
	for k := range psi {
		if !math.IsNaN(psi[k]) && !math.IsNaN(e[k]) {
			order = append(order, k)
		}
	}
	sort.Slice(order, func(a, b int) bool { return psi[order[a]] > psi[order[b]] })
	prefixMin := make([]float64, len(order)+1) // least energy of order[:i]
	prefixMin[0] = math.Inf(1)
	for i, k := range order {
		prefixMin[i+1] = math.Min(prefixMin[i], e[k])
	}
	// count(x) is the number of points with psi > x (a prefix of order).
	count := func(x float64) int {
		return sort.Search(len(order), func(i int) bool { return !(psi[order[i]] > x) })
	}
	const t = ParetoRelTolerance
	var out []int
	for _, k := range order {
		better := prefixMin[count(psi[k]+ParetoTolerance)]
		// psi >= psi_k - tol: psi > the largest float below it.
		asGood := prefixMin[count(math.Nextafter(psi[k]-ParetoTolerance, math.Inf(-1)))]
		if better*(1-t) <= e[k] || asGood < e[k]*(1-t) {
			continue
		}
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// frontBudget gives every front mapping its energy figures with the
// budget: its model as gen writes it with the power used (//pepa:power),
// analysed as pepa robustness --energy-budget analyses it.
func frontBudget(ctx context.Context, in *spec.Instance, opt ParetoOptions, res *ParetoResult) error {
	with := *in
	p := res.Power
	with.Power = &p
	for k := range res.Front {
		pt := &res.Front[k]
		var b strings.Builder
		if err := with.Generate(&b, with.MappingOf(fmt.Sprintf("front-%d", k+1), pt.Allocation)); err != nil {
			return err
		}
		m, diags := lang.Load(fmt.Sprintf("front-%d.pepa", k+1), []byte(b.String()))
		if diags.HasErrors() {
			return fmt.Errorf("the model of a front mapping does not check (a bug): %w", diags.Err())
		}
		rep, err := models.Robustness(ctx, []models.Input{{Name: m.File.Name, Model: m}}, models.Request{Question: models.Question{Beta: opt.Beta, Epsilon: opt.Epsilon, NoQuantile: true},
			Energy: &models.EnergyRequest{Budget: opt.EnergyBudget, Simulate: opt.EnergySimulate}})
		if err != nil {
			return err
		}
		pt.Energy = rep.Results[0].Energy
	}
	return nil
}
