package passage

import (
	"context"
	"syscall"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
)

// benchProblems are the passages of one machine (the last) or of all six
// machines of the 24x6 mapping (117,649 states).
func benchProblems(b *testing.B, c *ctmc.Chain, all bool) []Problem {
	var probs []Problem
	last := testmodels.LastActions(24, 6)
	if !all {
		last = last[5:]
	}
	for _, acts := range last {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	return probs
}

// BenchmarkBuildKernel: the uniformized kernel of one passage and of a
// block of six.
func BenchmarkBuildKernel(b *testing.B) {
	c := benchChain(b, 24, 6)
	for _, all := range []bool{false, true} {
		probs := benchProblems(b, c, all)
		q := UniformizationRate(c, probs)
		b.Run(map[bool]string{false: "one", true: "six"}[all], func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				if _, err := buildKernel(c, probs, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSolveHorizon: Solve up to a horizon (the series to its right
// truncation point), one passage and a block of six.
func BenchmarkSolveHorizon(b *testing.B) {
	c := benchChain(b, 24, 6)
	for _, all := range []bool{false, true} {
		probs := benchProblems(b, c, all)
		b.Run(map[bool]string{false: "one", true: "six"}[all], func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				if _, err := Solve(context.Background(), c, probs, Options{Horizon: 30}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnalyze: a whole query on the 24x6 mapping model, flat
// (derived, solved on the product chain, mean by the linear solve) and
// decomposed (on the machine's own chain).
func BenchmarkAnalyze(b *testing.B) {
	m, diags := lang.Load("bench.pepa", []byte(testmodels.Mapping(24, 6, 1)))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		b.Fatal(err)
	}
	for _, flat := range []bool{false, true} {
		q := Query{TargetActions: testmodels.LastActions(24, 6)[5], Times: []float64{10, 20, 30}, Quantiles: []float64{0.5}, Flat: flat}
		b.Run(map[bool]string{false: "decomposed", true: "flat"}[flat], func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				if _, err := Analyze(context.Background(), s, q, AnalyzeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the process's processor time (all threads); reportCPU
// reports it per op since c0: on a shared machine it says more than the
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
