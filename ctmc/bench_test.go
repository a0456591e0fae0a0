package ctmc

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"pepa/lang"
)

// mappingModel writes a mapping model in the seed's shape: apps passive
// applications dealt round-robin onto machines, each machine racing an
// ideal and a perturbed path through its applications.
func mappingModel(apps, machines int) string {
	var b strings.Builder
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.3f; p%d = %.3f;\n", i, 0.1+float64(i%7)*0.05, i, 0.08+float64(i%5)*0.04)
	}
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "A%d = (compute%d, infty).A%d;\n", i, i, i)
	}
	for m := 1; m <= machines; m++ {
		var ideal, pert strings.Builder
		for i := m; i <= apps; i += machines {
			fmt.Fprintf(&ideal, "(compute%d, r%d).", i, i)
			fmt.Fprintf(&pert, "(compute%d, p%d).", i, i)
		}
		fmt.Fprintf(&b, "M%d = %sM%d + %sM%d;\n", m, ideal.String(), m, pert.String(), m)
	}
	var as, acts, ms []string
	for i := 1; i <= apps; i++ {
		as = append(as, fmt.Sprintf("A%d", i))
		acts = append(acts, fmt.Sprintf("compute%d", i))
	}
	for m := 1; m <= machines; m++ {
		ms = append(ms, fmt.Sprintf("M%d", m))
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(as, " <> "), strings.Join(acts, ", "), strings.Join(ms, " <> "))
	return b.String()
}

func benchDerive(b *testing.B, apps, machines, wantStates int) {
	m, diags := lang.Load("bench.pepa", []byte(mappingModel(apps, machines)))
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
