package lang

import "testing"

func BenchmarkParseMapping10k(b *testing.B) {
	src := []byte(mappingModel(10000, 1000))
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, d := Parse("bench.pepa", src)
		if d.HasErrors() {
			b.Fatal(d)
		}
	}
}
