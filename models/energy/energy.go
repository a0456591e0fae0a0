package energy

import (
	"fmt"
	"math"
)

// Power is the power drawn by each machine (watts), in a given machine
// order: Busy while it computes (until it finishes), Idle from then until
// the makespan.
type Power struct {
	Busy, Idle []float64
}

// Check reports a power that is not a finite number >= 0, or lists of
// another length than n.
func (p Power) Check(n int) error {
	if len(p.Busy) != n || len(p.Idle) != n {
		return fmt.Errorf("power: %d busy and %d idle values for %d machines", len(p.Busy), len(p.Idle), n)
	}
	for j := range p.Busy {
		for _, x := range []float64{p.Busy[j], p.Idle[j]} {
			if !(x >= 0) || math.IsInf(x, 0) {
				return fmt.Errorf("power: machine %d draws %g W: expected a finite number >= 0", j+1, x)
			}
		}
	}
	return nil
}

// IdleFree reports whether every idle power is 0 (machines switched off
// when done): then the groups' energies are independent.
func (p Power) IdleFree() bool {
	for _, x := range p.Idle {
		if x != 0 {
			return false
		}
	}
	return true
}

// Expected is E[E] = sum_j (b_j - i_j) E[F_j] + (sum_j i_j) E[M], from the
// machines' mean finishing times and the expected makespan (unused, and
// may be NaN, when every idle power is 0).
func Expected(p Power, means []float64, makespan float64) float64 {
	e, idle := 0.0, 0.0
	for j, m := range means {
		e += (p.Busy[j] - p.Idle[j]) * m
		idle += p.Idle[j]
	}
	if idle != 0 {
		e += idle * makespan
	}
	return e
}

// OfRun is the energy of one run with finishing times f (its makespan the
// largest).
func OfRun(p Power, f []float64) float64 {
	m := 0.0
	for _, x := range f {
		m = math.Max(m, x)
	}
	e := 0.0
	for j, x := range f {
		e += p.Busy[j]*x + p.Idle[j]*(m-x)
	}
	return e
}
