package models

import (
	"context"
	"testing"
)

// BenchmarkGroupSolve: one group of spec-shared.json's round-robin mapping
// (M1-M3 sharing Net, three applications each) solved from scratch, as a
// search move that changes the group does: its model written, compiled,
// its chain derived with finished machines stopped, and the passages to
// beta.
func BenchmarkGroupSolve(b *testing.B) {
	in, err := LoadSpec("../testdata/spec-shared.json")
	if err != nil {
		b.Fatal(err)
	}
	alloc, err := in.allocation(in.Mappings[0])
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
