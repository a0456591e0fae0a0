package fluid

import (
	"fmt"
	"math"
)

// Second moments by the linear-noise closure (van Kampen; for PEPA,
// Hayden and Bradley 2010): the populations' covariance C follows
//
//	dC/dt = J(x) C + C J(x)^T + D(x),   D(x) = sum_c rate_c(x) e_c e_c^T,
//
// with x the fluid means, J the Jacobian of the drift, and c the chain's
// kinds of transition: a joint firing moves one copy on every side of
// the cooperations it passes, so e_c is the sum of its activities' jumps
// (one copy from source to target). With fl_k the flow of activity k,
// D = sum_k fl_k e_k e_k^T + sum_{k != l} fl_k fl_l / R_N e_k e_l^T over
// the pairs of activities that meet at a cooperation N on their action
// (from different sides; R_N the rate of the firings through N, its rate
// times its factor): the sides of a joint firing are chosen
// independently, each activity in proportion to its flow. Moments of
// order three and more are dropped, and the minimum of a cooperation is
// taken on the side that is the minimum at the means (the min closure of
// Hayden and Bradley). Where every rate is linear in the populations (no
// cooperation, or passive partners only) the means and this covariance are
// exactly the chain's, at every population size.

// MaxMomentStates is the largest number of populations whose covariance
// is carried: the system grows with its square.
const MaxMomentStates = 30

// covSystem is the means and the covariance (upper triangle, row by row).
type covSystem struct {
	m    *Model
	e    *evaluator
	n, N int
	dfdx []float64 // the drift's Jacobian at the means
	diff []float64 // D at the means
	fd   []float64 // scratch for the finite-difference Jacobian
	fd2  []float64
	typ  []float64 // the scale of every component (fdJacobian)
}

func newCovSystem(m *Model) (*covSystem, error) {
	if m.Dim > MaxMomentStates {
		return nil, fmt.Errorf("second moments carry the covariance of every pair of populations: %d populations, more than %d", m.Dim, MaxMomentStates)
	}
	n := m.Dim
	c := &covSystem{m: m, e: m.newEvaluator(), n: n, N: n + n*(n+1)/2, dfdx: make([]float64, n*n), diff: make([]float64, n*n)}
	c.fd, c.fd2, c.typ = make([]float64, c.N), make([]float64, c.N), make([]float64, c.N)
	return c, nil
}

func (c *covSystem) dim() int { return c.N }

// idx is the position of C[i][j] (i <= j) in the state vector.
func (c *covSystem) idx(i, j int) int {
	if i > j {
		i, j = j, i
	}
	return c.n + i*c.n - i*(i-1)/2 + (j - i)
}

func (c *covSystem) variance(y []float64, i int) float64 { return math.Max(y[c.idx(i, i)], 0) }

// absTol is the absolute tolerances of the means and the covariance,
// from the means'.
func (c *covSystem) absTol(atolX []float64) []float64 {
	out := make([]float64, c.N)
	copy(out, atolX)
	defer func() {
		for i, a := range out {
			c.typ[i] = a * 1e8 // the size of a component where it is 0: its tolerance at rtol 1e-8
		}
	}()
	for i := 0; i < c.n; i++ {
		for j := i; j < c.n; j++ {
			out[c.idx(i, j)] = math.Sqrt(atolX[i] * atolX[j])
		}
	}
	return out
}

func (c *covSystem) deriv(y, dy []float64) {
	n := c.n
	x := y[:n]
	c.e.run(x)
	c.e.drift(dy[:n])
	c.e.jacobian(x, c.dfdx)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			// (J C)_ij + (C J^T)_ij = sum_k J_ik C_kj + C_ik J_jk
			s := 0.0
			for k := 0; k < n; k++ {
				s += c.dfdx[i*n+k]*y[c.idx(k, j)] + y[c.idx(i, k)]*c.dfdx[j*n+k]
			}
			dy[c.idx(i, j)] = s
		}
	}
	c.e.diffusion(c.diff)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			dy[c.idx(i, j)] += c.diff[i*n+j]
		}
	}
}

// jac is by forward differences of deriv (the drift's Jacobian inside
// it is exact; its derivative in the means is not, and differencing it is
// safe because steps of 1.5e-8 stay within kinkWidth, so the side a
// minimum's derivative takes does not flip between the two evaluations).
func (c *covSystem) jac(y, j []float64) {
	fdJacobian(c.deriv, y, c.typ, c.fd, c.fd2, j)
}

// fdJacobian writes the forward-difference Jacobian of f at y to j
// (row-major); f0 and f1 are scratch of len(y). typ[k] is the size of
// component k where it is 0 (its tolerance's scale): a step relative to
// 0 would lose every digit to rounding.
func fdJacobian(f func(y, dy []float64), y, typ, f0, f1, j []float64) {
	n := len(y)
	f(y, f0)
	for k := 0; k < n; k++ {
		old := y[k]
		h := 1.5e-8 * math.Max(math.Abs(old), typ[k])
		y[k] = old + h
		h = y[k] - old
		f(y, f1)
		y[k] = old
		for i := 0; i < n; i++ {
			j[i*n+k] = (f1[i] - f0[i]) / h
		}
	}
}

// steadyVariances is the linear-noise covariance at a fixed point x:
// the solution of J C + C J^T + D = 0. Every group's total is conserved,
// so J is singular along those directions and C has them in its kernel;
// the equation is solved in the coordinates without each group's first
// local state (x_first = copies - the others), where the fixed point of
// a model whose populations settle is stable and the solution unique:
// (I (x) J_r + J_r (x) I) vec C_r = -vec D_r, dense, then C = T C_r T^T.
func (m *Model) steadyVariances(x []float64) ([]float64, error) {
	n := m.Dim
	e := m.newEvaluator()
	e.run(x)
	jac := make([]float64, n*n)
	e.jacobian(x, jac)
	d := make([]float64, n*n)
	e.diffusion(d)
	// reduced coordinates: every population but each group's first
	var keep []int
	first := make([]int, n) // the group's first state, for each population
	for _, g := range m.Groups {
		for k := range g.States {
			first[g.Offset+k] = g.Offset
			if k > 0 {
				keep = append(keep, g.Offset+k)
			}
		}
	}
	r := len(keep)
	out := make([]float64, n)
	if r == 0 {
		return out, nil
	}
	// J_r = P J T: column k of T is e_keep[k] - e_first(keep[k]).
	jr := make([]float64, r*r)
	for a, i := range keep {
		for b, k := range keep {
			jr[a*r+b] = jac[i*n+k] - jac[i*n+first[k]]
		}
	}
	// (I (x) J_r + J_r (x) I) on vec C_r (row-major C_r[a][b] at a*r+b):
	// (J_r C_r + C_r J_r^T)[a][b] = sum_c J_r[a][c] C_r[c][b] + C_r[a][c] J_r[b][c].
	big := make([]float64, r*r*r*r)
	rhs := make([]float64, r*r)
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			row := a*r + b
			for c := 0; c < r; c++ {
				big[row*r*r+c*r+b] += jr[a*r+c]
				big[row*r*r+a*r+c] += jr[b*r+c]
			}
			rhs[row] = -d[keep[a]*n+keep[b]]
		}
	}
	piv := make([]int, r*r)
	if !luFactor(big, piv, r*r) {
		return nil, fmt.Errorf("second moments: the fixed point is not stable along every direction (the Lyapunov equation is singular), so the linear-noise covariance does not exist")
	}
	luSolve(big, piv, r*r, rhs)
	// C = T C_r T^T: var(x_i) for a kept i is C_r[i][i]; for a group's
	// first state, var(copies - sum of the others) = sum of the block.
	pos := map[int]int{}
	for a, i := range keep {
		pos[i] = a
	}
	for _, g := range m.Groups {
		sum := 0.0
		for k := 1; k < len(g.States); k++ {
			a := pos[g.Offset+k]
			out[g.Offset+k] = math.Max(rhs[a*r+a], 0)
			for l := 1; l < len(g.States); l++ {
				sum += rhs[a*r+pos[g.Offset+l]]
			}
		}
		out[g.Offset] = math.Max(sum, 0)
	}
	return out, nil
}
