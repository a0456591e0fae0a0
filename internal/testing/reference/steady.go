package reference

import (
	"errors"
	"fmt"
	"sort"
)

// ErrNoSteadyState is wrapped when the chain has a deadlock.
var ErrNoSteadyState = errors.New("no unique steady state")

// reach returns, for every state, the set of states reachable from it
// (itself included) along transitions of positive rate.
func (c *Chain) reach() [][]bool {
	n := c.N()
	out := make([][]bool, n)
	for s := 0; s < n; s++ {
		seen := make([]bool, n)
		seen[s] = true
		stack := []int{s}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, t := range c.Trans[i] {
				if !seen[t.To] {
					seen[t.To] = true
					stack = append(stack, t.To)
				}
			}
		}
		out[s] = seen
	}
	return out
}

// ClosedClasses returns the closed communicating classes, each sorted, in
// order of their smallest state. A deadlocked state is a closed class of
// its own.
func (c *Chain) ClosedClasses() [][]int {
	n := c.N()
	r := c.reach()
	var classes [][]int
	assigned := make([]bool, n)
	for s := 0; s < n; s++ {
		if assigned[s] {
			continue
		}
		// s's class: the states that s reaches and that reach s.
		var class []int
		for j := 0; j < n; j++ {
			if r[s][j] && r[j][s] {
				class = append(class, j)
				assigned[j] = true
			}
		}
		closed := true
		for j := 0; j < n && closed; j++ {
			if r[s][j] && !r[j][s] {
				closed = false
			}
		}
		if closed {
			classes = append(classes, class)
		}
	}
	sort.Slice(classes, func(a, b int) bool { return classes[a][0] < classes[b][0] })
	return classes
}

// Steady returns the long-run distribution from the initial state (state
// 0). With one closed class it is the steady state: GTH elimination on the
// class, zero on transient states. With several, it is the sum over the
// classes of the probability of ending in the class from state 0
// (Absorption) times the class's own steady state (GTH on the class), as
// model checkers define it. A deadlock is an error wrapping
// ErrNoSteadyState.
func (c *Chain) Steady() ([]float64, error) {
	if len(c.Deadlocks) > 0 {
		return nil, fmt.Errorf("%w: state %d %s is a deadlock", ErrNoSteadyState, c.Deadlocks[0], c.StateString(c.Deadlocks[0]))
	}
	classes := c.ClosedClasses()
	prob := []float64{1}
	if len(classes) > 1 {
		prob = c.Absorption(classes)
	}
	pi := make([]float64, c.N())
	for k, class := range classes {
		piClass := c.classSteady(class)
		for x, s := range class {
			pi[s] = prob[k] * piClass[x]
		}
	}
	return pi, nil
}

// classSteady is the steady state of one closed class by GTH, indexed as
// the class lists its states.
func (c *Chain) classSteady(class []int) []float64 {
	pos := map[int]int{}
	for k, s := range class {
		pos[s] = k
	}
	n := len(class)
	a := make([][]float64, n)
	for k := range a {
		a[k] = make([]float64, n)
	}
	for k, s := range class {
		for _, t := range c.Trans[s] {
			if t.To == s {
				continue
			}
			a[k][pos[t.To]] += t.Rate // closed: t.To is in the class
		}
	}
	return gth(a)
}

// Absorption returns, for each closed class, the probability that the
// chain started in state 0 ends in it, by state reduction on the rates:
// with the classes collapsed into K sinks, every transient state other
// than 0 is eliminated in turn, its incoming rates passed on along its
// outgoing ones in proportion (r[i][j] += r[i][k] r[k][j] / out_k; a
// return to i itself is dropped, which does not change where i ends),
// until state 0 leads straight to the sinks: the probabilities are its
// rates to them over their sum. Only additions of nonnegative numbers, so
// each probability keeps a small relative error on stiff chains. A method
// of its own: ctmc solves the expected times in the transient states,
// block by strongly connected block.
func (c *Chain) Absorption(classes [][]int) []float64 {
	K := len(classes)
	classOf := make([]int, c.N())
	for i := range classOf {
		classOf[i] = -1
	}
	for k, class := range classes {
		for _, s := range class {
			classOf[s] = k
		}
	}
	prob := make([]float64, K)
	if k := classOf[0]; k >= 0 {
		prob[k] = 1
		return prob
	}
	var trans []int
	pos := make([]int, c.N())
	for i := range pos {
		pos[i] = -1
		if classOf[i] < 0 {
			pos[i] = len(trans)
			trans = append(trans, i)
		}
	}
	m := len(trans) // state 0 is trans[0]: the smallest transient state
	// r[x] holds the rates from transient x to transient states (0..m-1)
	// and to the sinks (m..m+K-1).
	r := make([][]float64, m)
	for x, i := range trans {
		r[x] = make([]float64, m+K)
		for _, t := range c.Trans[i] {
			if t.To == i {
				continue
			}
			if k := classOf[t.To]; k >= 0 {
				r[x][m+k] += t.Rate
			} else {
				r[x][pos[t.To]] += t.Rate
			}
		}
	}
	for k := m - 1; k >= 1; k-- {
		out := 0.0
		for j, v := range r[k] {
			if j != k {
				out += v
			}
		}
		for i := 0; i < k; i++ {
			f := r[i][k]
			if f == 0 {
				continue
			}
			f /= out
			r[i][k] = 0
			for j, v := range r[k] {
				if j != k && j != i && v != 0 {
					r[i][j] += f * v
				}
			}
		}
	}
	total := 0.0
	for k := range prob {
		prob[k] = r[0][m+k]
		total += prob[k]
	}
	for k := range prob {
		prob[k] /= total
	}
	return prob
}

// gth solves pi A = 0 for the generator whose off-diagonal rates are a (an
// irreducible chain) by the Grassmann-Taksar-Heyman elimination: only
// additions of non-negative numbers, no cancellation. a is overwritten.
func gth(a [][]float64) []float64 {
	n := len(a)
	for k := n - 1; k >= 1; k-- {
		s := 0.0
		for j := 0; j < k; j++ {
			s += a[k][j]
		}
		for i := 0; i < k; i++ {
			a[i][k] /= s
		}
		for i := 0; i < k; i++ {
			if a[i][k] == 0 {
				continue
			}
			for j := 0; j < k; j++ {
				if i != j {
					a[i][j] += a[i][k] * a[k][j]
				}
			}
		}
	}
	pi := make([]float64, n)
	pi[0] = 1
	total := 1.0
	for j := 1; j < n; j++ {
		v := 0.0
		for i := 0; i < j; i++ {
			v += pi[i] * a[i][j]
		}
		pi[j] = v
		total += v
	}
	for j := range pi {
		pi[j] /= total
	}
	return pi
}

// Throughputs is, per action labelling some transition, the sum over states
// of pi(s) times the rate of its transitions with that action, self-loops
// included.
func (c *Chain) Throughputs(pi []float64) map[string]float64 {
	out := map[string]float64{}
	for s, ts := range c.Trans {
		for _, t := range ts {
			out[t.Action] += pi[s] * t.Rate
		}
	}
	return out
}
