package reference

import (
	"errors"
	"math"
	"sort"

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
	v, _ := c.CDFs(p, []float64{t})
	return v[0]
}

// DenseLimit is the largest chain (states, the passage's end included)
// whose CDFs the reference computes by the dense matrix exponential;
// larger ones take the sparse substep method (cdfSparse).
const DenseLimit = 300

// unitRoundoff is float64's unit roundoff, 2^-53.
const unitRoundoff = 0x1p-53

// CDFs returns P(passage time <= t) for every t of ts, and a bound on the
// reference's own error in each value.
//
// The error bound is 1e-13 + 4u c t (u the unit roundoff, c the largest
// rate at which a state is left): both methods lose about one rounding per
// unit of c t (scaling and squaring doubles the error of exp(G h) with
// each squaring, and there are about 2 c t of them; the substeps add a few
// roundings each of nonnegative numbers), and they agree within it on
// random and stiff models (TestMethodsAgreeOnRandomModels), and with
// closed forms to far less (TestPassageClosedForms).
func (c *Chain) CDFs(p Passage, ts []float64) (vals, errs []float64) {
	vals, errs = make([]float64, len(ts)), make([]float64, len(ts))
	rate := c.leaveRate(p)
	for i, t := range ts {
		errs[i] = 1e-13 + 4*unitRoundoff*rate*t
	}
	if c.N()+1 <= DenseLimit {
		g, ended := c.absorbing(p)
		for i, t := range ts {
			vals[i] = denseCDF(g, ended, p.Alpha, t)
		}
		return vals, errs
	}
	return c.cdfSparse(p, ts), errs
}

// CDFsBy is CDFs by the named method, "dense" or "sparse", whatever the
// chain's size (for the reference's own tests).
func (c *Chain) CDFsBy(method string, p Passage, ts []float64) []float64 {
	if method == "sparse" {
		return c.cdfSparse(p, ts)
	}
	g, ended := c.absorbing(p)
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = denseCDF(g, ended, p.Alpha, t)
	}
	return out
}

func denseCDF(g *mat.Dense, ended []bool, alpha []float64, t float64) float64 {
	n, _ := g.Dims()
	e := expGenerator(g, t)
	f := 0.0
	for i := 0; i < n-1; i++ {
		if alpha[i] == 0 {
			continue
		}
		for j := 0; j < n; j++ {
			if ended[j] {
				f += alpha[i] * e.At(i, j)
			}
		}
	}
	return math.Min(f, 1)
}

// leaveRate is the largest rate at which a state is left once the passage's
// end is absorbing (a self-loop labelled by a target action counts).
func (c *Chain) leaveRate(p Passage) float64 {
	q := 0.0
	for _, row := range c.absorbingRows(p) {
		s := 0.0
		for _, m := range row {
			s += m.rate
		}
		q = math.Max(q, s)
	}
	return q
}

// flow is one entry of an absorbing row: rate to state to (N: the end).
type flow struct {
	to   int
	rate float64
}

// absorbingRows lists each state's moves in the absorbing chain: target
// states have none, target-action transitions go to N, other self-loops
// are left out.
func (c *Chain) absorbingRows(p Passage) [][]flow {
	n := c.N()
	rows := make([][]flow, n)
	for i := 0; i < n; i++ {
		if p.TargetStates != nil && p.TargetStates[i] {
			continue
		}
		for _, t := range c.Trans[i] {
			to := t.To
			if p.TargetActions[t.Action] {
				to = n
			}
			if to != i {
				rows[i] = append(rows[i], flow{to, t.Rate})
			}
		}
	}
	return rows
}

// cdfSparse computes alpha exp(G t) by substeps of length h with c h <= 8
// (c the largest leaving rate): exp(G h) = e^{-c h} exp(A h) with
// A = G + c I, which has no negative entry, and exp(A h) applied to the
// vector by its Taylor series, summed until a term adds less than 1e-20 of
// the total. Every number added is nonnegative, so nothing cancels. It is
// not uniformization: no Poisson weights, no truncation points, one short
// series per substep.
func (c *Chain) cdfSparse(p Passage, ts []float64) []float64 {
	n := c.N()
	rows := c.absorbingRows(p)
	exit := make([]float64, n)
	rate := 0.0
	for i, row := range rows {
		for _, m := range row {
			exit[i] += m.rate
		}
		rate = math.Max(rate, exit[i])
	}
	v := make([]float64, n+1)
	copy(v, p.Alpha)
	ended := func(v []float64) float64 {
		f := v[n]
		if p.TargetStates != nil {
			for i := 0; i < n; i++ {
				if p.TargetStates[i] {
					f += v[i]
				}
			}
		}
		return math.Min(f, 1)
	}
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return ts[order[a]] < ts[order[b]] })
	out := make([]float64, len(ts))
	term, next, sum := make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	now := 0.0
	for _, k := range order {
		t := ts[k]
		if span := t - now; span > 0 && rate > 0 {
			steps := int(math.Ceil(rate * span / 8))
			h := span / float64(steps)
			decay := math.Exp(-rate * h)
			for s := 0; s < steps; s++ {
				copy(term, v)
				copy(sum, v)
				for j := 1; j < 200; j++ {
					clear(next)
					for i := 0; i < n; i++ {
						x := term[i]
						if x == 0 {
							continue
						}
						next[i] += x * (rate - exit[i])
						for _, m := range rows[i] {
							next[m.to] += x * m.rate
						}
					}
					next[n] += term[n] * rate // the end stays: A's diagonal there is c
					added, total := 0.0, 0.0
					f := h / float64(j)
					for i := range next {
						next[i] *= f
						sum[i] += next[i]
						added += next[i]
						total += sum[i]
					}
					term, next = next, term
					if added <= 1e-20*total {
						break
					}
				}
				for i := range v {
					v[i] = sum[i] * decay
				}
			}
		}
		now = math.Max(now, t)
		out[k] = ended(v)
	}
	return out
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
	mean, _, err := c.MeanTimes(p)
	return mean, err
}

// MeanTimes is Mean, and the largest mean remaining time over the states
// the start can reach before the end (+Inf with the mean).
func (c *Chain) MeanTimes(p Passage) (mean, maxRemaining float64, err error) {
	rows := c.absorbingRows(p)
	n := c.N() + 1
	rows = append(rows, nil) // the end
	ended := make([]bool, n)
	ended[n-1] = true
	for i := 0; i < n-1; i++ {
		ended[i] = p.TargetStates != nil && p.TargetStates[i]
	}
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
		for _, m := range rows[i] {
			if j := m.to; !ended[j] && !live[j] {
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
			for _, m := range rows[i] {
				if canEnd[m.to] {
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
				return math.Inf(1), math.Inf(1), nil
			}
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return 0, 0, nil
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
		for _, m := range rows[i] {
			if y, ok := pos[m.to]; ok {
				r[x][y] += m.rate
			} else {
				out[x] += m.rate // every successor is live or ended
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
		maxRemaining = math.Max(maxRemaining, m[e])
	}
	for x, i := range idx {
		mean += p.Alpha[i] * m[x]
	}
	return mean, maxRemaining, nil
}
