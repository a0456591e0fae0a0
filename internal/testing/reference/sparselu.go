package reference

// scalar is the entry type of the sparse LU: real for the real stage
// system of the Radau method, complex for its complex pair.
type scalar interface{ ~float64 | ~complex128 }

// spEntry is one entry of a sparse row.
type spEntry[T scalar] struct {
	col int
	v   T
}

// shiftedLU is the LU factorisation, without pivoting, of sigma I - Q for
// a generator Q given by its rows (moves to other states, positive rates)
// and a shift sigma with Re sigma > 0: sigma I - Q = L U, L unit lower
// triangular (its strict part by rows in l), U upper triangular (its
// diagonal in diag, the rest by rows in u). It serves the stiff
// integrator, which needs (sigma I - Q^T)^{-1} = (U^T L^T)^{-1} (solve).
//
// The matrix is strictly diagonally dominant by rows (|sigma + exit_i| >
// exit_i), so elimination without pivoting is stable, and its rows sum to
// sigma: a chain killed at rate sigma. The elimination is Grassmann,
// Taksar and Heyman's: the killing rates are carried as a column of their
// own (kill), updated like the others, and each pivot is computed as the
// row's killing rate plus its remaining rates to later states, never as
// the difference d_i - r_ie r_ei / d_e. For a real sigma every update
// then adds numbers of one sign: a fast cycle beside a small sigma (rates
// 1e4 in both directions, sigma = 1e-3) costs no accuracy, where the
// plain pivot loses eight digits to cancellation. For a complex sigma the
// same formulas are used (there is no sign argument, but the pivots are
// again sums rather than differences of nearly equal numbers).
//
// In blockOrder's numbering Q is block upper triangular, so fill-in stays
// inside strongly connected components (none on an acyclic chain).
type shiftedLU[T scalar] struct {
	n    int
	l, u [][]spEntry[T]
	diag []T
}

// factorShifted factorises sigma I - Q (of converts a rate to T) row by
// row: each row is scattered into a dense work vector and the earlier
// rows' U parts are subtracted in increasing column order (a heap of the
// pending columns, fill-in included). It overwrites f, reusing its
// memory, unless f is nil.
func factorShifted[T scalar](f *shiftedLU[T], rows [][]flow, sigma T, of func(float64) T) *shiftedLU[T] {
	n := len(rows)
	if f == nil || f.n != n {
		f = &shiftedLU[T]{n: n, l: make([][]spEntry[T], n), u: make([][]spEntry[T], n), diag: make([]T, n)}
	}
	for r := 0; r < n; r++ {
		f.l[r], f.u[r] = f.l[r][:0], f.u[r][:0]
	}
	kill := make([]T, n) // each pivot row's killing rate, after elimination
	w := make([]T, n)
	mark := make([]int, n) // r+1 when the column is in row r's pattern
	var pattern []int
	var heap intHeap
	touch := func(r, j int) {
		if mark[j] != r+1 {
			mark[j] = r + 1
			w[j] = 0
			pattern = append(pattern, j)
			if j < r {
				heap.push(j)
			}
		}
	}
	for r := 0; r < n; r++ {
		pattern = pattern[:0]
		for _, m := range rows[r] {
			if m.to != r {
				touch(r, m.to)
				w[m.to] -= of(m.rate)
			}
		}
		k := sigma
		for heap.len() > 0 {
			e := heap.pop()
			le := w[e] / f.diag[e]
			if le == 0 {
				continue
			}
			f.l[r] = append(f.l[r], spEntry[T]{e, le})
			k -= le * kill[e]
			for _, x := range f.u[e] {
				if x.col != r {
					touch(r, x.col)
					w[x.col] -= le * x.v
				}
			}
		}
		kill[r] = k
		d := k
		for _, j := range pattern {
			if j > r && w[j] != 0 {
				f.u[r] = append(f.u[r], spEntry[T]{j, w[j]})
				d -= w[j]
			}
		}
		f.diag[r] = d
	}
	return f
}

// solve overwrites b with (sigma I - Q^T)^{-1} b = (U^T L^T)^{-1} b, by
// columns of U and L: for a real sigma and b >= 0 every update adds
// nonnegative numbers.
func (f *shiftedLU[T]) solve(b []T) {
	for r := 0; r < f.n; r++ {
		y := b[r] / f.diag[r]
		b[r] = y
		for _, e := range f.u[r] {
			b[e.col] -= e.v * y
		}
	}
	for r := f.n - 1; r >= 0; r-- {
		x := b[r]
		for _, e := range f.l[r] {
			b[e.col] -= e.v * x
		}
	}
}

// entries counts the stored entries of L and U (their diagonals left out).
func (f *shiftedLU[T]) entries() (l, u int) {
	for r := 0; r < f.n; r++ {
		l += len(f.l[r])
		u += len(f.u[r])
	}
	return l, u
}

// intHeap is a binary min-heap of column numbers.
type intHeap struct{ a []int }

func (h *intHeap) len() int { return len(h.a) }

func (h *intHeap) push(x int) {
	h.a = append(h.a, x)
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.a[p] <= h.a[i] {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}

func (h *intHeap) pop() int {
	top := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.a[l] < h.a[m] {
			m = l
		}
		if r < last && h.a[r] < h.a[m] {
			m = r
		}
		if m == i {
			return top
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
}
