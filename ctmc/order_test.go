package ctmc

import (
	"testing"

	"pepa/internal/testmodels"
)

// TestRadixOrder: the ranks are a permutation, and sorting by them sorts
// the states by their leaves' local states read from the last leaf down.
func TestRadixOrder(t *testing.T) {
	c := derive(t, testmodels.Workstations(3, 2, 2), DefaultOptions)
	rank := c.RadixOrder()
	if len(rank) != c.N {
		t.Fatalf("%d ranks for %d states", len(rank), c.N)
	}
	byRank := make([]int, c.N)
	seen := make([]bool, c.N)
	for i, r := range rank {
		if r < 0 || int(r) >= c.N || seen[r] {
			t.Fatalf("rank %d of state %d is not a permutation", r, i)
		}
		seen[r] = true
		byRank[r] = i
	}
	less := func(a, b int) bool { // compare digits from the most significant leaf
		for l := len(c.S.Leaves) - 1; l >= 0; l-- {
			x, y := c.S.Leaves[l].Local(c.State(a)), c.S.Leaves[l].Local(c.State(b))
			if x != y {
				return x < y
			}
		}
		return false
	}
	for r := 1; r < c.N; r++ {
		if !less(byRank[r-1], byRank[r]) {
			t.Fatalf("states of ranks %d and %d out of order", r-1, r)
		}
	}
}
