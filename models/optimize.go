package models

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// OptimizeOptions controls the search for a robust mapping.
type OptimizeOptions struct {
	Beta      float64
	Objective string        // "min" (default): min_j P(F_j <= beta); "joint": prod_j P(F_j <= beta)
	Budget    time.Duration // default 10 s
	Seed      uint64
	// MakespanSlack, if >= 0, keeps the expected makespan within
	// (1 + MakespanSlack) times the fastest mapping found.
	MakespanSlack float64
	Epsilon       float64
	// Exhaustive bounds the number of mappings (machines^applications)
	// searched exhaustively instead of by local search (default 200,000).
	Exhaustive float64
}

// Candidate is a mapping with its figures.
type Candidate struct {
	Name       string
	Allocation [][]int // per machine, application indices in order
	Score      float64 // the objective
	Robustness float64 // min_j P(F_j <= beta)
	Joint      float64 // prod_j P(F_j <= beta)
	Makespan   float64 // E[max_j F_j] (NaN when not computed)
}

// OptimizeResult is what Optimize found.
type OptimizeResult struct {
	Heuristics  []Candidate
	Best        Candidate
	Stopped     string // "local optimum", "budget" or "exhaustive search"
	Moves       int    // moves and swaps evaluated
	Evaluations int    // machine finishing times solved
	Elapsed     time.Duration
}

// optimizer evaluates mappings of an Instance, caching each machine's
// probability by the applications it computes.
type optimizer struct {
	in    *Instance
	opt   OptimizeOptions
	ctx   context.Context
	cache map[string]float64
	evals int
}

func (o *optimizer) machineP(j int, apps []int) (float64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", j)
	for _, a := range apps {
		fmt.Fprintf(&b, "%d,", a)
	}
	key := b.String()
	if p, ok := o.cache[key]; ok {
		return p, nil
	}
	mr, err := o.in.machineFinish(o.ctx, j, apps, o.opt.Beta, o.opt.Epsilon, false)
	if err != nil {
		return 0, err
	}
	o.evals++
	o.cache[key] = mr.PByBeta
	return mr.PByBeta, nil
}

// score is the objective of per-machine probabilities, with the other
// measure as a tie-break (so that a search on the minimum still moves
// along plateaus toward better joint probabilities, and vice versa).
func (o *optimizer) score(ps []float64) (primary, secondary, minP, joint float64) {
	minP, joint = 1, 1
	for _, p := range ps {
		minP = math.Min(minP, p)
		joint *= p
	}
	if o.opt.Objective == "joint" {
		return joint, minP, minP, joint
	}
	return minP, joint, minP, joint
}

func better(a1, a2, b1, b2 float64) bool {
	const tol = 1e-12
	return a1 > b1+tol || (math.Abs(a1-b1) <= tol && a2 > b2+tol)
}

// makespan computes E[max_j F_j] of an allocation.
func (o *optimizer) makespan(alloc [][]int) (float64, error) {
	res := &Result{}
	for j, apps := range alloc {
		if len(apps) == 0 {
			continue
		}
		mr, err := o.in.machineFinish(o.ctx, j, apps, o.opt.Beta, o.opt.Epsilon, true)
		if err != nil {
			return 0, err
		}
		res.Machines = append(res.Machines, mr)
	}
	res.productJoint(1e-9)
	return res.ExpectedMakespan, nil
}

// Optimize searches for the most robust mapping of the applications of in:
// the classic heuristics for independent tasks on heterogeneous machines
// (Braun et al. 2001: MET, MCT, Min-min, Max-min, Sufferage) on the ETC
// matrix (times divided by each machine's availability), then local search
// from the best of them (move one application, swap two), re-solving only
// the two machines a move changes. Small instances are searched
// exhaustively. The search is deterministic for a seed.
func Optimize(ctx context.Context, in *Instance, opt OptimizeOptions) (*OptimizeResult, error) {
	start := time.Now()
	if opt.Objective == "" {
		opt.Objective = "min"
	}
	if opt.Budget <= 0 {
		opt.Budget = 10 * time.Second
	}
	if opt.Epsilon <= 0 {
		opt.Epsilon = 1e-10
	}
	if opt.Exhaustive == 0 {
		opt.Exhaustive = 200_000
	}
	o := &optimizer{in: in, opt: opt, ctx: ctx, cache: map[string]float64{}}
	res := &OptimizeResult{}

	eval := func(name string, alloc [][]int) (Candidate, error) {
		ps := make([]float64, len(alloc))
		for j, apps := range alloc {
			var err error
			if ps[j], err = o.machineP(j, apps); err != nil {
				return Candidate{}, err
			}
		}
		c := Candidate{Name: name, Allocation: alloc, Makespan: math.NaN()}
		c.Score, _, c.Robustness, c.Joint = o.score(ps)
		ms, err := o.makespan(alloc)
		if err != nil {
			return Candidate{}, err
		}
		c.Makespan = ms
		return c, nil
	}
	fastest := math.Inf(1)
	for _, h := range heuristics {
		c, err := eval(h.name, h.run(in))
		if err != nil {
			return nil, err
		}
		res.Heuristics = append(res.Heuristics, c)
		fastest = math.Min(fastest, c.Makespan)
	}
	best := res.Heuristics[0]
	for _, c := range res.Heuristics[1:] {
		if better(c.Score, c.secondary(opt.Objective), best.Score, best.secondary(opt.Objective)) {
			best = c
		}
	}
	allowed := func(ms float64) bool {
		return opt.MakespanSlack < 0 || ms <= (1+opt.MakespanSlack)*fastest*(1+1e-12)
	}
	if !allowed(best.Makespan) {
		// The most robust heuristic is too slow: start from the fastest.
		for _, c := range res.Heuristics {
			if c.Makespan == fastest {
				best = c
				break
			}
		}
	}

	nApps, nMach := len(in.Apps), len(in.Machines)
	if math.Pow(float64(nMach), float64(nApps)) <= opt.Exhaustive {
		c, err := o.exhaustive(allowed)
		if err != nil {
			return nil, err
		}
		if c.Allocation != nil {
			best = c
		}
		res.Stopped = "exhaustive search"
	} else {
		var err error
		best, res.Stopped, res.Moves, err = o.localSearch(best, allowed, start)
		if err != nil {
			return nil, err
		}
	}
	if math.IsNaN(best.Makespan) {
		ms, err := o.makespan(best.Allocation)
		if err != nil {
			return nil, err
		}
		best.Makespan = ms
	}
	res.Best = best
	res.Evaluations = o.evals
	res.Elapsed = time.Since(start)
	return res, nil
}

func (c Candidate) secondary(objective string) float64 {
	if objective == "joint" {
		return c.Robustness
	}
	return c.Joint
}

// localSearch improves cur by moves and swaps taken in a seeded random
// order, accepting every improving one (first improvement, the pass going
// on), until a full pass finds no improvement or the budget ends.
func (o *optimizer) localSearch(cur Candidate, allowed func(float64) bool, start time.Time) (Candidate, string, int, error) {
	in := o.in
	rng := rand.New(rand.NewPCG(o.opt.Seed, 0x5eed))
	nMach := len(in.Machines)
	alloc := make([][]int, nMach)
	where := make([]int, len(in.Apps))
	for j, apps := range cur.Allocation {
		alloc[j] = append([]int(nil), apps...)
		for _, a := range apps {
			where[a] = j
		}
	}
	ps := make([]float64, nMach)
	for j := range alloc {
		p, err := o.machineP(j, alloc[j])
		if err != nil {
			return cur, "", 0, err
		}
		ps[j] = p
	}
	s1, s2, _, _ := o.score(ps)
	moves := 0
	without := func(apps []int, a int) []int {
		out := make([]int, 0, len(apps))
		for _, x := range apps {
			if x != a {
				out = append(out, x)
			}
		}
		return out
	}
	with := func(apps []int, a int) []int {
		out := append(append(make([]int, 0, len(apps)+1), apps...), a)
		sort.Ints(out)
		return out
	}
	type move struct{ a, b, to int } // b < 0: move a to machine to; else swap a and b
	for {
		// All moves and swaps, in a random order.
		var cand []move
		for a := range in.Apps {
			for j := 0; j < nMach; j++ {
				if j != where[a] {
					cand = append(cand, move{a, -1, j})
				}
			}
			for b := a + 1; b < len(in.Apps); b++ {
				if where[a] != where[b] {
					cand = append(cand, move{a, b, -1})
				}
			}
		}
		rng.Shuffle(len(cand), func(i, k int) { cand[i], cand[k] = cand[k], cand[i] })
		improved := false
		for _, m := range cand {
			// The pass goes on after an accepted move; skip what it made stale.
			if (m.b < 0 && where[m.a] == m.to) || (m.b >= 0 && where[m.a] == where[m.b]) {
				continue
			}
			if moves&255 == 0 {
				if err := o.ctx.Err(); err != nil {
					return cur, "", moves, err
				}
				if time.Since(start) > o.opt.Budget {
					return o.finish(alloc, ps, "budget", moves)
				}
			}
			moves++
			ja := where[m.a]
			var jb int
			var na, nb []int
			if m.b < 0 {
				jb = m.to
				na, nb = without(alloc[ja], m.a), with(alloc[jb], m.a)
			} else {
				jb = where[m.b]
				na, nb = with(without(alloc[ja], m.a), m.b), with(without(alloc[jb], m.b), m.a)
			}
			pa, err := o.machineP(ja, na)
			if err != nil {
				return cur, "", moves, err
			}
			pb, err := o.machineP(jb, nb)
			if err != nil {
				return cur, "", moves, err
			}
			oa, ob := ps[ja], ps[jb]
			ps[ja], ps[jb] = pa, pb
			t1, t2, _, _ := o.score(ps)
			if !better(t1, t2, s1, s2) {
				ps[ja], ps[jb] = oa, ob
				continue
			}
			oldA, oldB := alloc[ja], alloc[jb]
			alloc[ja], alloc[jb] = na, nb
			if o.opt.MakespanSlack >= 0 {
				ms, err := o.makespan(alloc)
				if err != nil {
					return cur, "", moves, err
				}
				if !allowed(ms) {
					alloc[ja], alloc[jb] = oldA, oldB
					ps[ja], ps[jb] = oa, ob
					continue
				}
			}
			where[m.a] = jb
			if m.b >= 0 {
				where[m.b] = ja
			}
			s1, s2 = t1, t2
			improved = true
		}
		if !improved {
			return o.finish(alloc, ps, "local optimum", moves)
		}
	}
}

func (o *optimizer) finish(alloc [][]int, ps []float64, why string, moves int) (Candidate, string, int, error) {
	c := Candidate{Name: "local search", Allocation: alloc, Makespan: math.NaN()}
	c.Score, _, c.Robustness, c.Joint = o.score(ps)
	return c, why, moves, nil
}

// exhaustive tries every mapping (applications in index order on each
// machine); machine probabilities are cached by application set, so the
// cost is in the enumeration, not the solving.
func (o *optimizer) exhaustive(allowed func(float64) bool) (Candidate, error) {
	in := o.in
	nApps, nMach := len(in.Apps), len(in.Machines)
	assign := make([]int, nApps)
	var best Candidate
	b1, b2 := math.Inf(-1), math.Inf(-1)
	ps := make([]float64, nMach)
	alloc := make([][]int, nMach)
	for {
		for j := range alloc {
			alloc[j] = alloc[j][:0]
		}
		for a, j := range assign {
			alloc[j] = append(alloc[j], a)
		}
		for j := range alloc {
			p, err := o.machineP(j, alloc[j])
			if err != nil {
				return best, err
			}
			ps[j] = p
		}
		s1, s2, _, _ := o.score(ps)
		if better(s1, s2, b1, b2) {
			cp := make([][]int, nMach)
			for j := range alloc {
				cp[j] = append([]int(nil), alloc[j]...)
			}
			ok := true
			if o.opt.MakespanSlack >= 0 {
				ms, err := o.makespan(cp)
				if err != nil {
					return best, err
				}
				ok = allowed(ms)
			}
			if ok {
				best = Candidate{Name: "exhaustive search", Allocation: cp, Makespan: math.NaN()}
				best.Score, _, best.Robustness, best.Joint = o.score(ps)
				b1, b2 = s1, s2
			}
		}
		// Next assignment (odometer).
		i := 0
		for i < nApps {
			assign[i]++
			if assign[i] < nMach {
				break
			}
			assign[i] = 0
			i++
		}
		if i == nApps {
			return best, nil
		}
		if err := o.ctx.Err(); err != nil {
			return best, err
		}
	}
}

// Heuristics of Braun et al. (2001) for independent tasks on heterogeneous
// machines, on expected times ETC[i][j] / availability_j.
var heuristics = []struct {
	name string
	run  func(in *Instance) [][]int
}{
	{"MET", met},
	{"MCT", mct},
	{"Min-min", func(in *Instance) [][]int { return minMinMax(in, false) }},
	{"Max-min", func(in *Instance) [][]int { return minMinMax(in, true) }},
	{"Sufferage", sufferage},
}

// expectedTime is the time of application i on machine j for the heuristics.
func (in *Instance) expectedTime(i, j int) float64 {
	avail := in.Avail[j]
	if in.Owners[j] != nil {
		avail = in.Owners[j].Availability()
	}
	return in.ETC[i][j] / avail
}

func allocationOf(in *Instance, machineOf []int) [][]int {
	alloc := make([][]int, len(in.Machines))
	for a, j := range machineOf {
		alloc[j] = append(alloc[j], a)
	}
	return alloc
}

// met maps each application to the machine where it runs fastest.
func met(in *Instance) [][]int {
	m := make([]int, len(in.Apps))
	for a := range in.Apps {
		for j := range in.Machines {
			if in.expectedTime(a, j) < in.expectedTime(a, m[a]) {
				m[a] = j
			}
		}
	}
	return allocationOf(in, m)
}

// mct maps applications in order, each to the machine where it would
// complete first given what that machine already has.
func mct(in *Instance) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	for a := range in.Apps {
		for j := range in.Machines {
			if ready[j]+in.expectedTime(a, j) < ready[m[a]]+in.expectedTime(a, m[a]) {
				m[a] = j
			}
		}
		ready[m[a]] += in.expectedTime(a, m[a])
	}
	return allocationOf(in, m)
}

// minMinMax is Min-min (max false) or Max-min (max true): repeatedly, each
// unmapped application's earliest completion over the machines; map the
// application whose earliest completion is smallest (Min-min) or largest
// (Max-min) there.
func minMinMax(in *Instance, max bool) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	left := map[int]bool{}
	for a := range in.Apps {
		left[a] = true
	}
	for len(left) > 0 {
		pick, pickJ, pickT := -1, -1, 0.0
		for a := 0; a < len(in.Apps); a++ {
			if !left[a] {
				continue
			}
			bj, bt := 0, math.Inf(1)
			for j := range in.Machines {
				if t := ready[j] + in.expectedTime(a, j); t < bt {
					bj, bt = j, t
				}
			}
			if pick < 0 || (!max && bt < pickT) || (max && bt > pickT) {
				pick, pickJ, pickT = a, bj, bt
			}
		}
		m[pick] = pickJ
		ready[pickJ] = pickT
		delete(left, pick)
	}
	return allocationOf(in, m)
}

// sufferage maps, each round, the application that would suffer most from
// not getting its best machine (second-earliest minus earliest completion).
func sufferage(in *Instance) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	left := map[int]bool{}
	for a := range in.Apps {
		left[a] = true
	}
	for len(left) > 0 {
		pick, pickJ, pickS := -1, -1, -1.0
		for a := 0; a < len(in.Apps); a++ {
			if !left[a] {
				continue
			}
			b1, b2, bj := math.Inf(1), math.Inf(1), 0
			for j := range in.Machines {
				t := ready[j] + in.expectedTime(a, j)
				if t < b1 {
					b1, b2, bj = t, b1, j
				} else if t < b2 {
					b2 = t
				}
			}
			s := b2 - b1
			if math.IsInf(s, 1) {
				s = math.MaxFloat64 // one machine only
			}
			if s > pickS {
				pick, pickJ, pickS = a, bj, s
			}
		}
		m[pick] = pickJ
		ready[pickJ] += in.expectedTime(pick, pickJ)
		delete(left, pick)
	}
	return allocationOf(in, m)
}
