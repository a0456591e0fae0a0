package laplace

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"

	"pepa/ctmc"
)

// ErrNotApplicable is returned when a chain has cycles the engine cannot
// order into small blocks with real spectra: a strongly connected block
// larger than MaxBlock states, or one whose generator may have complex
// eigenvalues (a cycle of three states or more), which the contour does
// not enclose. Uniformization solves such chains.
var ErrNotApplicable = errors.New("laplace: the chain's cycles are not small blocks with real eigenvalues")

// MaxBlock is the largest strongly connected block the engine factors
// densely for every contour node.
const MaxBlock = 64

// Target says where a passage ends, as passage.Problem does: at the first
// firing of a transition labelled by one of Actions, or on entering one of
// the marked States (either may be empty).
type Target struct {
	Actions []int32
	States  []bool
}

// System is a chain's generator ordered for substitution: the states in
// an order where every transition goes from a block to the same or a
// later block, the blocks being the strongly connected components (of one
// state each in an acyclic chain). Solving x (zI - Q) = b is then one
// pass over the transitions: each block's values are final once the
// blocks before it have pushed their outflow into it. Transitions that end
// a passage go to an extra absorbing state, the sink (value index N).
//
// The system reads the chain's own rows (no copy of its transitions: a
// state's exit rate and, where the chain's numbering is not already an
// order, a permutation are all it adds), so the chain must not be
// released while the system is in use. Self-loops are left out: they do
// not move the chain.
type System struct {
	c      *ctmc.Chain
	n      int       // values: the chain's states, then the sink if any
	order  []int32   // position -> state; nil: the chain's numbering is an order
	exit   []float64 // by state (the sink's 0 last)
	ends   []bool    // by action: its transitions go to the sink (nil: none)
	target []bool    // by state: absorbing (its transitions dropped); nil: none
	// blocks lists the first position of each block of more than one
	// state, with its end and its dense generator (row-major, within-block
	// positions, the rate out of the block in the diagonal).
	blocks []block
	// blockAt is, by position, 1 + the index in blocks of the block that
	// starts there (0: a single state); nil when there is no block.
	blockAt []int32
	sink    int32 // the sink's value index, or -1
}

type block struct {
	lo, hi int32 // positions
	q      []float64
}

// NewSystem orders a chain for the engine. With a target, transitions
// labelled by its actions are sent to the sink and target states are made
// absorbing (their transitions dropped), so that the passage time is the
// time the chain first holds mass in the sink or the target states.
func NewSystem(c *ctmc.Chain, tgt Target) (*System, error) {
	n := c.N
	s := &System{c: c, n: n, sink: -1, target: tgt.States}
	if len(tgt.Actions) > 0 {
		s.ends = make([]bool, len(c.S.Actions))
		for _, a := range tgt.Actions {
			s.ends[a] = true
		}
		s.sink = int32(n)
		s.n++
	}
	s.exit = make([]float64, s.n)
	ordered := true
	for i := 0; i < n; i++ {
		if s.absorbing(i) {
			continue
		}
		q := 0.0
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := s.succ(int32(i), e)
			if j < 0 {
				continue
			}
			q += c.RateAt(e)
			if j < int32(i) {
				ordered = false
			}
		}
		s.exit[i] = q
	}
	if ordered {
		return s, nil // breadth-first numbering is a topological order
	}
	if s.order = kahn(s); s.order != nil {
		return s, nil
	}
	return s, s.blocksByTarjan()
}

// absorbing reports whether state i's transitions are dropped.
func (s *System) absorbing(i int) bool { return s.target != nil && s.target[i] }

// succ is where transition e of state i leads: -1 for nowhere (a
// self-loop), the sink for an ending action.
func (s *System) succ(i int32, e int64) int32 {
	if s.ends != nil && s.ends[s.c.Act[e]] {
		return s.sink
	}
	if j := s.c.Col[e]; j != i {
		return j
	}
	return -1
}

// kahn returns the states in a topological order, or nil if the chain has
// a cycle (of two states or more).
func kahn(s *System) []int32 {
	c := s.c
	n := c.N
	indeg := make([]int32, n)
	for i := 0; i < n; i++ {
		if s.absorbing(i) {
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := s.succ(int32(i), e); j >= 0 && int(j) < n {
				indeg[j]++
			}
		}
	}
	order := make([]int32, 0, n)
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			order = append(order, int32(i))
		}
	}
	for k := 0; k < len(order); k++ {
		i := order[k]
		if s.absorbing(int(i)) {
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := s.succ(i, e); j >= 0 && int(j) < n {
				if indeg[j]--; indeg[j] == 0 {
					order = append(order, j)
				}
			}
		}
	}
	if len(order) != n {
		return nil
	}
	return order
}

// blocksByTarjan orders a chain with cycles by its strongly connected
// components, and checks each block of more than one state: at most
// MaxBlock states, and a spectrum surely real.
func (s *System) blocksByTarjan() error {
	comp, order := components(s)
	s.order = order
	s.blockAt = make([]int32, len(order))
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && comp[order[hi]] == comp[order[lo]] {
			hi++
		}
		if hi-lo > 1 {
			if hi-lo > MaxBlock {
				return fmt.Errorf("%w: a block of %d states (at most %d)", ErrNotApplicable, hi-lo, MaxBlock)
			}
			b := block{lo: int32(lo), hi: int32(hi)}
			var leak, fastest float64
			b.q, leak, fastest = s.blockQ(b)
			if !realSpectrum(b.q, hi-lo) {
				return fmt.Errorf("%w: a block of %d states whose cycles may give complex eigenvalues", ErrNotApplicable, hi-lo)
			}
			// Elimination on a block that is left slowly and cycled
			// through fast subtracts numbers near fastest to find ones
			// near leak: it loses about log10(fastest/leak) digits, which
			// the two contours, sharing the solves, cannot see (a resource
			// failing and repaired at 1e4 between uses at 1e-2: means
			// 1e-10 off). A closed block is never solved.
			if leak > 0 && fastest > maxBlockStiffness*leak {
				return fmt.Errorf("%w: a block of %d states cycled through %.3g times faster than it is left (its solves would lose digits)", ErrNotApplicable, hi-lo, fastest/leak)
			}
			s.blocks = append(s.blocks, b)
			s.blockAt[lo] = int32(len(s.blocks))
		}
		lo = hi
	}
	return nil
}

// maxBlockStiffness is the most a block's fastest exit rate may exceed the
// total rate at which it is left (blocksByTarjan).
const maxBlockStiffness = 1e4

// blockQ is the generator restricted to a block, row-major (diagonal
// -exit, the rate out of the block included in it), with the total rate
// out of the block (to other states, the sink or a target) and the
// largest exit rate of its states.
func (s *System) blockQ(b block) (q []float64, leak, fastest float64) {
	c := s.c
	size := int(b.hi - b.lo)
	at := map[int32]int{}
	for k := b.lo; k < b.hi; k++ {
		at[s.order[k]] = int(k - b.lo)
	}
	q = make([]float64, size*size)
	for k := b.lo; k < b.hi; k++ {
		i := s.order[k]
		r := int(k - b.lo)
		q[r*size+r] = -s.exit[i]
		fastest = math.Max(fastest, s.exit[i])
		if s.absorbing(int(i)) {
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := s.succ(i, e)
			if j < 0 {
				continue // a self-loop
			}
			if col, ok := at[j]; ok {
				q[r*size+col] += c.RateAt(e)
			} else {
				leak += c.RateAt(e)
			}
		}
	}
	return q, leak, fastest
}

// States is the number of values a solve computes (the chain's states and
// the sink).
func (s *System) States() int { return s.n }

// Transitions is the number of transitions a solve passes over.
func (s *System) Transitions() int { return len(s.c.Col) }

// Blocks is the number of blocks of more than one state.
func (s *System) Blocks() int { return len(s.blocks) }

// Sink is the sink's value index, or -1.
func (s *System) Sink() int { return int(s.sink) }

// state is the state at position k (the sink after the chain's states).
func (s *System) state(k int) int32 {
	if s.order == nil || k >= len(s.order) {
		return int32(k)
	}
	return s.order[k]
}

// solve overwrites x, the right-hand side b by state (the sink last), with
// the solution of x (zI - Q) = b: a pass in order, each value divided by z
// plus its exit rate, then pushed along its transitions. work holds a
// block's dense system (MaxBlock^2 values at least).
func (s *System) solve(z complex128, x []complex128, work []complex128) error {
	c := s.c
	n := c.N
	indexed := c.RateIndex != nil
	for k := 0; k < n; k++ {
		if s.blockAt != nil && s.blockAt[k] > 0 {
			b := s.blocks[s.blockAt[k]-1]
			if err := s.solveBlock(z, b, x, work); err != nil {
				return err
			}
			for p := b.lo; p < b.hi; p++ {
				i := s.order[p]
				s.push(i, x[i], x, func(j int32) bool {
					for q := b.lo; q < b.hi; q++ {
						if s.order[q] == j {
							return false
						}
					}
					return true
				})
			}
			k = int(b.hi) - 1
			continue
		}
		i := int32(k)
		if s.order != nil {
			i = s.order[k]
		}
		// v = x_i / (z + q_i), by the reciprocal: one real division.
		dr, di := real(z)+s.exit[i], imag(z)
		inv := 1 / (dr*dr + di*di)
		xr, xi := real(x[i]), imag(x[i])
		vr, vi := (xr*dr+xi*di)*inv, (xi*dr-xr*di)*inv
		x[i] = complex(vr, vi)
		if s.absorbing(int(i)) {
			continue
		}
		lo, hi := c.RowPtr[i], c.RowPtr[i+1]
		switch {
		case s.ends != nil:
			s.push(i, x[i], x, nil)
		case indexed:
			pushIndexed(x, c.Col[lo:hi], c.RateIndex[lo:hi], c.RateTable, i, vr, vi)
		default:
			pushRates(x, c.Col[lo:hi], c.Rates[lo:hi], i, vr, vi)
		}
	}
	if s.sink >= 0 {
		// The sink is absorbing: its value is its inflow divided by z.
		x[s.sink] /= z
	}
	return nil
}

// push adds v times each rate of state i's row to its successor's value
// (the sink for an ending action), leaving out the successors outside
// says are not wanted (a block's own states).
func (s *System) push(i int32, v complex128, x []complex128, outside func(int32) bool) {
	c := s.c
	vr, vi := real(v), imag(v)
	for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
		j := s.succ(i, e)
		if j < 0 || outside != nil && !outside(j) {
			continue
		}
		r := c.RateAt(e)
		x[j] += complex(vr*r, vi*r)
	}
}

// pushIndexed is the push of a row whose rates are indices into the
// chain's table, self-loops left out: a real rate times a complex value.
func pushIndexed(x []complex128, col []int32, idx []uint16, tab []float64, i int32, vr, vi float64) {
	idx = idx[:len(col)]
	for t, j := range col {
		if j != i {
			r := tab[idx[t]]
			x[j] += complex(vr*r, vi*r)
		}
	}
}

// pushRates is pushIndexed for a chain that lists its rates.
func pushRates(x []complex128, col []int32, rates []float64, i int32, vr, vi float64) {
	rates = rates[:len(col)]
	for t, j := range col {
		if j != i {
			r := rates[t]
			x[j] += complex(vr*r, vi*r)
		}
	}
}

// solveBlock solves y (zI - Q_B) = x_B for a block in place, by Gaussian
// elimination with partial pivoting on the transposed system.
func (s *System) solveBlock(z complex128, bl block, x []complex128, work []complex128) error {
	b := int(bl.hi - bl.lo)
	q := bl.q
	// a = (zI - Q_B)^T, row-major: a[r*b+c] = z delta - q[c*b+r].
	a := work[:b*b]
	for r := 0; r < b; r++ {
		for c := 0; c < b; c++ {
			v := complex(-q[c*b+r], 0)
			if r == c {
				v += z
			}
			a[r*b+c] = v
		}
	}
	y := work[b*b : b*b+b]
	for r := 0; r < b; r++ {
		y[r] = x[s.order[int(bl.lo)+r]]
	}
	if err := luSolve(a, b, y, cmplx.Abs); err != nil {
		return fmt.Errorf("laplace: at z = %v: %w", z, err)
	}
	for r := 0; r < b; r++ {
		x[s.order[int(bl.lo)+r]] = y[r]
	}
	return nil
}

// luSolve solves a y' = y in place for a b x b row-major matrix a (which it
// overwrites) by Gaussian elimination with partial pivoting, real or
// complex (a block's dense system: at most MaxBlock states).
func luSolve[T float64 | complex128](a []T, b int, y []T, abs func(T) float64) error {
	for k := 0; k < b; k++ {
		p, best := k, abs(a[k*b+k])
		for r := k + 1; r < b; r++ {
			if v := abs(a[r*b+k]); v > best {
				p, best = r, v
			}
		}
		if best == 0 {
			return errors.New("a singular block")
		}
		if p != k {
			for c := 0; c < b; c++ {
				a[k*b+c], a[p*b+c] = a[p*b+c], a[k*b+c]
			}
			y[k], y[p] = y[p], y[k]
		}
		for r := k + 1; r < b; r++ {
			f := a[r*b+k] / a[k*b+k]
			if f == 0 {
				continue
			}
			for c := k; c < b; c++ {
				a[r*b+c] -= f * a[k*b+c]
			}
			y[r] -= f * y[k]
		}
	}
	for k := b - 1; k >= 0; k-- {
		v := y[k]
		for c := k + 1; c < b; c++ {
			v -= a[k*b+c] * y[c]
		}
		y[k] = v / a[k*b+k]
	}
	return nil
}

// components labels the strongly connected components of the chain's
// transition graph (as succ reads it; the sink is left out: it is
// absorbing, a block of its own at the end) and returns each state's
// component and the states in an order where every transition goes to
// the same or a later component, each component's states together.
func components(s *System) ([]int32, []int32) {
	c := s.c
	n := c.N
	g := ctmc.Graph{N: n,
		Edges: func(v int32) (int64, int64) {
			if s.absorbing(int(v)) {
				return 0, 0
			}
			return c.RowPtr[v], c.RowPtr[v+1]
		},
		Target: func(v int32, e int64) int32 {
			if w := s.succ(v, e); int(w) < n {
				return w
			}
			return -1 // the sink
		},
	}
	flat, ptr := ctmc.StrongComponents(g, nil, n)
	// Tarjan completes a component after those it has transitions into:
	// the order is the reverse of the completion order.
	comp := make([]int32, n)
	order := make([]int32, 0, n)
	for k := len(ptr) - 2; k >= 0; k-- {
		for _, v := range flat[ptr[k]:ptr[k+1]] {
			comp[v] = int32(k)
			order = append(order, v)
		}
	}
	return comp, order
}

// realSpectrum reports whether a block's generator (row-major, b x b)
// surely has real eigenvalues: its transition graph, read without
// direction, is a tree whose every edge goes both ways (a birth-death
// chain, an owner's queue), so the matrix is similar to a symmetric one
// (Kolmogorov's criterion holds: a tree has no cycle).
func realSpectrum(q []float64, b int) bool {
	edges := 0
	for r := 0; r < b; r++ {
		for c := r + 1; c < b; c++ {
			f, w := q[r*b+c] > 0, q[c*b+r] > 0
			if f != w {
				return false
			}
			if f {
				edges++
			}
		}
	}
	// A strongly connected block whose edges all go both ways is
	// connected; with b-1 undirected edges it is a tree.
	return edges == b-1
}
