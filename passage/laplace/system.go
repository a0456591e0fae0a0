package laplace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"sort"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
)

// ErrNotApplicable is returned when a chain has cycles the engine cannot
// order into small blocks whose eigenvalues a contour can enclose: a
// strongly connected block that the chain leaves, larger than MaxBlock
// states, or one with eigenvalues within MinPoleAngle of the imaginary
// axis. Uniformization solves such chains.
var ErrNotApplicable = errors.New("laplace: the chain's cycles are not small blocks whose eigenvalues a contour encloses")

// MaxBlock is the largest strongly connected block, of those the chain
// leaves, that the engine factors for every contour node (densely, in a
// banded order: the products of a few owners' queues, a 5 x 5 x 5 block
// of 125 states, factor in about b w^2 operations for a bandwidth w of
// 25 instead of b^3/3). A
// closed block (a set the chain never leaves: owners cycling once every
// machine has finished) is never factored: only the mass it receives
// counts, and it may be of any size.
const MaxBlock = 256

// MaxSector is the widest angle from the negative real axis that a
// block's eigenvalues may take: the contour's asymptotes must lie between
// them and the imaginary axis with room for its strip, and the nodes it
// then needs grow as the room shrinks (contourFor).
const MaxSector = 80 * math.Pi / 180

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
	pos     []int32 // by state, its position in order (with blocks only)
	sink    int32   // the sink's value index, or -1
	// sector is the widest angle from the negative real axis of the
	// eigenvalues of the blocks the chain leaves (0: every one real), and
	// complexBlocks how many blocks have eigenvalues off the real axis.
	sector        float64
	complexBlocks int
	// blockWork is the multiply-adds of eliminating every block the chain
	// leaves, blockSubst of substituting in them: a solve costs about the
	// transitions plus both (Work).
	blockWork, blockSubst int64
	blockBytes            int64 // the distinct blocks' q, leak and env
	poleOrder             int   // the longest run of equal exit rates (poleOrders)
}

// A block is a strongly connected component of more than one state, at
// positions lo..hi-1. q is its generator, dense, row-major by
// within-block position, with each state's exit rate (the rate out of the
// block included) on the diagonal, and leak the rates out of the block;
// a closed block (nothing leaves it) has neither.
//
// Blocks with the same generator and leaks share q, leak and env (a
// product chain repeats the same owners' block at every step of its
// machines). env holds, for each within-block position k, the last column
// (env[k]) and the last row (env[b+k]) at which the eliminated block can
// hold a nonzero beside k: elimination and substitution stop there.
type block struct {
	lo, hi int32
	q      []float64
	leak   []float64
	env    []int32
	closed bool
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
	if !ordered {
		if s.order = kahn(s); s.order == nil {
			if err := s.blocksByTarjan(); err != nil {
				return s, err
			}
		}
	}
	s.poleOrders()
	return s, nil
}

// poleOrders finds the longest run of states with one exit rate along a
// path (transitions within a block left out): a pole of that order at
// minus the rate (Erlang work of k phases: order k, and more where
// several machines' phases line up). Past highOrder, the transform grows
// like (rate / |z + rate|)^order where the contour passes the pole at an
// angle, so the contour is kept steeper: the sector of the poles is
// widened to where that growth stays below orderGrowth on the strip
// (cos(alpha + d)^-order at most orderGrowth).
func (s *System) poleOrders() {
	n := s.c.N
	run := make([]int32, n)
	same := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(a, b) }
	longest := int32(1)
	blockEnd := 0 // positions before it are in the block being passed
	for k := 0; k < n; k++ {
		if s.blockAt != nil && s.blockAt[k] > 0 {
			blockEnd = int(s.blocks[s.blockAt[k]-1].hi)
		}
		i := s.state(k)
		run[i] = max(run[i], 1)
		longest = max(longest, run[i])
		if k < blockEnd || s.absorbing(int(i)) || s.exit[i] == 0 {
			continue // a block's states: its cycles are not runs
		}
		for e := s.c.RowPtr[i]; e < s.c.RowPtr[i+1]; e++ {
			j := s.succ(i, e)
			if j < 0 || int(j) >= n || !same(s.exit[i], s.exit[j]) {
				continue
			}
			run[j] = max(run[j], run[i]+1)
		}
	}
	s.poleOrder = int(longest)
	if longest > highOrder {
		widened := math.Pi/2 - math.Acos(math.Pow(orderGrowth, -1/float64(longest)))
		s.sector = math.Max(s.sector, widened)
	}
}

// highOrder and orderGrowth: poleOrders.
const (
	highOrder   = 24
	orderGrowth = 100
)

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
// components, and checks each block of more than one state that the chain
// leaves: at most MaxBlock states, and eigenvalues within MaxSector of the
// negative real axis (System.sector records the widest).
func (s *System) blocksByTarjan() error {
	comp, order := components(s)
	s.order = order
	s.blockAt = make([]int32, len(order))
	spectra := map[string]float64{} // a block's angle, by its generator's bytes
	classes := map[string]block{}   // a block's shared generator, by its bytes and leaks'
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && comp[order[hi]] == comp[order[lo]] {
			hi++
		}
		if hi-lo > 1 {
			b := block{lo: int32(lo), hi: int32(hi)}
			b.closed = s.closedComponent(b)
			if !b.closed {
				if hi-lo > MaxBlock {
					return fmt.Errorf("%w: a block of %d states that the chain leaves (at most %d)", ErrNotApplicable, hi-lo, MaxBlock)
				}
				if hi-lo > bandFrom {
					s.bandOrder(b)
				}
				b.q, b.leak = s.blockQ(b)
				key := string(unsafeBytes(b.q)) + string(unsafeBytes(b.leak))
				if c, ok := classes[key]; ok {
					b.q, b.leak, b.env = c.q, c.leak, c.env
				} else {
					b.env = envelope(b.q, hi-lo)
					classes[key] = b
					s.blockBytes += int64(8*len(b.q) + 8*len(b.leak) + 4*len(b.env))
				}
				s.blockWork += eliminationWork(b.env, hi-lo)
				s.blockSubst += substitutionWork(b.env, hi-lo)
				angle, err := blockSector(b.q, hi-lo, spectra)
				if err != nil {
					return err
				}
				if angle > 0 {
					s.complexBlocks++
				}
				s.sector = math.Max(s.sector, angle)
			}
			s.blocks = append(s.blocks, b)
			s.blockAt[lo] = int32(len(s.blocks))
		}
		lo = hi
	}
	s.pos = make([]int32, len(s.order))
	for k, i := range s.order {
		s.pos[i] = int32(k)
	}
	if s.sector > MaxSector {
		return fmt.Errorf("%w: a block has eigenvalues %.1f degrees from the negative real axis (at most %.0f): a cycle turned through much faster than it is damped", ErrNotApplicable, s.sector*180/math.Pi, MaxSector*180/math.Pi)
	}
	return nil
}

// closedComponent reports whether no transition leaves the component at
// positions b.lo..b.hi-1 (to another state, the sink or a target).
func (s *System) closedComponent(b block) bool {
	in := make(map[int32]bool, b.hi-b.lo)
	for k := b.lo; k < b.hi; k++ {
		in[s.order[k]] = true
	}
	for k := b.lo; k < b.hi; k++ {
		i := s.order[k]
		if s.absorbing(int(i)) {
			return false // a target inside a cycle cannot be: it has no successors
		}
		for e := s.c.RowPtr[i]; e < s.c.RowPtr[i+1]; e++ {
			if j := s.succ(i, e); j >= 0 && !in[j] {
				return false
			}
		}
	}
	return true
}

// blockSector is the widest angle from the negative real axis of the
// eigenvalues of a block's generator q (b x b, the chain leaves it): 0
// when the block is reversible (Kolmogorov's criterion: the generator is
// then similar to a symmetric matrix, its spectrum real: an owner's
// queue, independent owners, a resource beside them), else from its
// computed eigenvalues (cached by the generator's bytes: a product chain
// repeats the same block at every step of its machines).
func blockSector(q []float64, b int, cache map[string]float64) (float64, error) {
	if reversible(q, b) {
		return 0, nil
	}
	key := string(unsafeBytes(q))
	if a, ok := cache[key]; ok {
		return a, nil
	}
	var eig mat.Eigen
	if !eig.Factorize(mat.NewDense(b, b, append([]float64(nil), q...)), mat.EigenNone) {
		return 0, fmt.Errorf("%w: the eigenvalues of a block of %d states did not converge", ErrNotApplicable, b)
	}
	angle := 0.0
	for _, v := range eig.Values(nil) {
		re, im := real(v), math.Abs(imag(v))
		if im <= 1e-12*cmplx.Abs(v) {
			continue // real, to rounding
		}
		if re >= 0 {
			return 0, fmt.Errorf("%w: a block of %d states has an eigenvalue %v off the left half-plane", ErrNotApplicable, b, v)
		}
		// A margin for the eigenvalues' rounding.
		angle = math.Max(angle, math.Atan2(im, -re)+1e-6)
	}
	cache[key] = angle
	return angle, nil
}

// unsafeBytes is q's bytes, as a map key.
func unsafeBytes(q []float64) []byte {
	b := make([]byte, 8*len(q))
	for i, v := range q {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// reversible reports whether a block's generator q (b x b) satisfies
// Kolmogorov's criterion: every transition goes both ways and potentials
// p with p_i q_ij = p_j q_ji exist (found along a spanning tree, checked
// on every transition, in logarithms: rates 10^6 apart over 63 steps
// overflow).
func reversible(q []float64, b int) bool {
	logp := make([]float64, b)
	seen := make([]bool, b)
	seen[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for j := 0; j < b; j++ {
			if j == i {
				continue
			}
			f, w := q[i*b+j], q[j*b+i]
			if (f > 0) != (w > 0) {
				return false
			}
			if f > 0 && !seen[j] {
				seen[j] = true
				logp[j] = logp[i] + math.Log(f) - math.Log(w)
				queue = append(queue, j)
			}
		}
	}
	for i := 0; i < b; i++ {
		for j := i + 1; j < b; j++ {
			if f := q[i*b+j]; f > 0 {
				if d := logp[i] + math.Log(f) - logp[j] - math.Log(q[j*b+i]); math.Abs(d) > 1e-9 {
					return false
				}
			}
		}
	}
	return true
}

// blockQ is the generator restricted to a block the chain leaves,
// row-major (diagonal -exit, the rate out of the block included in it),
// and each state's rate out of the block (to other states, the sink or a
// target).
func (s *System) blockQ(b block) (q, leak []float64) {
	c := s.c
	size := int(b.hi - b.lo)
	at := map[int32]int{}
	for k := b.lo; k < b.hi; k++ {
		at[s.order[k]] = int(k - b.lo)
	}
	q = make([]float64, size*size)
	leak = make([]float64, size)
	for k := b.lo; k < b.hi; k++ {
		i := s.order[k]
		r := int(k - b.lo)
		q[r*size+r] = -s.exit[i]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := s.succ(i, e)
			if j < 0 {
				continue // a self-loop
			}
			if col, ok := at[j]; ok {
				q[r*size+col] += c.RateAt(e)
			} else {
				leak[r] += c.RateAt(e)
			}
		}
	}
	return q, leak
}

// Sector is the widest angle (radians) from the negative real axis of the
// eigenvalues of the blocks the chain leaves (0: all real), and
// ComplexBlocks the number of those blocks with eigenvalues off the real
// axis.
func (s *System) Sector() float64    { return s.sector }
func (s *System) ComplexBlocks() int { return s.complexBlocks }

// PoleOrder is the longest run of states with one exit rate along a path:
// the order of the transform's pole there.
func (s *System) PoleOrder() int { return s.poleOrder }

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
			if b.closed {
				// Nothing leaves: the block holds its inflow over z,
				// which is all a set (closed: it holds the whole block
				// or none of it) reads of it.
				var in complex128
				for p := b.lo; p < b.hi; p++ {
					in += x[s.order[p]]
					x[s.order[p]] = 0
				}
				x[s.order[b.lo]] = in / z
				k = int(b.hi) - 1
				continue
			}
			if err := s.solveBlock(z, b, x, work); err != nil {
				return err
			}
			for p := b.lo; p < b.hi; p++ {
				i := s.order[p]
				s.push(i, x[i], x, func(j int32) bool { return !b.holds(s, j) })
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

// solveBlock solves y (zI - Q_B) = x_B for a block the chain leaves, in
// place, by elimination in the form of Grassmann, Taksar and Heyman: the
// block is a chain in which each state i is also killed at rate z +
// leak_i, and eliminating a state k reroutes its flows (q_ij += q_ik q_kj /
// p_k, the killing z + leak_i += q_ik (z + leak_k) / p_k), the pivot p_k
// being the sum of k's remaining rates and killing, never a difference.
// At z = 0 every term is a nonnegative product or sum: a block cycled
// through 10^6 times faster than it is left keeps every digit (Gaussian
// elimination subtracts numbers near the fast rates to find the slow
// ones). work holds the block's reduced rates and killing
// (MaxBlock^2 + MaxBlock values at least).
func (s *System) solveBlock(z complex128, bl block, x []complex128, work []complex128) error {
	b := int(bl.hi - bl.lo)
	r, kill := work[:b*b], work[b*b:b*b+b]
	// Only the envelope is read (and filled in) by the elimination and
	// the substitutions: row i right of the diagonal up to env[i], column
	// j below it down to env[b+j].
	// Row by row, from the first column that reaches the row (entries in
	// between that no column reaches are copied too, unread).
	for i := 0; i < b; i++ {
		row, q := r[i*b:i*b+b], bl.q[i*b:i*b+b]
		for j := int(bl.env[2*b+i]); j <= int(bl.env[i]); j++ {
			row[j] = complex(q[j], 0)
		}
		kill[i] = z + complex(bl.leak[i], 0)
	}
	xs := func(i int) *complex128 { return &x[s.order[int(bl.lo)+i]] }
	if err := gthEliminate(r, kill, b, bl.env); err != nil {
		return fmt.Errorf("laplace: at z = %v: %w", z, err)
	}
	// Forward: x_j += x_k q_kj / p_k, in elimination order.
	for k := 0; k < b; k++ {
		xk := *xs(k) / r[k*b+k]
		for j := k + 1; j <= int(bl.env[k]); j++ {
			if v := r[k*b+j]; v != 0 {
				*xs(j) += xk * v
			}
		}
	}
	// Back: y_k = (x_k + sum over later i of y_i q_ik) / p_k, by rows:
	// once y_i is final it is pushed to every earlier k of its row.
	for i := b - 1; i >= 0; i-- {
		y := *xs(i) / r[i*b+i]
		*xs(i) = y
		if y == 0 {
			continue
		}
		for k := int(bl.env[2*b+i]); k < i; k++ {
			if w := r[i*b+k]; w != 0 {
				*xs(k) += y * w
			}
		}
	}
	return nil
}

// gthEliminate eliminates a block's states in order, in place: r holds
// the rates between them (row-major b x b, off the diagonal), kill each
// state's killing; afterwards r[k][k] is state k's pivot p_k (its rates
// to the states after it plus its killing, when it was eliminated), r[k][j]
// and r[i][k] for i, j > k the rates from and to it then. T is float64
// (the real solves) or complex128 (the contour's). env (envelope) bounds
// where a nonzero can be: entries past it are zero before and after.
func gthEliminate[T float64 | complex128](r, kill []T, b int, env []int32) error {
	for k := 0; k < b; k++ {
		p := kill[k]
		lastCol, lastRow := int(env[k]), int(env[b+k])
		for j := k + 1; j <= lastCol; j++ {
			p += r[k*b+j]
		}
		if p == 0 || p != p {
			return errors.New("a singular block")
		}
		r[k*b+k] = p
		inv := 1 / p // a multiplication a row (complex division is slow)
		for i := k + 1; i <= lastRow; i++ {
			f := r[i*b+k] * inv
			if f == 0 {
				continue
			}
			kill[i] += f * kill[k]
			// j = i adds to r[i][i], which is not read before step i
			// sets it to the pivot.
			row, pivot := r[i*b+k+1:i*b+lastCol+1], r[k*b+k+1:k*b+lastCol+1]
			for j, v := range pivot {
				row[j] += f * v
			}
		}
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

// bandFrom is the block size past which a block's states are put in a
// banded order before its generator is taken.
const bandFrom = 16

// bandOrder puts the states of block b (its positions in s.order) in
// reverse Cuthill-McKee order: a breadth-first search from a state of
// least degree, neighbours by increasing degree, reversed. A product of
// owners' queues is then banded, and elimination fills only the band.
// The order depends only on the block's own structure and its states'
// order on entry, so that blocks repeated along a product chain stay
// alike.
func (s *System) bandOrder(b block) {
	lo, hi := int(b.lo), int(b.hi)
	size := hi - lo
	at := make(map[int32]int32, size)
	for k := lo; k < hi; k++ {
		at[s.order[k]] = int32(k - lo)
	}
	adj := make([][]int32, size)
	link := func(u, v int32) {
		for _, w := range adj[u] {
			if w == v {
				return
			}
		}
		adj[u] = append(adj[u], v)
	}
	for k := lo; k < hi; k++ {
		i := s.order[k]
		u := int32(k - lo)
		for e := s.c.RowPtr[i]; e < s.c.RowPtr[i+1]; e++ {
			if v, ok := at[s.succ(i, e)]; ok && v != u {
				link(u, v)
				link(v, u)
			}
		}
	}
	deg := func(u int32) int { return len(adj[u]) }
	for u := range adj {
		sort.Slice(adj[u], func(a, c int) bool {
			x, y := adj[u][a], adj[u][c]
			if deg(x) != deg(y) {
				return deg(x) < deg(y)
			}
			return x < y
		})
	}
	seen := make([]bool, size)
	out := make([]int32, 0, size)
	for len(out) < size {
		start := int32(-1)
		for u := int32(0); int(u) < size; u++ {
			if !seen[u] && (start < 0 || deg(u) < deg(start)) {
				start = u
			}
		}
		seen[start] = true
		out = append(out, start)
		for h := len(out) - 1; h < len(out); h++ {
			for _, v := range adj[out[h]] {
				if !seen[v] {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
	}
	states := append([]int32(nil), s.order[lo:hi]...)
	for k, u := range out {
		s.order[hi-1-k] = states[u]
	}
}

// envelope is, for a block's generator q (b x b), where the eliminated
// block can hold nonzeros: env[k] the last column after k in row k,
// env[b+k] the last row after k in column k (k itself: none), env[2b+k]
// the first column before k that reaches row k (k: none), from the
// symbolic elimination of q's pattern (rows as bit sets). Row k and
// column k are final once the pivots before k are eliminated, so these
// bound every step of gthEliminate and the substitutions.
func envelope(q []float64, b int) []int32 {
	words := (b + 63) / 64
	rows := make([]uint64, b*words)
	for i := 0; i < b; i++ {
		for j := 0; j < b; j++ {
			if i != j && q[i*b+j] != 0 {
				rows[i*words+j/64] |= 1 << (j % 64)
			}
		}
	}
	has := func(i, j int) bool { return rows[i*words+j/64]&(1<<(j%64)) != 0 }
	for k := 0; k < b; k++ {
		for i := k + 1; i < b; i++ {
			if !has(i, k) {
				continue
			}
			for w := 0; w < words; w++ {
				rows[i*words+w] |= rows[k*words+w]
			}
			rows[i*words+i/64] &^= 1 << (i % 64) // the diagonal is the pivot's
		}
	}
	env := make([]int32, 3*b)
	for k := 0; k < b; k++ {
		env[k], env[b+k], env[2*b+k] = int32(k), int32(k), int32(k)
		for j := k + 1; j < b; j++ {
			if has(k, j) {
				env[k] = int32(j)
			}
			if has(j, k) {
				env[b+k] = int32(j)
			}
		}
	}
	// env[2b+i]: the first column j < i whose envelope reaches row i.
	for j := b - 1; j >= 0; j-- {
		for i := j + 1; i <= int(env[b+j]); i++ {
			env[2*b+i] = int32(j)
		}
	}
	return env
}

// eliminationWork is the multiply-adds of gthEliminate within env.
func eliminationWork(env []int32, b int) int64 {
	var w int64
	for k := 0; k < b; k++ {
		w += int64(env[b+k]-int32(k)) * int64(env[k]-int32(k)+1)
	}
	return w
}

// substitutionWork is the multiply-adds of a block's two substitutions.
func substitutionWork(env []int32, b int) int64 {
	var w int64
	for k := 0; k < b; k++ {
		w += int64(env[k]-int32(k)) + int64(env[b+k]-int32(k)) + 2
	}
	return w
}

// BlockBytes is the memory the distinct blocks' generators take.
func (s *System) BlockBytes() int64 { return s.blockBytes }

// Work is what one complex solve costs, in multiply-adds: a push per
// transition, and each block the chain leaves eliminated and substituted.
func (s *System) Work() int64 {
	return int64(len(s.c.Col)) + s.blockWork + s.blockSubst
}
