package passage

import (
	"math"
	"math/rand"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/randmodel"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
)

// TestAssemblyKernelExact: the assembly step (fusedRows8AVX2, and
// commonRows8AVX2 then specialRows8AVX2, for blocks of passages; step1AVX
// for one) gives bit for bit the step of the Go loops it
// replaces, on random models (self-loops, target self-loops, passive
// partners, states as targets), with 1, 8 and 13 passages (one and two
// groups of lanes), whole and split into ranges of rows that do not fall
// on chunk boundaries. The Go loops themselves are checked against the
// chain's transitions in TestKernelIndexWidths.
func TestAssemblyKernelExact(t *testing.T) {
	if !hasAssemblyKernel() {
		t.Skip("no assembly kernel on this processor")
	}
	r := rand.New(rand.NewSource(3))
	checked := 0
	for seed := int64(1); seed <= 400; seed++ {
		m, s, c := randomChain(t, seed)
		if c == nil {
			continue
		}
		if c.N < 2 {
			continue
		}
		// Every action but tau ends one passage; every fourth passage is
		// a state target instead (the states entered by that action).
		probs := actionProblems(s, c, 13, 4)
		if len(probs) == 0 {
			continue
		}
		for n := len(probs); len(probs) < 13 && n > 1; {
			probs = append(probs, probs[len(probs)%n])
		}
		// The backward iteration (backwardRowsAVX) too.
		var series [2][]float64
		for i, asm := range []bool{true, false} {
			withBackward(true, func() {
				defer func(was bool) { commonRowsAsm = was }(commonRowsAsm)
				commonRowsAsm = asm
				rs, err := Solve(t.Context(), c, probs[:1], Options{Horizon: 3})
				if err != nil || !rs[0].backward {
					t.Fatalf("seed %d: backward solve: %v", seed, err)
				}
				series[i] = rs[0].Absorbed
			})
		}
		if !sameBits(series[0], series[1]) {
			t.Fatalf("seed %d: the assembly backward step differs from the Go step\n%s", seed, m.Source)
		}
		for _, block := range [][]Problem{probs[:1], probs[:min(8, len(probs))], probs} {
			q := UniformizationRate(c, block)
			k, err := buildKernel(c, block, q)
			if err != nil {
				continue
			}
			v := make([]float64, c.N*k.lanes)
			for i := range v {
				v[i] = r.Float64() / float64(c.N)
			}
			split := 1 + r.Intn(c.N)
			run := func(kernel int) ([]float64, []float64, []float64) {
				defer useKernel(kernel)()
				y := alignedFloats(len(v))
				sink, rest := make([]float64, k.lanes), make([]float64, k.lanes)
				k.step(v, y, 0, split, sink, rest)
				k.step(v, y, split, c.N, sink, rest)
				return y, sink, rest
			}
			yg, sg, rg := run(goKernel)
			for _, kernel := range []int{fusedKernel, twoPassKernel} {
				y, s, rs := run(kernel)
				if !sameBits(y, yg) || !sameBits(s, sg) || !sameBits(rs, rg) {
					t.Fatalf("seed %d, %d passages: the assembly step (%s) differs from the Go step\n%s", seed, len(block), kernelNames[kernel], m.Source)
				}
			}
			checked++
		}
	}
	if checked < 200 {
		t.Fatalf("only %d blocks checked", checked)
	}
	// And a chain bigger than a row chunk and a row block, 5 passages
	// and 1.
	c := testchain.Chain(t, testmodels.Mapping(20, 5, 1))
	var probs []Problem
	for _, acts := range testmodels.LastActions(20, 5) {
		probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
	}
	for _, block := range [][]Problem{probs, probs[:1]} {
		bigChainExact(t, c, block, r)
	}
}

func bigChainExact(t *testing.T, c *ctmc.Chain, probs []Problem, r *rand.Rand) {
	k, err := buildKernel(c, probs, UniformizationRate(c, probs))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, c.N*k.lanes)
	for i := range v {
		v[i] = r.Float64()
	}
	var ys [3][]float64
	for _, kernel := range []int{goKernel, fusedKernel, twoPassKernel} {
		restore := useKernel(kernel)
		ys[kernel] = alignedFloats(len(v))
		for lo := 0; lo < c.N; lo += rowBlock {
			k.step(v, ys[kernel], lo, min(lo+rowBlock, c.N), make([]float64, k.lanes), make([]float64, k.lanes))
		}
		restore()
	}
	for _, kernel := range []int{fusedKernel, twoPassKernel} {
		if !sameBits(ys[kernel], ys[goKernel]) {
			t.Fatalf("20/5 mapping, %d passages: the assembly step (%s) differs from the Go step", len(probs), kernelNames[kernel])
		}
	}
}

// The step's kernels for blocks of passages: the Go loops, the assembly
// in one pass (fusedRows8AVX2), and in two (commonRows8AVX2 then
// specialRows8AVX2).
const (
	goKernel = iota
	fusedKernel
	twoPassKernel
)

var kernelNames = []string{"Go", "one pass", "two passes"}

// useKernel selects a kernel and returns what restores the previous one.
func useKernel(kernel int) (restore func()) {
	common, fused := commonRowsAsm, fusedRowsAsm
	commonRowsAsm, fusedRowsAsm = kernel != goKernel, kernel == fusedKernel
	return func() { commonRowsAsm, fusedRowsAsm = common, fused }
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestLiveStates: the kernel's live lanes (states outside a passage's
// target that can reach it) are those found by sweeping the chain's own
// transitions to a fixed point, passage by passage, on random models with
// up to 13 passages at once (two groups of lanes), some with target
// states; with the sweeps markLive begins with, with its worklist alone,
// and with one sweep then the worklist.
func TestLiveStates(t *testing.T) {
	defer func(was int) { liveSweeps = was }(liveSweeps)
	for _, sweeps := range []int{liveSweeps, 0, 1} {
		liveSweeps = sweeps
		liveStatesCheck(t)
	}
	// And with every chain renumbered for locality (localityOrder).
	forceLocalityOrder(t)
	liveSweeps = 3
	liveStatesCheck(t)
}

func liveStatesCheck(t *testing.T) {
	checked := 0
	for seed := int64(1); seed <= 300; seed++ {
		m, s, c := randomChain(t, seed)
		if c == nil {
			continue
		}
		if c.N < 2 {
			continue
		}
		probs := actionProblems(s, c, 13, 3)
		if len(probs) == 0 {
			continue
		}
		k, err := buildKernel(c, probs, UniformizationRate(c, probs))
		if err != nil {
			continue
		}
		for p, pr := range probs {
			ends := map[int32]bool{}
			for _, a := range pr.TargetActions {
				ends[a] = true
			}
			inTarget := func(j int32) bool { return pr.TargetStates != nil && pr.TargetStates[j] }
			live := make([]bool, c.N)
			for changed := true; changed; {
				changed = false
				for i := 0; i < c.N; i++ {
					if live[i] || inTarget(int32(i)) {
						continue
					}
					for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
						j := c.Col[e]
						if ends[c.Act[e]] || inTarget(j) || live[j] {
							live[i], changed = true, true
							break
						}
					}
				}
			}
			count := 0
			for i := range live {
				if k.isLive(k.at(i), p) != live[i] {
					t.Fatalf("seed %d, passage %d of %d: state %d live %v, want %v\n%s", seed, p, len(probs), i, k.isLive(k.at(i), p), live[i], m.Source)
				}
				if live[i] {
					count++
				}
			}
			if count != k.liveCount[p] {
				t.Fatalf("seed %d, passage %d: %d live states counted, want %d", seed, p, k.liveCount[p], count)
			}
		}
		checked++
	}
	if checked < 150 {
		t.Fatalf("only %d models checked", checked)
	}
}

// randomChain is the chain of the random model of a seed, with the model
// and its compiled structure; c is nil when the model is invalid or its
// chain cannot be derived (a deadlock is fine).
func randomChain(t *testing.T, seed int64) (m randmodel.Model, s *ctmc.Structure, c *ctmc.Chain) {
	m = randmodel.Generate(seed)
	mod, diags := lang.Load("rand.pepa", []byte(m.Source))
	if diags.HasErrors() {
		return m, nil, nil
	}
	s, err := ctmc.Compile(mod, ctmc.DefaultOptions)
	if err != nil {
		return m, nil, nil
	}
	c, err = ctmc.Derive(t.Context(), s, ctmc.DeriveOptions{})
	if err != nil {
		return m, s, nil
	}
	return m, s, c
}
