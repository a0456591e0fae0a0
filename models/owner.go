package models

import "math"

// Owner is the workload of a non-dedicated machine's owner: jobs arrive at
// rate Arrival, are served at rate Service, at most Capacity are present (1:
// an on/off owner). Under "preemptive" priority the applications run only
// while no owner job is present; under "sharing" (processor sharing) they
// get 1/(n+1) of the processor with n owner jobs present. Start says
// whether the owner is idle at t = 0 or in its steady state.
type Owner struct {
	Arrival    float64 `json:"arrival"`
	Service    float64 `json:"service"`
	Discipline string  `json:"discipline"`
	Capacity   int     `json:"capacity"`
	Start      string  `json:"start"`
}

// Rho is the owner's load lambda_o / mu_o.
func (o *Owner) Rho() float64 { return o.Arrival / o.Service }

// Stationary is the steady-state distribution of the number of owner jobs
// on their own (an M/M/1/N queue): pi_n proportional to rho^n, n = 0..N.
// It is what an application arriving at a random time finds, and the
// distribution of a "stationary" start.
//
// The terms are scaled by the largest (rho^N when rho > 1), so a heavy
// owner with a large capacity gives pi_0 underflowing to 0 rather than
// rho^N overflowing to Inf and the distribution to NaN.
func (o *Owner) Stationary() []float64 {
	return geometric(o.Rho(), o.Capacity, false)
}

// geometric returns the normalised weights rho^n (with weighted, (n+1)
// rho^n), n = 0..N, computed from the largest term down so that no term
// overflows.
func geometric(rho float64, capacity int, weighted bool) []float64 {
	pi := make([]float64, capacity+1)
	logRho := math.Log(rho)
	logW := func(n int) float64 {
		l := float64(n) * logRho
		if weighted {
			l += math.Log(float64(n + 1))
		}
		return l
	}
	top := math.Inf(-1)
	for n := range pi {
		top = math.Max(top, logW(n))
	}
	sum := 0.0
	for n := range pi {
		pi[n] = math.Exp(logW(n) - top)
		sum += pi[n]
	}
	for n := range pi {
		pi[n] /= sum
	}
	return pi
}

// Availability is the long-run share of the processor the applications
// get while they run. Under preemption it is P(no owner job) in the
// owner's M/M/1/N steady state, (1 - rho)/(1 - rho^(N+1)). Under sharing
// the owner's jobs leave at mu n/(n+1) while an application runs, so the
// steady state is pi_n proportional to (n+1) rho^n and the share is
// E[1/(n+1)] = sum rho^n / sum (n+1) rho^n (1 - rho as N grows: the
// processor is never idle, and the owner takes rho of it).
func (o *Owner) Availability() float64 {
	if o.Discipline == "sharing" {
		// E[1/(n+1)] under pi_n proportional to (n+1) rho^n.
		share := 0.0
		for n, p := range geometric(o.Rho(), o.Capacity, true) {
			share += p / float64(n+1)
		}
		return share
	}
	return o.Stationary()[0]
}
