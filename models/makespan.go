package models

import (
	"context"
	"errors"
	"math"
	"sort"

	"gonum.org/v1/gonum/integrate/quad"

	"pepa/ctmc"
	"pepa/passage"
)

// meanSolveLimit is the largest chain (transitions) on which a group's
// means come from the linear solve (exact to 1e-12, with the largest mean
// remaining time for the tails); larger ones sum their series.
const meanSolveLimit = 4 << 20

// setMean sets the machine's mean and largest remaining mean time. A mean
// that cannot be computed (passage.ErrMeanUnavailable) leaves both NaN
// with a note, and the machine's distribution stands.
func (mr *MachineResult) setMean(ctx context.Context, c *ctmc.Chain, pr passage.Problem) error {
	var err error
	mr.Mean, mr.MaxRest, err = passage.MeanTimes(ctx, c, pr)
	if errors.Is(err, passage.ErrMeanUnavailable) && ctx.Err() == nil {
		mr.Mean, mr.MaxRest = math.NaN(), math.NaN()
		mr.Note = err.Error()
		return nil
	}
	return err
}

// setMeanFrom sets the mean of a passage (and its largest remaining mean
// time, for tails): by the linear solve when asked (and for a dense
// result, which has no series), else from the series (maxRest NaN: tails
// from the series too). A mean that cannot be had is NaN with a note.
func (mr *MachineResult) setMeanFrom(ctx context.Context, c *ctmc.Chain, pr passage.Problem, d *passage.Result, linear bool) error {
	if !linear {
		m, tail, err := d.SeriesMean()
		if err == nil {
			mr.Mean, mr.MaxRest, mr.meanError = m, math.NaN(), tail
			if math.IsInf(m, 1) {
				mr.MaxRest = math.Inf(1)
			}
			return nil
		}
	}
	if err := mr.setMean(ctx, c, pr); err != nil {
		return err
	}
	mr.meanError = 1e-12 * mr.Mean
	return nil
}

// setEpsilon records the bound every exact probability keeps: the largest
// of the distributions' (Accuracy) and the one asked.
func (res *Result) setEpsilon(asked float64) {
	res.Epsilon = asked
	for i := range res.Machines {
		if d := res.Machines[i].Dist; d != nil {
			res.Epsilon = math.Max(res.Epsilon, d.Accuracy())
		}
	}
	for _, g := range res.Groups {
		if g.dist != nil {
			res.Epsilon = math.Max(res.Epsilon, g.dist.Accuracy())
		}
	}
}

// simulated reports whether some group was simulated.
func (res *Result) simulated() bool {
	for _, g := range res.Groups {
		if g.Solved == "simulated" {
			return true
		}
	}
	return false
}

// productJoint sets the joint figures of independent machines: the
// product of their probabilities, and E[max] by integration.
func (res *Result) ProductJoint(tol float64) {
	res.PAllByBeta = 1
	var dists []passage.Distribution
	var rest []float64
	cdfErr, scale := 0.0, 0.0
	for i := range res.Machines {
		mr := &res.Machines[i]
		if mr.Dist == nil {
			continue
		}
		res.PAllByBeta *= mr.PByBeta
		dists = append(dists, mr.Dist)
		rest = append(rest, mr.MaxRest)
		cdfErr += mr.Dist.Accuracy()
		scale = math.Max(scale, mr.Mean)
	}
	if math.IsNaN(scale) {
		// Some machine's mean is unavailable, and with it the bound on
		// E[makespan]'s tail: report that as unavailable too.
		res.ExpectedMakespan, res.MakespanError = math.NaN(), math.NaN()
		return
	}
	if len(dists) == 1 {
		// One machine: the makespan is its finishing time.
		for i := range res.Machines {
			if mr := &res.Machines[i]; mr.Dist != nil {
				res.ExpectedMakespan, res.MakespanError = mr.Mean, mr.meanError
			}
		}
		return
	}
	res.ExpectedMakespan, res.MakespanError = MaxMean(cdfProduct(sortByQ(dists)), tailOf(dists, rest), scale, tol, cdfErr, shortestScale(dists))
}

// MaxMean computes E[max_j F_j] = integral over t >= 0 of 1 - prod_j F_j(t)
// for independent finishing times, and a bound on its error.
//
// prod(t) returns prod_j F_j(t); tail(T) bounds the integral beyond T (for
// passage times, sum_j (1 - F_j(T)) M_j with M_j the largest mean remaining
// time, because 1 - prod F <= sum_j (1 - F_j)); scale is a rough size of the
// result (the largest E[F_j], a lower bound of it); cdfErr bounds the error
// of prod(t) at any t. T doubles from 2*scale until the tail is below
// tol*scale/2 (or T*cdfErr if that is larger); [0, T] is integrated by adaptive bisection with 10-point
// Gauss-Legendre rules (a panel is accepted when its two halves agree with
// it to its share of tol*scale/2, or to 4*cdfErr per unit of time, below
// which the integrand is noise), the first panels set by start. The bound
// returned is the tail, the quadrature differences, the head's (below) and
// T*cdfErr.
func MaxMean(prod func(float64) float64, tail func(float64) float64, scale, tol, cdfErr float64, start QuadratureStart) (float64, float64) {
	if math.IsInf(scale, 1) || math.IsNaN(scale) {
		return math.Inf(1), 0
	}
	if scale <= 0 {
		return 0, 0
	}
	// Stop doubling once the tail is below tol*scale/2, or below the error
	// that the CDFs' own accuracy already puts on [0, T], whichever is larger.
	T := 2 * scale
	tailBound := tail(T)
	for i := 0; i < 60 && !(tailBound <= math.Max(tol*scale/2, T*cdfErr)); i++ {
		T *= 2
		tailBound = tail(T)
	}
	if !(tailBound <= math.Max(tol*scale/2, T*cdfErr)) {
		return math.Inf(1), math.Inf(1)
	}
	tolAbs := tol * scale / 2

	// The head [0, a]: prod is nondecreasing, so there the integrand lies
	// between 1 - prod(a) and 1, and its integral is a (1 - prod(a)/2)
	// within a prod(a)/2, whatever rises inside. Halving a until that is
	// below a quarter of the tolerance brings the panels down to the
	// fastest rise that matters, with no rate to say where it is.
	shortest := start.At
	head, headErr := 0.0, 0.0
	descend := start.Descend && shortest > 0 && shortest < T/16
	if descend {
		p := prod(shortest)
		for i := 0; i < 64 && shortest*p > tolAbs/4; i++ {
			shortest /= 2
			p = prod(shortest)
		}
		head, headErr = shortest*(1-p/2), shortest*p/2
	}

	type seg struct{ a, b, est float64 }
	// gl evaluates the 10-point rule on many segments at once, on all cores.
	gl := func(segs [][2]float64) []float64 {
		nodes := make([]float64, len(segs)*len(glNodes))
		for i, sg := range segs {
			h := sg[1] - sg[0]
			for k, x := range glNodes {
				nodes[i*len(glNodes)+k] = sg[0] + (x+1)*h/2
			}
		}
		vals := make([]float64, len(nodes))
		const chunk = 32
		Parallel(context.Background(), (len(nodes)+chunk-1)/chunk, func(c int) error {
			for k := c * chunk; k < min((c+1)*chunk, len(nodes)); k++ {
				vals[k] = 1 - prod(nodes[k])
			}
			return nil
		})
		out := make([]float64, len(segs))
		for i, sg := range segs {
			h := sg[1] - sg[0]
			for k := range glNodes {
				out[i] += glWeights[k] * h / 2 * vals[i*len(glNodes)+k]
			}
		}
		return out
	}
	const initial = 16
	const maxSegments = 1 << 14
	var first [][2]float64
	if shortest > 0 && shortest < T/initial {
		// 0, s, 2s, 4s, ... each octave in 2 panels up to T/16, then 15
		// panels of T/16 to T (the head [0, s] apart when descended).
		if !descend {
			first = append(first, [2]float64{0, shortest})
		}
		for a := shortest; a < T/initial; a *= 2 {
			b := math.Min(2*a, T/initial)
			first = append(first, [2]float64{a, (a + b) / 2}, [2]float64{(a + b) / 2, b})
		}
		for i := 1; i < initial; i++ {
			first = append(first, [2]float64{T * float64(i) / initial, T * float64(i+1) / initial})
		}
	} else {
		for i := 0; i < initial; i++ {
			first = append(first, [2]float64{T * float64(i) / initial, T * float64(i+1) / initial})
		}
	}
	active := make([]seg, len(first))
	for i, e := range gl(first) {
		active[i] = seg{first[i][0], first[i][1], e}
	}
	total, quadErr := 0.0, 0.0
	for level := 0; len(active) > 0; level++ {
		halves := make([][2]float64, 0, 2*len(active))
		for _, sg := range active {
			m := (sg.a + sg.b) / 2
			halves = append(halves, [2]float64{sg.a, m}, [2]float64{m, sg.b})
		}
		est := gl(halves)
		var next []seg
		for i, sg := range active {
			refined := est[2*i] + est[2*i+1]
			diff := math.Abs(refined - sg.est)
			// The integrand itself is only known to cdfErr: asking the
			// rules to agree more closely than that would split forever.
			if diff <= math.Max(tolAbs/T, 4*cdfErr)*(sg.b-sg.a) || level >= 30 || len(active) > maxSegments {
				total += refined
				quadErr += diff
				continue
			}
			next = append(next, seg{halves[2*i][0], halves[2*i][1], est[2*i]}, seg{halves[2*i+1][0], halves[2*i+1][1], est[2*i+1]})
		}
		active = next
	}
	return total + head, tailBound + quadErr + headErr + T*cdfErr
}

// 10-point Gauss-Legendre nodes and weights on [-1, 1].
var glNodes, glWeights = func() ([]float64, []float64) {
	x := make([]float64, 10)
	w := make([]float64, 10)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}()

// A QuadratureStart says where MaxMean's first panels begin: at At, in
// octaves from the panel [0, At] (none: 16 panels of T/16); with Descend,
// At is only a first guess, halved until [0, At] holds too little of the
// integral to matter.
type QuadratureStart struct {
	At      float64
	Descend bool
}

// cdfProduct returns prod(t) for MaxMean over distributions:
// uniformization results with the same rate share their Poisson weights;
// other distributions give their own values.
func cdfProduct(dists []passage.Distribution) func(float64) float64 {
	return func(t float64) float64 {
		prod := 1.0
		var w *passage.PoissonWeights
		q := math.NaN()
		for _, dist := range dists {
			d, ok := dist.(*passage.Result)
			if !ok {
				v, err := dist.CDF(t)
				if err != nil {
					return math.NaN()
				}
				prod *= v
			} else {
				if d.Q != q {
					q = d.Q
					var err error
					if w, err = passage.FoxGlynn(q*t, d.Epsilon/2); err != nil {
						return math.NaN()
					}
				}
				prod *= d.CDFWith(w)
			}
			if prod == 0 {
				break
			}
		}
		return prod
	}
}

// shortestScale is the time scale of the fastest rise of the
// distributions, where MaxMean's first panels start (an integrand's
// sharp early rise can fall between the nodes of coarser panels): the
// reciprocal of the largest uniformization rate, or for a distribution
// without one (Laplace) an eighth of its mean, from which MaxMean descends
// (a rise faster than that, ahead of the mean, was missed: seed 501640,
// a delay of 1/263 s under jobs of hundreds of seconds put E[makespan]
// 1.2e-8 off, beyond its stated 8e-10); none when there is none.
func shortestScale(ds []passage.Distribution) QuadratureStart {
	s, descend := math.Inf(1), false
	for _, d := range ds {
		switch d := d.(type) {
		case *passage.Result:
			if d.Q > 0 {
				s = math.Min(s, 1/d.Q)
			}
		case *passage.LaplaceDistribution:
			if m := d.Mean(); m > 0 && !math.IsInf(m, 1) {
				s = math.Min(s, m/8)
				descend = true
			}
		}
	}
	if math.IsInf(s, 1) {
		return QuadratureStart{}
	}
	return QuadratureStart{At: s, Descend: descend}
}

// tailOf bounds integral_T^inf (1 - prod F) for MaxMean: sum over the
// distributions of (1 - F(T)) times the largest mean remaining time, or
// the series' own tail where that is unknown (NaN).
func tailOf(dists []passage.Distribution, rest []float64) func(float64) float64 {
	return func(T float64) float64 {
		s := 0.0
		for j, d := range dists {
			if r, ok := d.(*passage.Result); ok && math.IsNaN(rest[j]) {
				x, err := r.SeriesTail(T)
				if err != nil {
					return math.Inf(1)
				}
				s += x
				continue
			}
			f, err := d.CDF(T)
			if err != nil {
				return math.Inf(1)
			}
			if f < 1 {
				s += (1 - f) * rest[j]
			}
		}
		return s
	}
}

// sortByQ orders distributions by uniformization rate, so that those that
// share one share Poisson weights (cdfProduct); others (Laplace) last.
func sortByQ(ds []passage.Distribution) []passage.Distribution {
	out := append([]passage.Distribution(nil), ds...)
	q := func(d passage.Distribution) float64 {
		if r, ok := d.(*passage.Result); ok {
			return r.Q
		}
		return math.Inf(1)
	}
	sort.SliceStable(out, func(i, j int) bool { return q(out[i]) < q(out[j]) })
	return out
}
