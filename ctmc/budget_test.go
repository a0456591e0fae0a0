package ctmc

import (
	"context"
	"errors"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"pepa/internal/membudget"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
)

// budgetAbove is a budget of what the runtime holds now (after a full
// collection) plus extra.
func budgetAbove(extra int64) *membudget.Budget {
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return &membudget.Budget{Limit: int64(s[0].Value.Uint64()-s[1].Value.Uint64()) + extra, Source: membudget.Source{Name: "a test"}}
}

func compileSource(t testing.TB, src string) *Structure {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s, err := Compile(m, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeriveWithinBudget: under a budget that holds it, the chain is the
// unbudgeted one entry for entry, its arrays trimmed to their length
// (the budget being tight enough to make that worth a copy);
// under one that does not, Derive stops with an error that is both a
// model too large and a budget exceeded, naming the stage.
func TestDeriveWithinBudget(t *testing.T) {
	s := compileSource(t, testmodels.Mapping(24, 6, 1))
	want, err := Derive(context.Background(), s, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cap(want.Col) < len(want.Col)*5/4 {
		t.Fatalf("the unbudgeted derivation reserved only %d for %d transitions: nothing to trim", cap(want.Col), len(want.Col))
	}
	// About 30 MB for a chain of about 15 MB and its reservations: the
	// spare capacity is then worth trimming.
	got, err := Derive(membudget.NewContext(context.Background(), budgetAbove(40<<20)), s, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.N != want.N || !slices.Equal(got.States, want.States) || !slices.Equal(got.RowPtr, want.RowPtr) ||
		!slices.Equal(got.Col, want.Col) || !slices.Equal(got.Act, want.Act) || !slices.Equal(got.RateIndex, want.RateIndex) ||
		!slices.Equal(got.RateTable, want.RateTable) {
		t.Fatal("the chain derived within a budget differs")
	}
	for name, a := range map[string][2]int{"Col": {len(got.Col), cap(got.Col)}, "Act": {len(got.Act), cap(got.Act)},
		"RateIndex": {len(got.RateIndex) / 2, cap(got.RateIndex) / 2}, "States": {len(got.States) * 2, cap(got.States) * 2}} {
		// In 4-byte units: at most an eighth spare, or less than a megabyte.
		if spare := a[1] - a[0]; spare > a[0]/8 && spare >= 1<<18 {
			t.Errorf("%s keeps %d of %d spare", name, spare, a[1])
		}
	}

	// The chain needs about 15 MB.
	_, err = Derive(membudget.NewContext(context.Background(), budgetAbove(4<<20)), s, DeriveOptions{})
	var oe *membudget.Error
	if !errors.Is(err, ErrTooManyStates) || !errors.As(err, &oe) || !strings.HasPrefix(oe.Stage, "derive: ") || oe.Need <= oe.Have {
		t.Fatalf("within 4 MB: %v", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "model too large: memory budget exceeded: derive: ") || !strings.Contains(msg, "left of the") {
		t.Errorf("message %q", msg)
	}
}

// TestDirectIndexWithinBudget: the direct index is taken only when it
// needs at most a quarter of what the budget leaves.
func TestDirectIndexWithinBudget(t *testing.T) {
	s := compileSource(t, testmodels.Mapping(24, 6, 1))
	table := 4 * s.RadixSize
	if set := newIndex(s, 0, budgetAbove(8*table)); set == nil {
		t.Fatal("no index")
	} else if _, ok := set.(*directIndex); !ok {
		t.Errorf("%d bytes of budget for a %d-byte table: not direct", 8*table, table)
	}
	set := newIndex(s, 0, budgetAbove(2*table))
	if _, ok := set.(*stateSet); !ok {
		t.Errorf("%d bytes of budget for a %d-byte table: not the hash set", 2*table, table)
	}
}

// TestSteadyWithinBudget: every stage of Steady is checked before it is
// made, the error naming it; with room, the result is the unbudgeted one.
func TestSteadyWithinBudget(t *testing.T) {
	c, err := Derive(context.Background(), compileSource(t, testmodels.Mapping(24, 6, 1)), DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	T := int64(len(c.Col))
	gen, ilu := generatorBytes(c.N, c.N, T), iluBytes(c.N, T)
	for _, tc := range []struct {
		extra int64
		opt   SteadyOptions
		stage string
	}{
		{reachBytes(c.N) / 2, SteadyOptions{}, "steady: finding the closed classes"},
		{sweepBytes(c.N, false) * 3 / 4, SteadyOptions{}, "steady: Gauss-Seidel's vectors"},
		{gen / 2, SteadyOptions{Method: MethodIterative}, "steady: the generator"},
		{gen + ilu/2, SteadyOptions{Method: MethodIterative}, "steady: BiCGSTAB's ILU(0) factors and vectors"},
		{gen + 1<<20, SteadyOptions{Method: MethodDirect}, "steady: GTH's dense matrix of 100842 states"},
	} {
		ctx := membudget.NewContext(context.Background(), budgetAbove(tc.extra))
		_, err := Steady(ctx, c, tc.opt)
		var oe *membudget.Error
		if !errors.As(err, &oe) || oe.Stage != tc.stage {
			t.Errorf("%d bytes left: %v, want the stage %q", tc.extra, err, tc.stage)
		}
	}
	want, err := Steady(context.Background(), c, SteadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Steady(membudget.NewContext(context.Background(), budgetAbove(gen+ilu+refineBytes(c.N, c.N)+(4<<20))), c, SteadyOptions{})
	if err != nil {
		t.Fatalf("with room for every stage: %v", err)
	}
	for i := range want.Pi {
		if math.Abs(got.Pi[i]-want.Pi[i]) > 0 {
			t.Fatalf("pi[%d] = %g, want %g", i, got.Pi[i], want.Pi[i])
		}
	}
}
