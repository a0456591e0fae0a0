package passage

import (
	"math/bits"
	"slices"

	"pepa/ctmc"
)

// localityMinStates is the size from which the kernel of a block of
// passages renumbers a chain's states for locality (localityOrder). Below it the vectors of a step fit
// in the last-level cache, where the order makes no difference, and the
// kernel keeps the chain's own numbering. A variable so that tests can
// renumber small chains.
var localityMinStates = 1 << 16

// localityOrder numbers the states of a big chain by their packed local
// states, read as one number with the last component most significant:
// the lexicographic order of the product of the components' local
// states. It returns pos, state i's row in the kernel, or nil where the
// chain keeps its own numbering (small, or built by hand without packed
// states).
//
// Why: the kernel gathers, for every row, the vectors of the states that
// move into it, 64 bytes a group of 8 lanes. A transition changes the
// local states of one component or a few (those that cooperate). In the
// derivation's breadth-first numbering most sources lie in the search's
// previous level, close to their row, but a transition that closes a
// component's cycle (a machine's last application) comes from a state
// many levels further on, and those gathers miss the cache. In this order
// the sources that differ from their row in one component lie that
// component's stride away, whichever way the component moved, so over a
// stretch of rows the gathers run as a few streams. Measured on the
// 28/7 mapping chain, seven passages on both cores: a step 2.0-2.1 ns an
// entry against 2.4-2.6 in the breadth-first numbering, building the
// kernel 0.6 s against 0.18 (BenchmarkKernelOrder; the step's figures
// move with how the vectors' memory is backed, so the test that counts
// is the whole analysis: 9.4 s against 10.6 s, paired runs).
//
// The renumbering changes no number beyond rounding: the kernel's rows
// are a permutation of the chain's states, the sums over rows are taken
// in the kernel's fixed order, and results stay bit-for-bit the same
// whatever GOMAXPROCS.
func localityOrder(c *ctmc.Chain) []int32 {
	n := c.N
	if n < localityMinStates || c.S == nil || c.S.Words < 1 || len(c.States) != n*c.S.Words {
		return nil
	}
	W := c.S.Words
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	if W == 1 {
		order = radixOrder(c.States)
	} else {
		slices.SortFunc(order, func(a, b int32) int {
			sa, sb := c.States[int(a)*W:int(a+1)*W], c.States[int(b)*W:int(b+1)*W]
			for w := W - 1; w >= 0; w-- {
				switch {
				case sa[w] < sb[w]:
					return -1
				case sa[w] > sb[w]:
					return 1
				}
			}
			return int(a - b)
		})
	}
	pos := make([]int32, n)
	for r, i := range order {
		pos[i] = int32(r)
	}
	return pos
}

// radixOrder returns the indices of keys in increasing order of key, equal
// keys in index order: a least-significant-digit radix sort in 11-bit
// digits over the bits the keys use (a mapping chain's packed states use
// three bits a machine: two or three passes, where a comparison sort of
// 700,000 states took 0.14 s).
func radixOrder(keys []uint64) []int32 {
	n := len(keys)
	used := uint64(0)
	for _, k := range keys {
		used |= k
	}
	width := bits.Len64(used)
	const digit = 11
	src, dst := make([]int32, n), make([]int32, n)
	for i := range src {
		src[i] = int32(i)
	}
	var count [1 << digit]int
	for shift := 0; shift < width; shift += digit {
		clear(count[:])
		for _, k := range keys {
			count[k>>uint(shift)&(1<<digit-1)]++
		}
		at := 0
		for d, c := range count {
			count[d] = at
			at += c
		}
		for _, i := range src {
			d := keys[i] >> uint(shift) & (1<<digit - 1)
			dst[count[d]] = i
			count[d]++
		}
		src, dst = dst, src
	}
	return src
}
