package passage

import (
	"context"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

func chainOf(t testing.TB, src string) *ctmc.Chain { return testchain.Chain(t, src) }

func chainOfFile(t testing.TB, name string) *ctmc.Chain { return testchain.ChainFile(t, name) }

func actions(t testing.TB, c *ctmc.Chain, names ...string) []int32 {
	t.Helper()
	ids, err := ActionIDs(c.S, names)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func solveOne(t testing.TB, c *ctmc.Chain, pr Problem, opt Options) *Result {
	t.Helper()
	rs, err := Solve(context.Background(), c, []Problem{pr}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

func cdf(t testing.TB, r *Result, at float64) float64 {
	t.Helper()
	v, err := r.CDF(at)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// actionProblems makes up to most passages over c, one per action but
// tau: every every-th a state target (the states entered by that
// action), the others ended by the action's first firing.
func actionProblems(s *ctmc.Structure, c *ctmc.Chain, most, every int) []Problem {
	var probs []Problem
	for a := int32(1); int(a) < len(s.Actions) && len(probs) < most; a++ {
		if int(a)%every == 0 {
			probs = append(probs, StateProblem(c, EnteredBy(c, []int32{a})))
		} else {
			probs = append(probs, InitialProblem(c, []int32{a}))
		}
	}
	return probs
}
