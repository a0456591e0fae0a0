package optimize

import (
	"math"

	"pepa/models/spec"
	"pepa/passage"
)

// machineSolver computes P(F_j <= beta) for the local search, many times a
// second, on the machine chains machineMoves describes, with buffers kept
// from one call to the next (no allocation per state or transition once
// they have grown). It is uniformization as in package passage, written
// for one small chain and one time: with q the largest exit rate, P = I +
// Q/q, the "done" transitions (the machine's first finish) lead to a sink,
// and F(beta) = sum_k Poisson(k; q beta) a_k with a_k the mass in the sink
// after k jumps, stopped once the mass outside is below eps/2. Its values
// agree with machineFinish's within the error bounds of both (tested);
// the figures Optimize reports are machineFinish's.
type machineSolver struct {
	in      *spec.Instance
	beta    float64
	eps     float64
	rowPtr  []int32
	col     []int32
	rate    []float64
	done    []float64 // per state: total rate of its finishing transitions
	exit    []float64 // per state: total exit rate
	v, next []float64
	weights []float64
	left    int
}

func newMachineSolver(in *spec.Instance, beta, eps float64) *machineSolver {
	return &machineSolver{in: in, beta: beta, eps: eps}
}

// p solves machine j computing apps (in this order).
func (s *machineSolver) p(j int, apps []int) (float64, error) {
	if len(apps) == 0 {
		return 1, nil
	}
	in := s.in
	o := in.EmbeddedOwner(j)
	npaths, nstages := in.MachinePaths(j, apps), len(apps)*in.Phases
	capacity := 0
	if o != nil {
		capacity = o.Capacity
	}
	n := (1 + npaths*(nstages-1)) * (capacity + 1)
	s.rowPtr = append(s.rowPtr[:0], 0)
	s.col, s.rate = s.col[:0], s.rate[:0]
	s.done, s.exit = grow(s.done, n), grow(s.exit, n)
	state := 0
	in.MachineMoves(j, apps, func(from spec.MachinePos, moves []spec.MachineMove) {
		var out, fin float64
		for _, mv := range moves {
			rate := moveRate(in, j, from, mv)
			out += rate
			if mv.Closes {
				fin += rate // to the sink
				continue
			}
			s.col = append(s.col, spec.PosIndex(mv.To, npaths, nstages))
			s.rate = append(s.rate, rate)
		}
		s.done[state], s.exit[state] = fin, out
		s.rowPtr = append(s.rowPtr, int32(len(s.col)))
		state++
	})
	q := 0.0
	for _, x := range s.exit[:n] {
		q = math.Max(q, x)
	}
	if q == 0 {
		return 0, nil
	}
	s.v, s.next = grow(s.v, n), grow(s.next, n)
	v, next := s.v[:n], s.next[:n]
	for i := range v {
		v[i] = 0
	}
	if o != nil && o.Start == "stationary" {
		for m, x := range o.Stationary() {
			v[spec.PosIndex(spec.MachinePos{Path: -1, N: m}, npaths, nstages)] = x
		}
	} else {
		v[0] = 1
	}
	pw, err := passage.FoxGlynn(q*s.beta, s.eps/2)
	if err != nil {
		return 0, err
	}
	absorbed, cdf := 0.0, 0.0
	right := pw.Right()
	for step := 0; step <= right; step++ {
		if step >= pw.Left {
			cdf += pw.W[step-pw.Left] * absorbed
		}
		// One jump: next = v P, the finishing flow into the sink.
		for i := range next {
			next[i] = 0
		}
		flow, rest := 0.0, 0.0
		for i := 0; i < n; i++ {
			x := v[i]
			if x == 0 {
				continue
			}
			x /= q
			next[i] += v[i] - x*s.exit[i]
			flow += x * s.done[i]
			for t := s.rowPtr[i]; t < s.rowPtr[i+1]; t++ {
				next[s.col[t]] += x * s.rate[t]
			}
		}
		absorbed += flow
		v, next = next, v
		for _, x := range v {
			rest += x
		}
		if rest < s.eps/2 {
			// Every later a_k is within rest of this one.
			for k := step + 1; k <= right; k++ {
				if k >= pw.Left {
					cdf += pw.W[k-pw.Left] * absorbed
				}
			}
			break
		}
	}
	s.v, s.next = v, next
	return math.Min(1, math.Max(0, cdf)), nil
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
