package passage

import (
	"context"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testchain"
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
