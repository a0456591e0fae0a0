package ctmc

import "fmt"

// Evaluator lists the transitions enabled in one packed state at a time,
// without building the state space, for simulation. It holds its own copy
// of the evaluation tree's scratch buffers (the tree itself is read-only
// once frozen, but every cooperation node groups its children's
// transitions in buffers of its own), so each goroutine needs its own
// Evaluator; leaves and constant subtrees are shared read-only.
type Evaluator struct {
	s    *Structure
	root node
	e    evalError
}

// NewEvaluator returns an evaluator over the structure's tree.
func (s *Structure) NewEvaluator() *Evaluator {
	return &Evaluator{s: s, root: cloneTree(s.exploreRoot())}
}

// Transitions is the list of transitions enabled in a state, reused from
// call to call (no allocation per state once it has grown).
type Transitions struct {
	list tlist
}

// Len is the number of enabled transitions.
func (t *Transitions) Len() int { return t.list.len() }

// Action is the action id of transition i.
func (t *Transitions) Action(i int) int32 { return t.list.act[i] }

// Rates are the rates of the transitions, in order (read-only).
func (t *Transitions) Rates() []float64 { return t.list.rate }

// Apply moves state (packed, as given to Enabled) to the target of
// transition i, in place.
func (t *Transitions) Apply(i int, state []uint64) {
	w := t.list.w
	d := t.list.delta[i*w : (i+1)*w]
	for k := range state {
		state[k] += d[k]
	}
}

// Enabled fills buf with the transitions enabled in a packed state (Words
// words), in the same order and with the same rates as Derive computes them
// (two activities with one action and target are not merged here: they are
// separate entries whose rates add up to the chain's transition). It fails
// where Derive would: an action enabled both actively and passively by one
// side of a cooperation, or a passive activity at the top level.
func (ev *Evaluator) Enabled(state []uint64, buf *Transitions) error {
	if len(state) != ev.s.Words {
		return fmt.Errorf("ctmc: packed state has %d words, the structure %d", len(state), ev.s.Words)
	}
	buf.list.w = ev.s.Words
	buf.list.reset()
	ev.root.eval(state, &buf.list, &ev.e)
	if ev.e.mixed {
		a := ev.e.action
		ev.e = evalError{}
		return fmt.Errorf("in state (%s): action %s is enabled both actively and passively by one side of a cooperation, so its apparent rate is undefined",
			joinNames(ev.s.StateNames(state)), ev.s.Actions[a])
	}
	for k, p := range buf.list.pas {
		if p {
			return fmt.Errorf("in state (%s): action %s is passive and never synchronised with an active partner",
				joinNames(ev.s.StateNames(state)), ev.s.Actions[buf.list.act[k]])
		}
	}
	return nil
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// SetLocal sets the leaf's local state in a packed state.
func (l *Leaf) SetLocal(state []uint64, s int) {
	state[l.word] = state[l.word]&^(l.mask<<l.shift) | (uint64(s)&l.mask)<<l.shift
}

// cloneTree copies the mutable parts of a frozen tree: the cooperation
// nodes' scratch lists and per-state groupings. Leaves, constant nodes and
// constant groupings are only read during evaluation and stay shared.
func cloneTree(n node) node {
	switch m := n.(type) {
	case *parNode:
		kids := make([]node, len(m.kids))
		for i, k := range m.kids {
			kids[i] = cloneTree(k)
		}
		return &parNode{kids: kids}
	case *hideNode:
		return &hideNode{child: cloneTree(m.child), hidden: m.hidden, isHid: m.isHid}
	case *coopNode:
		c := &coopNode{x: cloneTree(m.x), y: cloneTree(m.y), set: m.set, inSet: m.inSet}
		c.bx.w, c.by.w = m.bx.w, m.by.w
		c.gx, c.gy = cloneGrouping(&m.gx), cloneGrouping(&m.gy)
		return c
	case *multiCoopNode:
		c := &multiCoopNode{kids: make([]node, len(m.kids)), set: m.set, inSet: m.inSet,
			bufs: make([]tlist, len(m.kids)), groups: make([]grouping, len(m.kids)),
			lists: make([]*tlist, len(m.kids)), pick: make([]int32, len(m.kids))}
		for k, kid := range m.kids {
			c.kids[k] = cloneTree(kid)
			c.bufs[k].w = m.bufs[k].w
			c.groups[k] = cloneGrouping(&m.groups[k])
		}
		return c
	}
	return n // leafNode, constNode: read-only
}

func cloneGrouping(g *grouping) grouping {
	if g.constant {
		return *g // built once at freeze time, read-only since
	}
	var out grouping
	out.init(len(g.stamp))
	return out
}
