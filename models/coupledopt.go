package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/lang"
)

// Optimize on a specification with shared resources (shared.go). A machine
// that stages input through a resource is coupled to the other machines
// that do, in the mapping at hand: its P(F <= beta) depends on their
// applications too, so it is no function of its own set, and the exact
// method (a dynamic program over each machine's sets) does not apply.
// Optimize runs the iterated local search instead, evaluating a mapping by
// groups (the machines that stage through a common resource, transitively,
// as ctmc.Structure.Groups finds them in the generated model): each group
// on its own chain, solved from the PEPA gen writes for it
// (solveGroupProbabilities, the chains AnalyzeGroups builds), cached by the
// group's content (its machines and their applications), so a move
// re-solves only the groups whose content it changes; a machine that
// stages nothing in the mapping is solved alone by machineSolver, as for
// an independent specification. The upper bound of bound.go still holds
// (see there), so the result still reports a gap. The figures reported for
// a mapping are AnalyzeGroups' on its generated model, those of pepa
// robustness.

// maxSearchGroupStates bounds a group's chain during the search: a mapping
// whose group would be larger scores 0 (it is never the result, unless
// every mapping tried is), and the search moves on.
const maxSearchGroupStates = 2_000_000

// coupling is the optimizer's state for a specification with resources.
type coupling struct {
	in        *Instance
	listed    []bool // per machine: some resource lists it (it may be coupled)
	beta, eps float64
	cache     map[string]groupFigures
	whole     map[string]*Result // whole-model analyses, by allocation
	solves    int                // groups solved (cache misses)
	tooLarge  int                // of which past maxSearchGroupStates or the memory budget
	record    bool               // keep the keys of the groups solved (tests)
	solved    []string
	maxStates int

	// Scratch.
	parent     []int
	stagesHere []bool
	ps         []float64
	grouped    []bool
	key        []byte
	groupBuf   [][]int // groups' result, reused
	groupOf    []int   // per root machine, its group's index
}

// groupFigures are one group's figures: P(F_j <= beta) of its machines
// (in machine order) and P(all of them finished by beta).
type groupFigures struct {
	ps  []float64
	all float64
}

func newCoupling(in *Instance, beta, eps float64) *coupling {
	c := &coupling{in: in, beta: beta, eps: eps, listed: make([]bool, len(in.Machines)),
		cache: map[string]groupFigures{}, whole: map[string]*Result{}, maxStates: maxSearchGroupStates}
	for _, res := range in.Resources {
		for j, u := range res.users {
			c.listed[j] = c.listed[j] || u
		}
	}
	return c
}

// groups partitions the machines that stage input in alloc into groups
// (machines in index order, groups by their first machine). The result is
// valid until the next call.
func (c *coupling) groups(alloc [][]int) [][]int {
	m := len(c.in.Machines)
	if len(c.parent) < m {
		c.parent, c.stagesHere = make([]int, m), make([]bool, m)
	}
	parent, stages := c.parent[:m], c.stagesHere[:m]
	for j := range parent {
		parent[j], stages[j] = j, false
	}
	find := func(j int) int {
		for parent[j] != j {
			parent[j] = parent[parent[j]]
			j = parent[j]
		}
		return j
	}
	for _, res := range c.in.Resources {
		first := -1
		for j := 0; j < m; j++ {
			if !res.users[j] {
				continue
			}
			uses := false
			for _, a := range alloc[j] {
				if res.data[a] > 0 {
					uses = true
					break
				}
			}
			if !uses {
				continue
			}
			stages[j] = true
			if first < 0 {
				first = j
			} else if r1, r2 := find(first), find(j); r1 != r2 {
				parent[max(r1, r2)] = min(r1, r2)
			}
		}
	}
	// A set's root is its least machine (unions keep the smaller root),
	// so it comes first in index order and opens the group. The groups
	// reuse the previous call's slices.
	out := c.groupBuf[:0]
	if len(c.groupOf) < m {
		c.groupOf = make([]int, m)
	}
	for j := 0; j < m; j++ {
		if !stages[j] {
			continue
		}
		r := find(j)
		if r == j {
			c.groupOf[j] = len(out)
			if len(out) < cap(out) {
				out = out[:len(out)+1]
				out[len(out)-1] = out[len(out)-1][:0]
			} else {
				out = append(out, nil)
			}
		}
		g := c.groupOf[r]
		out[g] = append(out[g], j)
	}
	c.groupBuf = out
	return out
}

// groupKey names a group's content: its machines and their applications
// (in c.key's buffer: a map lookup by string(key) does not allocate).
func (c *coupling) groupKey(g []int, alloc [][]int) []byte {
	k := c.key[:0]
	for _, j := range g {
		k = strconv.AppendInt(k, int64(j), 10)
		k = append(k, ':')
		for _, a := range alloc[j] {
			k = strconv.AppendInt(k, int64(a), 10)
			k = append(k, ',')
		}
		k = append(k, '|')
	}
	c.key = k
	return k
}

// evaluate sets ps of every machine that stages input in alloc from its
// group's figures (grouped true), and returns the product of the groups'
// P(all finished by beta). The other machines' ps are left as they are.
func (c *coupling) evaluate(ctx context.Context, alloc [][]int, ps []float64, grouped []bool) (float64, error) {
	for j := range grouped {
		grouped[j] = false
	}
	all := 1.0
	for _, g := range c.groups(alloc) {
		f, err := c.figures(ctx, g, alloc)
		if err != nil {
			return 0, err
		}
		for k, j := range g {
			ps[j], grouped[j] = f.ps[k], true
		}
		all *= f.all
	}
	return all, nil
}

// figures are a group's figures, from the cache or solved on the group's
// chain: the model gen writes for its machines alone (writeModel), compiled
// and solved by solveGroupProbabilities.
func (c *coupling) figures(ctx context.Context, g []int, alloc [][]int) (groupFigures, error) {
	if f, ok := c.cache[string(c.groupKey(g, alloc))]; ok {
		return f, nil
	}
	key := string(c.key)
	f := groupFigures{ps: make([]float64, len(g))}
	var b strings.Builder
	c.in.writeModel(&b, alloc, g)
	m, diags := lang.Load("group.pepa", []byte(b.String()))
	if diags.HasErrors() {
		return f, fmt.Errorf("the model of a group does not check (a bug): %w", diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		return f, err
	}
	gp, err := solveGroupProbabilities(ctx, s, c.beta, c.eps, c.maxStates)
	switch {
	case err != nil && ctx.Err() == nil && (errors.Is(err, ctmc.ErrTooManyStates) || errors.Is(err, membudget.ErrOverBudget)):
		c.tooLarge++ // scores 0
	case err != nil:
		return f, err
	default:
		byName := map[string]float64{}
		for i, mach := range gp.Machines {
			byName[mach.Name] = gp.PByBeta[i]
		}
		for k, j := range g {
			p, ok := byName[c.in.Machines[j]]
			if !ok {
				return f, fmt.Errorf("machine %s is not detected in its group's model (a bug)", c.in.Machines[j])
			}
			f.ps[k] = p
		}
		f.all = gp.PAll
	}
	c.solves++
	if c.record {
		c.solved = append(c.solved, key)
	}
	c.cache[key] = f
	return f, nil
}

// analyze is the whole model of an allocation analysed as pepa robustness
// analyses it: the model gen writes, with its pragmas, by AnalyzeGroups.
func (c *coupling) analyze(ctx context.Context, alloc [][]int) (*Result, error) {
	key := string(c.groupKey(allMachines(len(alloc)), alloc))
	if r, ok := c.whole[key]; ok {
		return r, nil
	}
	var b strings.Builder
	if err := c.in.Generate(&b, c.in.MappingOf("optimized", alloc)); err != nil {
		return nil, err
	}
	m, diags := lang.Load("mapping.pepa", []byte(b.String()))
	if diags.HasErrors() {
		return nil, fmt.Errorf("the generated model does not check (a bug): %w", diags.Err())
	}
	pragmas, err := ReadPragmas(m.File)
	if err != nil {
		return nil, err
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		return nil, err
	}
	r, err := AnalyzeGroups(ctx, s, Options{Beta: c.beta, Epsilon: c.eps, Pragmas: pragmas})
	if err != nil {
		return nil, err
	}
	c.whole[key] = r
	return r, nil
}

func allMachines(m int) []int {
	out := make([]int, m)
	for j := range out {
		out[j] = j
	}
	return out
}

// coupledScore is the objective of a coupled mapping: min_j P(F_j <= beta),
// or P(all finished by beta), the product of the groups' and the lone
// machines' probabilities (with the other as the tie-break, as score).
func (o *optimizer) coupledScore(ps []float64, grouped []bool, groupAll float64) (primary, secondary, minP, joint float64) {
	minP, joint = 1, groupAll
	for j, p := range ps {
		minP = math.Min(minP, p)
		if !grouped[j] {
			joint *= p
		}
	}
	if o.opt.Objective == "joint" {
		return joint, minP, minP, joint
	}
	return minP, joint, minP, joint
}

// loadCoupled is load for a specification with resources.
func (o *optimizer) loadCoupled(st *searchState, alloc [][]int) error {
	m := len(o.in.Machines)
	st.alloc = make([][]int, m)
	st.where = make([]int, len(o.in.Apps))
	st.hash = make([]uint64, m)
	st.ps = make([]float64, m)
	st.grouped = make([]bool, m)
	for j, apps := range alloc {
		st.alloc[j] = append([]int(nil), apps...)
		sort.Ints(st.alloc[j])
		for _, a := range apps {
			st.where[a] = j
		}
		st.hash[j] = o.setHash(st.alloc[j])
	}
	all, err := o.coupled.evaluate(o.ctx, st.alloc, st.ps, st.grouped)
	if err != nil {
		return err
	}
	st.groupAll = all
	for j := range st.alloc {
		if !st.grouped[j] {
			if st.ps[j], err = o.machineP(j, st.alloc[j], st.hash[j]); err != nil {
				return err
			}
		}
	}
	st.s1, st.s2, _, _ = o.coupledScore(st.ps, st.grouped, st.groupAll)
	return nil
}

// tryCoupled is try for a specification with resources: the move's new
// sets, the groups of the new mapping (only those whose content changed
// are solved, the others come from the cache), the machines that stage
// nothing by machineSolver; applied if it improves the score.
func (o *optimizer) tryCoupled(st *searchState, mv move, allowed func(float64) bool, bufA, bufB *[]int) (bool, error) {
	a := int(mv.a)
	ja, b, jb := st.where[a], -1, int(mv.to)
	if mv.b >= 0 {
		b = int(mv.b)
		jb = st.where[b]
	}
	if ja == jb {
		return false, nil
	}
	o.moves++
	c := o.coupled
	// The new sets in the buffers while the move is evaluated; copied
	// into st if it is applied.
	na, nb := *bufA, *bufB
	if b < 0 {
		na, nb = without(na, st.alloc[ja], a), with(nb, st.alloc[jb], a)
	} else {
		o.scratch = without(o.scratch, st.alloc[ja], a)
		na = with(na, o.scratch, b)
		o.scratch = without(o.scratch, st.alloc[jb], b)
		nb = with(nb, o.scratch, a)
	}
	*bufA, *bufB = na, nb // keep the grown buffers
	oldA, oldB := st.alloc[ja], st.alloc[jb]
	st.alloc[ja], st.alloc[jb] = na, nb
	restore := func() { st.alloc[ja], st.alloc[jb] = oldA, oldB }
	ps := append(c.ps[:0], st.ps...)
	grouped := append(c.grouped[:0], st.grouped...)
	c.ps, c.grouped = ps, grouped
	groupAll := st.groupAll
	if c.listed[ja] || c.listed[jb] {
		var err error
		if groupAll, err = c.evaluate(o.ctx, st.alloc, ps, grouped); err != nil {
			restore()
			return false, err
		}
	}
	ha, hb := o.setHash(na), o.setHash(nb)
	for _, x := range [2]struct {
		j int
		h uint64
	}{{ja, ha}, {jb, hb}} {
		if !grouped[x.j] {
			p, err := o.machineP(x.j, st.alloc[x.j], x.h)
			if err != nil {
				restore()
				return false, err
			}
			ps[x.j] = p
		}
	}
	t1, t2, _, _ := o.coupledScore(ps, grouped, groupAll)
	if !better(t1, t2, st.s1, st.s2) {
		restore()
		return false, nil
	}
	if o.opt.MakespanSlack >= 0 {
		ms, err := o.makespan(o.ctx, st.alloc)
		if err != nil {
			restore()
			return false, err
		}
		if !allowed(ms) {
			restore()
			return false, nil
		}
	}
	st.alloc[ja] = append(oldA[:0:0], na...) // own memory: na, nb are the buffers
	st.alloc[jb] = append(oldB[:0:0], nb...)
	copy(st.ps, ps)
	copy(st.grouped, grouped)
	st.groupAll = groupAll
	st.where[a] = jb
	if b >= 0 {
		st.where[b] = ja
	}
	st.hash[ja], st.hash[jb] = ha, hb
	st.s1, st.s2 = t1, t2
	return true, nil
}

// candidateCoupled is a mapping with the figures pepa robustness gives its
// generated model.
func (o *optimizer) candidateCoupled(ctx context.Context, name string, alloc [][]int, withMakespan bool) (Candidate, error) {
	r, err := o.coupled.analyze(ctx, alloc)
	if err != nil {
		return Candidate{}, err
	}
	c := Candidate{Name: name, Allocation: alloc, Robustness: r.Robustness, Joint: r.PAllByBeta, Makespan: math.NaN()}
	c.Score = c.Robustness
	if o.opt.Objective == "joint" {
		c.Score = c.Joint
	}
	if withMakespan {
		c.Makespan = r.ExpectedMakespan
	}
	return c, nil
}
