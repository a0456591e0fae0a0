package ctmc

import "sort"

// Throughput is the long-run rate at which an action fires.
type Throughput struct {
	Action string
	Value  float64
}

// Throughputs computes, for every action that labels some transition, the
// sum over states of pi(s) times the rate of its transitions with that
// action (self-loops included: they are firings too). Sorted by action name.
func Throughputs(c *Chain, pi []float64) []Throughput {
	sums := make([]float64, len(c.S.Actions))
	seen := make([]bool, len(c.S.Actions))
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			sums[c.Act[k]] += pi[i] * c.RateAt(k)
			seen[c.Act[k]] = true
		}
	}
	var out []Throughput
	for a, name := range c.S.Actions {
		if seen[a] {
			out = append(out, Throughput{Action: name, Value: sums[a]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Action < out[j].Action })
	return out
}

// Utilisation is the mean number of copies of a sequential component that
// are in one of its local derivatives (for a single component, the
// probability that it is in that derivative).
type Utilisation struct {
	Component string // the component (all copies of an array together)
	State     string // the local derivative
	Value     float64
}

// Utilisations computes the mean population of every local derivative of
// every component, in the order of the components in the system equation.
// Copies of an array are summed, so the figures are the same whether or not
// the array was aggregated.
func Utilisations(c *Chain, pi []float64) []Utilisation {
	type key struct {
		group string
		d     int
	}
	sums := map[key]float64{}
	var order []key
	seenGroup := map[string]bool{}
	for _, l := range c.S.Leaves {
		if seenGroup[l.Group] {
			continue
		}
		seenGroup[l.Group] = true
		for d := range l.Comp.States {
			order = append(order, key{l.Group, d})
		}
	}
	for _, l := range c.S.Leaves {
		// Probability of each leaf-local state, then populations.
		local := make([]float64, l.NumLocal)
		for i := 0; i < c.N; i++ {
			local[l.Local(c.State(i))] += pi[i]
		}
		for s, p := range local {
			for d := range l.Comp.States {
				if n := l.Population(s, d); n > 0 {
					sums[key{l.Group, d}] += float64(n) * p
				}
			}
		}
	}
	out := make([]Utilisation, 0, len(order))
	for _, k := range order {
		var comp *Component
		for _, l := range c.S.Leaves {
			if l.Group == k.group {
				comp = l.Comp
				break
			}
		}
		out = append(out, Utilisation{Component: k.group, State: comp.States[k.d], Value: sums[k]})
	}
	return out
}
