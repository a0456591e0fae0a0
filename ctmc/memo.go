package ctmc

import (
	"math"
	"math/bits"
)

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

// memoBits bounds the key of a memoised subtree indexed directly (a table
// of 2^memoBits entries per explorer), and a split cooperation's groups.
const memoBits = 12

// Wide memoised subtrees. A subtree whose moving leaves lie within one word
// but span more than memoDenseBits bits is memoised as well when the other
// leaves' local states multiply to memoWideReuse or more (the subtree's
// values then recur at least that often in the product, on average):
// its keys, the whole span of its bits, are found in a hash table that
// holds only the keys met (wideTable). The two sides of a cooperation
// whose parts share nothing (ws-6-5-4-4's readers and writers, 12 bits,
// against its servers, failure counter and buffer, 18 bits) are then both
// looked up, where the wider side was evaluated afresh in every state: 2
// of the 3 cooperations a state took. Variables so that tests can make
// small subtrees wide.
var (
	memoDenseBits         = memoBits
	memoWideReuse float64 = 64
)

// memoMaxTransitions bounds the transitions one memoNode stores; values met
// after it is full are evaluated in place.
const memoMaxTransitions = 1 << 18

// memoMaxKeys bounds the keys a wide memoNode's table holds (at most 2^19
// entries of 12 bytes: values whose lists are empty take no transitions);
// keys met after it is full are evaluated in place.
const memoMaxKeys = 1 << 18

// memoNode wraps a subtree whose leaves' fields are bits [shift, shift+width)
// of state word word.
type memoNode struct {
	child node
	word  int
	shift uint
	mask  uint64

	// A narrow node's key indexes status, start, count and check; a wide
	// node's key is found in wide, which gives it a slot, the index of
	// its entries in start, count and check.
	status []uint8 // per key: memoUnknown, memoStored or memoInPlace
	wide   *wideTable
	start  []int32 // per stored key: first transition in list
	count  []int32 // per stored key: its number of transitions
	check  []int32 // per stored key: position of its last limit check, -1: none
	list   tlist   // the stored lists, back to back
	fill   tlist   // scratch for a first evaluation
	view   tlist   // a stored list handed to a cooperation without a copy
}

// wideTable maps the keys of a wide memoNode to their slots: open
// addressing on the key's hash, grown at half full. A value is the slot +
// 1, or -1 for a key evaluated in place; 0 is an empty entry. Once the
// stored lists or the table are full (memoMaxTransitions, memoMaxKeys),
// keys met for the first time are evaluated in place without an entry.
type wideTable struct {
	keys []uint64
	vals []int32
	bits uint // log2 of the table's size
	n    int  // entries
	full bool
}

func newWideTable() *wideTable {
	const initial = 10
	return &wideTable{keys: make([]uint64, 1<<initial), vals: make([]int32, 1<<initial), bits: initial}
}

// find returns the position of key in the table and its value (0: absent,
// the position then the empty entry where it would go).
func (t *wideTable) find(key uint64) (int, int32) {
	mask := len(t.keys) - 1
	for i := int((key * 0x9E3779B97F4A7C15) >> (64 - t.bits)); ; i = (i + 1) & mask {
		v := t.vals[i]
		if v == 0 || t.keys[i] == key {
			return i, v
		}
	}
}

// put sets the value of key, absent at position i (from find).
func (t *wideTable) put(i int, key uint64, v int32) {
	t.keys[i], t.vals[i] = key, v
	t.n++
	if 2*t.n <= len(t.keys) {
		return
	}
	keys, vals := t.keys, t.vals
	t.bits++
	t.keys, t.vals = make([]uint64, 1<<t.bits), make([]int32, 1<<t.bits)
	for k, v := range vals {
		if v != 0 {
			j, _ := t.find(keys[k])
			t.keys[j], t.vals[j] = keys[k], v
		}
	}
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

// newMemoNode wraps n if its moving leaves' fields lie within
// memoDenseBits bits of one word, or within one word with values that
// recur often enough (memoWideReuse), else returns nil.
func newMemoNode(n node, s *Structure) *memoNode {
	word, lo, hi := -1, uint(64), uint(0)
	ok := true
	inside := 1.0 // the product of the subtree's local state counts
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
		inside *= float64(l.NumLocal)
	})
	if !ok || word < 0 {
		return nil
	}
	m := &memoNode{child: n, word: word, shift: lo, list: tlist{w: s.Words}, fill: tlist{w: s.Words}, view: tlist{w: s.Words}}
	if hi-lo <= uint(memoDenseBits) {
		size := 1 << (hi - lo)
		m.mask = uint64(size - 1)
		m.status, m.start, m.count, m.check = make([]uint8, size), make([]int32, size), make([]int32, size), make([]int32, size)
		return m
	}
	all := 1.0
	for _, l := range s.Leaves {
		all *= float64(l.NumLocal)
	}
	if all/inside < memoWideReuse {
		return nil
	}
	m.mask = math.MaxUint64 >> (64 - (hi - lo))
	m.wide = newWideTable()
	return m
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

// lookup returns the index of state's key in start, count and check, and
// whether its list is stored, storing it first if the key is new and its
// evaluation is clean.
func (n *memoNode) lookup(state []uint64, limit int) (int, bool) {
	key := (state[n.word] >> n.shift) & n.mask
	at := 0 // a wide key's position in its table
	if n.wide == nil {
		switch n.status[key] {
		case memoStored:
			return int(key), true
		case memoInPlace:
			return 0, false
		}
	} else {
		var v int32
		at, v = n.wide.find(key)
		switch {
		case v > 0:
			return int(v - 1), true
		case v < 0 || n.wide.full:
			return 0, false
		}
	}
	f := &n.fill
	f.reset()
	e := evalError{limit: limit, track: f, lastCheck: -1}
	n.child.eval(state, f, &e)
	full := n.list.len()+f.len() > memoMaxTransitions || (n.wide != nil && n.wide.n >= memoMaxKeys)
	if e.mixed || e.overflow || full {
		if n.wide == nil {
			n.status[key] = memoInPlace
		} else if full {
			n.wide.full = true
		} else {
			n.wide.put(at, key, -1)
		}
		return 0, false
	}
	start, count, check := int32(n.list.len()), int32(f.len()), int32(e.lastCheck)
	n.list.appendRange(f, 0, f.len())
	if n.wide == nil {
		n.status[key] = memoStored
		n.start[key], n.count[key], n.check[key] = start, count, check
		return int(key), true
	}
	slot := len(n.start)
	n.start, n.count, n.check = append(n.start, start), append(n.count, count), append(n.check, check)
	n.wide.put(at, key, int32(slot)+1)
	return slot, true
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
