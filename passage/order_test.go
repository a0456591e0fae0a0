package passage

import (
	"context"
	"math"
	"math/rand"
	"slices"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// forceLocalityOrder makes the kernel renumber every chain, however
// small, for the rest of the test.
func forceLocalityOrder(t testing.TB) {
	was := localityMinStates
	localityMinStates = 0
	t.Cleanup(func() { localityMinStates = was })
}

// TestRadixOrder: radixOrder sorts keys of every width, equal keys in
// index order, as a comparison sort does.
func TestRadixOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, width := range []uint{0, 1, 5, 11, 12, 21, 33, 63, 64} {
		keys := make([]uint64, 1000)
		for i := range keys {
			if width > 0 {
				keys[i] = r.Uint64() >> (64 - width)
			}
			if i%7 == 0 && i > 0 {
				keys[i] = keys[i-1] // ties
			}
		}
		want := make([]int32, len(keys))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			switch {
			case keys[a] < keys[b]:
				return -1
			case keys[a] > keys[b]:
				return 1
			}
			return 0
		})
		if got := radixOrder(keys); !slices.Equal(got, want) {
			t.Fatalf("width %d: radix order differs from a stable sort", width)
		}
	}
}

// TestLocalityOrderIsAPermutation: pos is a permutation that sorts the
// packed states, last word most significant.
func TestLocalityOrderIsAPermutation(t *testing.T) {
	forceLocalityOrder(t)
	checked := 0
	for seed := int64(1); seed <= 200; seed++ {
		_, _, c := randomChain(t, seed)
		if c == nil {
			continue
		}
		pos := localityOrder(c)
		if len(pos) != c.N {
			t.Fatalf("seed %d: %d positions for %d states", seed, len(pos), c.N)
		}
		order := make([]int, c.N)
		seen := make([]bool, c.N)
		for i, r := range pos {
			if r < 0 || int(r) >= c.N || seen[r] {
				t.Fatalf("seed %d: position %d of state %d repeated or out of range", seed, r, i)
			}
			seen[r] = true
			order[r] = i
		}
		for r := 1; r < c.N; r++ {
			a, b := slices.Clone(c.State(order[r-1])), slices.Clone(c.State(order[r]))
			slices.Reverse(a)
			slices.Reverse(b)
			if slices.Compare(a, b) >= 0 {
				t.Fatalf("seed %d: rows %d and %d out of order", seed, r-1, r)
			}
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d chains checked", checked)
	}
}

// TestLocalityOrderSameNumbers: on random models (self-loops, passives,
// target states, several passages in lanes, a single passage) the
// renumbered kernel gives the series of the chain's own numbering to
// rounding, and the same flags.
func TestLocalityOrderSameNumbers(t *testing.T) {
	ctx := context.Background()
	compared := 0
	for seed := int64(1); seed <= 300; seed++ {
		_, s, c := randomChain(t, seed)
		if c == nil || c.N < 2 {
			continue
		}
		probs := actionProblems(s, c, 11, 3)
		if len(probs) == 0 {
			continue
		}
		for _, block := range [][]Problem{probs[:1], probs} {
			opt := Options{Horizon: 5, Complete: seed%2 == 0, MaxIterations: 20000}
			want, err := Solve(ctx, c, block, opt)
			if err != nil {
				continue
			}
			was := localityMinStates
			localityMinStates = 0
			got, err := Solve(ctx, c, block, opt)
			localityMinStates = was
			if err != nil {
				t.Fatalf("seed %d: renumbered: %v", seed, err)
			}
			for p := range block {
				w, g := want[p], got[p]
				if w.Method != g.Method || w.Reachable != g.Reachable || w.MayNeverEnd != g.MayNeverEnd {
					t.Fatalf("seed %d passage %d: method %q/%q reachable %v/%v may never end %v/%v", seed, p, w.Method, g.Method, w.Reachable, g.Reachable, w.MayNeverEnd, g.MayNeverEnd)
				}
				for _, x := range []float64{0, 0.1, 1, 2.5, 5} {
					a, errA := w.CDF(x)
					b, errB := g.CDF(x)
					if (errA == nil) != (errB == nil) || math.Abs(a-b) > 1e-13 {
						t.Fatalf("seed %d passage %d: CDF(%g) %.17g (%v) renumbered %.17g (%v)", seed, p, x, a, errA, b, errB)
					}
				}
				compared++
			}
		}
	}
	if compared < 300 {
		t.Fatalf("only %d passages compared", compared)
	}
	t.Logf("%d passages compared", compared)
}

// TestLocalityOrderMapping: the mapping model of 20 applications on 5
// machines (16,807 states), renumbered, gives every machine's
// P(F <= 20), series mean and step count as the derivation's numbering.
func TestLocalityOrderMapping(t *testing.T) {
	c := testchain.Chain(t, testmodels.Mapping(20, 5, 1))
	var probs []Problem
	for _, acts := range testmodels.LastActions(20, 5) {
		probs = append(probs, InitialProblem(c, actions(t, c, acts...)))
	}
	solve := func() []*Result {
		rs, err := Solve(context.Background(), c, probs, Options{Horizon: 20, Complete: true})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	want := solve()
	forceLocalityOrder(t)
	got := solve()
	for p := range probs {
		a, _ := want[p].CDF(20)
		b, _ := got[p].CDF(20)
		ma, _, _ := want[p].SeriesMean()
		mb, _, _ := got[p].SeriesMean()
		if math.Abs(a-b) > 1e-13 || math.Abs(ma-mb) > 1e-12*ma || want[p].Iterations() != got[p].Iterations() {
			t.Errorf("machine %d: P(F <= 20) %.15g renumbered %.15g; mean %.15g renumbered %.15g; steps %d and %d", p+1, a, b, ma, mb, want[p].Iterations(), got[p].Iterations())
		}
	}
	if c.N < 10000 {
		t.Fatalf("%d states: not a test of the order", c.N)
	}
}
