package fluid

import (
	"context"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/lang"
)

// Where every rate is linear in the populations (no cooperation between
// populations, or cooperation with passive partners that are always
// ready), the copies move independently and the chain's mean populations
// obey the fluid ODE exactly, at every population size; so does the
// covariance under the linear-noise closure. The chain's transient
// distribution here is a dense matrix exponential (gonum), nothing of
// this package.

const linearModel = `
a = 1.2; b = 0.7; c = 2.5; d = 0.4; w = 3.0;
P = (go, a).P2 + (skip, b).P3;
P2 = (work, c).P3 + (back, d).P;
P3 = (done, w).P;
Q = (ping, 0.9).Q2;
Q2 = (pong, 1.7).Q;
A = (done, infty).A;
(P[%d] <done> A) || Q[%d]
`

func TestLinearModelsExact(t *testing.T) {
	for _, n := range []int{1, 3, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := fmt.Sprintf(linearModel, n, n+1)
			m, fm := load(t, src)
			times := []float64{0.2, 0.7, 1.5, 4}
			s, err := fm.Series(context.Background(), times, 2, Options{RelTol: 1e-10, AbsTol: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			mean, variance := chainMoments(t, m, fm, times)
			for k, tt := range times {
				for i := 0; i < fm.Dim; i++ {
					if got := s.Populations[i][k]; math.Abs(got-mean[k][i]) > 1e-7 {
						t.Errorf("t=%g %s: fluid mean %.12g, chain %.12g", tt, fm.StateName(i), got, mean[k][i])
					}
					if got := s.Variances[i][k]; math.Abs(got-variance[k][i]) > 1e-7 {
						t.Errorf("t=%g %s: linear-noise variance %.12g, chain %.12g", tt, fm.StateName(i), got, variance[k][i])
					}
				}
			}
			st, err := fm.SteadyState(context.Background(), 2, Options{})
			if err != nil {
				t.Fatal(err)
			}
			mean, variance = chainMoments(t, m, fm, []float64{200})
			for i := 0; i < fm.Dim; i++ {
				if math.Abs(st.Populations[i]-mean[0][i]) > 1e-7 || math.Abs(st.Variances[i]-variance[0][i]) > 1e-6 {
					t.Errorf("steady %s: fluid %.10g (variance %.10g), chain %.10g (%.10g)", fm.StateName(i), st.Populations[i], st.Variances[i], mean[0][i], variance[0][i])
				}
			}
		})
	}
}

// chainMoments derives m's chain of count vectors and returns, at each
// time, the mean and variance of every fluid population (by component
// and local state).
func chainMoments(t *testing.T, m *lang.Model, fm *Model, times []float64) (mean, variance [][]float64) {
	t.Helper()
	s, err := ctmc.Compile(m, ctmc.Options{Aggregate: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[[2]string]int{}
	for _, g := range fm.Groups {
		for d, st := range g.States {
			pos[[2]string{g.Component, st}] = g.Offset + d
		}
	}
	counts := make([][]float64, c.N)
	for i := range counts {
		counts[i] = make([]float64, fm.Dim)
		st := c.State(i)
		for _, l := range c.S.Leaves {
			loc := l.Local(st)
			for d, name := range l.Comp.States {
				counts[i][pos[[2]string{l.Group, name}]] += float64(l.Population(loc, d))
			}
		}
	}
	q := mat.NewDense(c.N, c.N, nil)
	for i := 0; i < c.N; i++ {
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := int(c.Col[e]); j != i {
				q.Set(i, j, q.At(i, j)+c.RateAt(e))
				q.Set(i, i, q.At(i, i)-c.RateAt(e))
			}
		}
	}
	for _, tt := range times {
		var qt, p mat.Dense
		qt.Scale(tt, q)
		p.Exp(&qt)
		mu, v := make([]float64, fm.Dim), make([]float64, fm.Dim)
		for i := 0; i < c.N; i++ {
			pi := p.At(0, i)
			for k, n := range counts[i] {
				mu[k] += pi * n
				v[k] += pi * n * n
			}
		}
		for k := range v {
			v[k] -= mu[k] * mu[k]
		}
		mean, variance = append(mean, mu), append(variance, v)
	}
	return mean, variance
}
