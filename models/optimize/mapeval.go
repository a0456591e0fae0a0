package optimize

import (
	"context"
	"math"

	"pepa/models"
)

// evaluator is how the search gets the figures of mappings. newOptimizer
// chooses it once: machineEval when every machine's figure is a function
// of its own applications (no shared resources), groupEval when machines
// that stage input through a common resource are coupled (coupledopt.go).
// The search (Optimize, load, try, descend, iteratedSearch, force) is the
// same for both.
type evaluator interface {
	// groupFigures sets ps[j], and grouped[j] true, of every machine
	// whose figure comes from its group in alloc (the others' grouped
	// false), and returns the product of the groups' P(all finished by
	// beta); the search solves the other machines alone (machineP).
	groupFigures(alloc [][]int, ps []float64, grouped []bool) (float64, error)
	// try evaluates move p on st and applies it if it improves st's score
	// and keeps the makespan allowed; it reports whether it did.
	try(st *searchState, p pendingMove, allowed func(float64) bool, bufA, bufB *[]int) (bool, error)
	// candidate is alloc with the figures the other verbs give it
	// (reported figures, not the search's).
	candidate(ctx context.Context, name string, alloc [][]int, withMakespan bool) (Candidate, error)
	// makespan is E[max_j F_j] of alloc.
	makespan(ctx context.Context, alloc [][]int) (float64, error)
	// separable: a machine's figure is a function of its own set and P(all
	// finished) their product, as the exact method (a program over each
	// machine's sets) and the joint bound's product program need.
	separable() bool
	// tickEvery is how many moves the search tries between looks at the
	// clock: a coupled move may solve a group's chain.
	tickEvery() int
	// groupSolves counts the groups solved (cache misses).
	groupSolves() int
}

// pendingMove is a move under evaluation: application a from machine ja to
// machine jb (b < 0), or swapped with application b of jb; ha and hb are
// the two machines' set hashes after it.
type pendingMove struct {
	a, b   int
	ja, jb int
	ha, hb uint64
}

// pending resolves mv on st, or returns false when it changes nothing
// (both applications on one machine).
func (o *optimizer) pending(st *searchState, mv move) (pendingMove, bool) {
	p := pendingMove{a: int(mv.a), b: -1, ja: st.where[mv.a], jb: int(mv.to)}
	if mv.b >= 0 {
		p.b = int(mv.b)
		p.jb = st.where[p.b]
	}
	if p.ja == p.jb {
		return p, false
	}
	p.ha, p.hb = st.hash[p.ja]^o.appWord(p.a), st.hash[p.jb]^o.appWord(p.a)
	if p.b >= 0 {
		p.ha ^= o.appWord(p.b)
		p.hb ^= o.appWord(p.b)
	}
	return p, true
}

// newSets builds the sets of ja and jb after move p (sorted) in the
// buffers, which it keeps grown.
func (o *optimizer) newSets(st *searchState, p *pendingMove, bufA, bufB *[]int) (na, nb []int) {
	na, nb = *bufA, *bufB
	if p.b < 0 {
		na, nb = without(na, st.alloc[p.ja], p.a), with(nb, st.alloc[p.jb], p.a)
	} else {
		o.scratch = without(o.scratch, st.alloc[p.ja], p.a)
		na = with(na, o.scratch, p.b)
		o.scratch = without(o.scratch, st.alloc[p.jb], p.b)
		nb = with(nb, o.scratch, p.a)
	}
	*bufA, *bufB = na, nb
	return na, nb
}

// keepsMakespan reports whether st with ja and jb holding na and nb keeps
// the expected makespan allowed (always, without the constraint).
func (o *optimizer) keepsMakespan(st *searchState, p *pendingMove, na, nb []int, allowed func(float64) bool) (bool, error) {
	if o.opt.MakespanSlack < 0 {
		return true, nil
	}
	oldA, oldB := st.alloc[p.ja], st.alloc[p.jb]
	st.alloc[p.ja], st.alloc[p.jb] = na, nb
	ms, err := o.eval.makespan(o.ctx, st.alloc)
	st.alloc[p.ja], st.alloc[p.jb] = oldA, oldB
	if err != nil {
		return false, err
	}
	return allowed(ms), nil
}

// apply makes move p on st (the new sets copied out of the buffers), with
// score t1 and tie-break t2; the figures are the evaluator's to set.
func (st *searchState) apply(p *pendingMove, na, nb []int, t1, t2 float64) {
	st.alloc[p.ja] = append(st.alloc[p.ja][:0:0], na...)
	st.alloc[p.jb] = append(st.alloc[p.jb][:0:0], nb...)
	st.where[p.a] = p.jb
	if p.b >= 0 {
		st.where[p.b] = p.ja
	}
	st.hash[p.ja], st.hash[p.jb] = p.ha, p.hb
	st.s1, st.s2 = t1, t2
}

// machineEval evaluates mappings machine by machine: a machine's figure is
// P(F_j <= beta) of its own set (machineP, cached by set).
type machineEval struct{ o *optimizer }

func (machineEval) groupFigures([][]int, []float64, []bool) (float64, error) { return 1, nil }
func (machineEval) separable() bool                                          { return true }
func (machineEval) tickEvery() int                                           { return 64 }
func (machineEval) groupSolves() int                                         { return 0 }

// try solves one machine's new set first (the one in the cache already,
// else the one that gains work): if the move cannot improve even with the
// other machine at probability 1, the second solve is not needed. The new
// sets are built only if a cache lookup misses.
func (m machineEval) try(st *searchState, p pendingMove, allowed func(float64) bool, bufA, bufB *[]int) (bool, error) {
	o := m.o
	var na, nb []int
	built := false
	build := func() {
		if !built {
			built = true
			na, nb = o.newSets(st, &p, bufA, bufB)
		}
	}
	first, second := p.jb, p.ja
	if _, ok := o.cache[setKey{int32(p.ja), p.ha}]; ok {
		first, second = p.ja, p.jb
	}
	solve := func(j int) (float64, error) {
		h, set := p.ha, &na
		if j == p.jb {
			h, set = p.hb, &nb
		}
		if pr, ok := o.cache[setKey{int32(j), h}]; ok {
			return pr, nil
		}
		build()
		return o.machineP(j, *set, h)
	}
	p1, err := solve(first)
	if err != nil {
		return false, err
	}
	o1, o2 := st.ps[first], st.ps[second]
	st.ps[first], st.ps[second] = p1, 1
	t1, t2, _, _ := o.score(st.ps, st.grouped, st.groupAll)
	st.ps[first], st.ps[second] = o1, o2
	if !better(t1, t2, st.s1, st.s2) {
		return false, nil
	}
	p2, err := solve(second)
	if err != nil {
		return false, err
	}
	pa, pb := p1, p2
	if first == p.jb {
		pa, pb = p2, p1
	}
	oa, ob := st.ps[p.ja], st.ps[p.jb]
	st.ps[p.ja], st.ps[p.jb] = pa, pb
	t1, t2, _, _ = o.score(st.ps, st.grouped, st.groupAll)
	if !better(t1, t2, st.s1, st.s2) {
		st.ps[p.ja], st.ps[p.jb] = oa, ob
		return false, nil
	}
	build()
	if ok, err := o.keepsMakespan(st, &p, na, nb, allowed); err != nil || !ok {
		st.ps[p.ja], st.ps[p.jb] = oa, ob
		return false, err
	}
	st.apply(&p, na, nb, t1, t2)
	return true, nil
}

// candidate solves every machine with machineFinish (package passage).
func (m machineEval) candidate(ctx context.Context, name string, alloc [][]int, withMakespan bool) (Candidate, error) {
	o := m.o
	ps := make([]float64, len(alloc))
	for j, apps := range alloc {
		mr, err := machineFinish(ctx, o.in, j, apps, o.opt.Beta, o.opt.Epsilon, false)
		if err != nil {
			return Candidate{}, err
		}
		ps[j] = mr.PByBeta
	}
	c := Candidate{Name: name, Allocation: alloc, Makespan: math.NaN()}
	c.Score, _, c.Robustness, c.Joint = o.score(ps, nil, 1)
	if withMakespan {
		ms, err := m.makespan(ctx, alloc)
		if err != nil {
			return Candidate{}, err
		}
		c.Makespan = ms
	}
	return c, nil
}

// makespan combines the machines' finishing-time distributions, which are
// independent.
func (m machineEval) makespan(ctx context.Context, alloc [][]int) (float64, error) {
	o := m.o
	res := &models.Result{}
	for j, apps := range alloc {
		if len(apps) == 0 {
			continue
		}
		mr, err := machineFinish(ctx, o.in, j, apps, o.opt.Beta, o.opt.Epsilon, true)
		if err != nil {
			return 0, err
		}
		res.Machines = append(res.Machines, mr)
	}
	res.ProductJoint(1e-9)
	return res.ExpectedMakespan, nil
}
