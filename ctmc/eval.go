package ctmc

import "math"

// The transitions enabled in a global state are computed bottom-up over the
// compiled tree, in reusable buffers (no allocation per state once the
// buffers have grown). A transition carries its action, its rate (or its
// passive weight) and the change it makes to the packed state as a
// per-word delta: the sum of (new - old) << shift over the leaves it moves.
// Adding the delta to the packed state with wrapping arithmetic gives the
// target state exactly, because each field's final value is in range.

// tlist is a list of transitions in struct-of-arrays form.
type tlist struct {
	w      int
	act    []int32
	pas    []bool
	rate   []float64
	delta  []uint64 // w words per transition
	rdelta []int64  // change of the state's mixed-radix number (see Leaf.stride)
}

func (t *tlist) reset() {
	t.act, t.pas, t.rate, t.delta, t.rdelta = t.act[:0], t.pas[:0], t.rate[:0], t.delta[:0], t.rdelta[:0]
}

func (t *tlist) len() int { return len(t.act) }

// appendRange appends transitions i..j-1 of u.
func (t *tlist) appendRange(u *tlist, i, j int) {
	if cap(t.act)-len(t.act) < j-i {
		t.grow(j - i)
	}
	t.act = append(t.act, u.act[i:j]...)
	t.pas = append(t.pas, u.pas[i:j]...)
	t.rate = append(t.rate, u.rate[i:j]...)
	t.delta = append(t.delta, u.delta[i*u.w:j*u.w]...)
	t.rdelta = append(t.rdelta, u.rdelta[i:j]...)
}

// grow makes room for n more transitions, doubling the lists (see
// doubled).
func (t *tlist) grow(n int) {
	t.act, t.pas, t.rate = doubled(t.act, n), doubled(t.pas, n), doubled(t.rate, n)
	t.delta, t.rdelta = doubled(t.delta, n*t.w), doubled(t.rdelta, n)
}

// doubled returns s with room for n more elements: s itself if it has
// it, else a copy in an array of twice the capacity (or more, to fit).
// Append grows a large slice by about a quarter, so that a buffer that
// grows to megabytes allocates, and first touches, about five times its
// final size: on ws-6-5-4-4, 42 MB for the pieces' rows and the memoised
// lists, a page fault per 4 KB, where doubling touches about twice it.
func doubled[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), max(2*cap(s), len(s)+n, 64))
	copy(out, s)
	return out
}

// appendUnshared appends the transitions of u whose action is not in set,
// in order, a run at a time.
func (t *tlist) appendUnshared(u *tlist, inSet []bool) {
	n := u.len()
	for i := 0; i < n; {
		if inSet[u.act[i]] {
			i++
			continue
		}
		j := i + 1
		for j < n && !inSet[u.act[j]] {
			j++
		}
		t.appendRange(u, i, j)
		i = j
	}
}

// copyFrom appends transition i of u.
func (t *tlist) copyFrom(u *tlist, i int) {
	t.act = append(t.act, u.act[i])
	t.pas = append(t.pas, u.pas[i])
	t.rate = append(t.rate, u.rate[i])
	t.delta = append(t.delta, u.delta[i*u.w:(i+1)*u.w]...)
	t.rdelta = append(t.rdelta, u.rdelta[i])
}

// evalError records the first semantic error met during exploration: an
// action enabled both actively and passively by one side of a cooperation,
// for which PEPA defines no apparent rate.
//
// It also bounds the transitions of one state: a cooperation of many copies
// on an action each enables several ways has as many joint transitions as
// the product of their counts, and the list of one state must not outgrow
// the memory --max-states promises.
type evalError struct {
	mixed  bool
	action int32
	// limit bounds the transitions listed for one state (0: none);
	// overflow is set, and the listing cut short, when it is exceeded.
	limit    int
	overflow bool
	// track, if not nil, is a list being stored by a memoNode, and
	// lastCheck the largest position of it at which a limit check was
	// made (-1: none), to be repeated where the stored list is used.
	track     *tlist
	lastCheck int
}

// checked records that the limit was checked on out at every position up
// to out.len()-1 (a cooperation's joint transitions were appended).
func (e *evalError) checked(out *tlist, from int) {
	if out == e.track && out.len() > from {
		e.lastCheck = max(e.lastCheck, out.len()-1)
	}
}

// transitionLimit is the number of transitions one state may have under a
// state limit: a state's list costs about as much per transition as the
// chain per state, so four times the state limit (at least 65536).
func transitionLimit(maxStates int) int {
	if maxStates <= 0 {
		return 0
	}
	return max(4*maxStates, 1<<16)
}

type node interface {
	// eval appends the transitions enabled in state to out.
	eval(state []uint64, out *tlist, e *evalError)
}

type leafNode struct {
	leaf *Leaf
}

func (n *leafNode) eval(state []uint64, out *tlist, _ *evalError) {
	l := n.leaf
	s := (state[l.word] >> l.shift) & l.mask
	for _, t := range l.trans[s] {
		out.act = append(out.act, t.action)
		out.pas = append(out.pas, t.passive)
		out.rate = append(out.rate, t.rate)
		d := uint64(t.target)<<l.shift - s<<l.shift
		out.rdelta = append(out.rdelta, (int64(t.target)-int64(s))*l.stride)
		for w := 0; w < out.w; w++ {
			if w == l.word {
				out.delta = append(out.delta, d)
			} else {
				out.delta = append(out.delta, 0)
			}
		}
	}
}

// parNode is a parallel composition (no shared actions) of its kids.
type parNode struct {
	kids []node
}

func (n *parNode) eval(state []uint64, out *tlist, e *evalError) {
	for _, k := range n.kids {
		k.eval(state, out, e)
	}
}

// constNode is a subtree whose leaves all have one local state: its
// transitions are the same in every global state, computed once.
type constNode struct {
	list tlist
	orig node
}

func (n *constNode) eval(_ []uint64, out *tlist, _ *evalError) {
	for i := 0; i < n.list.len(); i++ {
		out.copyFrom(&n.list, i)
	}
}

type hideNode struct {
	child  node
	hidden map[int32]bool
	isHid  []bool // by action id, set by freeze
}

func (n *hideNode) eval(state []uint64, out *tlist, e *evalError) {
	start := out.len()
	n.child.eval(state, out, e)
	for i := start; i < out.len(); i++ {
		if n.isHid[out.act[i]] {
			out.act[i] = TauAction
		}
	}
}

// coopNode is x <set> y with a non-empty set.
//
// Its transitions are listed in a fixed order: x's unshared ones, y's
// unshared ones, then the shared ones in the order of y's transitions, each
// with its partners in x in x's order. Per state it groups each side's
// shared transitions by action (bucket lists, apparent rates); a side that
// is constant is grouped once, at freeze time, which matters for mapping
// models, whose applications form one constant side.
type coopNode struct {
	x, y   node
	set    map[int32]bool
	inSet  []bool // by action id
	bx, by tlist
	gx, gy grouping
}

// grouping holds one side's shared transitions bucketed by action, and the
// side's apparent rate of each action (active and passive parts). Entries
// are valid where stamp == gen, or everywhere for a constant side.
type grouping struct {
	constant bool
	gen      uint32
	stamp    []uint32
	act, pas []float64
	head     []int32 // first transition with the action, -1 at the end
	next     []int32 // next transition with the same action
}

func (g *grouping) init(nActions int) {
	g.stamp = make([]uint32, nActions)
	g.act, g.pas = make([]float64, nActions), make([]float64, nActions)
	g.head = make([]int32, nActions)
}

func (g *grouping) valid(a int32) bool { return g.constant || g.stamp[a] == g.gen }

// build groups the shared transitions of l (constant sides are built once).
func (g *grouping) build(l *tlist, inSet []bool) {
	if g.constant {
		return
	}
	g.gen++
	if g.gen == 0 { // wrapped: clear the stamps
		clear(g.stamp)
		g.gen = 1
	}
	if cap(g.next) < l.len() {
		g.next = make([]int32, l.len(), 2*l.len())
	}
	g.next = g.next[:l.len()]
	for i := l.len() - 1; i >= 0; i-- {
		a := l.act[i]
		if !inSet[a] {
			continue
		}
		if g.stamp[a] != g.gen {
			g.stamp[a], g.act[a], g.pas[a], g.head[a] = g.gen, 0, 0, -1
		}
		if l.pas[i] {
			g.pas[a] += l.rate[i]
		} else {
			g.act[a] += l.rate[i]
		}
		g.next[i] = g.head[a]
		g.head[a] = int32(i)
	}
}

// freezeConstant groups a constant side once and for all.
func (g *grouping) freezeConstant(l *tlist, inSet []bool) {
	g.build(l, inSet)
	for a := range g.stamp {
		if g.stamp[a] != g.gen {
			g.head[a] = -1
		}
	}
	g.constant = true
}

// list evaluates child into scratch, or returns its constant list.
func list(child node, state []uint64, scratch *tlist, e *evalError) *tlist {
	switch c := child.(type) {
	case *constNode:
		return &c.list
	case *memoNode:
		return c.listOf(state, scratch, e)
	}
	scratch.reset()
	child.eval(state, scratch, e)
	return scratch
}

func (n *coopNode) eval(state []uint64, out *tlist, e *evalError) {
	bx := list(n.x, state, &n.bx, e)
	by := list(n.y, state, &n.by, e)
	out.appendUnshared(bx, n.inSet)
	out.appendUnshared(by, n.inSet)
	n.shared(bx, by, out, e)
}

// shared appends the joint transitions of the sides' lists bx and by (only
// their transitions with an action of the set matter), in the order of by.
func (n *coopNode) shared(bx, by, out *tlist, e *evalError) {
	gx, gy := &n.gx, &n.gy
	gx.build(bx, n.inSet)
	gy.build(by, n.inSet)
	w := out.w
	from := out.len()
	defer e.checked(out, from)
	for j, a := range by.act {
		if !n.inSet[a] || !gx.valid(a) || gx.head[a] < 0 {
			continue // not shared, or x does not enable a: blocked
		}
		ax, px, ay, py := gx.act[a], gx.pas[a], gy.act[a], gy.pas[a]
		if (ax > 0 && px > 0) || (ay > 0 && py > 0) {
			if !e.mixed {
				e.mixed, e.action = true, a
			}
			continue
		}
		ry := by.rate[j]
		for i := gx.head[a]; i >= 0; i = gx.next[i] {
			if e.limit > 0 && out.len() >= e.limit {
				e.overflow = true
				return
			}
			rx := bx.rate[i]
			var rate float64
			passive := false
			switch {
			case ax > 0 && ay > 0:
				rate = (rx / ax) * (ry / ay) * math.Min(ax, ay)
			case ax > 0: // y passive: x's rate, shared among y's weights
				rate = rx * (ry / py)
			case ay > 0:
				rate = (rx / px) * ry
			default:
				rate = (rx / px) * (ry / py) * math.Min(px, py)
				passive = true
			}
			out.act = append(out.act, a)
			out.pas = append(out.pas, passive)
			out.rate = append(out.rate, rate)
			for k := 0; k < w; k++ {
				out.delta = append(out.delta, bx.delta[int(i)*w+k]+by.delta[j*w+k])
			}
			out.rdelta = append(out.rdelta, bx.rdelta[i]+by.rdelta[j])
		}
	}
}

// freeze sizes the per-action tables and replaces subtrees without state
// bits by constant nodes.
func freeze(n node, words, nActions, limit int) node {
	switch m := n.(type) {
	case *leafNode:
		if m.leaf.NumLocal == 1 {
			return constOf(m, words, limit)
		}
		return m
	case *parNode:
		allConst := true
		for i, k := range m.kids {
			m.kids[i] = freeze(k, words, nActions, limit)
			if _, ok := m.kids[i].(*constNode); !ok {
				allConst = false
			}
		}
		if allConst {
			return constOf(m, words, limit)
		}
		return m
	case *hideNode:
		m.isHid = make([]bool, nActions)
		for a := range m.hidden {
			m.isHid[a] = true
		}
		m.child = freeze(m.child, words, nActions, limit)
		if _, ok := m.child.(*constNode); ok {
			return constOf(m, words, limit)
		}
		return m
	case *multiCoopNode:
		m.inSet = make([]bool, nActions)
		for a := range m.set {
			m.inSet[a] = true
		}
		m.bufs = make([]tlist, len(m.kids))
		m.groups = make([]grouping, len(m.kids))
		m.lists = make([]*tlist, len(m.kids))
		m.pick = make([]int32, len(m.kids))
		allConst := true
		for k := range m.kids {
			m.bufs[k].w = words
			m.groups[k].init(nActions)
			m.kids[k] = freeze(m.kids[k], words, nActions, limit)
			if c, ok := m.kids[k].(*constNode); ok {
				m.groups[k].freezeConstant(&c.list, m.inSet)
			} else {
				allConst = false
			}
		}
		if allConst {
			return constOf(m, words, limit)
		}
		return m
	case *coopNode:
		m.inSet = make([]bool, nActions)
		for a := range m.set {
			m.inSet[a] = true
		}
		m.gx.init(nActions)
		m.gy.init(nActions)
		m.bx.w, m.by.w = words, words
		m.x = freeze(m.x, words, nActions, limit)
		m.y = freeze(m.y, words, nActions, limit)
		cx, isCX := m.x.(*constNode)
		cy, isCY := m.y.(*constNode)
		if isCX && isCY {
			return constOf(m, words, limit)
		}
		if isCX {
			m.gx.freezeConstant(&cx.list, m.inSet)
		}
		if isCY {
			m.gy.freezeConstant(&cy.list, m.inSet)
		}
		return m
	}
	return n
}

// constOf evaluates n once. A subtree with an error (or too many
// transitions) stays as it is, so that exploration meets and reports it.
func constOf(n node, words, limit int) node {
	c := &constNode{orig: n, list: tlist{w: words}}
	e := evalError{limit: limit}
	n.eval(make([]uint64, words), &c.list, &e)
	if e.mixed || e.overflow {
		return n
	}
	return c
}

// multiCoopNode is k1 <set> k2 <set> ... <set> kn, one set for all: the
// array P[n][set] of copies that are not aggregated. Cooperation on one set
// is associative (the joint apparent rate is the minimum of the kids', and
// a joint transition's rate is prod_k (r_k / r_a(k)) * min_k r_a(k), with
// the passive rule min(r, w*infty) = r), so one node does what the chain of
// binary nodes would, in the same transition order (the last kid's
// transitions outermost, the first kid's innermost), but in space and time
// linear in the number of copies: the binary chain lists every copy's
// transitions again at every level above it.
type multiCoopNode struct {
	kids   []node
	set    map[int32]bool
	inSet  []bool
	bufs   []tlist
	groups []grouping
	lists  []*tlist
	pick   []int32 // the odometer: one transition index per kid
}

func (n *multiCoopNode) eval(state []uint64, out *tlist, e *evalError) {
	for k, kid := range n.kids {
		l := list(kid, state, &n.bufs[k], e)
		n.lists[k] = l
		for i, a := range l.act {
			if !n.inSet[a] {
				out.copyFrom(l, i)
			}
		}
		n.groups[k].build(l, n.inSet)
	}
	last := len(n.kids) - 1
	ll := n.lists[last]
	w := out.w
	from := out.len()
	defer e.checked(out, from)
	for j, a := range ll.act {
		if !n.inSet[a] {
			continue
		}
		enabled := true
		minAct, minPas := math.Inf(1), math.Inf(1)
		for k := range n.kids {
			g := &n.groups[k]
			if !g.valid(a) || g.head[a] < 0 {
				enabled = false
				break
			}
			if g.act[a] > 0 && g.pas[a] > 0 {
				if !e.mixed {
					e.mixed, e.action = true, a
				}
				enabled = false
				break
			}
			if g.act[a] > 0 {
				minAct = math.Min(minAct, g.act[a])
			} else {
				minPas = math.Min(minPas, g.pas[a])
			}
		}
		if !enabled {
			continue
		}
		if e.limit > 0 {
			// The joint transitions are the product of the kids'
			// counts: refuse before listing them.
			joint := 1
			for k := 0; k < last && joint <= e.limit; k++ {
				c := 0
				for i := n.groups[k].head[a]; i >= 0; i = n.groups[k].next[i] {
					c++
				}
				joint *= c
			}
			if out.len()+joint > e.limit {
				e.overflow = true
				return
			}
		}
		passive := math.IsInf(minAct, 1)
		scale := minAct
		if passive {
			scale = minPas
		}
		for k := 0; k < last; k++ {
			n.pick[k] = n.groups[k].head[a]
		}
		for {
			if e.limit > 0 && out.len() >= e.limit {
				e.overflow = true
				return
			}
			rate := scale * ll.rate[j] / apparent(&n.groups[last], a)
			base := len(out.delta)
			out.delta = append(out.delta, ll.delta[j*w:(j+1)*w]...)
			rd := ll.rdelta[j]
			for k := 0; k < last; k++ {
				l, i := n.lists[k], int(n.pick[k])
				rate *= l.rate[i] / apparent(&n.groups[k], a)
				for x := 0; x < w; x++ {
					out.delta[base+x] += l.delta[i*w+x]
				}
				rd += l.rdelta[i]
			}
			out.act = append(out.act, a)
			out.pas = append(out.pas, passive)
			out.rate = append(out.rate, rate)
			out.rdelta = append(out.rdelta, rd)
			// Advance the odometer, the first kid fastest.
			k := 0
			for ; k < last; k++ {
				if nx := n.groups[k].next[n.pick[k]]; nx >= 0 {
					n.pick[k] = nx
					break
				}
				n.pick[k] = n.groups[k].head[a]
			}
			if k == last {
				break
			}
		}
	}
}

// apparent is a kid's apparent rate of a (its active or its passive part:
// one of them is zero).
func apparent(g *grouping, a int32) float64 {
	if g.act[a] > 0 {
		return g.act[a]
	}
	return g.pas[a]
}
