package passage

import (
	"context"
	"os"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

func chainOf(t testing.TB, src string) *ctmc.Chain {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%v", diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chainOfFile(t testing.TB, name string) *ctmc.Chain {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Skip(err)
	}
	return chainOf(t, string(b))
}

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
