package reference

import (
	"errors"
	"fmt"
	"sort"
)

// ErrNoSteadyState is wrapped when the chain has a deadlock or several
// closed communicating classes.
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

// Steady returns the steady-state distribution: GTH elimination on the
// unique closed class, zero on transient states. A deadlock or several
// closed classes is an error wrapping ErrNoSteadyState.
func (c *Chain) Steady() ([]float64, error) {
	if len(c.Deadlocks) > 0 {
		return nil, fmt.Errorf("%w: state %d %s is a deadlock", ErrNoSteadyState, c.Deadlocks[0], c.StateString(c.Deadlocks[0]))
	}
	classes := c.ClosedClasses()
	if len(classes) != 1 {
		return nil, fmt.Errorf("%w: %d closed classes (states %d and %d among them)", ErrNoSteadyState, len(classes), classes[0][0], classes[1][0])
	}
	class := classes[0]
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
	piClass := gth(a)
	pi := make([]float64, c.N())
	for k, s := range class {
		pi[s] = piClass[k]
	}
	return pi, nil
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
