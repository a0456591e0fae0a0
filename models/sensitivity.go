package models

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/lang"
)

// RateSensitivity is the effect of one rate definition on a machine's
// probability of finishing by the goal.
type RateSensitivity struct {
	Rate        string  // the rate definition
	Value       float64 // its value
	Derivative  float64 // dP(F <= beta) / d rate
	Elasticity  float64 // rate * derivative: the change of P per relative change of the rate
	Application string  // the application whose activities use it ("" if none)
}

// Sensitivity is a machine's sensitivity figures.
type Sensitivity struct {
	// Radius is the robustness radius in the sense of Ali et al. (FePIA):
	// the uniform slowdown factor of all the machine's rates at which
	// P(F <= beta) falls to Level. Slowing every rate of a chain by s is
	// running it s times slower, so P(F <= beta) becomes F(beta / s) and
	// the radius is beta / F^-1(Level) exactly (below 1 when the machine
	// already misses the level).
	Radius float64
	Level  float64
	Rates  []RateSensitivity
}

// Sensitivities adds to a decomposed initial-semantics result, per machine,
// the derivative of P(F <= beta) with respect to every rate definition its
// activities use, and its robustness radius at level. Derivatives come from
// the block matrix exponential exp([[Q, dQ], [0, Q]] beta), whose upper
// right block is the derivative of exp(Q beta) (Van Loan 1978), on the
// machine's own chain with its target absorbing; the start distribution is
// held fixed.
func Sensitivities(m *lang.Model, s *ctmc.Structure, parts []*ctmc.Part, res *Result, level float64) error {
	if res.Solved != "decomposed" || res.Semantics != "initial" {
		return fmt.Errorf("sensitivities are computed for independent machines under initial semantics")
	}
	appOf := map[int32]string{} // application action -> application component
	for _, l := range s.Leaves {
		if l.NumLocal == 1 {
			for _, t := range l.Transitions(0) {
				if t.Passive {
					appOf[t.Action] = l.Name
				}
			}
		}
	}
	machines, err := FindMachines(s, machineNames(res))
	if err != nil {
		return err
	}
	partOf := map[*ctmc.Leaf]*ctmc.Part{}
	for _, p := range parts {
		partOf[p.Leaf] = p
	}
	for i, mach := range machines {
		mr := &res.Machines[i]
		if mr.Dist == nil {
			continue
		}
		p := partOf[mach.Leaf]
		sens, err := machineSensitivity(m, s, p, mach, mr, appOf, res.Beta, level)
		if err != nil {
			return fmt.Errorf("machine %s: %w", mach.Name, err)
		}
		mr.Sensitivity = sens
	}
	res.Sensitive = summarize(res)
	return nil
}

// SensitivitySummary is what a result's sensitivities single out.
type SensitivitySummary struct {
	// Bottleneck is the index in Result.Machines of the machine with the
	// smallest robustness radius (the first of equals).
	Bottleneck int
	// Costliest is the application whose rates' elasticities, summed, are
	// the largest (the first by name of equals; "" when no rate belongs to
	// an application), Machine the machine that computes it and Cost that
	// sum: the change of P(F_Machine <= beta) per relative change of its
	// rates.
	Costliest, Machine string
	Cost               float64
}

// summarize finds the bottleneck and the costliest application of the
// machines that have sensitivities; nil when none has.
func summarize(res *Result) *SensitivitySummary {
	sum := &SensitivitySummary{Bottleneck: -1, Cost: math.Inf(-1)}
	apps := map[string]float64{} // application -> elasticity summed over its rates
	appMachine := map[string]string{}
	for i := range res.Machines {
		m := &res.Machines[i]
		sv := m.Sensitivity
		if sv == nil {
			continue
		}
		if sum.Bottleneck < 0 || sv.Radius < res.Machines[sum.Bottleneck].Sensitivity.Radius {
			sum.Bottleneck = i
		}
		for _, rs := range sv.Rates {
			if rs.Application != "" {
				apps[rs.Application] += rs.Elasticity
				appMachine[rs.Application] = m.Name
			}
		}
	}
	if sum.Bottleneck < 0 {
		return nil
	}
	for a, el := range apps {
		if el > sum.Cost || (el == sum.Cost && a < sum.Costliest) {
			sum.Costliest, sum.Cost = a, el
		}
	}
	sum.Machine = appMachine[sum.Costliest]
	return sum
}

func machineNames(res *Result) []string {
	out := make([]string, len(res.Machines))
	for i, m := range res.Machines {
		out[i] = m.Name
	}
	return out
}

func machineSensitivity(m *lang.Model, s *ctmc.Structure, p *ctmc.Part, mach *Machine, mr *MachineResult, appOf map[int32]string, beta, level float64) (*Sensitivity, error) {
	c := p.Chain
	n := c.N + 1 // the last state is the target
	isLast := map[int32]bool{}
	for _, a := range mach.Last {
		isLast[a] = true
	}
	blocked := map[int32]bool{}
	for _, b := range p.Blocked {
		if id, ok := s.ActionID(b); ok {
			blocked[id] = true
		}
	}
	// The chain's transitions with the prefixes they come from, in the
	// order the part's chain lists them.
	type edge struct {
		from, to int
		rate     float64
		prefixes []*lang.Prefix
		app      string
	}
	var edges []edge
	rates := map[string]bool{}
	for i := 0; i < c.N; i++ {
		e := c.RowPtr[i]
		for _, lt := range p.Leaf.Transitions(int(c.States[i])) {
			if blocked[lt.Action] {
				continue
			}
			to := int(c.Col[e])
			if isLast[c.Act[e]] {
				to = n - 1
			}
			if to != i {
				edges = append(edges, edge{i, to, c.RateAt(e), lt.Prefixes, appOf[lt.Action]})
				for _, pre := range lt.Prefixes {
					for _, r := range m.PrefixRateNames(pre) {
						rates[r] = true
					}
				}
			}
			e++
		}
	}
	alpha := mr.alpha
	names := make([]string, 0, len(rates))
	for r := range rates {
		names = append(names, r)
	}
	sort.Strings(names)
	// An application's rate: the one its own activities use.
	appOfRate := map[string]string{}
	for _, ed := range edges {
		if ed.app == "" {
			continue
		}
		for _, pre := range ed.prefixes {
			for _, r := range m.PrefixRateNames(pre) {
				appOfRate[r] = ed.app
			}
		}
	}
	sens := &Sensitivity{Level: level, Radius: math.NaN()}
	if q, err := mr.Dist.Quantile(level); err == nil && q > 0 && !math.IsInf(q, 1) {
		sens.Radius = beta / q
	}
	for _, r := range names {
		a := mat.NewDense(2*n, 2*n, nil)
		for _, ed := range edges {
			d := 0.0
			for _, pre := range ed.prefixes {
				d += m.PrefixRateDerivative(pre, r)
			}
			for _, off := range []int{0, n} {
				a.Set(off+ed.from, off+ed.to, a.At(off+ed.from, off+ed.to)+ed.rate*beta)
				a.Set(off+ed.from, off+ed.from, a.At(off+ed.from, off+ed.from)-ed.rate*beta)
			}
			a.Set(ed.from, n+ed.to, a.At(ed.from, n+ed.to)+d*beta)
			a.Set(ed.from, n+ed.from, a.At(ed.from, n+ed.from)-d*beta)
		}
		var e mat.Dense
		e.Exp(a)
		deriv := 0.0
		for i, x := range alpha {
			deriv += x * e.At(i, n+n-1)
		}
		v := m.Rates[r].Value
		sens.Rates = append(sens.Rates, RateSensitivity{Rate: r, Value: v, Derivative: deriv, Elasticity: v * deriv, Application: appOfRate[r]})
	}
	return sens, nil
}
