package steady

import (
	"context"
	"errors"
	"fmt"
	"math"
	"pepa/internal/option"
	"sort"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/elim"
	"pepa/internal/membudget"
)

// longRun solves a chain with several closed classes: the long-run
// distribution from the initial state is the sum over the classes of the
// probability of ending in the class (absorption) times the class's own
// steady state (solveClass), as PRISM computes it.
func longRun(ctx context.Context, c *ctmc.Chain, cl *classes, opt Options, budget *membudget.Budget) (*Result, error) {
	if err := budget.Check("steady: the probabilities of ending in each closed class", absorptionBytes(c.N), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	prob, absErr, err := absorption(ctx, c, cl, budget)
	if err != nil {
		return nil, err
	}
	res := &Result{Pi: nil, ThroughputError: map[string]float64{}, AbsorptionError: absErr}
	if err := budget.Check("steady: the long-run distribution", membudget.Bytes(int64(c.N), 8), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	res.Pi = make([]float64, c.N)
	largest := -1
	var reasons []string
	for k, class := range cl.classes {
		sol, err := solveClass(ctx, c, class, false, opt, budget)
		if err != nil {
			return nil, fmt.Errorf("closed class %d (%d states, such as (%s)): %w", k+1, len(class), c.StateString(int(class[0])), err)
		}
		for _, i := range class {
			res.Pi[i] = prob[k] * sol.pi[i]
		}
		cr := ClassResult{States: class, Name: c.StateString(int(class[0])), Probability: prob[k],
			Method: sol.method, Iterations: sol.iterations, MaxThroughputError: maxOf(sol.est)}
		res.Classes = append(res.Classes, cr)
		for a, e := range sol.est {
			// An action's throughput is the sum over its classes of
			// prob_k X_a^k: its relative error is at most the largest of
			// the classes' plus that of the probabilities.
			res.ThroughputError[a] = math.Max(res.ThroughputError[a], e+absErr)
		}
		res.Iterations += sol.iterations
		res.Residual = math.Max(res.Residual, sol.residual)
		res.ClosedStates += len(class)
		if largest < 0 || len(class) > len(cl.classes[largest]) {
			largest = k
			res.Method = sol.method
		}
		if len(class) > 1 && len(reasons) < 3 {
			reasons = append(reasons, fmt.Sprintf("class %d: %s", k+1, sol.reason))
		}
		sol.pi = nil
	}
	res.Transient = c.N - res.ClosedStates
	res.MaxThroughputError = maxOf(res.ThroughputError)
	res.Reason = fmt.Sprintf("%d closed classes, the probability of ending in each from the initial state by elimination over the %d transient states (estimated error %.2g relative)", len(cl.classes), res.Transient, absErr)
	if len(reasons) > 0 {
		res.Reason += "; " + strings.Join(reasons, "; ")
	}
	return res, nil
}

// absorptionBytes: the expected times and inflows over the chain's states
// (8 bytes each), the block lists and positions (8).
func absorptionBytes(N int) int64 { return membudget.Bytes(int64(N), 24) }

// denseAbsorbBlock is the largest strongly connected block of transient
// states that absorption eliminates densely (8 MB, a third of a
// gigaflop); larger ones are swept, and eliminated densely after all if
// the sweeps stall and the block has at most maxDenseAbsorbBlock states
// (200 MB, 42 gigaflops at most: the elimination skips the zeros of
// sparse rows).
const (
	denseAbsorbBlock    = 1000
	maxDenseAbsorbBlock = 5000
)

// absorption returns, for each closed class, the probability that the
// chain started in state 0 ends in it, and an estimate of their error
// relative to themselves.
//
// Method: the expected time x_i spent in each transient state satisfies,
// with s_i the rate at which i is left,
//
//	x_j s_j = [j = 0] + sum_{i transient, i != j} x_i q_ij,
//
// and the probability of ending in class C is sum_i x_i q_i(C), the flow
// from the transient states into it. The transient states are solved one
// strongly connected block at a time, in the order the chain can pass
// through them (Tarjan's labels, decreasing), so that a block's inflow
// from earlier blocks is known: a block of one state by one division, a
// block of up to denseAbsorbBlock states by elimination in the manner of
// GTH (every pivot the sum of the remaining outflow, never a difference,
// so that each value keeps a small relative error however stiff the
// rates), a larger block by Gauss-Seidel sweeps until their estimated
// error (as in sweeps.go) is below 1e-14. The estimate returned is four
// unit roundoffs a transient state (the depth to which rounding can
// accumulate along the blocks) plus the sweeps' estimates.
func absorption(ctx context.Context, c *ctmc.Chain, cl *classes, budget *membudget.Budget) ([]float64, float64, error) {
	K := len(cl.classes)
	prob := make([]float64, K)
	classOf := make(map[int32]int, K) // component label -> class
	for k, class := range cl.classes {
		classOf[cl.comp[class[0]]] = k
	}
	if k, ok := classOf[cl.comp[0]]; ok {
		prob[k] = 1
		return prob, 0, nil
	}
	// The transient states by component, components in decreasing label
	// (the order the chain passes through them).
	var trans []int32
	for i := 0; i < c.N; i++ {
		if !cl.closed[cl.comp[i]] {
			trans = append(trans, int32(i))
		}
	}
	sort.SliceStable(trans, func(a, b int) bool { return cl.comp[trans[a]] > cl.comp[trans[b]] })
	x := make([]float64, c.N)  // expected times
	in := make([]float64, c.N) // inflows from solved blocks
	in[0] = 1
	var sum, comp []float64 = make([]float64, K), make([]float64, K)
	est := 4 * unitRoundoff * float64(len(trans))
	for lo := 0; lo < len(trans); {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		id := cl.comp[trans[lo]]
		hi := lo + 1
		for hi < len(trans) && cl.comp[trans[hi]] == id {
			hi++
		}
		blk := trans[lo:hi]
		lo = hi
		reached := false
		for _, j := range blk {
			reached = reached || in[j] != 0
		}
		if !reached {
			continue // no flow reaches the block (unreachable from state 0)
		}
		var err error
		switch {
		case len(blk) == 1:
			j := blk[0]
			q := c.ExitRate(int(j))
			if !(q > 0) || math.IsInf(q, 0) {
				return nil, 0, fmt.Errorf("transient state %d (%s) has exit rate %g", j, c.StateString(int(j)), q)
			}
			x[j] = in[j] / q
		case len(blk) <= denseAbsorbBlock:
			err = absorbDense(ctx, c, blk, cl.comp, x, in)
		default:
			var e float64
			saved := make([]float64, len(blk))
			for p, j := range blk {
				saved[p] = in[j]
			}
			e, err = absorbSweeps(ctx, c, blk, cl.comp, x, in)
			est += e
			if errors.Is(err, errNoProgress) && len(blk) <= maxDenseAbsorbBlock {
				// Stiff rates stall the sweeps: eliminate after all, if
				// the dense block fits.
				if berr := budget.Check(fmt.Sprintf("steady: a dense transient block of %d states (its sweeps stalled)", len(blk)), membudget.Bytes(int64(len(blk))*int64(len(blk)+4), 8), option.Text(steadyHint)); berr != nil {
					return nil, 0, fmt.Errorf("%w (%v)", berr, err)
				}
				for p, j := range blk {
					in[j] = saved[p]
				}
				err = absorbDense(ctx, c, blk, cl.comp, x, in)
			}
		}
		if err != nil {
			return nil, 0, err
		}
		// The block's outflow, to later blocks and to the classes.
		for _, i := range blk {
			xi := x[i]
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				j := c.Col[e]
				cj := cl.comp[j]
				if cj == id {
					continue
				}
				f := xi * c.RateAt(e)
				if cl.closed[cj] {
					k := classOf[cj]
					sum[k], comp[k] = elim.AddCompensated(sum[k], comp[k], f)
				} else {
					in[j] += f
				}
			}
		}
	}
	var total, tc float64
	for k := range prob {
		prob[k] = sum[k] + comp[k]
		total, tc = elim.AddCompensated(total, tc, prob[k])
	}
	total += tc
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, 0, fmt.Errorf("%w: the probabilities of ending in the closed classes sum to %g", errNoProgress, total)
	}
	for k := range prob {
		prob[k] /= total
	}
	return prob, est, nil
}

// absorbDense solves one block's expected times by elimination (see
// absorption and package ctmc/elim): the block's rates between its
// states, the rate at which each leaves the block as its Out, and its
// inflows as the right-hand side of a row-vector solve.
func absorbDense(ctx context.Context, c *ctmc.Chain, blk []int32, compOf []int32, x, in []float64) error {
	m := len(blk)
	id := compOf[blk[0]]
	pos := make(map[int32]int, m)
	for p, i := range blk {
		pos[i] = p
	}
	a := make([]float64, m*m)
	leak := make([]float64, m)
	b := make([]float64, m)
	for p, i := range blk {
		b[p] = in[i]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			switch {
			case j == i:
			case compOf[j] == id:
				a[p*m+pos[j]] += c.RateAt(e)
			default:
				leak[p] += c.RateAt(e)
			}
		}
	}
	block := elim.Block{N: m, Rates: a, Out: [][]float64{leak}}
	if err := block.Reduce(ctx); err != nil {
		var pe *elim.PivotError
		if !errors.As(err, &pe) {
			return err
		}
		k := blk[pe.State]
		return fmt.Errorf("transient state %d (%s) has no rate left after reduction (%g): rates under- or overflow float64", k, c.StateString(int(k)), pe.Rate)
	}
	times := make([]float64, m)
	block.SolveLeft(b, times)
	for p, i := range blk {
		x[i] = times[p]
	}
	return nil
}

// absorbSweeps solves one large block's expected times by Gauss-Seidel
// sweeps (pushing changes, as sweeps.go does), in[] serving as the
// inflows; it returns the estimated relative error of the values.
func absorbSweeps(ctx context.Context, c *ctmc.Chain, blk []int32, compOf []int32, x, in []float64) (float64, error) {
	id := compOf[blk[0]]
	exit := make([]float64, len(blk))
	for p, i := range blk {
		exit[p] = c.ExitRate(int(i))
		if !(exit[p] > 0) || math.IsInf(exit[p], 0) {
			return 0, fmt.Errorf("transient state %d (%s) has exit rate %g", i, c.StateString(int(i)), exit[p])
		}
	}
	const tol = 1e-14
	const maxSweeps = 100_000
	var ratios [rateWindow]float64
	prev := math.Inf(1)
	for sweep := 1; sweep <= maxSweeps; sweep++ {
		if sweep&sweepCheckMask == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		change := 0.0
		for p, i := range blk {
			v := in[i] / exit[p]
			d := v - x[i]
			if d == 0 {
				continue
			}
			x[i] = v
			if v > 0 {
				change = math.Max(change, math.Abs(d)/v)
			}
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				if j := c.Col[e]; j != i && compOf[j] == id {
					in[j] += d * c.RateAt(e)
				}
			}
		}
		ratios[sweep%rateWindow] = change / prev
		prev = change
		if change == 0 {
			return 0, nil
		}
		if sweep < 2*rateWindow {
			continue
		}
		rho := 0.0
		for _, r := range ratios {
			rho = math.Max(rho, r)
		}
		if rho < 1 && change*rho/(1-rho) <= tol {
			return change * rho / (1 - rho), nil
		}
		if sweep >= 4*rateWindow && rho >= 0.9999 {
			break
		}
	}
	return 0, fmt.Errorf("%w: the expected times of a transient block of %d states (such as (%s)) do not converge", errNoProgress, len(blk), c.StateString(int(blk[0])))
}
