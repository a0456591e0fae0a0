package optimize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/lang"
	"pepa/models"
	"pepa/models/spec"
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

// coupling is groupEval's state: the groups' models, solved and cached.
type coupling struct {
	in        *spec.Instance
	listed    []bool // per machine: some resource lists it (it may be coupled)
	beta, eps float64
	cache     map[string]groupFigures
	whole     map[string]*models.Result // whole-model analyses, by allocation
	solves    int                       // groups solved (cache misses)
	tooLarge  int                       // of which past maxSearchGroupStates or the memory budget
	record    bool                      // keep the keys of the groups solved (tests)
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

func newCoupling(in *spec.Instance, beta, eps float64) *coupling {
	c := &coupling{in: in, beta: beta, eps: eps, listed: make([]bool, len(in.Machines)),
		cache: map[string]groupFigures{}, whole: map[string]*models.Result{}, maxStates: maxSearchGroupStates}
	for k, res := range in.Resources {
		for j, u := range res.Users {
			c.listed[j] = c.listed[j] || u || (in.External(j) && in.OwnerUses(j, k))
		}
	}
	for j, p := range in.PoolOf {
		c.listed[j] = c.listed[j] || p >= 0
	}
	return c
}

// groups partitions the coupled machines of alloc into groups (machines
// in index order, groups by their first machine): the machines that stage
// input, or whose owner's jobs do, joined through each resource, and the
// desktops of each pool. The result is valid until the next call.
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
	join := func(first *int, j int) {
		stages[j] = true
		if *first < 0 {
			*first = j
		} else if r1, r2 := find(*first), find(j); r1 != r2 {
			parent[max(r1, r2)] = min(r1, r2)
		}
	}
	for k, res := range c.in.Resources {
		first := -1
		for j := 0; j < m; j++ {
			// An owner whose jobs use the resource couples its machine,
			// whatever the machine computes.
			uses := c.in.External(j) && c.in.OwnerUses(j, k)
			for _, a := range alloc[j] {
				if uses || !res.Users[j] {
					break
				}
				uses = res.AppData[a] > 0
			}
			if uses {
				join(&first, j)
			}
		}
	}
	// A pool's desktops are one group, whatever they compute.
	for p := range c.in.Pools {
		first := -1
		for j := 0; j < m; j++ {
			if c.in.PoolOf[j] == p {
				join(&first, j)
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
	f := groupFigures{ps: make([]float64, len(g)), all: 1}
	computing := false
	for k, j := range g {
		f.ps[k] = 1 // computes nothing: finished at once
		computing = computing || len(alloc[j]) > 0
	}
	if !computing {
		// Owners and seats alone: nothing to finish.
		c.cache[key] = f
		return f, nil
	}
	var b strings.Builder
	if err := c.in.WriteModel(&b, alloc, g); err != nil {
		return f, err
	}
	m, diags := lang.Load("group.pepa", []byte(b.String()))
	if diags.HasErrors() {
		return f, fmt.Errorf("the model of a group does not check (a bug): %w", diags.Err())
	}
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		return f, err
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		return f, err
	}
	gp, err := models.SolveGroupProbabilities(ctx, s, pragmas, c.beta, c.eps, c.maxStates)
	switch {
	case err != nil && ctx.Err() == nil && (errors.Is(err, ctmc.ErrTooManyStates) || errors.Is(err, membudget.ErrOverBudget)):
		c.tooLarge++ // scores 0
		for k := range f.ps {
			f.ps[k] = 0
		}
		f.all = 0
	case err != nil:
		return f, err
	default:
		byName := map[string]float64{}
		for i, mach := range gp.Machines {
			byName[mach.Name] = gp.PByBeta[i]
		}
		for k, j := range g {
			p, ok := byName[c.in.Machines[j]]
			if !ok && len(alloc[j]) > 0 {
				return f, fmt.Errorf("machine %s is not detected in its group's model (a bug)", c.in.Machines[j])
			}
			if ok {
				f.ps[k] = p
			}
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
func (c *coupling) analyze(ctx context.Context, alloc [][]int) (*models.Result, error) {
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
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		return nil, err
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		return nil, err
	}
	r, err := models.AnalyzeGroups(ctx, s, models.Options{Question: models.Question{Beta: c.beta, Epsilon: c.eps},
		Pragmas: pragmas})
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

// groupEval evaluates mappings by groups of coupled machines (the
// coupling), the machines that stage nothing in the mapping alone.
type groupEval struct {
	o *optimizer
	*coupling
}

func (g *groupEval) groupFigures(alloc [][]int, ps []float64, grouped []bool) (float64, error) {
	return g.evaluate(g.o.ctx, alloc, ps, grouped)
}

func (g *groupEval) separable() bool  { return false }
func (g *groupEval) tickEvery() int   { return 1 }
func (g *groupEval) groupSolves() int { return g.solves }

// try evaluates the mapping after the move: the groups of the new
// mapping, when the move touches a machine some resource lists (only those
// whose content changed are solved, the others come from the cache), and
// the machines that stage nothing by machineSolver.
func (g *groupEval) try(st *searchState, p pendingMove, allowed func(float64) bool, bufA, bufB *[]int) (bool, error) {
	o := g.o
	na, nb := o.newSets(st, &p, bufA, bufB)
	ps := append(g.ps[:0], st.ps...)
	grouped := append(g.grouped[:0], st.grouped...)
	g.ps, g.grouped = ps, grouped
	groupAll := st.groupAll
	if g.listed[p.ja] || g.listed[p.jb] {
		oldA, oldB := st.alloc[p.ja], st.alloc[p.jb]
		st.alloc[p.ja], st.alloc[p.jb] = na, nb
		var err error
		groupAll, err = g.evaluate(o.ctx, st.alloc, ps, grouped)
		st.alloc[p.ja], st.alloc[p.jb] = oldA, oldB
		if err != nil {
			return false, err
		}
	}
	for _, x := range [2]struct {
		j   int
		set []int
		h   uint64
	}{{p.ja, na, p.ha}, {p.jb, nb, p.hb}} {
		if !grouped[x.j] {
			pr, err := o.machineP(x.j, x.set, x.h)
			if err != nil {
				return false, err
			}
			ps[x.j] = pr
		}
	}
	t1, t2, _, _ := o.score(ps, grouped, groupAll)
	if !better(t1, t2, st.s1, st.s2) {
		return false, nil
	}
	if ok, err := o.keepsMakespan(st, &p, na, nb, allowed); err != nil || !ok {
		return false, err
	}
	copy(st.ps, ps)
	copy(st.grouped, grouped)
	st.groupAll = groupAll
	st.apply(&p, na, nb, t1, t2)
	return true, nil
}

// candidate is a mapping with the figures pepa robustness gives its
// generated model.
func (g *groupEval) candidate(ctx context.Context, name string, alloc [][]int, withMakespan bool) (Candidate, error) {
	r, err := g.analyze(ctx, alloc)
	if err != nil {
		return Candidate{}, err
	}
	c := Candidate{Name: name, Allocation: alloc, Robustness: r.Robustness, Joint: r.PAllByBeta, Makespan: math.NaN()}
	c.Score = c.Robustness
	if g.o.opt.Objective == "joint" {
		c.Score = c.Joint
	}
	if withMakespan {
		c.Makespan = r.ExpectedMakespan
	}
	return c, nil
}

// makespan is the whole model's, as pepa robustness computes it.
func (g *groupEval) makespan(ctx context.Context, alloc [][]int) (float64, error) {
	r, err := g.analyze(ctx, alloc)
	if err != nil {
		return 0, err
	}
	return r.ExpectedMakespan, nil
}
