package models

import (
	"context"
	"fmt"
	"strings"

	"pepa/ctmc"
	"pepa/passage"
)

// groupProbabilities are the figures of a model's groups at one goal, for
// a search that compares many mappings (Optimize on a specification with
// shared resources).
type groupProbabilities struct {
	Machines []*Machine // the detected machines, in model order
	PByBeta  []float64  // P(F_j <= beta) per machine
	PAll     float64    // P(max_j F_j <= beta): the product over groups
	States   int        // states of the groups' chains, summed
}

// solveGroupProbabilities computes P(F_j <= beta) for every detected
// machine and P(every machine finished by beta), each group of coupled
// machines on its own chain with finished machines stopped, exactly as
// AnalyzeGroups builds and solves it (the same chains and passages, under
// initial semantics), but only up to beta: no means, quantiles or
// distributions. Its figures are AnalyzeGroups' within epsilon (tested).
// A group whose chain passes maxStates (0: no bound) fails with an error
// wrapping ctmc.ErrTooManyStates.
func SolveGroupProbabilities(ctx context.Context, s *ctmc.Structure, pragmas *Pragmas, beta, epsilon float64, maxStates int) (*groupProbabilities, error) {
	opt := Options{Question: Question{Beta: beta, Epsilon: epsilon}, MaxGroupStates: maxStates, Pragmas: pragmas}
	opt.defaults()
	machines, err := FindMachines(s, nil)
	if err != nil {
		return nil, err
	}
	stop := stopMap(machines)
	out := &groupProbabilities{Machines: machines, PByBeta: make([]float64, len(machines)), PAll: 1}
	err = eachDerivedGroup(ctx, s, machines, stop, opt, func(j *groupJob) error {
		if err := j.initialProblems(machines, opt); err != nil {
			return err
		}
		rs, err := passage.Solve(ctx, j.c, j.probs, passage.Options{Epsilon: opt.Epsilon, Horizon: beta})
		if err != nil {
			return fmt.Errorf("the group of %s: %w", strings.Join(machineNamesOf(machines, j.machines), ", "), err)
		}
		for k, i := range j.machines {
			if out.PByBeta[i], err = rs[k].CDF(beta); err != nil {
				return err
			}
		}
		all := out.PByBeta[j.machines[0]]
		if len(j.machines) > 1 {
			if all, err = rs[len(rs)-1].CDF(beta); err != nil {
				return err
			}
		}
		out.PAll *= all
		out.States += j.c.N
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
