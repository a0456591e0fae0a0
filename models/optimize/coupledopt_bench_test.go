package optimize

import (
	"context"
	"testing"
	"time"

	"pepa/models/spec"
)

// BenchmarkGroupSolve: one group of spec-shared.json's round-robin mapping
// (M1-M3 sharing Net, three applications each) solved from scratch, as a
// search move that changes the group does: its model written, compiled,
// its chain derived with finished machines stopped, and the passages to
// beta.
func BenchmarkGroupSolve(b *testing.B) {
	in, err := spec.LoadSpec("../../testdata/spec-shared.json")
	if err != nil {
		b.Fatal(err)
	}
	alloc, err := in.Allocation(in.Mappings[0])
	if err != nil {
		b.Fatal(err)
	}
	c := newCoupling(in, 40, 1e-10)
	g := c.groups(alloc)[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(c.cache)
		if _, err := c.figures(context.Background(), g, alloc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoupledMoveCached: a move tried on spec-shared.json's
// round-robin mapping whose groups are all in the cache (a swap between M1
// and M4, tried back and forth): the search's cost per move once the
// groups around have been solved.
func BenchmarkCoupledMoveCached(b *testing.B) {
	in, err := spec.LoadSpec("../../testdata/spec-shared.json")
	if err != nil {
		b.Fatal(err)
	}
	alloc, err := in.Allocation(in.Mappings[0])
	if err != nil {
		b.Fatal(err)
	}
	o := newOptimizer(context.Background(), in, OptimizeOptions{Beta: 40, Objective: "min", Epsilon: 1e-10, Budget: time.Hour, MakespanSlack: -1}, time.Now())
	var st searchState
	if err := o.load(&st, alloc); err != nil {
		b.Fatal(err)
	}
	never := func(float64) bool { return false }
	mv := move{a: 0, b: 3, to: -1} // A1 (M1) with A4 (M4)
	var bufA, bufB []int
	if _, err := o.try(&st, mv, never, &bufA, &bufB); err != nil {
		b.Fatal(err)
	}
	solves := o.eval.groupSolves()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.try(&st, mv, never, &bufA, &bufB); err != nil {
			b.Fatal(err)
		}
	}
	if o.eval.groupSolves() != solves {
		b.Fatalf("%d groups solved again", o.eval.groupSolves()-solves)
	}
}
