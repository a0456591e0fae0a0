package passage

import (
	"context"
	"fmt"
	"runtime"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/internal/option"
)

// Memory. Before the generator and the vectors of a block of passages are
// made, what they need is checked against the budget ctx carries
// (membudget): Solve takes blocks of fewer passages when a block of all of
// them does not fit (fewer lanes: each block has its own generator and
// sweeps, slower, in less memory), and a single passage up to a horizon
// is iterated backward over the chain's own rows when no forward block
// fits; otherwise the error says what the stage needs and what is left.

// solveHint is what an over-budget error of the forward iteration
// suggests.
func solveHint() string {
	return option.Text("without {Flat}, independent parts are solved on their own chains; {Mean}=false lets a single passage run backward over the chain's own rows; {SimulateVerb} needs no chain")
}

// kernelBytes bounds what buildKernel allocates for a block of P
// passages: the transposition's per-worker counts (8 bytes a state per
// worker), the row offsets (8 a state), each entry's source and rate
// index (4 + idx bytes), a special entry's lane masks (a byte per group of
// 8 passages), the diagonal (8 a state), the lane masks (three bytes a
// state per group), the liveness worklist (8 a state), the renumbering
// (localityOrder: the rows kept, 4 a state, and the sort's two index
// arrays, 8) and the table of values.
func kernelBytes(c *ctmc.Chain, P int, special int64) int64 {
	n, T := int64(c.N), int64(len(c.Col))
	G := int64((P + 7) / 8)
	idx := int64(2)
	if c.RateIndex == nil && len(c.Rates) > 0 {
		idx = 4 // rateIndices makes a table of the distinct rates, 4-byte indices past 65,536
	}
	workers := int64(max(1, min(runtime.GOMAXPROCS(0), c.N/4096)))
	tbl := int64(len(c.RateTable))*8 + membudget.Bytes(int64(len(c.Rates)), 12)
	return membudget.Bytes(n, 8*workers+8+8+3*G+8+12) + membudget.Bytes(T, 4+idx) + membudget.Bytes(special, G) + tbl
}

// vectorBytes is what the steps of a block need: two vectors of L lanes
// (8 bytes a state and lane each) and the start's flags.
func vectorBytes(n, L int) int64 { return membudget.Bytes(int64(n), int64(16*L+1)) }

// lanesOf is the number of vector lanes a block of P passages uses.
func lanesOf(P int) int {
	if P == 1 {
		return 1
	}
	return 8 * ((P + 7) / 8)
}

// specialEntries counts the transitions some passage of probs ends by its
// action (the kernel's special entries; target states add none).
func specialEntries(c *ctmc.Chain, probs []Problem) int64 {
	mask := targetMask(probs)
	var n int64
	for _, a := range c.Act {
		if mask.of(a) != 0 {
			n++
		}
	}
	return n
}

// backwardBytes is what solveBackward needs: a rate index per transition
// (2 bytes), four vectors (8 bytes a state each) and the start's states.
func backwardBytes(c *ctmc.Chain) int64 {
	return membudget.Bytes(int64(len(c.Col)), 2) + membudget.Bytes(int64(c.N), 36)
}

// meanBytes bounds what MeanTimes adds to the chain: about 110 bytes a
// state (the system's rates and order, Tarjan's arrays and frames, the
// solution, the sweeps' constants), a bit a transition, and a dense block.
func meanBytes(c *ctmc.Chain) int64 {
	return membudget.Bytes(int64(c.N), 110) + int64(len(c.Col))/8 + membudget.Bytes(int64(denseBlock), int64(denseBlock), 8)
}

// forwardBytes is what the forward iteration of the one passage pr needs:
// its generator and vectors.
func forwardBytes(c *ctmc.Chain, pr Problem) int64 {
	probs := []Problem{pr}
	return kernelBytes(c, 1, specialEntries(c, probs)) + vectorBytes(c.N, 1)
}

// blockPlan is how Solve runs the passages within the budget: in blocks of
// at most size passages, or backward.
type blockPlan struct {
	size     int
	backward bool
}

// planBlocks chooses the largest block (all passages up to maxBlock, 8, 1)
// whose generator and vectors fit in what the budget leaves, counting the
// chain's transitions as returned before the vectors are made where the
// caller lets Solve release them and freed memory counts (not under an
// address-space limit). If none fits, a single passage up to a horizon
// runs backward when that fits (canBackward: the caller found the
// backward path applicable); otherwise the error is the budget's.
func planBlocks(ctx context.Context, c *ctmc.Chain, probs []Problem, opt Options, canBackward bool) (blockPlan, error) {
	b := membudget.FromContext(ctx)
	if b == nil {
		return blockPlan{size: maxBlock}, nil
	}
	special := specialEntries(c, probs)
	released := int64(0)
	if opt.ReleaseChain && !b.AddressSpace {
		released = int64(cap(c.Col))*4 + int64(cap(c.Act))*4 + int64(cap(c.RateIndex))*2 + int64(cap(c.Rates))*8
	}
	need := func(size int) int64 {
		P := min(size, len(probs))
		k := kernelBytes(c, P, special)
		v := vectorBytes(c.N, lanesOf(P))
		if P == len(probs) {
			v = max(0, v-released) // one block, the last: the chain's transitions go first
		}
		return k + v
	}
	// Largest first; a check that fails collects garbage before it
	// says no.
	for i, size := range []int{maxBlock, 8, 1} {
		if i > 0 && size >= len(probs) {
			continue
		}
		if b.Check("", need(size), "") == nil {
			if size < min(maxBlock, len(probs)) {
				membudget.Degrade(ctx, "passage: the %d passages are solved in blocks of %d (each with its own generator and sweeps): all at once would need %s, %s left of the memory budget",
					len(probs), size, membudget.FormatSize(need(maxBlock)), membudget.FormatSize(b.Left()))
			}
			return blockPlan{size: size}, nil
		}
	}
	if canBackward {
		if b.Check("", backwardBytes(c), "") == nil {
			membudget.Degrade(ctx, "passage: the forward iteration would need %s (generator and vectors), %s left of the memory budget: the passage is iterated backward over the chain's own rows instead, up to the horizon",
				membudget.FormatSize(need(1)), membudget.FormatSize(b.Left()))
			return blockPlan{backward: true}, nil
		}
	}
	return blockPlan{}, b.Check(fmt.Sprintf("passage: the generator and vectors of one passage over %d states", c.N), need(1), solveHint())
}
