package simulate

import (
	"fmt"
	"math/rand/v2"

	"pepa/ctmc"
)

// LeafDistribution makes a leaf start in a local state drawn from P (by
// leaf-local state) instead of its first one.
type LeafDistribution struct {
	Leaf *ctmc.Leaf
	P    []float64 // sums to 1
}

// InitialFromNames resolves a start distribution given by component and
// local-state names (as models.Pragmas.Initial holds it).
func InitialFromNames(s *ctmc.Structure, dists map[string]map[string]float64) ([]LeafDistribution, error) {
	var out []LeafDistribution
	for _, l := range s.Leaves {
		d, ok := dists[l.Name]
		if !ok {
			continue
		}
		p := make([]float64, l.NumLocal)
		sum := 0.0
		for name, x := range d {
			found := false
			for st := 0; st < l.NumLocal; st++ {
				if l.LocalName(st) == name {
					p[st], found = x, true
				}
			}
			if !found {
				return nil, fmt.Errorf("initial distribution: component %s has no local state %s", l.Name, name)
			}
			sum += x
		}
		if sum <= 0 {
			return nil, fmt.Errorf("initial distribution of %s has total probability 0", l.Name)
		}
		for i := range p {
			p[i] /= sum
		}
		out = append(out, LeafDistribution{Leaf: l, P: p})
	}
	if len(out) != len(dists) {
		for name := range dists {
			if !hasLeaf(s, name) {
				return nil, fmt.Errorf("initial distribution names component %s, which the model does not have", name)
			}
		}
	}
	return out, nil
}

func hasLeaf(s *ctmc.Structure, name string) bool {
	for _, l := range s.Leaves {
		if l.Name == name {
			return true
		}
	}
	return false
}

// path is one simulated trajectory: a packed state, the time, a generator,
// and the buffers to list the state's transitions in.
type path struct {
	ev    *ctmc.Evaluator
	buf   ctmc.Transitions
	state []uint64
	t     float64
	rng   *rand.Rand
	src   rand.PCG
	// events counts the jumps made (self-loops included).
	events int64

	// With leaf tables (ctmc.IndependentLeaves) a jump updates one leaf:
	// local holds each table leaf's local state and cur its total rate.
	lt         *ctmc.LeafTables
	local      []int32
	cur        []float64
	constTotal float64
	// With context tables (ctmc.ContextTables) a jump updates one leaf,
	// and every leaf's total when the context changes.
	ct  *ctmc.ContextTables
	ctx int
}

func newPath(s *ctmc.Structure, tb tables) *path {
	lt := tb.lt
	p := &path{ev: s.NewEvaluator(), state: make([]uint64, s.Words), lt: lt, ct: tb.ct}
	p.rng = rand.New(&p.src)
	if tb.ct != nil {
		p.local = make([]int32, len(tb.ct.Leaves))
		p.cur = make([]float64, len(tb.ct.Leaves))
	}
	if lt != nil {
		p.local = make([]int32, len(lt.Leaves))
		p.cur = make([]float64, len(lt.Leaves))
		for _, r := range lt.ConstRate {
			p.constTotal += r
		}
	}
	return p
}

// tables are the fastest description of a structure's transitions that
// applies: leaf tables, else context tables, else none (the general
// evaluation).
type tables struct {
	lt *ctmc.LeafTables
	ct *ctmc.ContextTables
}

func findTables(s *ctmc.Structure, general bool) tables {
	if general {
		return tables{}
	}
	if lt, ok := s.IndependentLeaves(); ok {
		return tables{lt: lt}
	}
	if ct, ok := s.ContextTables(); ok {
		return tables{ct: ct}
	}
	return tables{}
}

// reset starts the path afresh with the generator of stream (seed, index).
func (p *path) reset(seed uint64, index int, initial []LeafDistribution) {
	p.src.Seed(streamSeeds(seed, uint64(index)))
	clear(p.state)
	p.t = 0
	for _, d := range initial {
		d.Leaf.SetLocal(p.state, draw(p.rng, d.P))
	}
	if p.lt != nil {
		for k, l := range p.lt.Leaves {
			p.local[k] = int32(l.Local(p.state))
			p.cur[k] = p.lt.Total[k][p.local[k]]
		}
	}
	if p.ct != nil {
		for k, l := range p.ct.Leaves {
			p.local[k] = int32(l.Local(p.state))
		}
		c, stride := 0, 1
		for _, l := range p.ct.Context {
			c += l.Local(p.state) * stride
			stride *= l.NumLocal
		}
		p.setContext(c)
	}
}

// setContext moves the path's context and refreshes every leaf's total.
func (p *path) setContext(c int) {
	ct := p.ct
	if c != p.ctx {
		x := c
		for _, l := range ct.Context {
			l.SetLocal(p.state, x%l.NumLocal)
			x /= l.NumLocal
		}
	}
	p.ctx = c
	for k := range p.cur {
		p.cur[k] = ct.Total[k][int(p.local[k])*ct.Size+c]
	}
}

// streamSeeds derives the two PCG seed words of a stream by SplitMix64
// finalisers, so that neighbouring indices give unrelated generators.
func streamSeeds(seed, index uint64) (uint64, uint64) {
	return mix(seed ^ mix(index+0x9E3779B97F4A7C15)), mix(index ^ mix(seed+0xD1B54A32D192ED03))
}

func mix(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func draw(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for i, x := range p {
		u -= x
		if u < 0 {
			return i
		}
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] > 0 {
			return i
		}
	}
	return 0
}

// step lists the enabled transitions, draws the sojourn and the transition
// taken, and moves. It returns the action fired and the sojourn time, or
// ok false in a deadlocked state (the path does not move).
func (p *path) step() (action int32, dt float64, ok bool, err error) {
	if p.lt != nil {
		return p.stepTables()
	}
	if p.ct != nil {
		return p.stepContext()
	}
	if err := p.ev.Enabled(p.state, &p.buf); err != nil {
		return 0, 0, false, err
	}
	rates := p.buf.Rates()
	total := 0.0
	for _, r := range rates {
		total += r
	}
	if len(rates) == 0 || !(total > 0) {
		return 0, 0, false, nil
	}
	dt = p.rng.ExpFloat64() / total
	u := p.rng.Float64() * total
	k := 0
	for ; k < len(rates)-1; k++ {
		u -= rates[k]
		if u < 0 {
			break
		}
	}
	action = p.buf.Action(k)
	p.buf.Apply(k, p.state)
	p.t += dt
	p.events++
	return action, dt, true, nil
}

// stepTables is step with leaf tables: the total rate is the constant
// list's plus each leaf's current total; the draw picks the constant list
// or a leaf by its total, then an entry of that leaf; only the leaf that
// moves is updated.
func (p *path) stepTables() (action int32, dt float64, ok bool, err error) {
	lt := p.lt
	total := p.constTotal
	for _, r := range p.cur {
		total += r
	}
	if !(total > 0) {
		return 0, 0, false, nil
	}
	dt = p.rng.ExpFloat64() / total
	u := p.rng.Float64() * total
	p.t += dt
	p.events++
	if u < p.constTotal {
		rates := lt.ConstRate
		k := 0
		for ; k < len(rates)-1; k++ {
			u -= rates[k]
			if u < 0 {
				break
			}
		}
		return lt.ConstAct[k], dt, true, nil
	}
	u -= p.constTotal
	// The leaf: the first whose cumulative total exceeds u (the last with
	// a positive total if rounding runs past the end).
	leaf := -1
	for k, r := range p.cur {
		if r <= 0 {
			continue
		}
		leaf = k
		if u < r {
			break
		}
		u -= r
	}
	if leaf < 0 { // no leaf can move: rounding put u past the constant list
		return lt.ConstAct[len(lt.ConstAct)-1], dt, true, nil
	}
	s := p.local[leaf]
	lo, hi := lt.Start[leaf][s], lt.Start[leaf][s+1]
	rates := lt.Rate[leaf][lo:hi]
	j := 0
	for ; j < len(rates)-1; j++ {
		u -= rates[j]
		if u < 0 {
			break
		}
	}
	target := lt.Target[leaf][int(lo)+j]
	p.local[leaf] = target
	p.cur[leaf] = lt.Total[leaf][target]
	lt.Leaves[leaf].SetLocal(p.state, int(target))
	return lt.Act[leaf][int(lo)+j], dt, true, nil
}

// stepContext is step with context tables: as stepTables, with the base
// entries of the current context in place of the constant list, and every
// leaf's total refreshed when a jump changes the context.
func (p *path) stepContext() (action int32, dt float64, ok bool, err error) {
	ct := p.ct
	c := p.ctx
	baseTotal := ct.BaseTotal[c]
	total := baseTotal
	for _, r := range p.cur {
		total += r
	}
	if !(total > 0) {
		return 0, 0, false, nil
	}
	dt = p.rng.ExpFloat64() / total
	u := p.rng.Float64() * total
	p.t += dt
	p.events++
	leaf := -1
	if u >= baseTotal {
		u -= baseTotal
		for k, r := range p.cur {
			if r <= 0 {
				continue
			}
			leaf = k
			if u < r {
				break
			}
			u -= r
		}
	}
	if leaf < 0 {
		lo, hi := ct.BaseStart[c], ct.BaseStart[c+1]
		if lo == hi { // rounding past the leaves with no base entry: the last leaf that can move
			for k := len(p.cur) - 1; k >= 0; k-- {
				if p.cur[k] > 0 {
					leaf, u = k, p.cur[k]
					break
				}
			}
		} else {
			j := lo
			for ; j < hi-1; j++ {
				u -= ct.BaseRate[j]
				if u < 0 {
					break
				}
			}
			if next := int(ct.BaseTargetCtx[j]); next != c {
				p.setContext(next)
			}
			return ct.BaseAct[j], dt, true, nil
		}
	}
	idx := int(p.local[leaf])*ct.Size + c
	lo, hi := ct.Start[leaf][idx], ct.Start[leaf][idx+1]
	j := lo
	for ; j < hi-1; j++ {
		u -= ct.Rate[leaf][j]
		if u < 0 {
			break
		}
	}
	target := ct.Target[leaf][j]
	p.local[leaf] = target
	ct.Leaves[leaf].SetLocal(p.state, int(target))
	if next := int(ct.TargetCtx[leaf][j]); next != c {
		p.setContext(next)
	} else {
		p.cur[leaf] = ct.Total[leaf][int(target)*ct.Size+c]
	}
	return ct.Act[leaf][j], dt, true, nil
}
