package passage

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// budgetAbove is a budget of what the runtime holds now (after a full
// collection) plus extra, with its warnings collected.
func budgetAbove(extra int64) (*membudget.Budget, *[]string) {
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	inUse := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	var warnings []string
	b := &membudget.Budget{Limit: inUse + extra, Source: membudget.Source{Name: "a test"},
		Warn: func(m string) { warnings = append(warnings, m) }}
	return b, &warnings
}

// mappingProblems are the 6 machines' passages of a 24-application
// mapping model (100,842 states), from its initial state.
func mappingProblems(t *testing.T) (*ctmc.Chain, []Problem) {
	c := chainOf(t, testmodels.Mapping(24, 6, 1))
	var probs []Problem
	for _, last := range testmodels.LastActions(24, 6) {
		probs = append(probs, InitialProblem(c, actions(t, c, last...)))
	}
	return c, probs
}

// TestSolveInBlocksWithinBudget: where the generator and vectors of all
// passages at once do not fit but those of one do, Solve takes one
// passage at a time, says so, and gets the series of the unbudgeted
// solve.
func TestSolveInBlocksWithinBudget(t *testing.T) {
	c, probs := mappingProblems(t)
	opt := Options{Horizon: 30}
	want, err := Solve(context.Background(), c, probs, opt)
	if err != nil {
		t.Fatal(err)
	}
	special := specialEntries(c, probs)
	one := kernelBytes(c, 1, special) + vectorBytes(c.N, 1)
	all := kernelBytes(c, len(probs), special) + vectorBytes(c.N, lanesOf(len(probs)))
	if all-one < 2<<20 {
		t.Fatalf("all at once needs %d bytes, one %d: too close to test", all, one)
	}
	b, warnings := budgetAbove((one + all) / 2)
	got, err := Solve(membudget.NewContext(context.Background(), b), c, probs, opt)
	if err != nil {
		t.Fatalf("within %d bytes (one passage needs %d, all %d): %v", b.Limit, one, all, err)
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], "solved in blocks of 1") {
		t.Errorf("warnings %q", *warnings)
	}
	for p := range want {
		if len(got[p].Absorbed) != len(want[p].Absorbed) {
			t.Fatalf("passage %d: %d steps, want %d", p, len(got[p].Absorbed), len(want[p].Absorbed))
		}
		for k, a := range want[p].Absorbed {
			if d := math.Abs(got[p].Absorbed[k] - a); d > 1e-15 {
				t.Fatalf("passage %d step %d: %.17g, want %.17g", p, k, got[p].Absorbed[k], a)
			}
		}
	}
	runtime.KeepAlive(c)
}

// TestSolveBackwardWithinBudget: a single passage up to a horizon whose
// forward iteration does not fit is iterated backward, with the same CDF;
// with less than the backward iteration needs, the error names the stage.
func TestSolveBackwardWithinBudget(t *testing.T) {
	c, probs := mappingProblems(t)
	pr := probs[5]
	opt := Options{Horizon: 30}
	want := solveOne(t, c, pr, opt)
	if want.backward {
		t.Fatal("the reference took the backward path")
	}
	fwd, bwd := forwardBytes(c, pr), backwardBytes(c)
	if fwd-bwd < 2<<20 {
		t.Fatalf("forward needs %d bytes, backward %d: too close to test", fwd, bwd)
	}
	b, warnings := budgetAbove((fwd + bwd) / 2)
	rs, err := Solve(membudget.NewContext(context.Background(), b), c, []Problem{pr}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].backward || len(*warnings) != 1 || !strings.Contains((*warnings)[0], "iterated backward") {
		t.Errorf("backward %v, warnings %q", rs[0].backward, *warnings)
	}
	for _, at := range []float64{5, 15, 30} {
		if g, w := cdf(t, rs[0], at), cdf(t, want, at); math.Abs(g-w) > 1e-12 {
			t.Errorf("F(%g) = %.15f backward, %.15f forward", at, g, w)
		}
	}

	b, _ = budgetAbove(bwd / 2)
	_, err = Solve(membudget.NewContext(context.Background(), b), c, []Problem{pr}, opt)
	var oe *membudget.Error
	if !errors.As(err, &oe) || !strings.HasPrefix(oe.Stage, "passage: the generator and vectors of one passage") || oe.Need != fwd {
		t.Errorf("with half what the backward iteration needs: %v", err)
	}
}

// TestAnalyzeMeanWithinBudget: where the mean's linear solve would not
// fit but the forward iteration does, the series runs to completion and
// the mean is its sum, equal to the linear solve's; where neither fits,
// the CDF comes from the backward iteration and the mean is unavailable,
// with the reason.
func TestAnalyzeMeanWithinBudget(t *testing.T) {
	s := testchain.Structure(t, testmodels.Mapping(24, 6, 1))
	q := Query{TargetActions: testmodels.LastActions(24, 6)[5], Times: []float64{30}, Flat: true}
	ref, err := Analyze(context.Background(), s, q, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref.MeanFrom != "linear solve" {
		t.Fatalf("reference mean from %s", ref.MeanFrom)
	}
	c, pr := ref.Chain, ref.Problem
	mean, fwd, bwd := meanBytes(c), forwardBytes(c, pr), backwardBytes(c)
	if !(mean > fwd+(2<<20) && fwd > bwd+(2<<20)) {
		t.Fatalf("mean %d, forward %d, backward %d bytes: not apart enough to test", mean, fwd, bwd)
	}
	run := func(extra int64) (*Analysis, []string) {
		t.Helper()
		// The chain is the reference's, held already.
		b, warnings := budgetAbove(extra)
		a, err := Analyze(membudget.NewContext(context.Background(), b), s, q, AnalyzeOptions{
			Derive: func(context.Context, *ctmc.Structure) (*ctmc.Chain, error) { return c, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return a, *warnings
	}
	a, warnings := run((mean + fwd) / 2)
	if a.MeanFrom != "series" || math.Abs(a.Mean-ref.Mean) > 1e-9*ref.Mean || len(warnings) != 1 || !strings.Contains(warnings[0], "runs on to completion") {
		t.Errorf("between the forward's and the mean's needs: mean %v from %s, want %v; warnings %q", a.Mean, a.MeanFrom, ref.Mean, warnings)
	}
	a, warnings = run((fwd + bwd) / 2)
	if !a.Result.backward || !math.IsNaN(a.Mean) || !errors.Is(a.MeanErr, membudget.ErrOverBudget) || !errors.Is(a.MeanErr, ErrMeanUnavailable) {
		t.Errorf("between the backward's and the forward's needs: backward %v, mean %v (%v)", a.Result.backward, a.Mean, a.MeanErr)
	}
	if math.Abs(a.Points[0].CDF-ref.Points[0].CDF) > 1e-12 || len(warnings) != 1 {
		t.Errorf("F(30) = %.15f, want %.15f; warnings %q", a.Points[0].CDF, ref.Points[0].CDF, warnings)
	}
}
