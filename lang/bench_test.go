package lang

import (
	"testing"

	"pepa/internal/testmodels"
)

func BenchmarkParseMapping10k(b *testing.B) {
	src := []byte(testmodels.Mapping(10000, 1000, 1))
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, d := Parse("bench.pepa", src)
		if d.HasErrors() {
			b.Fatal(d)
		}
	}
}

// BenchmarkLoadMapping10k parses and checks a generated mapping model in the
// seed's shape: 10,000 applications on 1,000 machines (about 1.3 MB).
func BenchmarkLoadMapping10k(b *testing.B) {
	src := []byte(testmodels.Mapping(10000, 1000, 1))
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, d := Load("bench.pepa", src)
		if d.HasErrors() {
			b.Fatal(d)
		}
	}
}
