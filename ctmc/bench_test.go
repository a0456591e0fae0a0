package ctmc

import (
	"context"
	"runtime"
	"testing"

	"pepa/internal/testmodels"
	"pepa/lang"
)

func benchDerive(b *testing.B, apps, machines, wantStates int) {
	m, diags := lang.Load("bench.pepa", []byte(testmodels.Mapping(apps, machines, 1)))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	s, err := Compile(m, DefaultOptions)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var c *Chain
	for i := 0; i < b.N; i++ {
		c = nil
		runtime.GC()
		c, err = Derive(context.Background(), s, DeriveOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c.N != wantStates {
		b.Fatalf("%d states, want %d", c.N, wantStates)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(c.N)/sec, "states/s")
	b.ReportMetric(float64(c.NumTransitions()), "transitions")
	bytes := 8*len(c.States) + 8*len(c.RowPtr) + 16*len(c.Col)
	b.ReportMetric(float64(bytes)/float64(c.N), "chain-bytes/state")
}

// BenchmarkDeriveMapping20x5: 4 applications a machine, 7^5 = 16,807 states.
func BenchmarkDeriveMapping20x5(b *testing.B) { benchDerive(b, 20, 5, 16807) }

// BenchmarkDeriveMapping32x8: the target, 7^8 = 5,764,801 states.
func BenchmarkDeriveMapping32x8(b *testing.B) { benchDerive(b, 32, 8, 5764801) }
