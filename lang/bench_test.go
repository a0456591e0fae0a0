package lang

import (
	"testing"

	"pepa/internal/testing/testmodels"
)

// BenchmarkLoadMapping10k parses (and, in "load", checks) a generated
// mapping model in the seed's shape: 10,000 applications on 1,000 machines,
// about 1.3 MB.
func BenchmarkLoadMapping10k(b *testing.B) {
	src := []byte(testmodels.Mapping(10000, 1000, 1))
	for _, step := range []struct {
		name string
		run  func() Diagnostics
	}{
		{"parse", func() Diagnostics { _, d := Parse("bench.pepa", src); return d }},
		{"load", func() Diagnostics { _, d := Load("bench.pepa", src); return d }},
	} {
		b.Run(step.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				if d := step.run(); d.HasErrors() {
					b.Fatal(d)
				}
			}
		})
	}
}
