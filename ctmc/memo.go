package ctmc

import "math/bits"

// Memoised subtrees (Derive's explorers only).
//
// A subtree's transitions depend only on its own leaves' local states. When
// those leaves' fields lie within a few bits of one word (memoBits), the
// subtree is wrapped in a memoNode that keeps, per value of those bits, the
// list the subtree appends, computed the first time the value is met: a
// breadth-first exploration meets each value of a cluster of a few
// components millions of times. The list, its order and its rates are the
// subtree's own, so the chain is unchanged.
//
// Errors stay exact. A value whose evaluation meets an error (an undefined
// apparent rate, too many transitions) is never stored: the subtree is then
// evaluated in place every time. The per-state transition limit is checked
// by cooperation nodes against the length of the list they append to, which
// for a subtree under a parallel composition includes what its siblings
// listed first; a stored list therefore keeps the position, relative to its
// start, of its last such check (evalError.track), and the memoNode repeats
// that check against the real position.

// memoBits bounds the key of a memoised subtree (a table of 2^memoBits
// entries per explorer).
const memoBits = 12

// memoMaxTransitions bounds the transitions one memoNode stores; values met
// after it is full are evaluated in place.
const memoMaxTransitions = 1 << 18

// memoNode wraps a subtree whose leaves' fields are bits [shift, shift+width)
// of state word word.
type memoNode struct {
	child node
	word  int
	shift uint
	mask  uint64

	status []uint8 // per key: memoUnknown, memoStored or memoInPlace
	start  []int32 // per stored key: first transition in list
	count  []int32 // per stored key: its number of transitions
	check  []int32 // per stored key: position of its last limit check, -1: none
	list   tlist   // the stored lists, back to back
	fill   tlist   // scratch for a first evaluation
	view   tlist   // a stored list handed to a cooperation without a copy
}

const (
	memoUnknown = iota
	memoStored
	memoInPlace
)

// memoEnabled turns memoisation off for tests that compare the two.
var memoEnabled = true

// memoize wraps the largest subtrees of n whose leaves fit a memo key. It
// changes n's inner nodes, so n must be an explorer's own clone.
func memoize(n node, s *Structure) node {
	if _, ok := n.(*constNode); ok || !memoEnabled {
		return n
	}
	if m := newMemoNode(n, s); m != nil {
		return m
	}
	switch m := n.(type) {
	case *parNode:
		for i, k := range m.kids {
			m.kids[i] = memoize(k, s)
		}
	case *hideNode:
		m.child = memoize(m.child, s)
	case *coopNode:
		if sc := newSplitCoop(m, s); sc != nil {
			return sc
		}
		if sc := newSplitCoopX(m, s); sc != nil {
			for _, g := range sc.groups {
				for i, k := range g.kids {
					g.kids[i] = memoize(k, s)
				}
			}
			return sc
		}
		m.x = memoize(m.x, s)
		m.y = memoize(m.y, s)
	case *multiCoopNode:
		for i, k := range m.kids {
			m.kids[i] = memoize(k, s)
		}
	}
	return n
}

// newMemoNode wraps n if its moving leaves' fields lie within memoBits
// bits of one word, else returns nil.
func newMemoNode(n node, s *Structure) *memoNode {
	word, lo, hi := -1, uint(64), uint(0)
	ok := true
	walkLeaves(n, func(l *Leaf) {
		if l.NumLocal <= 1 {
			return
		}
		if word >= 0 && l.word != word {
			ok = false
		}
		word = l.word
		lo = min(lo, l.shift)
		hi = max(hi, l.shift+uint(bits.Len64(l.mask)))
	})
	if !ok || word < 0 || hi-lo > memoBits {
		return nil
	}
	size := 1 << (hi - lo)
	return &memoNode{
		child: n, word: word, shift: lo, mask: uint64(size - 1),
		status: make([]uint8, size), start: make([]int32, size), count: make([]int32, size), check: make([]int32, size),
		list: tlist{w: s.Words}, fill: tlist{w: s.Words}, view: tlist{w: s.Words},
	}
}

// walkLeaves calls f with every leaf of the subtree n.
func walkLeaves(n node, f func(*Leaf)) {
	switch m := n.(type) {
	case *leafNode:
		f(m.leaf)
	case *constNode:
		walkLeaves(m.orig, f)
	case *parNode:
		for _, k := range m.kids {
			walkLeaves(k, f)
		}
	case *hideNode:
		walkLeaves(m.child, f)
	case *coopNode:
		walkLeaves(m.x, f)
		walkLeaves(m.y, f)
	case *multiCoopNode:
		for _, k := range m.kids {
			walkLeaves(k, f)
		}
	case *memoNode:
		walkLeaves(m.child, f)
	case *splitCoop:
		walkLeaves(m.orig, f)
	case *splitCoopX:
		walkLeaves(m.orig, f)
	}
}

// lookup returns the key of state and whether its list is stored, storing
// it first if the key is new and its evaluation is clean.
func (n *memoNode) lookup(state []uint64, limit int) (uint64, bool) {
	key := (state[n.word] >> n.shift) & n.mask
	switch n.status[key] {
	case memoStored:
		return key, true
	case memoInPlace:
		return key, false
	}
	f := &n.fill
	f.reset()
	e := evalError{limit: limit, track: f, lastCheck: -1}
	n.child.eval(state, f, &e)
	if e.mixed || e.overflow || n.list.len()+f.len() > memoMaxTransitions {
		n.status[key] = memoInPlace
		return key, false
	}
	n.status[key] = memoStored
	n.start[key], n.count[key], n.check[key] = int32(n.list.len()), int32(f.len()), int32(e.lastCheck)
	n.list.appendRange(f, 0, f.len())
	return key, true
}

func (n *memoNode) eval(state []uint64, out *tlist, e *evalError) {
	key, ok := n.lookup(state, e.limit)
	if !ok {
		n.child.eval(state, out, e)
		return
	}
	if c := n.check[key]; c >= 0 {
		pos := out.len() + int(c)
		if e.limit > 0 && pos >= e.limit {
			e.overflow = true
			return
		}
		if out == e.track {
			e.lastCheck = max(e.lastCheck, pos)
		}
	}
	i := int(n.start[key])
	out.appendRange(&n.list, i, i+int(n.count[key]))
}

// listOf is list for a memoNode child of a cooperation: the stored list
// itself, without a copy. (The cooperation's own list is fresh, so the
// stored list's limit check, made at position 0, passed when it was stored.)
func (n *memoNode) listOf(state []uint64, scratch *tlist, e *evalError) *tlist {
	key, ok := n.lookup(state, e.limit)
	if !ok {
		scratch.reset()
		n.child.eval(state, scratch, e)
		return scratch
	}
	i, j := int(n.start[key]), int(n.start[key]+n.count[key])
	w := n.list.w
	v := &n.view
	v.act, v.pas, v.rate = n.list.act[i:j], n.list.pas[i:j], n.list.rate[i:j]
	v.delta, v.rdelta = n.list.delta[i*w:j*w], n.list.rdelta[i:j]
	return v
}
