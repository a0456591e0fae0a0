package passage

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// Backward iteration. For a single passage whose series is only needed up
// to a horizon, the absorbed masses a_k can be had without transposing the
// chain: with u_k(i) the probability that the uniformized chain started in
// i has ended the passage within k jumps,
//
//	u_0 = 1 on the target states, 0 elsewhere
//	u_{k+1}(i) = d_i u_k(i) + sum over i's moves to j of r/q u_k(j) + s_i
//
// where s_i is i's rate of ending the passage (target actions, moves into
// target states) over q and d_i is 1 minus i's rate of leaving over q; and
// a_k = sum_i alpha_i u_k(i). It is the same quantity the forward pass
// computes (alpha P^k summed over the sink), so the CDF, density and
// quantiles follow as before. The chain's own rows are read as they are,
// a gather over each state's successors: no generator is built, and the
// step costs what a forward step does. It gives nothing about which
// states can still reach the target, so the series stops at the horizon,
// or earlier only once the start's whole mass is absorbed to within
// epsilon/2; it never yields a mean (Result.SeriesMean refuses it).

// errNoBackward says the backward path does not apply; Solve then runs the
// forward one.
var errNoBackward = errors.New("no backward iteration for this chain")

// backwardMinTransitions is the chain size from which Solve prefers the
// backward path for a single passage with a horizon: below it building the
// generator costs little. A variable for the tests, which run both paths.
var backwardMinTransitions = 1 << 20

// solveBackward is Solve for one passage, up to kmax steps, by backward
// iteration. It needs the chain's rate table with a free 2-byte index
// (errNoBackward otherwise).
func solveBackward(ctx context.Context, c *ctmc.Chain, pr Problem, q float64, kmax int, opt Options) (*Result, error) {
	if c.RateIndex == nil || len(c.RateTable) >= 1<<16 {
		return nil, errNoBackward
	}
	if err := membudget.Check(ctx, fmt.Sprintf("passage: the backward iteration over %d states", c.N), backwardBytes(c)+membudget.Bytes(int64(kmax), 16), solveHint()); err != nil {
		return nil, err
	}
	n := c.N
	mask := targetMask([]Problem{pr})
	target := pr.TargetStates
	inTarget := func(j int32) bool { return target != nil && target[j] }
	// val: the chain's distinct rates over q, and a zero at index off for
	// the entries that do not move mass between states (those that end
	// the passage, self-loops, a target state's own moves).
	off := uint16(len(c.RateTable))
	val := make([]float64, len(c.RateTable)+1)
	for i, r := range c.RateTable {
		val[i] = r / q
	}
	idx := make([]uint16, len(c.Col))
	d := make([]float64, n)
	s := make([]float64, n)
	T := max(1, min(runtime.GOMAXPROCS(0), n/4096))
	errs := make([]error, T)
	runWorkers(T, func(t int) {
		lo, hi := n*t/T, n*(t+1)/T
		for i := lo; i < hi; i++ {
			if inTarget(int32(i)) {
				d[i] = 1
				for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
					idx[e] = off
				}
				continue
			}
			leave, end := 0.0, 0.0
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				j, ri := c.Col[e], c.RateIndex[e]
				r := c.RateTable[ri]
				switch {
				case mask.of(c.Act[e]) != 0 || inTarget(j):
					end += r
					leave += r
					idx[e] = off
				case int(j) == i:
					idx[e] = off
				default:
					leave += r
					idx[e] = ri
				}
			}
			d[i] = 1 - leave/q
			s[i] = end / q
			if !(d[i] >= 0) && errs[t] == nil {
				errs[t] = fmt.Errorf("uniformization rate %g is below the rate %g at which state %d is left once the target is absorbing (negative diagonal)", q, leave, i)
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	opt.stage("generator", fmt.Sprintf("none: backward iteration over the chain's %d transitions", len(c.Col)))

	r := &Result{Q: q, Epsilon: opt.Epsilon, Method: "uniformization", backward: true}
	u := make([]float64, n)
	var start []int32 // the states alpha covers
	for i, x := range pr.Alpha {
		if x > 0 {
			start = append(start, int32(i))
		}
		r.total += x
	}
	if target != nil {
		for i := range u {
			if target[i] {
				u[i] = 1
			}
		}
	}
	absorbed := func(u []float64) float64 {
		a := 0.0
		for _, i := range start {
			a += pr.Alpha[i] * u[i]
		}
		return a
	}
	r.Absorbed = append(r.Absorbed, absorbed(u))
	y := make([]float64, n)
	nblocks := (n + rowBlock - 1) / rowBlock
	pool := newPool(nblocks)
	defer pool.close()
	last := time.Now()
	for step := 1; step <= kmax; step++ {
		if r.total-r.Absorbed[step-1] <= opt.Epsilon/2 {
			// The whole start is absorbed: later values cannot grow by
			// more than epsilon/2.
			r.Complete = true
			break
		}
		if step&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if opt.Progress != nil && step&15 == 0 && time.Since(last) > 500*time.Millisecond {
			opt.Progress(step, kmax)
			last = time.Now()
		}
		pool.run(func(b int) {
			lo, hi := b*rowBlock, min((b+1)*rowBlock, n)
			backwardRows(c.RowPtr, c.Col, idx, val, d, s, u, y, lo, hi)
		})
		u, y = y, u
		r.Absorbed = append(r.Absorbed, absorbed(u))
	}
	r.Rest = max(0, r.total-r.Absorbed[len(r.Absorbed)-1])
	// The start reaches the target if some mass got there; if none did
	// within the horizon, a search says whether it ever can.
	r.Reachable = r.Absorbed[len(r.Absorbed)-1] > 0 || reaches(c, pr, mask)
	opt.stage("CDF steps", fmt.Sprintf("%d steps, 1 passage (backward)", r.Iterations()))
	return r, nil
}

// backwardRowsGo computes rows lo..hi-1 of one backward step (backwardRows
// runs it in assembly where it may: the same operations in the same
// order, the conversions forbidding fused multiply-adds).
func backwardRowsGo(rowPtr []int64, col []int32, idx []uint16, val, d, s, u, y []float64, lo, hi int) {
	for i := lo; i < hi; i++ {
		acc := float64(d[i] * u[i])
		e0, e1 := rowPtr[i], rowPtr[i+1]
		cols := col[e0:e1]
		ix := idx[e0:e1]
		ix = ix[:len(cols)]
		for t, j := range cols {
			acc += float64(val[ix[t]] * u[j])
		}
		y[i] = acc + s[i]
	}
}

// reaches reports whether the start of pr can reach its target: a state
// inside it, or a transition that ends it.
func reaches(c *ctmc.Chain, pr Problem, mask actionMask) bool {
	seen := make([]bool, c.N)
	var stack []int32
	for i, x := range pr.Alpha {
		if x > 0 {
			seen[i] = true
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if pr.TargetStates != nil && pr.TargetStates[i] {
			return true
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if mask.of(c.Act[e]) != 0 {
				return true
			}
			if j := c.Col[e]; !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	return false
}
