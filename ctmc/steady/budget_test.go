package steady

import (
	"context"
	"errors"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// budgetAbove is a budget of what the runtime holds now (after a full
// collection) plus extra.
func budgetAbove(extra int64) *membudget.Budget {
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return &membudget.Budget{Limit: int64(s[0].Value.Uint64()-s[1].Value.Uint64()) + extra, Source: membudget.Source{Name: "a test"}}
}

// TestSolveWithinBudget: every stage of Solve is checked before it is
// made, the error naming it; with room, the result is the unbudgeted one.
func TestSolveWithinBudget(t *testing.T) {
	c, err := ctmc.Derive(context.Background(), testchain.Structure(t, testmodels.Mapping(24, 6, 1)), ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	T := int64(len(c.Col))
	gen, ilu := generatorBytes(c.N, c.N, T), iluBytes(c.N, T)
	for _, tc := range []struct {
		extra int64
		opt   Options
		stage string
	}{
		{reachBytes(c.N) / 2, Options{}, "steady: finding the closed classes"},
		{sweepBytes(c.N, false) * 3 / 4, Options{}, "steady: Gauss-Seidel's vectors"},
		{gen / 2, Options{Method: MethodIterative}, "steady: the generator"},
		{gen + ilu/2, Options{Method: MethodIterative}, "steady: BiCGSTAB's ILU(0) factors and vectors"},
		{gen + 1<<20, Options{Method: MethodDirect}, "steady: GTH's dense matrix of 100842 states"},
	} {
		ctx := membudget.NewContext(context.Background(), budgetAbove(tc.extra))
		_, err := Solve(ctx, c, tc.opt)
		if !hasStage(err, tc.stage) {
			t.Errorf("%d bytes left: %v, want the stage %q", tc.extra, err, tc.stage)
		}
	}
	want, err := Solve(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Solve(membudget.NewContext(context.Background(), budgetAbove(gen+ilu+refineBytes(c.N, c.N)+(4<<20))), c, Options{})
	if err != nil {
		t.Fatalf("with room for every stage: %v", err)
	}
	for i := range want.Pi {
		if math.Abs(got.Pi[i]-want.Pi[i]) > 0 {
			t.Fatalf("pi[%d] = %g, want %g", i, got.Pi[i], want.Pi[i])
		}
	}
}

// hasStage reports whether err, or one of the errors it wraps (auto's
// failure wraps every method's), is the budget's refusal of stage.
func hasStage(err error, stage string) bool {
	var oe *membudget.Error
	if errors.As(err, &oe) && oe.Stage == stage {
		return true
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range m.Unwrap() {
			if hasStage(e, stage) {
				return true
			}
		}
	}
	if u := errors.Unwrap(err); u != nil {
		return hasStage(u, stage)
	}
	return false
}
