package reference

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"pepa/lang"
)

// ErrInvalid is wrapped by every refusal of a model that the semantics
// leaves undefined (passive at the top level, mixed active/passive apparent
// rate).
var ErrInvalid = errors.New("invalid model")

// rate is an activity rate: active (value > 0) or passive with weight value.
type rate struct {
	passive bool
	value   float64
}

func (r rate) String() string {
	if r.passive {
		return strconv.FormatFloat(r.value, 'g', -1, 64) + "*infty"
	}
	return strconv.FormatFloat(r.value, 'g', -1, 64)
}

// derivative is a local derivative of a sequential component.
type derivative struct {
	key   string
	term  lang.Process
	moves []move // computed when first needed
	done  bool
}

// move is one activity of a local derivative.
type move struct {
	action string
	rate   rate
	target int // derivative id
}

// node is a node of the expanded system tree.
type node struct {
	kind        nodeKind
	left, right *node           // coopNode: the operands
	kid         *node           // hideNode: the operand
	set         map[string]bool // coopNode: shared actions; hideNode: hidden ones
	leaf        int             // leafNode: index of the leaf
	leafName    string          // leafNode: the initial term, for display
	initialDer  int             // leafNode: initial derivative id
}

type nodeKind int

const (
	leafNode nodeKind = iota
	coopNode
	hideNode
)

// interp holds a model being interpreted.
type interp struct {
	m      *lang.Model
	derivs []*derivative
	byKey  map[string]int
	merged map[int]bool // derivatives only the term-identity rule makes one
	root   *node
	leaves []*node
	// stop[leaf] are the actions that lead leaf to the derivative
	// finished (Options.Stop).
	stop     map[int]map[string]bool
	finished int
}

// setStop records which leaves stop on which actions, and makes the
// terminal derivative.
func (in *interp) setStop(stop map[string][]string) {
	if len(stop) == 0 {
		return
	}
	in.finished = len(in.derivs)
	in.derivs = append(in.derivs, &derivative{key: Finished, done: true})
	in.stop = map[int]map[string]bool{}
	for i, l := range in.leaves {
		if acts, ok := stop[l.leafName]; ok {
			set := map[string]bool{}
			for _, a := range acts {
				set[a] = true
			}
			in.stop[i] = set
		}
	}
}

func newInterp(m *lang.Model) (*interp, error) {
	in := &interp{m: m, byKey: map[string]int{}, merged: map[int]bool{}}
	if m.System == nil {
		return nil, fmt.Errorf("%w: no system equation", ErrInvalid)
	}
	root, err := in.build(m.System)
	if err != nil {
		return nil, err
	}
	in.root = root
	return in, nil
}

// key names a sequential term as semantics.md section 1 says.
func (in *interp) key(p lang.Process) string {
	switch p := p.(type) {
	case *lang.ParenProc:
		return in.key(p.X)
	case *lang.Const:
		return p.Name
	case *lang.Prefix:
		r := in.m.PrefixRate(p)
		return "(" + p.Action.Name + ", " + rate{r.Passive, r.Value}.String() + ")." + in.key(p.Then)
	case *lang.Choice:
		parts := make([]string, len(p.Alts))
		for i, a := range p.Alts {
			parts[i] = in.key(a)
		}
		return "[" + strings.Join(parts, " + ") + "]"
	}
	// Static terms never occur inside sequential ones (lang.Check).
	return "?" + lang.ProcessString(p)
}

// derivID returns the id of the derivative of a sequential term.
func (in *interp) derivID(p lang.Process) int {
	k := in.key(p)
	if id, ok := in.byKey[k]; ok {
		if q := unparen(in.derivs[id].term); !isConst(q) && q != unparen(p) {
			in.merged[id] = true // two occurrences of one anonymous term
		}
		return id
	}
	id := len(in.derivs)
	in.derivs = append(in.derivs, &derivative{key: k, term: p})
	in.byKey[k] = id
	if c, ok := unparen(p).(*lang.Const); ok {
		if info, ok := in.m.Procs[c.Name]; ok && isConst(unparen(info.Decl.Body)) {
			in.merged[id] = true // an alias: P = Q; is a derivative of its own
		}
	}
	return id
}

func unparen(p lang.Process) lang.Process {
	for {
		q, ok := p.(*lang.ParenProc)
		if !ok {
			return p
		}
		p = q.X
	}
}

func isConst(p lang.Process) bool {
	_, ok := p.(*lang.Const)
	return ok
}

// movesOf lists the activities of a derivative, in term order.
func (in *interp) movesOf(id int) ([]move, error) {
	d := in.derivs[id]
	if !d.done {
		var ms []move
		if err := in.collect(d.term, &ms, 0); err != nil {
			return nil, err
		}
		d = in.derivs[id] // collect may have grown the slice
		d.moves, d.done = ms, true
	}
	return d.moves, nil
}

func (in *interp) collect(p lang.Process, out *[]move, depth int) error {
	if depth > 10000 {
		return fmt.Errorf("%w: unguarded recursion", ErrInvalid)
	}
	switch p := p.(type) {
	case *lang.ParenProc:
		return in.collect(p.X, out, depth+1)
	case *lang.Const:
		info, ok := in.m.Procs[p.Name]
		if !ok {
			return fmt.Errorf("%w: undefined process %s", ErrInvalid, p.Name)
		}
		return in.collect(info.Decl.Body, out, depth+1)
	case *lang.Prefix:
		r := in.m.PrefixRate(p)
		if !(r.Value > 0) {
			return fmt.Errorf("%w: prefix %s has rate %v", ErrInvalid, lang.ProcessString(p), r)
		}
		*out = append(*out, move{action: p.Action.Name, rate: rate{r.Passive, r.Value}, target: in.derivID(p.Then)})
		return nil
	case *lang.Choice:
		for _, a := range p.Alts {
			if err := in.collect(a, out, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %s inside a sequential component", ErrInvalid, lang.ProcessString(p))
}

// build expands a system term into the node tree.
func (in *interp) build(p lang.Process) (*node, error) {
	switch p := p.(type) {
	case *lang.ParenProc:
		return in.build(p.X)
	case *lang.Coop:
		l, err := in.build(p.X)
		if err != nil {
			return nil, err
		}
		r, err := in.build(p.Y)
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		if p.Kind == lang.CoopWildcard {
			la, ra := in.alphabet(l), in.alphabet(r)
			for a := range la {
				if a != "tau" && ra[a] {
					set[a] = true
				}
			}
		} else {
			for _, id := range p.Actions {
				set[id.Name] = true
			}
		}
		return &node{kind: coopNode, left: l, right: r, set: set}, nil
	case *lang.Hide:
		k, err := in.build(p.X)
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, id := range p.Actions {
			set[id.Name] = true
		}
		return &node{kind: hideNode, kid: k, set: set}, nil
	case *lang.Array:
		n := in.m.ArraySize(p)
		if n < 1 {
			return nil, fmt.Errorf("%w: array %s has size %d", ErrInvalid, p.Name.Name, n)
		}
		set := map[string]bool{}
		for _, id := range p.Actions {
			set[id.Name] = true
		}
		var acc *node
		for i := 0; i < n; i++ {
			c, err := in.build(&lang.Const{Ident: p.Name})
			if err != nil {
				return nil, err
			}
			if acc == nil {
				acc = c
			} else {
				acc = &node{kind: coopNode, left: acc, right: c, set: set}
			}
		}
		return acc, nil
	case *lang.Const:
		info, ok := in.m.Procs[p.Name]
		if !ok {
			return nil, fmt.Errorf("%w: undefined process %s", ErrInvalid, p.Name)
		}
		if info.Kind == lang.Static {
			return in.build(info.Decl.Body)
		}
	case *lang.Prefix, *lang.Choice:
	default:
		return nil, fmt.Errorf("%w: unknown process term %T", ErrInvalid, p)
	}
	leaf := &node{kind: leafNode, leaf: len(in.leaves),
		leafName: lang.ProcessString(p), initialDer: in.derivID(p)}
	in.leaves = append(in.leaves, leaf)
	return leaf, nil
}

// alphabet is every action a subtree may perform in any derivative (hidden
// actions as tau), for the <*> cooperation set.
func (in *interp) alphabet(n *node) map[string]bool {
	out := map[string]bool{}
	switch n.kind {
	case leafNode:
		seen := map[int]bool{n.initialDer: true}
		stack := []int{n.initialDer}
		for len(stack) > 0 {
			d := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			ms, err := in.movesOf(d)
			if err != nil {
				continue // reported when the state is explored
			}
			for _, mv := range ms {
				out[mv.action] = true
				if !seen[mv.target] {
					seen[mv.target] = true
					stack = append(stack, mv.target)
				}
			}
		}
	case coopNode:
		for a := range in.alphabet(n.left) {
			out[a] = true
		}
		for a := range in.alphabet(n.right) {
			out[a] = true
		}
	case hideNode:
		for a := range in.alphabet(n.kid) {
			if n.set[a] {
				a = "tau"
			}
			out[a] = true
		}
	}
	return out
}

// change sets leaf to derivative der.
type change struct{ leaf, der int }

// trans is a transition of a subtree in some state.
type trans struct {
	action  string
	rate    rate
	changes []change
}

// transitions lists the transitions of subtree n in state st.
func (in *interp) transitions(n *node, st []int) ([]trans, error) {
	switch n.kind {
	case leafNode:
		ms, err := in.movesOf(st[n.leaf])
		if err != nil {
			return nil, err
		}
		out := make([]trans, len(ms))
		for i, mv := range ms {
			target := mv.target
			if in.stop[n.leaf][mv.action] {
				target = in.finished
			}
			out[i] = trans{action: mv.action, rate: mv.rate, changes: []change{{n.leaf, target}}}
		}
		return out, nil
	case hideNode:
		ts, err := in.transitions(n.kid, st)
		if err != nil {
			return nil, err
		}
		for i := range ts {
			if n.set[ts[i].action] {
				ts[i].action = "tau"
			}
		}
		return ts, nil
	}
	lt, err := in.transitions(n.left, st)
	if err != nil {
		return nil, err
	}
	rt, err := in.transitions(n.right, st)
	if err != nil {
		return nil, err
	}
	var out []trans
	for _, t := range lt {
		if !n.set[t.action] {
			out = append(out, t)
		}
	}
	for _, t := range rt {
		if !n.set[t.action] {
			out = append(out, t)
		}
	}
	// Shared actions, in sorted order so that discovery order is fixed.
	shared := make([]string, 0, len(n.set))
	for a := range n.set {
		shared = append(shared, a)
	}
	sort.Strings(shared)
	for _, a := range shared {
		if !enables(lt, a) || !enables(rt, a) {
			// Blocked: no joint transition, so no apparent rate is
			// needed, even where one side's would be undefined.
			continue
		}
		ra, err := apparent(lt, a)
		if err != nil {
			return nil, err
		}
		rb, err := apparent(rt, a)
		if err != nil {
			return nil, err
		}
		m := minRate(ra, rb)
		for _, t1 := range lt {
			if t1.action != a {
				continue
			}
			for _, t2 := range rt {
				if t2.action != a {
					continue
				}
				// (r1/ra) * (r2/rb) * min(ra, rb): the ratios are
				// plain numbers (weight over weight for passives).
				v := (t1.rate.value / ra.value) * (t2.rate.value / rb.value) * m.value
				ch := append(append([]change{}, t1.changes...), t2.changes...)
				out = append(out, trans{action: a, rate: rate{m.passive, v}, changes: ch})
			}
		}
	}
	return out, nil
}

// enables reports whether some transition of the list has action a.
func enables(ts []trans, a string) bool {
	for _, t := range ts {
		if t.action == a {
			return true
		}
	}
	return false
}

// apparent is the apparent rate of action a in a list of transitions: the sum
// of their rates. A mixture of active and passive rates is undefined.
func apparent(ts []trans, a string) (rate, error) {
	var act, pas float64
	for _, t := range ts {
		if t.action != a {
			continue
		}
		if t.rate.passive {
			pas += t.rate.value
		} else {
			act += t.rate.value
		}
	}
	if act > 0 && pas > 0 {
		return rate{}, fmt.Errorf("%w: action %s is both active and passive in one component state", ErrInvalid, a)
	}
	if pas > 0 {
		return rate{true, pas}, nil
	}
	return rate{false, act}, nil
}

// minRate is min over rates with min(r, w*infty) = r and
// min(w1*infty, w2*infty) = min(w1, w2)*infty.
func minRate(a, b rate) rate {
	switch {
	case a.passive && b.passive:
		if a.value < b.value {
			return a
		}
		return b
	case a.passive:
		return b
	case b.passive:
		return a
	}
	if a.value < b.value {
		return a
	}
	return b
}
