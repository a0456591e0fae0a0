package models

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

// bigMapping writes apps applications dealt round-robin onto machines in
// the seed's shape, with rates of its own.
func bigMapping(apps, machines int) []byte {
	var b strings.Builder
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.3f; p%d = %.3f;\n", i, 0.8+float64(i%7)*0.2, i, 0.6+float64(i%5)*0.15)
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
	return []byte(b.String())
}

func benchEndToEnd(b *testing.B, apps, machines int) {
	src := bigMapping(apps, machines)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, diags := lang.Load("big.pepa", src)
		if diags.HasErrors() {
			b.Fatal(diags.Err())
		}
		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			b.Fatal(err)
		}
		parts, err := ctmc.Decompose(s)
		if err != nil {
			b.Fatal(err)
		}
		r, err := AnalyzeParts(context.Background(), s, parts, Options{Beta: 25})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Machines) != machines || !(r.Robustness > 0 && r.Robustness < 1) {
			b.Fatalf("%d machines, robustness %g", len(r.Machines), r.Robustness)
		}
		if i == 0 {
			b.ReportMetric(r.Robustness, "robustness")
			b.ReportMetric(r.PAllByBeta, "p_all")
		}
	}
}

// BenchmarkEndToEnd10kx1k: 10,000 applications on 1,000 machines (about
// 1.3 MB of PEPA): parse, check, compile, every machine's CDF, robustness,
// joint probability and expected makespan.
func BenchmarkEndToEnd10kx1k(b *testing.B) { benchEndToEnd(b, 10000, 1000) }

// BenchmarkEndToEnd100kx10k: 100,000 applications on 10,000 machines.
func BenchmarkEndToEnd100kx10k(b *testing.B) { benchEndToEnd(b, 100000, 10000) }
