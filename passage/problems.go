package passage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/steady"
)

// Semantics names how a passage's start and end are chosen.
type Semantics string

const (
	// Initial starts at the model's initial state and ends at the first
	// firing of a target action (or entry into target states).
	Initial Semantics = "initial"
	// Plugin is the PEPA Eclipse Plug-in's passage: from the states entered
	// by source actions, weighted by the embedded chain's steady state, to
	// the states entered by target actions that are not source states.
	Plugin Semantics = "plugin"
)

// ActionIDs resolves action names, with an error naming the unknown ones.
func ActionIDs(s *ctmc.Structure, names []string) ([]int32, error) {
	var ids []int32
	var unknown []string
	for _, n := range names {
		id, ok := s.ActionID(n)
		if !ok || id == ctmc.TauAction {
			unknown = append(unknown, n)
			continue
		}
		ids = append(ids, id)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown action %s (the model's actions are %s)", strings.Join(unknown, ", "), strings.Join(actionNames(s), ", "))
	}
	return ids, nil
}

func actionNames(s *ctmc.Structure) []string {
	var out []string
	for i, a := range s.Actions {
		if i != ctmc.TauAction {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	if len(out) > 12 {
		out = append(out[:12], "...")
	}
	return out
}

// InitialProblem is the passage from the initial state to the first firing
// of one of the target actions.
func InitialProblem(c *ctmc.Chain, targetActions []int32) Problem {
	alpha := make([]float64, c.N)
	alpha[0] = 1
	return Problem{Alpha: alpha, TargetActions: targetActions}
}

// StateProblem is the passage from the initial state into a set of states.
func StateProblem(c *ctmc.Chain, target []bool) Problem {
	alpha := make([]float64, c.N)
	alpha[0] = 1
	return Problem{Alpha: alpha, TargetStates: target}
}

// EnteredBy marks the states with an incoming transition labelled by one of
// the actions (self-loops included).
func EnteredBy(c *ctmc.Chain, actions []int32) []bool {
	is := map[int32]bool{}
	for _, a := range actions {
		is[a] = true
	}
	out := make([]bool, c.N)
	for e, a := range c.Act {
		if is[a] {
			out[c.Col[e]] = true
		}
	}
	return out
}

// PluginProblem builds the PEPA Eclipse Plug-in's passage (semantics.md
// section 2) given the steady state pi of the whole chain.
func PluginProblem(c *ctmc.Chain, pi []float64, sourceActions, targetActions []int32) (Problem, error) {
	return PluginPartProblem(c, pi, 0, sourceActions, targetActions)
}

// PluginPartProblem is PluginProblem on one independent part of a larger
// model (ctmc.Decompose): the product's weight pi(s) q(s) of a source state,
// summed over the other parts' states, is pi(x) (q(x) + others) with others
// the sum of the other parts' mean exit rates under their steady states.
func PluginPartProblem(c *ctmc.Chain, pi []float64, others float64, sourceActions, targetActions []int32) (Problem, error) {
	src := EnteredBy(c, sourceActions)
	tgt := EnteredBy(c, targetActions)
	alpha := make([]float64, c.N)
	total := 0.0
	nsrc, ntgt := 0, 0
	for i := 0; i < c.N; i++ {
		if src[i] {
			tgt[i] = false
			nsrc++
			alpha[i] = pi[i] * (c.ExitRate(i) + others)
			total += alpha[i]
		}
		if tgt[i] {
			ntgt++
		}
	}
	if nsrc == 0 {
		return Problem{}, fmt.Errorf("no state is entered by the source actions, so the passage has no start")
	}
	if ntgt == 0 {
		return Problem{}, fmt.Errorf("every state entered by the target actions is also a source state, so the passage has no end (are the source and target actions the same?)")
	}
	if !(total > 0) {
		return Problem{}, fmt.Errorf("the source states have no steady-state probability")
	}
	for i := range alpha {
		alpha[i] /= total
	}
	return Problem{Alpha: alpha, TargetStates: tgt}, nil
}

// SteadyForPlugin solves the steady state that plug-in passages need.
func SteadyForPlugin(ctx context.Context, c *ctmc.Chain) ([]float64, error) {
	res, err := steady.Solve(ctx, c, steady.Options{Tolerance: 1e-14, SingleClass: true, StateProbabilities: true})
	if err != nil {
		return nil, fmt.Errorf("plug-in passage weights need the steady state: %w", err)
	}
	return res.Pi, nil
}

// PartRates solves the steady state of each independent part and its mean
// exit rate under it, for PluginPartProblem.
func PartRates(ctx context.Context, parts []*ctmc.Chain) (pis [][]float64, qbar []float64, err error) {
	pis = make([][]float64, len(parts))
	qbar = make([]float64, len(parts))
	stuck := 0
	for k, c := range parts {
		if at, ok := stuckState(c); ok {
			// The part ends in one state it never leaves, whatever it
			// does first: in the product's steady state it is there with
			// probability 1 and adds nothing to the exit rate. The
			// product still has a steady state while another part moves.
			pis[k] = make([]float64, c.N)
			pis[k][at] = 1
			stuck++
			continue
		}
		if pis[k], err = SteadyForPlugin(ctx, c); err != nil {
			return nil, nil, err
		}
		for i, p := range pis[k] {
			qbar[k] += p * c.ExitRate(i)
		}
	}
	if stuck == len(parts) {
		// Every part stops: so does the product, which has no steady state.
		_, err := SteadyForPlugin(ctx, parts[0])
		return nil, nil, err
	}
	return pis, qbar, nil
}

// stuckState reports whether the chain's only closed class is a single
// state without transitions (a part that never moves, or stops for good),
// and which state that is.
func stuckState(c *ctmc.Chain) (int, bool) {
	if len(c.Deadlocks) != 1 {
		return 0, false
	}
	d := int(c.Deadlocks[0])
	err := steady.Irreducible(c)
	if err == nil {
		return d, c.N == 1
	}
	var ni *steady.NotIrreducibleError
	if errors.As(err, &ni) && len(ni.Closed) == 1 && len(ni.Closed[0]) == 1 && int(ni.Closed[0][0]) == d {
		return d, true
	}
	return 0, false
}
