package ctmc

import "math"

// ContextTables generalise LeafTables to models whose moving leaves are
// coupled only through a few context leaves (a shared store, a network):
// every transition moves at most one moving leaf, and its rate depends on
// that leaf's local state and the context's. A state's transitions are
// then the base entries of its context state and, for each moving leaf,
// the entries of its local state in that context.
//
// Moving leaves are the leaves (of more than one local state) that are
// children of a parallel composition; context leaves are the other leaves
// of more than one local state. The tables are exact when, at
// every cooperation, each action of its set is performed (as seen there,
// after hiding) by at most one moving leaf below it: a transition then
// never involves two moving leaves, and pruning every other moving leaf
// from the tree changes neither the existence nor the apparent rates of
// one leaf's transitions. The entries are computed by evaluating such
// pruned trees with Derive's own code, and a leaf's entries are the pruned
// tree's list less the list with every moving leaf pruned (the base).
type ContextTables struct {
	Leaves  []*Leaf // moving leaves
	Context []*Leaf // context leaves; a context state c is their mixed-radix number
	Size    int     // number of context states
	// Entries of moving leaf k in local state s and context c are index
	// i in [Start[k][s*Size+c], Start[k][s*Size+c+1]): action, rate, the
	// leaf's target local state and the target context.
	Start     [][]int32
	Act       [][]int32
	Rate      [][]float64
	Target    [][]int32
	TargetCtx [][]int32
	Total     [][]float64 // by s*Size+c
	// Base entries of context c: BaseStart[c] to BaseStart[c+1].
	BaseStart     []int32
	BaseAct       []int32
	BaseRate      []float64
	BaseTargetCtx []int32
	BaseTotal     []float64
}

// maxContext bounds the context states and maxEntries the table sizes.
const (
	maxContext = 4096
	maxEntries = 1 << 24
)

// emptyNode stands for a pruned leaf: it enables nothing.
type emptyNode struct{}

func (emptyNode) eval([]uint64, *tlist, *evalError) {}

// ContextTables returns the context tables of the structure, or false when
// the condition above does not hold (or the tables would be too large, or
// some entry is passive or of undefined apparent rate).
func (s *Structure) ContextTables() (*ContextTables, bool) {
	root := s.exploreRoot()
	ct := &ContextTables{}
	moving := map[*Leaf]bool{}
	var findMoving func(n node)
	findMoving = func(n node) {
		switch m := n.(type) {
		case *parNode:
			var ls []*Leaf
			for _, k := range m.kids {
				if lf, ok := k.(*leafNode); ok && lf.leaf.NumLocal > 1 {
					ls = append(ls, lf.leaf)
				} else {
					findMoving(k)
				}
			}
			if len(ls) >= 1 {
				for _, l := range ls {
					moving[l] = true
				}
			}
		case *coopNode:
			findMoving(m.x)
			findMoving(m.y)
		case *hideNode:
			findMoving(m.child)
		}
	}
	findMoving(root)
	for _, l := range s.Leaves {
		switch {
		case moving[l]:
			ct.Leaves = append(ct.Leaves, l)
		case l.NumLocal > 1:
			ct.Context = append(ct.Context, l)
		}
	}
	if len(ct.Leaves) == 0 {
		return nil, false
	}
	ct.Size = 1
	for _, l := range ct.Context {
		ct.Size *= l.NumLocal
		if ct.Size > maxContext {
			return nil, false
		}
	}
	// performers returns, per action as seen at n, the moving leaves below
	// n that perform it; ok is false if some cooperation has two.
	var performers func(n node) (map[int32]map[*Leaf]bool, bool)
	performers = func(n node) (map[int32]map[*Leaf]bool, bool) {
		out := map[int32]map[*Leaf]bool{}
		add := func(a int32, l *Leaf) {
			if out[a] == nil {
				out[a] = map[*Leaf]bool{}
			}
			out[a][l] = true
		}
		switch m := n.(type) {
		case *leafNode:
			if moving[m.leaf] {
				for _, ts := range m.leaf.trans {
					for _, t := range ts {
						add(t.action, m.leaf)
					}
				}
			}
		case *parNode:
			for _, k := range m.kids {
				sub, ok := performers(k)
				if !ok {
					return nil, false
				}
				for a, ls := range sub {
					for l := range ls {
						add(a, l)
					}
				}
			}
		case *hideNode:
			sub, ok := performers(m.child)
			if !ok {
				return nil, false
			}
			for a, ls := range sub {
				if m.isHid[a] {
					a = TauAction
				}
				for l := range ls {
					add(a, l)
				}
			}
		case *coopNode:
			for _, side := range []node{m.x, m.y} {
				sub, ok := performers(side)
				if !ok {
					return nil, false
				}
				for a, ls := range sub {
					for l := range ls {
						add(a, l)
					}
				}
			}
			for a, ls := range out {
				if m.inSet[a] && len(ls) > 1 {
					return nil, false
				}
			}
		}
		return out, true
	}
	if _, ok := performers(root); !ok {
		return nil, false
	}
	// prune copies the tree with every moving leaf but keep replaced by
	// an empty node (keep nil: all of them).
	var prune func(n node, keep *Leaf) node
	prune = func(n node, keep *Leaf) node {
		switch m := n.(type) {
		case *leafNode:
			if moving[m.leaf] && m.leaf != keep {
				return emptyNode{}
			}
			return m
		case *parNode:
			kids := make([]node, len(m.kids))
			for i, k := range m.kids {
				kids[i] = prune(k, keep)
			}
			return &parNode{kids: kids}
		case *hideNode:
			return &hideNode{child: prune(m.child, keep), hidden: m.hidden, isHid: m.isHid}
		case *coopNode:
			c := &coopNode{x: prune(m.x, keep), y: prune(m.y, keep), set: m.set, inSet: m.inSet}
			c.bx.w, c.by.w = m.bx.w, m.by.w
			c.gx, c.gy = cloneGrouping(&m.gx), cloneGrouping(&m.gy)
			return c
		}
		return n
	}
	w := s.Words
	state := make([]uint64, w)
	target := make([]uint64, w)
	setContext := func(c int) {
		for _, l := range ct.Context {
			l.SetLocal(state, c%l.NumLocal)
			c /= l.NumLocal
		}
	}
	contextOf := func(st []uint64) int {
		c, stride := 0, 1
		for _, l := range ct.Context {
			c += l.Local(st) * stride
			stride *= l.NumLocal
		}
		return c
	}
	type entry struct {
		act   int32
		rate  float64
		delta string
	}
	key := func(out *tlist, i int) entry {
		b := make([]byte, 0, 8*w)
		for _, d := range out.delta[i*w : (i+1)*w] {
			for k := 0; k < 8; k++ {
				b = append(b, byte(d>>(8*k)))
			}
		}
		return entry{out.act[i], out.rate[i], string(b)}
	}
	out := &tlist{w: w}
	base := prune(root, nil)
	baseLists := make([]map[entry]int, ct.Size)
	ct.BaseStart = []int32{0}
	for c := 0; c < ct.Size; c++ {
		clear(state)
		setContext(c)
		out.reset()
		var e evalError
		base.eval(state, out, &e)
		if e.mixed {
			return nil, false
		}
		baseLists[c] = map[entry]int{}
		total := 0.0
		for i := 0; i < out.len(); i++ {
			if out.pas[i] {
				return nil, false
			}
			baseLists[c][key(out, i)]++
			for k := range target {
				target[k] = state[k] + out.delta[i*w+k]
			}
			ct.BaseAct = append(ct.BaseAct, out.act[i])
			ct.BaseRate = append(ct.BaseRate, out.rate[i])
			ct.BaseTargetCtx = append(ct.BaseTargetCtx, int32(contextOf(target)))
			total += out.rate[i]
		}
		ct.BaseStart = append(ct.BaseStart, int32(len(ct.BaseAct)))
		ct.BaseTotal = append(ct.BaseTotal, total)
	}
	entries := 0
	for _, l := range ct.Leaves {
		tree := prune(root, l)
		start := []int32{0}
		var acts, targets, tctx []int32
		var rates, totals []float64
		for ls := 0; ls < l.NumLocal; ls++ {
			for c := 0; c < ct.Size; c++ {
				clear(state)
				setContext(c)
				l.SetLocal(state, ls)
				out.reset()
				var e evalError
				tree.eval(state, out, &e)
				if e.mixed {
					return nil, false
				}
				left := map[entry]int{}
				for k, v := range baseLists[c] {
					left[k] = v
				}
				total := 0.0
				before := len(acts)
				for i := 0; i < out.len(); i++ {
					if k := key(out, i); left[k] > 0 {
						left[k]--
						continue // a base entry
					}
					if out.pas[i] {
						return nil, false
					}
					for k := range target {
						target[k] = state[k] + out.delta[i*w+k]
					}
					acts = append(acts, out.act[i])
					rates = append(rates, out.rate[i])
					targets = append(targets, int32(l.Local(target)))
					tctx = append(tctx, int32(contextOf(target)))
					total += out.rate[i]
				}
				for _, v := range left {
					if v != 0 {
						return nil, false // the leaf blocked a base entry: not this shape
					}
				}
				start = append(start, int32(len(acts)))
				totals = append(totals, total)
				if entries += len(acts) - before; entries > maxEntries || math.IsInf(total, 0) {
					return nil, false
				}
			}
		}
		ct.Start = append(ct.Start, start)
		ct.Act = append(ct.Act, acts)
		ct.Rate = append(ct.Rate, rates)
		ct.Target = append(ct.Target, targets)
		ct.TargetCtx = append(ct.TargetCtx, tctx)
		ct.Total = append(ct.Total, totals)
	}
	return ct, true
}
