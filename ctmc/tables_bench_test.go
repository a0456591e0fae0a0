package ctmc

import (
	"os"
	"testing"

	"pepa/internal/testing/testmodels"
)

// benchTables times one table builder on a compiled model (the structure's
// frozen tree built once, outside the timing).
func benchTables(b *testing.B, src string, build func(*Structure) bool) {
	s := compileSource(b, src)
	s.exploreRoot()
	if !build(s) {
		b.Fatal("the tables do not apply")
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := processTime()
	for i := 0; i < b.N; i++ {
		build(s)
	}
	// Processor time (all threads, the collector's included): on a
	// shared machine it says more than the wall time.
	b.ReportMetric(float64((processTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func independent(s *Structure) bool { _, ok := s.IndependentLeaves(); return ok }
func contextual(s *Structure) bool  { _, ok := s.ContextTables(); return ok }

// BenchmarkIndependentMapping: leaf tables of a mapping of 320
// applications on 80 machines.
func BenchmarkIndependentMapping(b *testing.B) {
	benchTables(b, testmodels.Mapping(320, 80, 1), independent)
}

// BenchmarkContextMapping: the same model's context tables (no context).
func BenchmarkContextMapping(b *testing.B) {
	benchTables(b, testmodels.Mapping(320, 80, 1), contextual)
}

// BenchmarkContextStore: 32 applications on 8 machines coupled through a
// one-slot store.
func BenchmarkContextStore(b *testing.B) {
	benchTables(b, testmodels.Store(32, 8), contextual)
}

// BenchmarkContextPCLAN6: testdata/pc-lan-6.pepa (six PCs on a token
// ring, the medium the context).
func BenchmarkContextPCLAN6(b *testing.B) {
	benchTables(b, readSource(b, "../testdata/pc-lan-6.pepa"), contextual)
}

// BenchmarkContextOwners: testdata/owners/server-heavy.pepa.
func BenchmarkContextOwners(b *testing.B) {
	benchTables(b, readSource(b, "../testdata/owners/server-heavy.pepa"), contextual)
}

func readSource(b *testing.B, name string) string {
	src, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return string(src)
}
