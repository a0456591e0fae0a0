package steady

import "pepa/internal/membudget"

// What the steady-state stages allocate, for the budget checks made
// before each (membudget): upper bounds from the chain's states N, the
// closed class's n states and its T transitions.

// steadyHint is what an over-budget error of Solve suggests.
const steadyHint = "the steady state needs the chain and several vectors over it: give more memory with {Memory} if the machine has it, or estimate by simulation ({SimulateVerb})"

// sccBytes: Tarjan's index, low, component (4 bytes each), on-stack flag,
// the stack and the call frames (at most 4 + 16 bytes a state), and the
// closed-class flags and list.
func sccBytes(N int) int64 { return membudget.Bytes(int64(N), 38) }

// reachBytes: reachOne's bitset and queue (at most 4 bytes and a bit a
// state) and the one class's list of states (4).
func reachBytes(N int) int64 { return membudget.Bytes(int64(N), 9) }

// generatorBytes: the renumbering (4 bytes a chain state); exit rates, two
// row-pointer arrays and the fill cursors (8 bytes a class state each);
// the outgoing rates (8 bytes a transition) and the incoming sources and
// rates (12).
func generatorBytes(N, n int, T int64) int64 {
	return membudget.Bytes(int64(N), 4) + membudget.Bytes(int64(n), 32) + membudget.Bytes(T, 20)
}

// iluBytes: A and the ILU(0) factors of its transpose on A's pattern (at
// most T + n entries: 12 bytes each for A, 12 for the factors, 8 for
// their scaled copy), their row pointers and diagonal (8 bytes a state
// each, four arrays), the start vector, the scalings, the pivot leaks and
// positions, and BiCGSTAB's eleven work vectors (8 bytes a state each).
func iluBytes(n int, T int64) int64 {
	nnz := T + int64(n)
	return membudget.Bytes(nnz, 32) + membudget.Bytes(int64(n), 8*(4+1+2+2+11)+1)
}

// gthBytes: the dense matrix (8 bytes per pair of states) and a few
// vectors.
func gthBytes(n int) int64 {
	return membudget.Bytes(int64(n), int64(n), 8) + membudget.Bytes(int64(n), 48)
}

// refineBytes: the residual, the correction and the scaled system's
// vectors of the refinement (8 bytes a class state each), and the result
// over the chain's states.
func refineBytes(N, n int) int64 {
	return membudget.Bytes(int64(n), 40) + membudget.Bytes(int64(N), 8)
}

// sweepBytes: Gauss-Seidel's probabilities and inflows over the chain's
// states (8 bytes each), and the cross-block changes when the sweep is
// cut in two.
func sweepBytes(N int, twoBlocks bool) int64 {
	per := int64(16)
	if twoBlocks {
		per = 24
	}
	return membudget.Bytes(int64(N), per)
}
