package ctmc

import (
	"context"
	"errors"
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

// TestDeriveRoomyBudgetKeepsReservations: under a budget that leaves many
// times the chain, the over-reserved arrays are not copied to their length
// (a copy that took a third of 'pepa states' on ws-6-5-4-4), even where
// their spare capacity is more than an eighth of what is left: the chain
// is the unbudgeted one, reservations included. Storage's product of local
// state counts is 17 times its states, so its reservations are mostly
// spare: about 8 MB for a chain of 0.3 MB, here with about 40 MB left.
func TestDeriveRoomyBudgetKeepsReservations(t *testing.T) {
	s := compileSource(t, testmodels.Storage(4, 3, 2, 2))
	want, err := Derive(context.Background(), s, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if int64(want.N)*8 > s.RadixSize || cap(want.Col) < 2*len(want.Col) {
		t.Fatalf("%d states of %d packed ones, %d transitions in %d: reservations not loose enough for the test", want.N, s.RadixSize, len(want.Col), cap(want.Col))
	}
	got, err := Derive(membudget.NewContext(context.Background(), budgetAbove(48<<20)), s, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.States, want.States) || !slices.Equal(got.Col, want.Col) || !slices.Equal(got.RateIndex, want.RateIndex) {
		t.Fatal("the chain derived within a budget differs")
	}
	if cap(got.Col) != cap(want.Col) || cap(got.States) != cap(want.States) {
		t.Errorf("capacities %d and %d (states %d and %d) under a roomy budget: trimmed", cap(got.Col), cap(want.Col), cap(got.States), cap(want.States))
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
