package passage

import (
	"context"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testmodels"
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
	// Seven passages (every machine's) in one group of 8 lanes: one core
	// with the assembly kernel in one pass (fusedRows8AVX2) and in two,
	// and with the Go loop; all cores with the two assembly kernels.
	var probs []Problem
	for _, acts := range testmodels.LastActions(28, 7) {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	k8, err := buildKernel(c, probs, UniformizationRate(c, probs))
	if err != nil {
		b.Fatal(err)
	}
	L := k8.lanes
	v8 := alignedFloats(c.N * L)
	y8 := alignedFloats(c.N * L)
	for i := range v8 {
		v8[i] = 1 / float64(c.N)
	}
	nblocks := (c.N + rowBlock - 1) / rowBlock
	pool := newPool(nblocks)
	defer pool.close()
	for _, kernel := range []int{fusedKernel, twoPassKernel, goKernel} {
		for _, all := range []bool{false, true} {
			if all && kernel == goKernel {
				continue
			}
			name := "lanes8-" + strings.ReplaceAll(kernelNames[kernel], " ", "-")
			if all {
				name += "-all-cores"
			}
			b.Run(name, func(b *testing.B) {
				if kernel != goKernel && !commonRowsAsm {
					b.Skip("no assembly kernel on this processor")
				}
				defer useKernel(kernel)()
				sink, rest := make([]float64, nblocks*L), make([]float64, nblocks*L)
				for i := 0; i < b.N; i++ {
					if all {
						pool.run(func(blk int) {
							k8.step(v8, y8, blk*rowBlock, min((blk+1)*rowBlock, c.N), sink[blk*L:(blk+1)*L], rest[blk*L:(blk+1)*L])
						})
					} else {
						k8.step(v8, y8, 0, c.N, sink[:L], rest[:L])
					}
					v8, y8 = y8, v8
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/nnz, "ns/nnz")
			})
		}
	}
	b.Run("bare-csr", func(b *testing.B) {
		ptr, src, diag := k.cPtr, k.cSrc, k.diag
		val := make([]float64, len(src))
		for e := range val {
			val[e] = k.val[k.cIdx16[e]]
		}
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
// chain of 28 applications on 7 machines (705,894 states: machine 2's two
// paths end in the same derivative), derivation included: the seven
// passages share each sweep.
func BenchmarkMachines28x7(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := benchChain(b, 28, 7)
		if c.N != 705894 {
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

// BenchmarkStages2M times each stage of a flat robustness analysis on the
// 2,250,423-state product chain of 32 applications on 7 machines (four
// machines with five applications, three with four), generated here:
// derivation, building the generator of all seven passages, one
// uniformization step of all seven (all cores), and one machine's mean by
// the linear solve (MeanTimes; the flat robustness path takes its means
// from the series instead, at no extra pass: Result.SeriesMean).
func BenchmarkStages2M(b *testing.B) {
	const apps, machines, states = 32, 7, 2250423
	m, diags := lang.Load("bench.pepa", []byte(testmodels.Mapping(apps, machines, 1)))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		b.Fatal(err)
	}
	var c *ctmc.Chain
	b.Run("derive", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c = nil
			if c, err = ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(c.N)/(b.Elapsed().Seconds()/float64(b.N)), "states/s")
	})
	if c == nil {
		return // the derivation was filtered out
	}
	if c.N != states {
		b.Fatalf("%d states, want %d", c.N, states)
	}
	var probs []Problem
	for _, acts := range testmodels.LastActions(apps, machines) {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	q := UniformizationRate(c, probs)
	var k *kernel
	b.Run("generator", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k = nil
			if k, err = buildKernel(c, probs, q); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(k.cSrc)+len(k.sSrc)), "entries")
	})
	if k == nil {
		return // the generator was filtered out
	}
	b.Run("cdf-step", func(b *testing.B) {
		L := k.lanes
		v, y := make([]float64, c.N*L), make([]float64, c.N*L)
		for i := range v {
			v[i] = 1 / float64(c.N)
		}
		nblocks := (c.N + rowBlock - 1) / rowBlock
		sink, rest := make([]float64, nblocks*L), make([]float64, nblocks*L)
		p := newPool(nblocks)
		defer p.close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.run(func(blk int) {
				k.step(v, y, blk*rowBlock, min((blk+1)*rowBlock, c.N), sink[blk*L:(blk+1)*L], rest[blk*L:(blk+1)*L])
			})
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(len(k.cSrc)+len(k.sSrc)), "ns/entry")
	})
	b.Run("means", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mean, _, err := MeanTimes(context.Background(), c, probs[0])
			if err != nil || !(mean > 0) {
				b.Fatalf("mean %g, %v", mean, err)
			}
		}
	})
}

// BenchmarkMeans28x7: every machine's mean finishing time on the 705,894-state
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

// BenchmarkFlat32x8 times P(F <= 45) on the 5,764,801-state product chain
// of 32 applications on 8 machines (52.7M transitions), derivation
// included, for one machine (the last) and for all eight in one pass; the
// chain's transitions are released once the generator is built, as the
// command line does. Run it alone: it needs about 1.5 GB.
func BenchmarkFlat32x8(b *testing.B) {
	for _, all := range []bool{false, true} {
		name := "one-machine"
		if all {
			name = "all-machines"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c := benchChain(b, 32, 8)
				last := testmodels.LastActions(32, 8)
				if !all {
					last = last[7:]
				}
				var probs []Problem
				alpha := make([]float64, c.N)
				alpha[0] = 1
				for _, acts := range last {
					probs = append(probs, Problem{Alpha: alpha, TargetActions: actions(b, c, acts...)})
				}
				rs, err := Solve(context.Background(), c, probs, Options{Horizon: 45, ReleaseChain: true})
				if err != nil {
					b.Fatal(err)
				}
				v, err := rs[len(rs)-1].CDF(45)
				if err != nil || !(v > 0 && v < 1) {
					b.Fatalf("P(F <= 45) = %g, %v", v, err)
				}
				b.ReportMetric(v, "P(F8<=45)")
				b.ReportMetric(float64(rs[0].Iterations()), "steps")
			}
		})
	}
}

// BenchmarkKernelOrder times one step of the seven passages of the 28/7
// mapping chain (one group of 8 lanes, both cores) with the kernel's rows
// in the derivation's breadth-first numbering and renumbered
// (localityOrder), and building each kernel.
func BenchmarkKernelOrder(b *testing.B) {
	c := benchChain(b, 28, 7)
	var probs []Problem
	for _, acts := range testmodels.LastActions(28, 7) {
		probs = append(probs, InitialProblem(c, actions(b, c, acts...)))
	}
	q := UniformizationRate(c, probs)
	nblocks := (c.N + rowBlock - 1) / rowBlock
	pool := newPool(nblocks)
	defer pool.close()
	for _, renumber := range []bool{false, true} {
		name := "breadth-first"
		if renumber {
			name = "renumbered"
		}
		withOrder := func(f func()) {
			was := localityMinStates
			if !renumber {
				localityMinStates = math.MaxInt
			}
			defer func() { localityMinStates = was }()
			f()
		}
		b.Run(name+"-build", func(b *testing.B) {
			withOrder(func() {
				for i := 0; i < b.N; i++ {
					if _, err := buildKernel(c, probs, q); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		var k *kernel
		withOrder(func() {
			var err error
			if k, err = buildKernel(c, probs, q); err != nil {
				b.Fatal(err)
			}
		})
		if (k.pos != nil) != renumber {
			b.Fatalf("renumbered %v, want %v", k.pos != nil, renumber)
		}
		L := k.lanes
		nnz := float64(k.cPtr[c.N] + k.sPtr[c.N])
		v, y := alignedFloats(c.N*L), alignedFloats(c.N*L)
		for i := range v {
			v[i] = 1 / float64(c.N)
		}
		b.Run(name+"-step", func(b *testing.B) {
			sink, rest := make([]float64, nblocks*L), make([]float64, nblocks*L)
			for i := 0; i < b.N; i++ {
				pool.run(func(blk int) {
					k.step(v, y, blk*rowBlock, min((blk+1)*rowBlock, c.N), sink[blk*L:(blk+1)*L], rest[blk*L:(blk+1)*L])
				})
				v, y = y, v
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/nnz, "ns/nnz")
		})
	}
}
