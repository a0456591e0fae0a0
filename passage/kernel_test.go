package passage

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"pepa/internal/testing/testmodels"
)

// TestKernelIndexWidths: the kernel gives bit-for-bit the same step with
// 4-byte rate indices (chains with more than 65,536 distinct rates) as
// with 2-byte ones, and the same, to rounding, as a step computed here
// from the chain's transitions directly (the uniformized matrix with the
// passages' targets absorbing), for one passage, a block of 8 lanes and
// one of two groups of 8.
func TestKernelIndexWidths(t *testing.T) {
	// 16,807 states: with 4 cores the generator is built by 4 workers.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, size := range [][2]int{{6, 3}, {20, 5}} {
		kernelCheck(t, size[0], size[1])
	}
}

func kernelCheck(t *testing.T, apps, machines int) {
	c := chainOf(t, testmodels.Mapping(apps, machines, 1))
	var probs []Problem
	for _, acts := range testmodels.LastActions(apps, machines) {
		probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
	}
	// A target given by states, too: the states entered by compute1.
	probs = append(probs, StateProblem(c, EnteredBy(c, actions(t, c, "compute1"))))
	// Thirteen passages: two groups of 8 lanes.
	var many []Problem
	for len(many) < 13 {
		many = append(many, probs...)
	}
	many = many[:13]
	for _, block := range [][]Problem{probs[:1], probs, many} {
		q := UniformizationRate(c, block)
		k, err := buildKernel(c, block, q)
		if err != nil {
			t.Fatal(err)
		}
		if k.cIdx16 == nil {
			t.Fatal("small chain did not get 2-byte indices")
		}
		L := k.lanes
		v := make([]float64, c.N*L)
		for i := range v {
			if i%L < len(block) && (k.zero == nil || !hasLane(k.zero, k.groups, i/L, i%L)) {
				v[i] = float64(1+i%7) / float64(7*c.N)
			}
		}
		step := func(k *kernel) ([]float64, []float64, []float64) {
			y, sink, rest := make([]float64, len(v)), make([]float64, L), make([]float64, L)
			k.step(v, y, 0, c.N, sink, rest)
			return y, sink, rest
		}
		y16, sink16, rest16 := step(k)
		wide := *k
		wide.cIdx32, wide.sIdx32 = widen(k.cIdx16), widen(k.sIdx16)
		wide.cIdx16, wide.sIdx16 = nil, nil
		y32, sink32, rest32 := step(&wide)
		if !slices.Equal(y16, y32) || !slices.Equal(sink16, sink32) || !slices.Equal(rest16, rest32) {
			t.Errorf("%d passages: 4-byte indices give another step", len(block))
		}
		// Directly: mass moves along every transition that does not end
		// the passage; what ends it (an action, or entering a target
		// state) is absorbed, and so is whatever sits in a target state.
		want, wantSink := make([]float64, len(v)), make([]float64, L)
		for p, pr := range block {
			isTA := map[int32]bool{}
			for _, a := range pr.TargetActions {
				isTA[a] = true
			}
			inTarget := func(j int32) bool { return pr.TargetStates != nil && pr.TargetStates[j] }
			for i := 0; i < c.N; i++ {
				x := v[i*L+p]
				stay := x
				for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
					j, r := c.Col[e], c.RateAt(e)
					switch {
					case isTA[c.Act[e]] || inTarget(j):
						stay -= x * r / q
						wantSink[p] += x * r / q
					case int(j) != i:
						stay -= x * r / q
						want[int(j)*L+p] += x * r / q
					}
				}
				want[i*L+p] += stay
			}
			for j := 0; j < c.N; j++ {
				if inTarget(int32(j)) {
					wantSink[p] += want[j*L+p] - v[j*L+p] // v is 0 there
					want[j*L+p] = 0
				}
			}
		}
		for i := range want {
			if math.Abs(want[i]-y16[i]) > 1e-15 {
				t.Fatalf("%d passages: y[%d] = %g, want %g", len(block), i, y16[i], want[i])
			}
		}
		for p := range block {
			if math.Abs(wantSink[p]-sink16[p]) > 1e-14 {
				t.Errorf("%d passages: sink of passage %d = %g, want %g", len(block), p, sink16[p], wantSink[p])
			}
		}
	}
}

func widen(a []uint16) []uint32 {
	out := make([]uint32, len(a))
	for i, x := range a {
		out[i] = uint32(x)
	}
	return out
}

// TestReleaseChain: a Solve that releases the chain's transitions gives the
// same series as one that keeps them, and leaves the states and row
// pointers.
func TestReleaseChain(t *testing.T) {
	src := testmodels.Mapping(15, 5, 1) // 5^5 states: beyond the dense path
	var want, got []*Result
	for _, release := range []bool{false, true} {
		c := chainOf(t, src)
		var probs []Problem
		for _, acts := range testmodels.LastActions(15, 5) {
			probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
		}
		rs, err := Solve(context.Background(), c, probs, Options{Complete: true, ReleaseChain: release})
		if err != nil {
			t.Fatal(err)
		}
		if release {
			got = rs
			if c.Col != nil || c.Act != nil || c.RateIndex != nil || len(c.RowPtr) != c.N+1 || len(c.States) == 0 {
				t.Errorf("after release: %d columns, %d actions, %d rate indices, %d row pointers", len(c.Col), len(c.Act), len(c.RateIndex), len(c.RowPtr))
			}
		} else {
			want = rs
		}
	}
	for p := range want {
		if !slices.Equal(want[p].Absorbed, got[p].Absorbed) {
			t.Errorf("passage %d: series differ", p)
		}
	}
}

// TestManyPassagesOnePass: nine passages solved together (two groups
// of lanes, one sweep of the matrix a step) give each passage's series as
// solving it alone does, to rounding.
func TestManyPassagesOnePass(t *testing.T) {
	c := chainOf(t, testmodels.Mapping(16, 9, 1))
	var probs []Problem
	for _, acts := range testmodels.LastActions(16, 9) {
		probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
	}
	all, err := Solve(context.Background(), c, probs, Options{Horizon: 20})
	if err != nil {
		t.Fatal(err)
	}
	for p, pr := range probs {
		alone := solveOne(t, c, pr, Options{Horizon: 20, Q: all[p].Q})
		for _, at := range []float64{1, 5, 20} {
			if a, b := cdf(t, all[p], at), cdf(t, alone, at); math.Abs(a-b) > 1e-13 {
				t.Errorf("passage %d at %g: together %.15g, alone %.15g", p, at, a, b)
			}
		}
	}
}
