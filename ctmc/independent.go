package ctmc

// LeafTables lists, for a model whose moving leaves never share an action
// through a cooperation, every leaf's transitions by its local state: the
// enabled transitions of a global state are then the union of its leaves'
// entries and a constant list, so a simulation can update one leaf's
// entries per jump instead of evaluating the whole tree.
//
// The shapes recognised are those of mapping models and of plain parallel
// compositions: hidings around either a cooperation between a constant
// subtree (one local state everywhere, the applications) and a parallel
// composition of leaves (the machines) in which each action of the
// cooperation set is performed by at most one leaf, or a parallel
// composition of leaves (or constant subtrees) alone. The entries are
// computed by the same evaluation code as Derive, on a tree holding the
// constant side and one leaf; with at most one leaf performing each shared
// action, that leaf's apparent rate is the whole side's, so the rates are
// exactly Derive's.
type LeafTables struct {
	Leaves []*Leaf
	// Entries of leaf k in local state s are Act[k][i], Rate[k][i],
	// Target[k][i] (leaf-local target) for i in [Start[k][s], Start[k][s+1]).
	Start  [][]int32
	Act    [][]int32
	Rate   [][]float64
	Target [][]int32
	Total  [][]float64 // Total[k][s]: the sum of the rates of leaf k's entries in s
	// Constant transitions are enabled in every state and move nothing.
	ConstAct  []int32
	ConstRate []float64
}

// IndependentLeaves returns the leaf tables of the structure, or false when
// its shape is not one that they describe exactly (or some entry would be
// passive or of undefined apparent rate, which the general evaluation
// reports with the state).
func (s *Structure) IndependentLeaves() (*LeafTables, bool) {
	root := s.exploreRoot()
	var hides []*hideNode
	for {
		h, ok := root.(*hideNode)
		if !ok {
			break
		}
		hides = append(hides, h)
		root = h.child
	}
	rename := func(a int32) int32 {
		for i := len(hides) - 1; i >= 0; i-- {
			if hides[i].isHid[a] {
				a = TauAction
			}
		}
		return a
	}
	lt := &LeafTables{}
	var co *coopNode
	var moving node
	constFirst := false
	switch r := root.(type) {
	case *coopNode:
		cx, isCX := r.x.(*constNode)
		cy, isCY := r.y.(*constNode)
		switch {
		case isCX:
			co, moving, constFirst = r, r.y, true
			for i := 0; i < cx.list.len(); i++ {
				if !r.inSet[cx.list.act[i]] {
					if cx.list.pas[i] {
						return nil, false
					}
					lt.ConstAct = append(lt.ConstAct, rename(cx.list.act[i]))
					lt.ConstRate = append(lt.ConstRate, cx.list.rate[i])
				}
			}
		case isCY:
			co, moving = r, r.x
			for i := 0; i < cy.list.len(); i++ {
				if !r.inSet[cy.list.act[i]] {
					if cy.list.pas[i] {
						return nil, false
					}
					lt.ConstAct = append(lt.ConstAct, rename(cy.list.act[i]))
					lt.ConstRate = append(lt.ConstRate, cy.list.rate[i])
				}
			}
		default:
			return nil, false
		}
	case *parNode, *leafNode, *constNode:
		moving = r
	default:
		return nil, false
	}
	var kids []node
	switch m := moving.(type) {
	case *parNode:
		kids = m.kids
	default:
		kids = []node{m}
	}
	for _, k := range kids {
		switch k := k.(type) {
		case *leafNode:
			lt.Leaves = append(lt.Leaves, k.leaf)
		case *constNode:
			if lf, ok := k.orig.(*leafNode); ok && co != nil {
				// A leaf with one local state (a machine with one
				// application), frozen as constant: still a leaf here.
				lt.Leaves = append(lt.Leaves, lf.leaf)
				continue
			}
			if co != nil {
				return nil, false // its actions might be shared: not described here
			}
			for i := 0; i < k.list.len(); i++ {
				if k.list.pas[i] {
					return nil, false
				}
				lt.ConstAct = append(lt.ConstAct, rename(k.list.act[i]))
				lt.ConstRate = append(lt.ConstRate, k.list.rate[i])
			}
		default:
			return nil, false
		}
	}
	if co != nil {
		performers := map[int32]int{}
		for _, l := range lt.Leaves {
			seen := map[int32]bool{}
			for _, ts := range l.trans {
				for _, t := range ts {
					if co.inSet[t.action] && !seen[t.action] {
						seen[t.action] = true
						performers[t.action]++
					}
				}
			}
		}
		for _, n := range performers {
			if n > 1 {
				return nil, false
			}
		}
	}
	state := make([]uint64, s.Words)
	out := &tlist{w: s.Words}
	for _, l := range lt.Leaves {
		// A tree of the constant side and this leaf alone, evaluated with
		// the cooperation's own code.
		var mini node = &leafNode{leaf: l}
		if co != nil {
			c := &coopNode{set: co.set, inSet: co.inSet}
			c.bx.w, c.by.w = s.Words, s.Words
			if constFirst {
				c.x, c.y = co.x, mini
				c.gx = co.gx
				c.gy.init(len(s.Actions))
			} else {
				c.x, c.y = mini, co.y
				c.gy = co.gy
				c.gx.init(len(s.Actions))
			}
			mini = c
		}
		start := []int32{0}
		var acts, targets []int32
		var rates, totals []float64
		for ls := 0; ls < l.NumLocal; ls++ {
			clear(state)
			l.SetLocal(state, ls)
			out.reset()
			var e evalError
			mini.eval(state, out, &e)
			if e.mixed {
				return nil, false
			}
			// Skip the constant side's unshared transitions: first when it
			// is x, after the leaf's unshared ones when it is y.
			skipFrom, skipTo := 0, 0
			if co != nil {
				if constFirst {
					skipTo = len(lt.ConstAct)
				} else {
					for _, t := range l.trans[ls] {
						if !co.inSet[t.action] {
							skipFrom++
						}
					}
					skipTo = skipFrom + len(lt.ConstAct)
				}
			}
			total := 0.0
			for i := 0; i < out.len(); i++ {
				if i >= skipFrom && i < skipTo {
					continue
				}
				if out.pas[i] {
					return nil, false
				}
				for w := range state {
					state[w] += out.delta[i*s.Words+w]
				}
				target := l.Local(state)
				for w := range state {
					state[w] -= out.delta[i*s.Words+w]
				}
				acts = append(acts, rename(out.act[i]))
				rates = append(rates, out.rate[i])
				targets = append(targets, int32(target))
				total += out.rate[i]
			}
			start = append(start, int32(len(acts)))
			totals = append(totals, total)
		}
		lt.Start = append(lt.Start, start)
		lt.Act = append(lt.Act, acts)
		lt.Rate = append(lt.Rate, rates)
		lt.Target = append(lt.Target, targets)
		lt.Total = append(lt.Total, totals)
	}
	return lt, true
}
