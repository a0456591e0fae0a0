package elim

import (
	"context"
	"fmt"
	"math"
)

// Block is a dense block of N states of a chain, to be reduced in place
// by Reduce and then solved with by SolveLeft or SolveRight (see the
// package documentation for the method and its precondition).
type Block struct {
	// N is the number of states; they are eliminated from N-1 down.
	N int
	// Rates holds the rates between the states, row-major: Rates[i*N+j]
	// is the rate from i to j, i != j. The diagonal is ignored. Reduce
	// leaves what the solves read: the pivots on the diagonal, and at
	// (i, j) the rate from i to j as it was when the later of the two
	// was eliminated.
	Rates []float64
	// Out holds the rates out of the block, one vector of N per kind
	// (the rate that ends a passage, the rate to states that cannot,
	// ...). They count in the pivots, in this order before the rates
	// between the states, and are reduced with the rows.
	Out [][]float64
	// Cols holds further columns of N reduced with the rows but not
	// counted in the pivots: right-hand sides for SolveRight.
	Cols [][]float64
	// Closed says the block has no rate out (Out is empty): state 0 is
	// not eliminated (its pivot would be 0), and SolveLeft takes x[0] as
	// given, the solutions being determined up to a multiple.
	Closed bool
	// Compensated forms the pivots by compensated summation
	// (AddCompensated): within about one rounding of the exact sum of
	// the rates, where a plain sum of many terms may be a few roundoffs
	// off.
	Compensated bool
}

// PivotError says that a state's total rate, when it was to be
// eliminated, was not positive and finite: it cannot leave the states
// not yet eliminated (nor the block), or the rates under- or overflow
// float64.
type PivotError struct {
	State int     // the state's position in the block
	Rate  float64 // its pivot
}

func (e *PivotError) Error() string {
	return fmt.Sprintf("state %d of the block has no rate left after reduction (%g)", e.State, e.Rate)
}

// From parallelRows rows up, a step lists the rows that enter the state
// it eliminates and, if they make at least parallelWork multiply-adds,
// splits them between the calling goroutine and a helper. Below that the
// hand-over (two goroutine switches, a few microseconds) costs more than
// the half step it saves: a sparse block's steps update a few rows each
// (a 500-state block of two cycles' product, every step split as gth.go
// once did, took 5-9% longer than on one goroutine), while on a mapping
// chain's class a quarter of the steps carry most of the work. Variables
// so that a test can move them.
var (
	parallelRows = 256
	parallelWork = 1 << 14
)

// Reduce eliminates the states from N-1 down to 0 (to 1 if Closed),
// leaving the reduction in Rates, Out and Cols. It checks ctx every 64
// states; on an error the block holds a partial reduction.
func (b *Block) Reduce(ctx context.Context) error {
	n, a := b.N, b.Rates
	last := 0
	if b.Closed {
		last = 1
	}
	var h *helper
	var rows []int32 // a step's rows that enter its state
	if n-1 >= parallelRows {
		h = startHelper()
		defer close(h.steps)
		rows = make([]int32, 0, n)
	}
	for k := n - 1; k >= last; k-- {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s := b.pivot(k)
		if !(s > 0) || math.IsInf(s, 0) {
			return &PivotError{State: k, Rate: s}
		}
		a[k*n+k] = s
		if k < parallelRows {
			for i := 0; i < k; i++ {
				if f := a[i*n+k]; f != 0 {
					b.fold(i, k, f, s)
				}
			}
			continue
		}
		rows = rows[:0]
		for i := 0; i < k; i++ {
			if a[i*n+k] != 0 {
				rows = append(rows, int32(i))
			}
		}
		mine := rows
		if len(rows)*k >= parallelWork {
			half := len(rows) / 2
			h.steps <- step{b: *b, k: k, s: s, rows: rows[half:]}
			mine = rows[:half]
		}
		b.foldRows(mine, k, s)
		if len(mine) < len(rows) {
			<-h.done
		}
	}
	return nil
}

// pivot is state k's total rate out of the states before it: its Out
// entries, then its rates to the states 0..k-1, in that order.
func (b *Block) pivot(k int) float64 {
	row := b.Rates[k*b.N : k*b.N+k]
	if b.Compensated {
		sum, comp := 0.0, 0.0
		for _, o := range b.Out {
			sum, comp = AddCompensated(sum, comp, o[k])
		}
		for _, v := range row {
			sum, comp = AddCompensated(sum, comp, v)
		}
		return sum + comp
	}
	s := 0.0
	for _, o := range b.Out {
		s += o[k]
	}
	for _, v := range row {
		s += v
	}
	return s
}

// fold folds state k (pivot s) into row i, which enters it at rate f. The
// row's diagonal takes a term too (the return to i that eliminating k
// creates): it is never read, and is overwritten with i's pivot, so
// skipping it would cost a test in the innermost loop for nothing.
func (b *Block) fold(i, k int, f, s float64) {
	n, a := b.N, b.Rates
	f /= s
	for _, o := range b.Out {
		o[i] += f * o[k]
	}
	for _, c := range b.Cols {
		c[i] += f * c[k]
	}
	row := a[i*n : i*n+k]
	for j, v := range a[k*n : k*n+k] {
		row[j] += f * v
	}
}

// foldRows folds state k into each of rows.
func (b *Block) foldRows(rows []int32, k int, s float64) {
	n, a := b.N, b.Rates
	for _, i := range rows {
		b.fold(int(i), k, a[int(i)*n+k], s)
	}
}

// helper folds the second half of a step's rows on its own goroutine,
// one goroutine for the whole reduction (none is started per step). Each
// step carries a copy of the Block, whose slices share their arrays with
// the original: the Block itself need not move to the heap (a small block
// reduced many times, as in the aggregation, stays on the stack), and
// between steps the helper holds no reference to the matrix, which the
// collector can free as soon as the caller drops it.
type helper struct {
	steps chan step
	done  chan struct{}
}

type step struct {
	b    Block
	k    int
	s    float64
	rows []int32
}

func startHelper() *helper {
	h := &helper{steps: make(chan step), done: make(chan struct{})}
	go func() {
		for st := range h.steps {
			st.b.foldRows(st.rows, st.k, st.s)
			h.done <- struct{}{}
		}
	}()
	return h
}

// SolveLeft solves, after Reduce, the row-vector system
//
//	x_j s_j - sum_{i != j} x_i a_ij = rhs_j   for every state j,
//
// s_j the total rate out of j (Out and rates to the other states): the
// balance equations of a closed class (rhs nil: zero) or the expected
// times spent in a block's states given the rate at which each is entered
// (rhs). rhs is reduced in place (b_j += (b_k / s_k) a_kj), then x_k =
// (b_k + sum_{i<k} x_i a_ik) / s_k with the rates as they were at k's
// elimination, x_0 first (given in x[0] for a Closed block).
func (b *Block) SolveLeft(rhs, x []float64) {
	n, a := b.N, b.Rates
	if rhs != nil {
		for k := n - 1; k >= 1; k-- {
			if rhs[k] == 0 {
				continue // (without reading the pivot: a row's cache line)
			}
			f := rhs[k] / a[k*n+k]
			if f == 0 {
				continue
			}
			for j, v := range a[k*n : k*n+k] {
				rhs[j] += f * v
			}
		}
	}
	// The rates into x_k are a column of a row-major matrix: push each
	// x_i along its row once it is final instead, adding x_i a_ik to acc_k.
	acc := make([]float64, n)
	first := 0
	if b.Closed {
		first = 1
	}
	for k := 0; k < n; k++ {
		if k >= first {
			v := acc[k]
			if rhs != nil {
				v = rhs[k] + acc[k]
			}
			x[k] = v / a[k*n+k]
		}
		xk := x[k]
		if xk == 0 {
			continue
		}
		row := a[k*n : (k+1)*n]
		for l := k + 1; l < n; l++ {
			acc[l] += xk * row[l]
		}
	}
}

// SolveRight solves, after Reduce of a block that is not Closed, the
// column-vector system
//
//	s_k x_k - sum_{j != k} a_kj x_j = c_k   for every state k,
//
// c one of the block's Out or Cols (reduced with it): x_k = (c_k +
// sum_{j<k} a_kj x_j) / s_k from x_0 up, with the rates as they were at
// k's elimination.
func (b *Block) SolveRight(c, x []float64) {
	n, a := b.N, b.Rates
	for k := 0; k < n; k++ {
		v := c[k]
		for j, r := range a[k*n : k*n+k] {
			v += r * x[j]
		}
		x[k] = v / a[k*n+k]
	}
}

// AddCompensated adds x to the compensated sum (sum, comp), whose value
// is sum + comp (Neumaier's variant of Kahan summation): the rounding of
// each addition is kept in comp, so a sum of many terms of mixed
// magnitudes is within a unit roundoff or so of the exact one.
func AddCompensated(sum, comp, x float64) (float64, float64) {
	t := sum + x
	if math.Abs(sum) >= math.Abs(x) {
		comp += (sum - t) + x
	} else {
		comp += (x - t) + sum
	}
	return t, comp
}
