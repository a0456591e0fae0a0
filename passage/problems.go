package passage

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"pepa/ctmc"
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
	res, err := ctmc.Steady(ctx, c, ctmc.SteadyOptions{Tolerance: 1e-14})
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
	for k, c := range parts {
		if pis[k], err = SteadyForPlugin(ctx, c); err != nil {
			return nil, nil, err
		}
		for i, p := range pis[k] {
			qbar[k] += p * c.ExitRate(i)
		}
	}
	return pis, qbar, nil
}

// Mean is the expected passage time, by solving the linear system
// m_i = (1 + sum_j r_ij m_j) / l_i over the states that can still move
// (l_i their total rate out, transitions that end the passage included),
// with Gauss-Seidel sweeps to a relative residual of 1e-13. It is +Inf if
// the passage may never end (some state the start can reach cannot reach
// the target).
func Mean(ctx context.Context, c *ctmc.Chain, pr Problem) (float64, error) {
	mean, _, err := MeanTimes(ctx, c, pr)
	return mean, err
}

// MeanTimes is Mean, and also the largest mean remaining time over the
// states the start can reach: from any moment on, the passage's expected
// remaining time is at most that, which bounds tails such as
// integral_T^inf (1 - F(t)) dt <= (1 - F(T)) * maxRemaining.
func MeanTimes(ctx context.Context, c *ctmc.Chain, pr Problem) (mean, maxRemaining float64, err error) {
	n := c.N
	isTA := map[int32]bool{}
	for _, a := range pr.TargetActions {
		isTA[a] = true
	}
	ends := func(e int64) bool {
		return isTA[c.Act[e]] || (pr.TargetStates != nil && pr.TargetStates[c.Col[e]])
	}
	inTarget := func(i int) bool { return pr.TargetStates != nil && pr.TargetStates[i] }
	// States from which the target can be reached (backwards search).
	canEnd := make([]bool, n)
	var stack []int32
	inPtr, inSrc := predecessors(c)
	for i := 0; i < n; i++ {
		if inTarget(i) {
			canEnd[i] = true
			stack = append(stack, int32(i))
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if ends(e) {
				canEnd[i] = true
				stack = append(stack, int32(i))
				break
			}
		}
	}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for k := inPtr[j]; k < inPtr[j+1]; k++ {
			if i := inSrc[k]; !canEnd[i] && !inTarget(int(i)) {
				canEnd[i] = true
				stack = append(stack, i)
			}
		}
	}
	// Forward from the start: every reachable state must be able to end.
	seen := make([]bool, n)
	stack = stack[:0]
	for i, x := range pr.Alpha {
		if x > 0 && !inTarget(i) {
			seen[i] = true
			stack = append(stack, int32(i))
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !canEnd[i] {
			return math.Inf(1), math.Inf(1), nil
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := c.Col[e]; !ends(e) && !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	// Gauss-Seidel on the reachable states, in reverse discovery order (the
	// target tends to lie further from the start).
	leave := make([]float64, n)
	for i := 0; i < n; i++ {
		if !seen[i] {
			continue
		}
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if int(c.Col[e]) != i || ends(e) {
				leave[i] += c.RateAt(e)
			}
		}
	}
	m := make([]float64, n)
	const tol = 1e-13
	for it := 1; it <= 1_000_000; it++ {
		if it&15 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		for i := n - 1; i >= 0; i-- {
			if !seen[i] {
				continue
			}
			s := 1.0
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				if j := c.Col[e]; int(j) != i && !ends(e) {
					s += c.RateAt(e) * m[j]
				}
			}
			m[i] = s / leave[i]
		}
		// Residual check.
		worst := 0.0
		for i := 0; i < n; i++ {
			if !seen[i] {
				continue
			}
			s := 1.0
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				if j := c.Col[e]; int(j) != i && !ends(e) {
					s += c.RateAt(e) * m[j]
				}
			}
			worst = math.Max(worst, math.Abs(s-leave[i]*m[i])/s)
		}
		if worst <= tol {
			for i, x := range pr.Alpha {
				if x > 0 && !inTarget(i) {
					mean += x * m[i]
				}
			}
			for i := range m {
				if seen[i] {
					maxRemaining = math.Max(maxRemaining, m[i])
				}
			}
			return mean, maxRemaining, nil
		}
	}
	return 0, 0, fmt.Errorf("the mean passage time did not converge in 1,000,000 sweeps")
}

// predecessors returns, for each state, the states with a transition into it.
func predecessors(c *ctmc.Chain) ([]int64, []int32) {
	ptr := make([]int64, c.N+1)
	for _, j := range c.Col {
		ptr[j+1]++
	}
	for j := 0; j < c.N; j++ {
		ptr[j+1] += ptr[j]
	}
	src := make([]int32, len(c.Col))
	fill := append([]int64(nil), ptr[:c.N]...)
	for i := 0; i < c.N; i++ {
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j := c.Col[e]
			src[fill[j]] = int32(i)
			fill[j]++
		}
	}
	return ptr, src
}
