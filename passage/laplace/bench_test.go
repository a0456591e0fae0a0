package laplace

import (
	"fmt"
	"strings"
	"testing"

	"pepa/internal/testing/testchain"
)

// stoppedNetwork writes a mapping model whose machines share one network
// and stop once finished (their last application leads to a state with
// only a self-loop): apps applications dealt round-robin onto machines,
// each machine racing an ideal and a perturbed path, a transfer before
// every application; slow jobs and fast transfers, as stiff as the
// engine's users' clusters.
func stoppedNetwork(apps, machines int) string {
	var b strings.Builder
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.4g; p%d = %.4g;\n", i, 1e-3*(0.1+float64(i%7)*0.05), i, 1e-3*(0.08+float64(i%5)*0.04))
	}
	b.WriteString("s = 50;\n")
	var ms, xs []string
	for m := 1; m <= machines; m++ {
		for _, path := range []string{"r", "p"} {
			var body strings.Builder
			for i := m; i <= apps; i += machines {
				fmt.Fprintf(&body, "(x%d, 200).(c%d, %s%d).", m, i, path, i)
			}
			fmt.Fprintf(&b, "M%d%s = %sM%dDone;\n", m, path, body.String(), m)
		}
		fmt.Fprintf(&b, "M%d = M%dr + M%dp;\nM%dDone = (idle%d, 1).M%dDone;\n", m, m, m, m, m, m)
		ms = append(ms, fmt.Sprintf("M%d", m))
		xs = append(xs, fmt.Sprintf("x%d", m))
	}
	var alts []string
	for _, x := range xs {
		alts = append(alts, fmt.Sprintf("(%s, infty).(sent, s).Net", x))
	}
	fmt.Fprintf(&b, "Net = %s;\n", strings.Join(alts, " + "))
	fmt.Fprintf(&b, "(%s) <%s> Net\n", strings.Join(ms, " <> "), strings.Join(xs, ", "))
	return b.String()
}

// BenchmarkSolve: one complex solve (a contour node), the kernel every
// window repeats (m+1 times), on a stiff network of 4 machines.
func BenchmarkSolve(b *testing.B) {
	c := testchain.Chain(b, stoppedNetwork(16, 4))
	sys, err := NewSystem(c, Target{})
	if err != nil {
		b.Fatal(err)
	}
	x := make([]complex128, sys.n)
	work := make([]complex128, MaxBlock*MaxBlock+MaxBlock)
	z := complex(0.3, 1.7)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clear(x)
		x[0] = 1
		if err := sys.solve(z, x, work); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(sys.Transitions()), "ns/transition")
	b.ReportMetric(float64(sys.Transitions()), "transitions")
}
