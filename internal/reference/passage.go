package reference

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Passage is a first-passage problem on a chain: a start distribution and
// what ends the passage.
type Passage struct {
	Alpha []float64
	// TargetActions end the passage at the first firing of a transition
	// labelled by one of them (self-loops included).
	TargetActions map[string]bool
	// TargetStates, if not nil, end it on entering a marked state (a start
	// inside is absorbed at t = 0).
	TargetStates []bool
}

// InitialActions is the passage from the initial state to the first firing
// of one of the actions.
func (c *Chain) InitialActions(actions []string) Passage {
	p := Passage{Alpha: make([]float64, c.N()), TargetActions: map[string]bool{}}
	p.Alpha[0] = 1
	for _, a := range actions {
		p.TargetActions[a] = true
	}
	return p
}

// InitialStates is the passage from the initial state into a set of states.
func (c *Chain) InitialStates(target []bool) Passage {
	p := Passage{Alpha: make([]float64, c.N()), TargetStates: target}
	p.Alpha[0] = 1
	return p
}

// EnteredBy marks the states with an incoming transition labelled by one of
// the actions (self-loops included).
func (c *Chain) EnteredBy(actions []string) []bool {
	set := map[string]bool{}
	for _, a := range actions {
		set[a] = true
	}
	out := make([]bool, c.N())
	for _, ts := range c.Trans {
		for _, t := range ts {
			if set[t.Action] {
				out[t.To] = true
			}
		}
	}
	return out
}

var (
	// ErrNoSource: a plug-in passage has no source state of positive weight.
	ErrNoSource = errors.New("plug-in passage has no source state of positive weight")
	// ErrNoTarget: every state entered by a target action is a source
	// state, so a plug-in passage has no end.
	ErrNoTarget = errors.New("plug-in passage has no target state")
)

// Plugin is the PEPA Eclipse Plug-in's passage (semantics.md section 2):
// sources are the states entered by a source action, targets the states
// entered by a target action that are not sources, and alpha is pi_i*q_i
// (q_i the exit rate, self-loops excluded) on the sources, renormalised.
func (c *Chain) Plugin(pi []float64, source, target []string) (Passage, error) {
	src := c.EnteredBy(source)
	tgt := c.EnteredBy(target)
	alpha := make([]float64, c.N())
	total := 0.0
	for i := range alpha {
		if src[i] {
			tgt[i] = false
			alpha[i] = pi[i] * c.ExitRate(i)
			total += alpha[i]
		}
	}
	if !(total > 0) {
		return Passage{}, ErrNoSource
	}
	anyTarget := false
	for _, x := range tgt {
		anyTarget = anyTarget || x
	}
	if !anyTarget {
		return Passage{}, ErrNoTarget
	}
	for i := range alpha {
		alpha[i] /= total
	}
	return Passage{Alpha: alpha, TargetStates: tgt}, nil
}

// absorbing builds the (N+1)x(N+1) generator in which the passage's end is
// absorbing: target-action transitions go to the extra state N, target
// states have no way out. It also returns which states count as "ended".
func (c *Chain) absorbing(p Passage) (*mat.Dense, []bool) {
	n := c.N()
	g := mat.NewDense(n+1, n+1, nil)
	ended := make([]bool, n+1)
	ended[n] = true
	for i := 0; i < n; i++ {
		if p.TargetStates != nil && p.TargetStates[i] {
			ended[i] = true
			continue
		}
		for _, t := range c.Trans[i] {
			to := t.To
			if p.TargetActions[t.Action] {
				to = n
			}
			if to == i {
				continue // a self-loop that does not end the passage
			}
			g.Set(i, to, g.At(i, to)+t.Rate)
			g.Set(i, i, g.At(i, i)-t.Rate)
		}
	}
	return g, ended
}

// CDF is P(passage time <= t): the mass that alpha*exp(G t) puts on the
// ended states, G the absorbing generator.
func (c *Chain) CDF(p Passage, t float64) float64 {
	g, ended := c.absorbing(p)
	n := c.N() + 1
	e := expGenerator(g, t)
	f := 0.0
	for i := 0; i < n-1; i++ {
		if p.Alpha[i] == 0 {
			continue
		}
		for j := 0; j < n; j++ {
			if ended[j] {
				f += p.Alpha[i] * e.At(i, j)
			}
		}
	}
	return math.Min(f, 1)
}

// expGenerator is exp(G t) for a generator G (non-negative off the
// diagonal, rows summing to zero), by scaling and squaring on D = exp(G h) - I
// rather than on exp(G h) itself: (I + D)^2 = I + (2D + D D). Stored as
// I + D, an entry 1 - 1e-9 keeps only seven digits of its 1e-9, and 2^k
// squarings multiply that loss by 2^k; stored as D, slow rates keep their
// relative accuracy. (gonum's mat.Dense.Exp was measured 3e-8 off the closed
// form of Exp(1e4) followed by Exp(1e-4) at t = 1000, too far for a 1e-9
// oracle; so was plain squaring of exp(G h).)
func expGenerator(g *mat.Dense, t float64) *mat.Dense {
	n, _ := g.Dims()
	c := 0.0
	for i := 0; i < n; i++ {
		c = math.Max(c, -g.At(i, i))
	}
	d := mat.NewDense(n, n, nil)
	if c > 0 && t > 0 {
		// h = t / 2^k with c h <= 1/2, so ||G h||_inf <= 2 c h <= 1.
		k := 0
		h := t
		for c*h > 0.5 {
			h /= 2
			k++
		}
		b := mat.NewDense(n, n, nil)
		b.Scale(h, g)
		// Taylor series of exp(G h) - I: the terms (G h)^j / j!, j >= 1.
		term := mat.DenseCopyOf(b)
		d.Copy(b)
		var next mat.Dense
		for j := 2; j < 60; j++ {
			next.Mul(term, b)
			next.Scale(1/float64(j), &next)
			term.Copy(&next)
			d.Add(d, term)
			if mat.Norm(term, math.Inf(1)) < 1e-18*mat.Norm(b, math.Inf(1)) {
				break
			}
		}
		for ; k > 0; k-- {
			next.Mul(d, d)
			d.Scale(2, d)
			d.Add(d, &next)
		}
	}
	for i := 0; i < n; i++ {
		d.Set(i, i, d.At(i, i)+1)
	}
	return d
}

// Mean is the expected passage time, by a dense linear solve over the states
// the start can reach before the end; +Inf if one of them cannot reach the
// end (the passage may never finish).
func (c *Chain) Mean(p Passage) (float64, error) {
	g, ended := c.absorbing(p)
	n := c.N() + 1
	// States the start reaches without passing the end.
	live := make([]bool, n)
	var stack []int
	for i := 0; i < n-1; i++ {
		if p.Alpha[i] > 0 && !ended[i] {
			live[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for j := 0; j < n; j++ {
			if j != i && g.At(i, j) > 0 && !ended[j] && !live[j] {
				live[j] = true
				stack = append(stack, j)
			}
		}
	}
	// Every live state must reach the end: backwards from the end.
	canEnd := make([]bool, n)
	copy(canEnd, ended)
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			if canEnd[i] {
				continue
			}
			for j := 0; j < n; j++ {
				if j != i && g.At(i, j) > 0 && canEnd[j] {
					canEnd[i], changed = true, true
					break
				}
			}
		}
	}
	var idx []int
	for i := 0; i < n; i++ {
		if live[i] {
			if !canEnd[i] {
				return math.Inf(1), nil
			}
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return 0, nil
	}
	// Expected times to the end, m_i = (1 + sum_j r_ij m_j) / d_i, by
	// eliminating the live states one by one (the GTH idea): d_i is always
	// recomputed as a sum of non-negative rates, never by subtraction, so
	// stiff chains lose no accuracy.
	k := len(idx)
	r := make([][]float64, k) // rates among live states
	out := make([]float64, k) // rate from a live state to the end
	b := make([]float64, k)
	pos := map[int]int{}
	for y, j := range idx {
		pos[j] = y
	}
	for x, i := range idx {
		r[x] = make([]float64, k)
		b[x] = 1
		for j := 0; j < n; j++ {
			if j == i || g.At(i, j) == 0 {
				continue
			}
			if y, ok := pos[j]; ok {
				r[x][y] += g.At(i, j)
			} else {
				out[x] += g.At(i, j) // every successor is live or ended
			}
		}
	}
	d := make([]float64, k)
	for e := k - 1; e >= 0; e-- {
		d[e] = out[e]
		for j := 0; j < e; j++ {
			d[e] += r[e][j]
		}
		for i := 0; i < e; i++ {
			f := r[i][e] / d[e]
			if f == 0 {
				continue
			}
			out[i] += f * out[e]
			b[i] += f * b[e]
			for j := 0; j < e; j++ {
				if j != i {
					r[i][j] += f * r[e][j]
				}
			}
		}
	}
	m := make([]float64, k)
	for e := 0; e < k; e++ {
		v := b[e]
		for j := 0; j < e; j++ {
			v += r[e][j] * m[j]
		}
		m[e] = v / d[e]
	}
	mean := 0.0
	for x, i := range idx {
		mean += p.Alpha[i] * m[x]
	}
	return mean, nil
}
