package optimize

import (
	"context"
	"math"
	"sort"

	"pepa/models/spec"
	"pepa/passage"
)

// An upper bound on what any mapping can reach, for instances too large to
// prove the optimum (Optimize reports the best found "within X of optimal").
//
// Fastest-share bound. Let mu_a = max(r_a, p_a) be application a's faster
// rate on machine j, and rho = max_a (r_a + p_a) the fastest first-phase
// race. Given the path chosen by the race, a machine computing a set S of c
// applications does independent phases: the race phase, Exp(k rho_f) with
// rho_f <= rho, then k exponential phases of rate k mu (k - 1 for the first
// application) per application, each at most its application's faster
// rate. So its work is stochastically at least Y_c: one Exp(k rho) phase,
// then the k c - 1 fastest of the phases of the c applications with the
// largest mu (all k phases each, sorted by rate). An owner process only
// slows work down (it runs at rate <= 1, and the time to finish is
// monotone in the work, the owner evolving independently of it), so
//
//	P_j(S) <= B_j(c) = P(the machine finishes Y_c by beta), |S| = c,
//
// with the machine's own owner and start. B_j(c) decreases in c, and Y_c
// is a prefix of Y_{c+1}: one transient solution of a chain that does the
// phases in order gives B_j(c) for every c at once (the probability of
// having completed k c phases by beta).
//
// Any mapping puts c_j applications on machine j, sum_j c_j = n. For min:
// min_j P_j <= v requires, for v* the optimum, c_j <= C_j(v*) = max{c:
// B_j(c) >= v*} and sum_j C_j(v*) >= n; the bound is the largest v with
// sum_j C_j(v) >= n. For joint: prod_j P_j <= max over counts summing to n
// of prod_j B_j(c_j), a dynamic program over machines and counts.

// shareBounds computes B_j(c) for c = 0..limit on machine j (B_j(0) = 1),
// counting only the applications of subset among the c. The others on the
// machine only add work: if the first application is not in the subset,
// its race phase is work beyond the c applications' k c phases, which
// dominate Y_c; if it is, Y_c's race phase at the subset's fastest race
// covers it. floor stops the work once B_j(c) < floor (later values are
// smaller).
func shareBounds(ctx context.Context, in *spec.Instance, j int, subset []int, beta, floor float64, limit int) ([]float64, error) {
	k := in.Phases
	n := len(subset)
	mu := make([]float64, n)
	rho := 0.0
	for i, a := range subset {
		r, p := in.Rates(a, j)
		mu[i] = math.Max(r, p)
		rho = math.Max(rho, r+p) // at least the first phase's rate, race or not
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(mu)))
	if limit > n {
		limit = n
	}
	// Counts whose fastest work has a mean beyond 4 beta are all but
	// certainly below the floor: stop there (the last value stands for
	// larger counts, which keeps the bound valid whatever they are).
	mean := 0.0
	for c := 0; c < limit; c++ {
		if mean += 1 / mu[c]; mean > 4*beta {
			limit = c + 1
			break
		}
	}
	// Phase rates in order: the race phase, then the fastest phases.
	phases := []float64{float64(k) * rho}
	for c := 0; c < limit && len(phases) < k*limit; c++ {
		for h := 0; h < k && len(phases) < k*limit; h++ {
			phases = append(phases, float64(k)*mu[c])
		}
	}
	done, err := phaseProgress(ctx, in.EmbeddedOwner(j), phases, beta)
	if err != nil {
		return nil, err
	}
	// done[i]: P(at least i phases completed by beta); B_j(c) = done[k c].
	out := []float64{1}
	for c := 1; c <= limit; c++ {
		b := math.Min(1, done[k*c]+1e-9) // the solver's error, on the safe side
		out = append(out, b)
		if b < floor {
			break
		}
	}
	return out, nil
}

// phaseProgress returns, for i = 0..len(phases), the probability that a
// machine doing the phases in order (rates at full speed) has completed at
// least i of them by time t, with the machine's owner (nil: none) slowing
// it down as in machineMoves: under preemption work runs only with no
// owner job, under sharing at 1/(n+1) with departures at mu n/(n+1). It is
// a transient solution by uniformization of the chain (phases done, owner
// jobs), within 1e-10.
func phaseProgress(ctx context.Context, o *spec.Owner, phases []float64, t float64) ([]float64, error) {
	L := len(phases)
	capacity, sharing := 0, false
	var arrival, service float64
	if o != nil {
		capacity, sharing, arrival, service = o.Capacity, o.Discipline == "sharing", o.Arrival, o.Service
	}
	width := capacity + 1
	work := func(i, n int) float64 { // rate of phase i with n owner jobs
		switch {
		case i >= L:
			return 0
		case sharing:
			return phases[i] / float64(n+1)
		case n > 0:
			return 0
		}
		return phases[i]
	}
	leave := func(n int) float64 { // an owner job leaves (one server)
		switch {
		case n == 0:
			return 0
		case sharing:
			return service * float64(n) / float64(n+1)
		}
		return service
	}
	q := 0.0
	for i := 0; i <= L; i++ {
		for n := 0; n <= capacity; n++ {
			out := work(i, n) + leave(n)
			if n < capacity {
				out += arrival
			}
			q = math.Max(q, out)
		}
	}
	v := make([]float64, (L+1)*width)
	if o != nil && o.Start == "stationary" {
		copy(v, o.Stationary())
	} else {
		v[0] = 1
	}
	acc := make([]float64, L+1) // P(exactly i phases done at t)
	if q == 0 {
		acc[0] = 1
	} else {
		pw, err := passage.FoxGlynn(q*t, 1e-11)
		if err != nil {
			return nil, err
		}
		next := make([]float64, len(v))
		for step := 0; step <= pw.Right(); step++ {
			if step&255 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if step >= pw.Left {
				w := pw.W[step-pw.Left]
				for i := 0; i <= L; i++ {
					for n := 0; n < width; n++ {
						acc[i] += w * v[i*width+n]
					}
				}
			}
			// next = v (I + Q/q).
			for s := range next {
				next[s] = 0
			}
			for i := 0; i <= L; i++ {
				for n := 0; n < width; n++ {
					x := v[i*width+n]
					if x == 0 {
						continue
					}
					stay := x
					if r := work(i, n); r > 0 {
						next[(i+1)*width+n] += x * r / q
						stay -= x * r / q
					}
					if n < capacity {
						next[i*width+n+1] += x * arrival / q
						stay -= x * arrival / q
					}
					if r := leave(n); r > 0 {
						next[i*width+n-1] += x * r / q
						stay -= x * r / q
					}
					next[i*width+n] += stay
				}
			}
			v, next = next, v
		}
	}
	return atLeast(acc), nil
}

// atLeast turns P(exactly i phases done), i = 0..L, into P(at least i
// done), summed from the largest i down.
func atLeast(acc []float64) []float64 {
	done := make([]float64, len(acc))
	tail := 0.0
	for i := len(acc) - 1; i >= 0; i-- {
		tail += acc[i]
		done[i] = tail
	}
	return done
}

// upperBound is the fastest-share bound on the objective over all
// mappings, given figures that some mapping reaches (floors, which limit
// the work). It is 1 when nothing better can be said.
//
// The count argument holds for any subset A of the applications: each
// machine j gets c_j of them, sum_j c_j = |A|, and P_j <= B_j(c_j) with
// B_j computed from A's rates alone. Taking A as the t applications that
// are slowest even on their fastest machine (t = m, 2m, 4m, ..., and all
// of them) keeps the machines from all claiming the
// fastest applications; the bound is the least over these subsets.
func (o *optimizer) upperBound(floorMin, floorJoint float64) (float64, error) {
	in := o.in
	n, m := len(in.Apps), len(in.Machines)
	floor := floorMin
	if o.opt.Objective == "joint" {
		floor = floorJoint
	}
	// Applications slowest first, by their best mean time.
	best := make([]float64, n)
	order := make([]int, n)
	for a := range order {
		order[a] = a
		for j := 0; j < m; j++ {
			r, p := in.Rates(a, j)
			best[a] = math.Max(best[a], math.Max(r, p))
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return best[order[x]] < best[order[y]] })
	bound := 1.0
	var sizes []int
	for t := m; t < n; t *= 2 {
		sizes = append(sizes, t)
	}
	sizes = append(sizes, n)
	for _, t := range sizes {
		b, err := o.subsetBound(order[:t], floor)
		if err != nil {
			return 1, err
		}
		bound = math.Min(bound, b)
	}
	return bound, nil
}

// subsetBound is the count bound for the applications of subset.
func (o *optimizer) subsetBound(subset []int, floor float64) (float64, error) {
	in := o.in
	n := len(subset)
	// Keep the chains small: at most limit applications a machine are
	// looked at; beyond, B_j(limit) stands for every larger count (it is
	// larger than they are, so the bound stays valid).
	limit := n
	if maxPhases := 200_000 / (in.Phases * (o.maxCapacity() + 1)); limit > maxPhases {
		limit = maxPhases
	}
	B := make([][]float64, len(in.Machines))
	for j := range B {
		b, err := shareBounds(o.ctx, in, j, subset, o.opt.Beta, floor, limit)
		if err != nil {
			return 1, err
		}
		B[j] = b
	}
	// counts(j): the most applications machine j can hold in a mapping
	// better than the floor, and B_j(c) for any c up to it (the last value
	// looked at stands for the counts past limit).
	counts := func(j int) int {
		if b := B[j]; b[len(b)-1] >= floor {
			return n
		}
		return len(B[j]) - 2
	}
	value := func(j, c int) float64 { return B[j][min(c, len(B[j])-1)] }
	// With shared resources P(all) is no product of the machines' P_j
	// (coupled machines' finishing times are dependent), but it is at
	// most min_j P_j, which the count bound below bounds (P_j <= B_j(c_j)
	// still: a transfer only delays a machine).
	if o.opt.Objective != "joint" || !o.eval.separable() {
		// The largest v with sum_j C_j(v) >= n, among the values B_j(c).
		var cands []float64
		for _, b := range B {
			cands = append(cands, b[1:]...)
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(cands)))
		for _, v := range cands {
			total := 0
			for j := range B {
				c := 0
				for c < counts(j) && value(j, c+1) >= v {
					c++
					if c == len(B[j])-1 {
						c = counts(j) // the rest hold the same value
					}
				}
				total += c
			}
			if total >= n {
				return v, nil
			}
		}
		return 1, nil
	}
	// Joint: best[t] = max prod_j B_j(c_j) over the machines so far, with
	// sum c_j = t; too large a program says nothing.
	work := 0.0
	for j := range B {
		work += float64(n) * float64(counts(j)+1)
	}
	if work > 5e8 {
		return 1, nil
	}
	best := make([]float64, n+1)
	for t := range best {
		best[t] = -1
	}
	best[0] = 1
	next := make([]float64, n+1)
	for j := range B {
		for t := range next {
			next[t] = -1
		}
		for t, f := range best {
			if f < 0 {
				continue
			}
			for c := 0; c <= counts(j) && t+c <= n; c++ {
				if x := f * value(j, c); x > next[t+c] {
					next[t+c] = x
				}
			}
		}
		best, next = next, best
	}
	if best[n] < 0 {
		return 1, nil
	}
	return math.Min(1, best[n]), nil
}

func (o *optimizer) maxCapacity() int {
	c := 0
	for _, ow := range o.in.Owners {
		if ow != nil {
			c = max(c, ow.Capacity)
		}
	}
	return c
}
