package ctmc

import (
	"fmt"
)

// Independent parts.
//
// A leaf is inert when it has one local state and only passive activities:
// it never moves, and a partner's activity that synchronises with it keeps
// its rate (PEPA's rule gives r * w/W summed over the inert leaf's W, that is
// r) and its target. Every other leaf is active. Decompose accepts a model
// when
//
//  1. no two active leaves perform the same action,
//  2. no active leaf has a passive activity (its partner would have to be
//     another active leaf, or it would stay passive at the top), and
//
// then, in every global state, the transitions that move active leaf L are
// exactly L's local activities, less those blocked for good by a cooperation
// whose other side contains no inert performer of the action, with actions
// renamed to tau by the hidings above L. Other active leaves never take
// part (condition 1) and inert ones never change (they have one state). So
// the model's chain is the product of the parts' chains, each moving on its
// own: the parts are independent, and any passage whose start and target
// concern one part has the same distribution on that part's chain as on the
// product. Tests in decompose_test.go check this against the product.

// Part is one active leaf with the chain of its local moves.
type Part struct {
	Leaf  *Leaf
	Chain *Chain
	// Blocked lists the leaf's actions that a cooperation blocks for good.
	Blocked []string
}

// NotDecomposableError says why a model's leaves are not independent.
type NotDecomposableError struct{ Reason string }

func (e *NotDecomposableError) Error() string {
	return "the model does not decompose into independent parts: " + e.Reason
}

// Decompose returns the independent parts of s (one per active leaf, in
// leaf order), or a *NotDecomposableError.
func Decompose(s *Structure) ([]*Part, error) {
	owner := map[int32]*Leaf{}
	var active []*Leaf
	for _, l := range s.Leaves {
		if isInert(l) {
			continue
		}
		active = append(active, l)
		for st := 0; st < l.NumLocal; st++ {
			for _, t := range l.trans[st] {
				if t.passive {
					return nil, &NotDecomposableError{fmt.Sprintf("component %s performs %s passively", l.Name, s.Actions[t.action])}
				}
				if t.action == TauAction {
					continue
				}
				if o, ok := owner[t.action]; ok && o != l {
					return nil, &NotDecomposableError{fmt.Sprintf("components %s and %s both perform action %s", o.Name, l.Name, s.Actions[t.action])}
				}
				owner[t.action] = l
			}
		}
	}
	if len(active) == 0 {
		return nil, &NotDecomposableError{"no component ever moves"}
	}
	// Walk the tree once, carrying for each leaf the renaming and blocking
	// met on its way to the root.
	paths := map[*Leaf]*leafEffect{}
	collectEffects(s, s.root, paths)
	parts := make([]*Part, 0, len(active))
	for _, l := range active {
		eff := paths[l]
		if eff == nil {
			eff = &leafEffect{}
		}
		p := &Part{Leaf: l, Chain: leafChain(s, l, eff)}
		for a := range eff.blocked {
			p.Blocked = append(p.Blocked, s.Actions[a])
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// OwnChain returns the chain of a moving leaf's own moves, as Decompose's
// parts have it (blocked activities left out, hidden ones renamed), when
// the leaf forms a group of its own (Groups) and has no passive activity:
// then no other leaf moves with it, and its chain is its part of the
// model's. ok is false when it has a passive activity or is inert. The
// caller vouches for the group. Safe for concurrent use.
func (s *Structure) OwnChain(l *Leaf) (*Chain, bool) {
	if isInert(l) {
		return nil, false
	}
	for _, ts := range l.trans {
		for _, t := range ts {
			if t.passive {
				return nil, false
			}
		}
	}
	s.effectsOnce.Do(func() {
		s.effects = map[*Leaf]*leafEffect{}
		collectEffects(s, s.root, s.effects)
	})
	eff := s.effects[l]
	if eff == nil {
		eff = &leafEffect{}
	}
	return leafChain(s, l, eff), true
}

func isInert(l *Leaf) bool {
	if l.NumLocal != 1 {
		return false
	}
	for _, t := range l.trans[0] {
		if !t.passive {
			return false
		}
	}
	return true
}

// leafEffect is what the tree above a leaf does to its actions.
type leafEffect struct {
	rename  map[int32]int32 // original action -> action as seen at the root
	blocked map[int32]bool  // original actions blocked for good
}

// collectEffects computes, for every leaf under n, the renaming and blocking
// of its actions by the nodes from the leaf up to n.
func collectEffects(s *Structure, n node, out map[*Leaf]*leafEffect) []*Leaf {
	switch m := n.(type) {
	case *constNode:
		return collectEffects(s, m.orig, out)
	case *leafNode:
		out[m.leaf] = &leafEffect{rename: map[int32]int32{}, blocked: map[int32]bool{}}
		return []*Leaf{m.leaf}
	case *parNode:
		var all []*Leaf
		for _, k := range m.kids {
			all = append(all, collectEffects(s, k, out)...)
		}
		return all
	case *hideNode:
		leaves := collectEffects(s, m.child, out)
		for _, l := range leaves {
			eff := out[l]
			for _, a := range leafActions(l) {
				if eff.blocked[a] {
					continue
				}
				if cur := eff.current(a); m.hidden[cur] {
					eff.rename[a] = TauAction
				}
			}
		}
		return leaves
	case *coopNode:
		xl := collectEffects(s, m.x, out)
		yl := collectEffects(s, m.y, out)
		ax, ay := liveAlphabet(xl, out), liveAlphabet(yl, out)
		block := func(leaves []*Leaf, other map[int32]bool) {
			for _, l := range leaves {
				eff := out[l]
				for _, a := range leafActions(l) {
					if cur := eff.current(a); m.set[cur] && !other[cur] {
						eff.blocked[a] = true
					}
				}
			}
		}
		block(xl, ay)
		block(yl, ax)
		return append(xl, yl...)
	case *multiCoopNode:
		// A shared action is blocked for a kid unless every other kid
		// performs it.
		performers := map[int32]int{}
		alphas := make([]map[int32]bool, len(m.kids))
		var all []*Leaf
		kidLeaves := make([][]*Leaf, len(m.kids))
		for k, kid := range m.kids {
			kidLeaves[k] = collectEffects(s, kid, out)
			all = append(all, kidLeaves[k]...)
			alphas[k] = liveAlphabet(kidLeaves[k], out)
			for a := range alphas[k] {
				performers[a]++
			}
		}
		for k, leaves := range kidLeaves {
			for _, l := range leaves {
				eff := out[l]
				for _, a := range leafActions(l) {
					cur := eff.current(a)
					others := performers[cur]
					if alphas[k][cur] {
						others--
					}
					if m.set[cur] && others < len(m.kids)-1 {
						eff.blocked[a] = true
					}
				}
			}
		}
		return all
	}
	return nil
}

// liveAlphabet is the actions the leaves can still perform as seen above
// the subtree whose effects out holds: renamed by its hidings, less those
// its cooperations block for good. A cooperation above must not count an
// action blocked below as performed (Q's s1 in ((P/{p2}) <s1> Q) <s1> R:
// R's s1 is blocked too; the syntactic alphabet made R a part that cycles
// through s1; differential seed 900397).
func liveAlphabet(leaves []*Leaf, out map[*Leaf]*leafEffect) map[int32]bool {
	live := map[int32]bool{}
	for _, l := range leaves {
		eff := out[l]
		for _, a := range leafActions(l) {
			if !eff.blocked[a] {
				live[eff.current(a)] = true
			}
		}
	}
	return live
}

func (e *leafEffect) current(a int32) int32 {
	if r, ok := e.rename[a]; ok {
		return r
	}
	return a
}

func leafActions(l *Leaf) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for st := 0; st < l.NumLocal; st++ {
		for _, t := range l.trans[st] {
			if !seen[t.action] {
				seen[t.action] = true
				out = append(out, t.action)
			}
		}
	}
	return out
}

// leafChain builds the chain of a leaf's own moves: its local states
// reachable from the initial one in breadth-first order, with its
// activities (blocked ones left out, hidden ones renamed). The chain's
// structure has the one leaf, so state names read as usual.
func leafChain(s *Structure, l *Leaf, eff *leafEffect) *Chain {
	pl := *l
	pl.word, pl.shift, pl.mask = 0, 0, ^uint64(0)
	ps := &Structure{Actions: s.Actions, actionID: s.actionID, Leaves: []*Leaf{&pl}, Words: 1, RadixSize: int64(l.NumLocal)}
	pl.stride = 1
	c := &Chain{S: ps, RowPtr: []int64{0}}
	index := map[int]int32{0: 0}
	order := []int{0}
	for i := 0; i < len(order); i++ {
		st := order[i]
		for _, t := range l.trans[st] {
			if eff.blocked[t.action] {
				continue
			}
			j, ok := index[int(t.target)]
			if !ok {
				j = int32(len(order))
				index[int(t.target)] = j
				order = append(order, int(t.target))
			}
			c.Col = append(c.Col, j)
			c.Rates = append(c.Rates, t.rate)
			c.Act = append(c.Act, eff.current(t.action))
		}
		if c.RowPtr[len(c.RowPtr)-1] == int64(len(c.Col)) {
			c.Deadlocks = append(c.Deadlocks, int32(i))
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	}
	c.N = len(order)
	c.States = make([]uint64, c.N)
	for i, st := range order {
		c.States[i] = uint64(st)
	}
	return c
}
