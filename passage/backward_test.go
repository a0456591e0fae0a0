package passage

import (
	"math"
	"math/rand"
	"testing"

	"pepa/internal/testing/testmodels"
)

// withBackward runs f with the backward path forced on (every single
// passage with a horizon) or off.
func withBackward(on bool, f func()) {
	defer func(was int) { backwardMinTransitions = was }(backwardMinTransitions)
	backwardMinTransitions = math.MaxInt
	if on {
		backwardMinTransitions = 0
	}
	f()
}

// TestBackwardErlang: backward iteration gives the Erlang CDF of a chain
// of four exponential phases, and the passage of the 20/5 mapping's last
// machine as the forward pass does.
func TestBackwardErlang(t *testing.T) {
	c := chainOf(t, "P0 = (a, 2).P1; P1 = (a, 2).P2; P2 = (a, 2).P3; P3 = (b, 2).P0; P0")
	pr := InitialProblem(c, actions(t, c, "b"))
	withBackward(true, func() {
		r := solveOne(t, c, pr, Options{Horizon: 5})
		if !r.backward {
			t.Fatal("not solved backward")
		}
		for _, at := range []float64{0.1, 1, 2, 5} {
			// Erlang(4, 2): 1 - sum_{k<4} e^{-2t} (2t)^k / k!
			want, term := 1.0, math.Exp(-2*at)
			for k := 0; k < 4; k++ {
				want -= term
				term *= 2 * at / float64(k+1)
			}
			if got := cdf(t, r, at); math.Abs(got-want) > 1e-10 {
				t.Errorf("F(%g) = %.15g, want %.15g", at, got, want)
			}
		}
		if _, _, err := r.SeriesMean(); err == nil {
			t.Error("a backward series gave a mean")
		}
		// At t = 0 no mass has reached the target after the one step
		// computed: reachability comes from the search.
		if r0 := solveOne(t, c, pr, Options{Horizon: 0}); !r0.backward || !r0.Reachable || r0.Absorbed[len(r0.Absorbed)-1] != 0 {
			t.Errorf("horizon 0: backward %v, reachable %v, absorbed %v", r0.backward, r0.Reachable, r0.Absorbed)
		}
		u := chainOf(t, "P = (a, 1).P; Q = (b, 1).Q; P <b> Q") // b is blocked for ever
		if ru := solveOne(t, u, InitialProblem(u, actions(t, u, "b")), Options{Horizon: 3}); !ru.backward || ru.Reachable {
			t.Errorf("unreachable target: backward %v, reachable %v", ru.backward, ru.Reachable)
		}
	})
	big := chainOf(t, testmodels.Mapping(20, 5, 1))
	last := InitialProblem(big, actions(t, big, testmodels.LastActions(20, 5)[4]...))
	var fwd, bwd *Result
	withBackward(false, func() { fwd = solveOne(t, big, last, Options{Horizon: 40}) })
	withBackward(true, func() { bwd = solveOne(t, big, last, Options{Horizon: 40, Q: fwd.Q}) })
	if !bwd.backward || fwd.backward {
		t.Fatal("paths not as forced")
	}
	for _, at := range []float64{5, 20, 40} {
		if a, b := cdf(t, fwd, at), cdf(t, bwd, at); math.Abs(a-b) > 1e-12 {
			t.Errorf("F(%g): forward %.15g, backward %.15g", at, a, b)
		}
	}
}

// TestBackwardAgainstForward: on random models (self-loops, target
// self-loops, passive partners, stiff rates, closed classes without the
// target), the backward series gives the forward one's CDF values and
// reachability, for action targets from the initial state, state targets,
// and starts spread over several states.
func TestBackwardAgainstForward(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	compared := 0
	for seed := int64(1); seed <= 300; seed++ {
		m, s, c := randomChain(t, seed)
		if c == nil {
			continue
		}
		for a := int32(1); int(a) < len(s.Actions); a++ {
			var pr Problem
			switch a % 3 {
			case 0:
				pr = StateProblem(c, EnteredBy(c, []int32{a}))
			case 1:
				pr = InitialProblem(c, []int32{a})
			default:
				pr = InitialProblem(c, []int32{a})
				pr.Alpha = make([]float64, c.N)
				for i := range pr.Alpha {
					pr.Alpha[i] = r.Float64()
				}
				sum := 0.0
				for _, x := range pr.Alpha {
					sum += x
				}
				for i := range pr.Alpha {
					pr.Alpha[i] /= sum
				}
			}
			horizon := 0.5 + 10*r.Float64()
			var fwd, bwd []*Result
			var ferr, berr error
			withBackward(false, func() { fwd, ferr = Solve(t.Context(), c, []Problem{pr}, Options{Horizon: horizon, Epsilon: 1e-13}) })
			withBackward(true, func() { bwd, berr = Solve(t.Context(), c, []Problem{pr}, Options{Horizon: horizon, Epsilon: 1e-13}) })
			if (ferr == nil) != (berr == nil) {
				t.Fatalf("seed %d, action %d: forward error %v, backward error %v", seed, a, ferr, berr)
			}
			if ferr != nil {
				continue
			}
			f, b := fwd[0], bwd[0]
			if f.Reachable != b.Reachable {
				t.Fatalf("seed %d, action %d: reachable forward %v, backward %v\n%s", seed, a, f.Reachable, b.Reachable, m.Source)
			}
			for _, at := range []float64{0, horizon / 7, horizon / 2, horizon} {
				x, err1 := f.CDF(at)
				y, err2 := b.CDF(at)
				if err1 != nil || err2 != nil || math.Abs(x-y) > f.Epsilon+b.Epsilon {
					t.Fatalf("seed %d, action %d (%s), t = %g: forward %.15g (%v), backward %.15g (%v)\n%s", seed, a, b.Method, at, x, err1, y, err2, m.Source)
				}
			}
			if b.backward {
				compared++
			}
		}
	}
	if compared < 300 {
		t.Fatalf("only %d backward solves compared", compared)
	}
	t.Logf("%d backward solves compared", compared)
}
