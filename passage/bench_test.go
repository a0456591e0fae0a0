package passage

import (
	"context"
	"math"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testmodels"
	"pepa/lang"
)

func benchChain(b *testing.B, apps, machines int) *ctmc.Chain {
	m, diags := lang.Load("bench.pepa", []byte(testmodels.Mapping(apps, machines, 1)))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		b.Fatal(err)
	}
	c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkKernelStep times one uniformization step of a single passage
// over every row, against a bare CSR gather over the same arrays.
func BenchmarkKernelStep(b *testing.B) {
	c := benchChain(b, 28, 7)
	pr := InitialProblem(c, actions(b, c, "compute28"))
	k, err := buildKernel(c, []Problem{pr}, UniformizationRate(c, []Problem{pr}))
	if err != nil {
		b.Fatal(err)
	}
	v := make([]float64, c.N)
	y := make([]float64, c.N)
	for i := range v {
		v[i] = 1 / float64(c.N)
	}
	nnz := float64(k.cPtr[c.N] + k.sPtr[c.N])
	b.Run("kernel", func(b *testing.B) {
		sink, rest := make([]float64, 1), make([]float64, 1)
		for i := 0; i < b.N; i++ {
			k.step(v, y, 0, c.N, sink, rest)
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/nnz, "ns/nnz")
	})
	b.Run("kernel-all-cores", func(b *testing.B) {
		nblocks := (c.N + rowBlock - 1) / rowBlock
		sink, rest := make([]float64, nblocks), make([]float64, nblocks)
		p := newPool(nblocks)
		defer p.close()
		for i := 0; i < b.N; i++ {
			p.run(func(blk int) {
				k.step(v, y, blk*rowBlock, min((blk+1)*rowBlock, c.N), sink[blk:blk+1], rest[blk:blk+1])
			})
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/nnz, "ns/nnz")
	})
	b.Run("bare-csr", func(b *testing.B) {
		ptr, src, val, diag := k.cPtr, k.cSrc, k.cVal, k.diag
		for i := 0; i < b.N; i++ {
			for j := 0; j < c.N; j++ {
				acc := diag[j] * v[j]
				for e := ptr[j]; e < ptr[j+1]; e++ {
					acc += val[e] * v[src[e]]
				}
				y[j] = acc
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/nnz, "ns/nnz")
	})
}

// BenchmarkMachines28x7: every machine's P(F <= 45) on the full product
// chain of 28 applications on 7 machines (823,543 states), derivation
// included: the seven passages share each sweep.
func BenchmarkMachines28x7(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := benchChain(b, 28, 7)
		if c.N != 823543 {
			b.Fatalf("%d states", c.N)
		}
		var probs []Problem
		for _, acts := range testmodels.LastActions(28, 7) {
			probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
		}
		rs, err := Solve(context.Background(), c, probs, Options{Horizon: 45})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			if v, err := r.CDF(45); err != nil || !(v > 0 && v < 1) {
				b.Fatalf("P(F <= 45) = %g, %v", v, err)
			}
		}
		if i == 0 {
			b.ReportMetric(float64(rs[0].Iterations()), "steps")
		}
	}
}

// BenchmarkMeans28x7: every machine's mean finishing time on the 823,543
// product chain of BenchmarkMachines28x7 (derivation outside the timer).
// (Accuracy is checked in TestMeanAgainstDense and TestMeanClosedForms.)
func BenchmarkMeans28x7(b *testing.B) {
	c := benchChain(b, 28, 7)
	var probs []Problem
	for _, acts := range testmodels.LastActions(28, 7) {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, pr := range probs {
			if m, _, err := MeanTimes(context.Background(), c, pr); err != nil || !(m > 0) || math.IsInf(m, 1) {
				b.Fatalf("mean %g, %v", m, err)
			}
		}
	}
}
