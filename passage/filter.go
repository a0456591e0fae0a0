package passage

import (
	"context"
	"errors"
	"fmt"
	"math"

	"pepa/ctmc"
	"pepa/passage/laplace"
)

// Filtering (semantics.md section 6): a record of observed completions
// narrows where the chain can be. Between completions the chain runs on
// its unobserved transitions only, every state keeping its full exit rate
// (Hidden: the mass that made no observed transition, where it is); at a
// completion exactly the observed transitions of its action are taken
// (Observe). Neither normalises: the total is the likelihood of the record
// so far, which the caller rescales (and names the record impossible
// when it is 0).

// Hidden returns alpha exp(Q_h t): Q_h has the rates of c's transitions
// whose action is not observed (observed is indexed by action id; a nil
// or short slice observes nothing beyond it) off the diagonal, and every
// state's full exit rate (every transition, observed or not, self-loops
// included, less its unobserved self-loops) on it. By uniformization at
// rate q = 1.02 times the largest exit rate, truncated at the Fox-Glynn
// right point for epsilon: the result is within epsilon times alpha's
// mass of the exact one, in total, and never above it.
//
// The work is bounded: q t steps at most MaxHiddenSteps (past it an error
// wrapping ErrTooManySteps says how far t may go, HiddenSpan), ctx checked
// every 64 steps, and the steps end as soon as the mass left to move
// cannot change the sum (negligible: a record the model cannot produce,
// or a time long past its last completion, costs what the mass's decay
// does, not q t).
//
// Where q t is large (owners cycling in seconds during hours between
// completions) and the chain orders into blocks the Laplace engine
// solves, by Laplace-transform inversion instead (laplace.Transient: the
// observed transitions end in its sink; every value within an estimated
// epsilon; its cost does not grow with t): HiddenWith says which engine.
func Hidden(ctx context.Context, c *ctmc.Chain, alpha []float64, observed []bool, t, epsilon float64) ([]float64, error) {
	v, _, err := HiddenWith(ctx, c, alpha, observed, t, epsilon, EngineAuto)
	return v, err
}

// hiddenLaplaceSteps is where Hidden's auto turns to Laplace-transform
// inversion: uniformization's q t steps against the inversion's 81 solves
// or more (two levels of the trapezoidal rule, a solve worth about three
// steps), with the margin ChooseEngine asks.
const hiddenLaplaceSteps = autoMargin * solveCostInSteps * 81

// HiddenWith is Hidden with the engine chosen (EngineAuto, "",
// EngineUniformization or EngineLaplace), and the engine that ran.
func HiddenWith(ctx context.Context, c *ctmc.Chain, alpha []float64, observed []bool, t, epsilon float64, engine string) ([]float64, string, error) {
	if len(alpha) != c.N {
		return nil, "", fmt.Errorf("passage.Hidden: %d start values for %d states", len(alpha), c.N)
	}
	if !(t >= 0) || math.IsInf(t, 0) {
		return nil, "", fmt.Errorf("passage.Hidden: time %g: expected a finite number >= 0", t)
	}
	if t > 0 && engine != EngineUniformization {
		q := 0.0
		for s := 0; s < c.N; s++ {
			exit := 0.0
			for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
				exit += c.RateAt(e)
			}
			q = math.Max(q, exit)
		}
		if engine == EngineLaplace || 1.02*q*t > hiddenLaplaceSteps {
			var tgt laplace.Target
			for a, o := range observed {
				if o {
					tgt.Actions = append(tgt.Actions, int32(a))
				}
			}
			sys, err := laplace.NewSystem(c, tgt)
			if err == nil {
				var v []float64
				var est float64
				if v, est, _, err = laplace.Transient(ctx, sys, alpha, t, epsilon); err == nil {
					// The caller normalises: the error must be small
					// beside the mass left, not only beside alpha's (a
					// record of likelihood e^-1000 would come out as the
					// inversion's noise).
					left := 0.0
					for _, x := range v {
						left += x
					}
					if est <= epsilon*left {
						return v, EngineLaplace, nil
					}
					err = fmt.Errorf("%w: the mass left at %g (%.3g) is within the inversion's estimated error %.2g of 0 (a record this unlikely needs uniformization)", laplace.ErrNotApplicable, t, left, est)
				}
			}
			if err != nil && (engine == EngineLaplace || !errors.Is(err, laplace.ErrNotApplicable)) {
				return nil, "", err
			}
		}
	}
	v, err := hiddenByUniformization(ctx, c, alpha, observed, t, epsilon)
	// The caller normalises: where little mass is left, the series'
	// truncation (epsilon of alpha's mass) would be large beside it, so
	// it runs again with epsilon scaled down to the mass left (a few more
	// terms), until the truncation is at most epsilon of what it keeps.
	start := 0.0
	for _, x := range alpha {
		start += x
	}
	asked := epsilon
	for try := 0; err == nil && try < 4; try++ {
		left := 0.0
		for _, x := range v {
			left += x
		}
		if !(left > 0) || epsilon*start <= asked*left || epsilon <= 1e-300 {
			break
		}
		epsilon = math.Max(asked*left/start/10, 1e-300)
		v, err = hiddenByUniformization(ctx, c, alpha, observed, t, epsilon)
	}
	return v, EngineUniformization, err
}

// hiddenByUniformization is Hidden by uniformization.
func hiddenByUniformization(ctx context.Context, c *ctmc.Chain, alpha []float64, observed []bool, t, epsilon float64) ([]float64, error) {
	if len(alpha) != c.N {
		return nil, fmt.Errorf("passage.Hidden: %d start values for %d states", len(alpha), c.N)
	}
	if !(t >= 0) || math.IsInf(t, 0) {
		return nil, fmt.Errorf("passage.Hidden: time %g: expected a finite number >= 0", t)
	}
	out := append([]float64(nil), alpha...)
	if t == 0 {
		return out, nil
	}
	isObserved := func(a int32) bool { return int(a) < len(observed) && observed[a] }
	// The uniformized sub-stochastic matrix P = I + Q_h / q, by rows: the
	// hidden transitions off the diagonal, and the diagonal 1 - exit / q
	// plus the hidden self-loops / q.
	exit, q := hiddenRates(c)
	if q == 0 {
		return out, nil // nothing moves
	}
	if steps := q * t; !(steps <= MaxHiddenSteps) {
		return nil, fmt.Errorf("passage.Hidden: %g s at uniformization rate %g is %.3g steps, more than the %d taken (at most %g s): %w",
			t, q, steps, MaxHiddenSteps, MaxHiddenSteps/q, ErrTooManySteps)
	}
	w, err := FoxGlynn(q*t, epsilon)
	if err != nil {
		return nil, err
	}
	// P's rows, made once: the diagonal, and the hidden transitions to
	// other states with their probabilities (the steps read only these).
	diag := make([]float64, c.N)
	rowPtr := make([]int64, c.N+1)
	var col []int32
	var prob []float64
	for s := 0; s < c.N; s++ {
		diag[s] = 1 - exit[s]/q
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			switch {
			case isObserved(c.Act[e]):
			case int(c.Col[e]) == s:
				diag[s] += c.RateAt(e) / q
			default:
				col = append(col, c.Col[e])
				prob = append(prob, c.RateAt(e)/q)
			}
		}
		rowPtr[s+1] = int64(len(col))
	}
	v, next := out, make([]float64, c.N)
	sum := make([]float64, c.N)
	for k := 0; k <= w.Right(); k++ {
		if k&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if k > 0 && negligible(v, sum) {
				break // what is left to move cannot change the sum
			}
		}
		if k >= w.Left {
			wk := w.W[k-w.Left]
			for s, x := range v {
				sum[s] += wk * x
			}
		}
		if k == w.Right() {
			break
		}
		for s := range next {
			next[s] = v[s] * diag[s]
		}
		for s, x := range v {
			if x == 0 {
				continue
			}
			for e := rowPtr[s]; e < rowPtr[s+1]; e++ {
				next[col[e]] += x * prob[e]
			}
		}
		v, next = next, v
	}
	return sum, nil
}

// MaxHiddenSteps bounds the uniformization steps of one Hidden call (q t):
// about a billion, seconds of work on a small chain, and Poisson weights
// of a few megabytes.
const MaxHiddenSteps = 1 << 30

// LaplaceSpan is the longest wait the filter takes by Laplace-transform
// inversion: 10^12 s (about 31,700 years), far past any record's.
const LaplaceSpan = 1e12

// HiddenSpan is the longest time HiddenWith runs the filter on at once
// with engine: MaxHiddenSteps uniformization steps, or, where
// Laplace-transform inversion serves (its cost does not grow with t),
// LaplaceSpan if that is longer.
func HiddenSpan(c *ctmc.Chain, observed []bool, engine string) float64 {
	_, q := hiddenRates(c)
	if q == 0 {
		return math.Inf(1)
	}
	if engine != EngineUniformization {
		var tgt laplace.Target
		for a, o := range observed {
			if o {
				tgt.Actions = append(tgt.Actions, int32(a))
			}
		}
		if sys, err := laplace.NewSystem(c, tgt); err == nil && laplace.TransientApplies(sys) {
			return math.Max(LaplaceSpan, MaxHiddenSteps/q)
		}
	}
	return MaxHiddenSteps / q
}

// hiddenRates are every state's exit rate and Hidden's uniformization
// rate, 1.02 times the largest (0 when nothing moves).
func hiddenRates(c *ctmc.Chain) (exit []float64, q float64) {
	exit = make([]float64, c.N)
	for s := 0; s < c.N; s++ {
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			exit[s] += c.RateAt(e)
		}
		q = math.Max(q, exit[s])
	}
	return exit, q * 1.02
}

// negligible reports whether mass v, the most that all the later terms
// can add to sum together (the steps never add mass, the weights sum to
// at most 1), cannot change it: below 2^-60 of its total (less than its
// rounding), or below the smallest normal float64 (where the mass sits
// on the subnormal floor, which the steps can no longer scale down: a
// record the model all but cannot produce).
func negligible(v, sum []float64) bool {
	left, total := 0.0, 0.0
	for s, x := range v {
		left += x
		total += sum[s]
	}
	return left < 0x1p-1022 || left <= 0x1p-60*total
}

// Observe returns the mass alpha moves by one completion of action a:
// out[to] = sum over the transitions from -> to labelled a of
// alpha[from] times their rate (a density: the likelihood of the
// completion at that instant).
func Observe(c *ctmc.Chain, alpha []float64, a int32) []float64 {
	out := make([]float64, c.N)
	for s, x := range alpha {
		if x == 0 {
			continue
		}
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			if c.Act[e] == a {
				out[c.Col[e]] += x * c.RateAt(e)
			}
		}
	}
	return out
}
