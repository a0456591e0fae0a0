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
}

func newPath(s *ctmc.Structure) *path {
	p := &path{ev: s.NewEvaluator(), state: make([]uint64, s.Words)}
	p.rng = rand.New(&p.src)
	return p
}

// reset starts the path afresh with the generator of stream (seed, index).
func (p *path) reset(seed uint64, index int, initial []LeafDistribution) {
	p.src.Seed(streamSeeds(seed, uint64(index)))
	clear(p.state)
	p.t = 0
	for _, d := range initial {
		d.Leaf.SetLocal(p.state, draw(p.rng, d.P))
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
