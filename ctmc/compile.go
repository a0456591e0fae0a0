package ctmc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"

	"pepa/internal/option"
	"pepa/lang"
)

// Options controls how a model is compiled.
type Options struct {
	// Aggregate arrays P[n] of a sequential P without a cooperation set by
	// counting how many copies are in each local state, instead of keeping
	// each copy's local state. The aggregated chain is a lumping of the
	// unaggregated one: every steady-state and passage-time result is the same.
	Aggregate bool
	// MaxStates, when positive, bounds what Compile builds the way
	// DeriveOptions.MaxStates bounds the chain: at most that many
	// sequential components, and at most that many count vectors for an
	// aggregated array. Beyond it Compile fails early with an error
	// wrapping ErrTooManyStates.
	MaxStates int
	// SeparateRates identifies prefixes by their rate's value and its
	// derivative with respect to every rate definition, not by the value
	// alone: (a, r).P and (a, s).P with r = s = 2 stay two derivatives.
	// The chain is then a refinement of the default one (same results),
	// and the derivatives of results with respect to rates
	// (LocalTransition.Prefixes) are those of the model as written, which
	// merging by value alone would lose.
	SeparateRates bool
}

// DefaultOptions are the options the command line uses unless told otherwise.
var DefaultOptions = Options{Aggregate: true}

// Structure is a model compiled for state-space exploration: its sequential
// components (leaves), each with its local derivative graph computed once,
// and the cooperation/hiding tree over them. A global state is the vector of
// the leaves' local states, packed into Words machine words.
type Structure struct {
	Actions []string // action names by id; Actions[0] is "tau"
	Leaves  []*Leaf
	Words   int // uint64 words per packed state
	// Aggregated reports whether some array was aggregated.
	Aggregated bool
	// RadixSize is the product of the leaves' local state counts (an upper
	// bound on the state space), or 0 if it overflows an int64.
	RadixSize int64

	actionID map[string]int32
	root     node
	file     string // the model's file name, for positions in errors
	// maxStates is Options.MaxStates, which also bounds the constant
	// subtrees' transition lists evaluated once.
	maxStates int

	// The tree is prepared for exploration (constant subtrees evaluated,
	// per-action tables sized) on first use by Derive, not by Compile: an
	// analysis that decomposes the model never needs it, and for a large
	// model the packed states' deltas are the largest cost.
	freezeOnce sync.Once
	frozen     node

	// effects are what the tree does to each leaf's actions (blocking,
	// hiding), computed once for OwnChain.
	effectsOnce sync.Once
	effects     map[*Leaf]*leafEffect
}

// exploreRoot returns the tree prepared for exploration.
func (s *Structure) exploreRoot() node {
	s.freezeOnce.Do(func() {
		s.frozen = freeze(s.root, s.Words, len(s.Actions), transitionLimit(s.maxStates))
	})
	return s.frozen
}

// TauAction is the id of the silent action.
const TauAction = 0

// Component is the local derivative graph of one sequential component.
type Component struct {
	Name   string   // the definition the component starts from ("M1")
	States []string // local derivative names; the initial one is States[0]
	// trans[s] are the activities enabled in local state s; prov[s][i] the
	// prefixes of the model that trans[s][i] comes from (several when a
	// race to one target was merged), for sensitivities.
	trans [][]localTrans
	prov  [][][]*lang.Prefix
}

type localTrans struct {
	action  int32
	passive bool
	rate    float64 // rate, or passive weight
	target  int32
}

// Leaf is one sequential component of the model (or an aggregated array of
// identical ones) with its place in the packed state.
type Leaf struct {
	Name   string     // unique display name: "M1", "Client[2]", "P#2"
	Group  string     // what copies share: "Client" for every copy of Client[n]
	Comp   *Component // the component's derivative graph
	Copies int        // 1, or n for an aggregated array

	// Local states of the leaf. For a plain leaf these are the component's
	// derivatives; for an aggregated array they are count vectors over
	// them (Counts[l][d] copies in derivative d), discovered from the
	// initial vector (all copies in the initial derivative).
	NumLocal int
	Counts   [][]int32
	trans    [][]localTrans // per leaf-local state

	word  int
	shift uint
	mask  uint64
	// stride is the leaf's weight in the state's mixed-radix number
	// sum_l local_l * stride_l (stride_l = product of the NumLocal of the
	// leaves before l), when the product of all NumLocal fits in an int64.
	stride int64
}

// LocalName is the name of a leaf-local state.
func (l *Leaf) LocalName(s int) string {
	if l.Counts == nil {
		return l.Comp.States[s]
	}
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for d, c := range l.Counts[s] {
		if c == 0 {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%d*%s", c, l.Comp.States[d])
	}
	b.WriteByte('}')
	return b.String()
}

// LocalTransition is an activity of a leaf in one of its local states.
type LocalTransition struct {
	Action  int32
	Passive bool
	Rate    float64 // rate, or passive weight
	Target  int     // leaf-local target state
	// Prefixes are the model's activities it comes from (nil for an
	// aggregated array): its rate is the sum of theirs.
	Prefixes []*lang.Prefix
}

// Transitions lists the activities of the leaf in local state s.
func (l *Leaf) Transitions(s int) []LocalTransition {
	out := make([]LocalTransition, len(l.trans[s]))
	for i, t := range l.trans[s] {
		out[i] = LocalTransition{Action: t.action, Passive: t.passive, Rate: t.rate, Target: int(t.target)}
		if l.Counts == nil {
			out[i].Prefixes = l.Comp.prov[s][i]
		}
	}
	return out
}

// Population returns how many copies of the leaf are in derivative d when
// the leaf is in local state s.
func (l *Leaf) Population(s, d int) int {
	if l.Counts == nil {
		if s == d {
			return 1
		}
		return 0
	}
	return int(l.Counts[s][d])
}

// Local extracts the leaf's local state from a packed state.
func (l *Leaf) Local(state []uint64) int {
	return int((state[l.word] >> l.shift) & l.mask)
}

// Field says where Local reads: the local state is (state[word] >> shift)
// & mask. It is for solvers that visit every state and cannot afford a
// call per leaf and state (package ctmc/steady's aggregation). A leaf
// with one local state takes no bits: its mask is 0.
func (l *Leaf) Field() (word int, shift uint, mask uint64) {
	return l.word, l.shift, l.mask
}

// Compile builds the Structure of a checked model.
func Compile(m *lang.Model, opt Options) (*Structure, error) {
	c := &compiler{
		m:     m,
		opt:   opt,
		s:     &Structure{Actions: []string{"tau"}, actionID: map[string]int32{"tau": TauAction}, file: m.File.Name, maxStates: opt.MaxStates},
		comps: map[int32]*Component{},
		names: map[string]int{},
		terms: &termIDs{m: m, separateRates: opt.SeparateRates, byKey: map[string]int32{}, memo: map[lang.Process]int32{}},
	}
	root, err := c.term(m.System)
	if err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	c.s.root = root
	if err := c.s.pack(); err != nil {
		return nil, err
	}
	return c.s, nil
}

type compiler struct {
	m     *lang.Model
	opt   Options
	s     *Structure
	comps map[int32]*Component // by starting term's identity
	terms *termIDs
	names map[string]int // leaf names used, for unique names
	err   error          // the first leaf over the limit
}

func (c *compiler) action(name string) int32 {
	if id, ok := c.s.actionID[name]; ok {
		return id
	}
	id := int32(len(c.s.Actions))
	c.s.Actions = append(c.s.Actions, name)
	c.s.actionID[name] = id
	return id
}

// term compiles a process term of the system structure.
func (c *compiler) term(p lang.Process) (node, error) {
	switch p := p.(type) {
	case *lang.ParenProc:
		return c.term(p.X)
	case *lang.Const:
		if c.m.Procs[p.Name].Kind == lang.Static {
			return c.term(c.m.Procs[p.Name].Decl.Body)
		}
		return c.leaf(p.Name, p, p.Name), nil
	case *lang.Prefix, *lang.Choice:
		name := lang.ProcessString(p)
		return c.leaf(name, p, name), nil
	case *lang.Hide:
		child, err := c.term(p.X)
		if err != nil {
			return nil, err
		}
		h := &hideNode{child: child, hidden: map[int32]bool{}}
		for _, a := range p.Actions {
			h.hidden[c.action(a.Name)] = true
		}
		return h, nil
	case *lang.Coop:
		x, err := c.term(p.X)
		if err != nil {
			return nil, err
		}
		y, err := c.term(p.Y)
		if err != nil {
			return nil, err
		}
		set := map[int32]bool{}
		if p.Kind == lang.CoopWildcard {
			ax, ay := alphabet(x), alphabet(y)
			for a := range ax {
				if ay[a] && a != TauAction {
					set[a] = true
				}
			}
		} else {
			for _, a := range p.Actions {
				set[c.action(a.Name)] = true
			}
		}
		return c.combine(x, y, set), nil
	case *lang.Array:
		return c.array(p)
	}
	return nil, fmt.Errorf("ctmc: unexpected process term %T", p)
}

// combine makes a cooperation node, flattening pure parallel compositions.
func (c *compiler) combine(x, y node, set map[int32]bool) node {
	if len(set) == 0 {
		// x is usually the parNode built for the chain to its left: extend
		// it in place, so that A1 <> A2 <> ... <> An costs O(n).
		p, ok := x.(*parNode)
		if !ok {
			p = &parNode{kids: []node{x}}
		}
		if q, ok := y.(*parNode); ok {
			p.kids = append(p.kids, q.kids...)
		} else {
			p.kids = append(p.kids, y)
		}
		return p
	}
	return &coopNode{x: x, y: y, set: set}
}

func (c *compiler) array(p *lang.Array) (node, error) {
	n := c.m.ArraySize(p)
	info := c.m.Procs[p.Name.Name]
	if c.err != nil {
		return nil, c.err
	}
	set := map[int32]bool{}
	for _, a := range p.Actions {
		set[c.action(a.Name)] = true
	}
	if c.opt.Aggregate && len(set) == 0 && info.Kind == lang.Sequential && n > 1 {
		comp := c.component(p.Name.Name, &lang.Const{Ident: p.Name})
		leaf, err := aggregateLeaf(comp, n, c.unique(p.Name.Name+"["+fmt.Sprint(n)+"]"), p.Name.Name, c.opt.MaxStates)
		if err != nil {
			return nil, err
		}
		c.s.Leaves = append(c.s.Leaves, leaf)
		c.s.Aggregated = true
		return &leafNode{leaf: leaf}, nil
	}
	if max := c.opt.MaxStates; max > 0 && info.Kind == lang.Sequential && len(c.s.Leaves)+n > max {
		return nil, c.tooManyLeaves(len(c.s.Leaves) + n)
	}
	var acc node
	var kids []node
	for i := 1; i <= n; i++ {
		var el node
		if info.Kind == lang.Static {
			var err error
			if el, err = c.term(info.Decl.Body); err != nil {
				return nil, err
			}
		} else {
			el = c.leaf(p.Name.Name, &lang.Const{Ident: p.Name}, fmt.Sprintf("%s[%d]", p.Name.Name, i))
		}
		if c.err != nil {
			return nil, c.err
		}
		if len(set) > 0 {
			kids = append(kids, el)
			continue
		}
		if acc == nil {
			acc = el
		} else {
			acc = c.combine(acc, el, set)
		}
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	if len(kids) > 1 {
		return &multiCoopNode{kids: kids, set: set}, nil
	}
	return acc, nil
}

// tooManyLeaves is the error for a model with more sequential components
// than the state limit: each costs about as much as a state, and the
// packed state grows with their number.
func (c *compiler) tooManyLeaves(n int) error {
	return option.Errorf("%w: %d sequential components, more than %d (raise {MaxStates})", ErrTooManyStates, n, c.opt.MaxStates)
}

func (c *compiler) unique(name string) string {
	c.names[name]++
	if k := c.names[name]; k > 1 {
		return fmt.Sprintf("%s#%d", name, k)
	}
	return name
}

// leaf makes a plain leaf for a sequential component starting at term p.
func (c *compiler) leaf(group string, p lang.Process, name string) node {
	if max := c.opt.MaxStates; max > 0 && len(c.s.Leaves) >= max && c.err == nil {
		c.err = c.tooManyLeaves(len(c.s.Leaves) + 1)
	}
	comp := c.component(group, p)
	l := &Leaf{Name: c.unique(name), Group: group, Comp: comp, Copies: 1, NumLocal: len(comp.States), trans: comp.trans}
	c.s.Leaves = append(c.s.Leaves, l)
	return &leafNode{leaf: l}
}

// component derives the local derivative graph of the sequential component
// starting at term p, memoised by the term's identity.
//
// Local derivatives are terms (semantics.md section 1): a process constant
// is a derivative of its own, named by the constant, whose activities are
// those of its body; any other term is identified by its structure (see
// terms.id), so two occurrences of the same anonymous term are one
// derivative, named by the first one's text.
func (c *compiler) component(name string, p lang.Process) *Component {
	key := c.terms.id(p)
	if comp, ok := c.comps[key]; ok {
		return comp
	}
	comp := &Component{Name: name}
	index := map[int32]int32{}
	var queue []lang.Process
	visit := func(t lang.Process) int32 {
		t = unparen(t)
		id := c.terms.id(t)
		if i, ok := index[id]; ok {
			return i
		}
		label := ""
		if k, ok := t.(*lang.Const); ok {
			label = k.Name
		} else {
			label = lang.ProcessString(t)
		}
		i := int32(len(comp.States))
		index[id] = i
		comp.States = append(comp.States, label)
		queue = append(queue, t)
		return i
	}
	visit(p)
	for k := 0; k < len(queue); k++ {
		var out []localTrans
		var prov [][]*lang.Prefix
		var add func(t lang.Process)
		add = func(t lang.Process) {
			switch u := t.(type) {
			case *lang.Prefix:
				r := c.m.PrefixRate(u)
				tr := localTrans{action: c.action(u.Action.Name), passive: r.Passive, rate: r.Value, target: visit(u.Then)}
				for i := range out {
					// The race (a, r).X + (a, s).X is one activity at r + s;
					// so is Q + Q, a race of Q with itself.
					if out[i].action == tr.action && out[i].target == tr.target && out[i].passive == tr.passive {
						out[i].rate += tr.rate
						prov[i] = append(prov[i], u)
						return
					}
				}
				out = append(out, tr)
				prov = append(prov, []*lang.Prefix{u})
			case *lang.Choice:
				for _, a := range u.Alts {
					add(a)
				}
			case *lang.Const:
				add(c.m.Procs[u.Name].Decl.Body)
			case *lang.ParenProc:
				add(u.X)
			}
		}
		add(queue[k])
		comp.trans = append(comp.trans, out)
		comp.prov = append(comp.prov, prov)
	}
	c.comps[key] = comp
	return comp
}

func unparen(t lang.Process) lang.Process {
	for {
		p, ok := t.(*lang.ParenProc)
		if !ok {
			return t
		}
		t = p.X
	}
}

// termIDs numbers sequential terms by identity: a constant by its name;
// a prefix by its action, its rate's value (passive flag and weight for a
// passive one) and its continuation's number; a choice by its branches'
// numbers in order; parentheses are transparent. Equal numbers are the
// same local derivative. With Options.SeparateRates a prefix's number also
// depends on its rate's derivative with respect to each rate definition.
type termIDs struct {
	m             *lang.Model
	separateRates bool // Options.SeparateRates
	byKey         map[string]int32
	memo          map[lang.Process]int32
}

func (t *termIDs) id(p lang.Process) int32 {
	p = unparen(p)
	if id, ok := t.memo[p]; ok {
		return id
	}
	var key []byte
	switch u := p.(type) {
	case *lang.Const:
		key = append(key, 'c')
		key = append(key, u.Name...)
	case *lang.Prefix:
		r := t.m.PrefixRate(u)
		key = append(key, 'p')
		if r.Passive {
			key = append(key, 'w')
		}
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(r.Value))
		if t.separateRates {
			for _, name := range t.m.PrefixRateNames(u) {
				key = append(key, name...)
				key = append(key, 0)
				key = binary.LittleEndian.AppendUint64(key, math.Float64bits(t.m.PrefixRateDerivative(u, name)))
			}
		}
		key = binary.LittleEndian.AppendUint32(key, uint32(t.id(u.Then)))
		key = append(key, u.Action.Name...)
	case *lang.Choice:
		key = append(key, 's')
		for _, a := range u.Alts {
			key = binary.LittleEndian.AppendUint32(key, uint32(t.id(a)))
		}
	default:
		// Not a sequential term (the checker rules these out inside
		// components): an identity of its own.
		key = append(key, 'x')
		key = binary.LittleEndian.AppendUint32(key, uint32(len(t.memo)))
	}
	id, ok := t.byKey[string(key)]
	if !ok {
		id = int32(len(t.byKey))
		t.byKey[string(key)] = id
	}
	t.memo[p] = id
	return id
}

// aggregateLeaf builds the counting leaf of n copies of comp: its local
// states are the reachable count vectors.
func aggregateLeaf(comp *Component, n int, name, group string, maxStates int) (*Leaf, error) {
	k := len(comp.States)
	l := &Leaf{Name: name, Group: group, Comp: comp, Copies: n}
	index := map[string]int32{}
	key := func(v []int32) string {
		b := make([]byte, 0, 4*len(v))
		for _, x := range v {
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		return string(b)
	}
	maxLocal := 1 << 24
	if maxStates > 0 && maxStates < maxLocal {
		maxLocal = maxStates
	}
	// The copies move independently within the leaf, so every way of
	// placing n copies on the r local states reachable from the first is
	// reached: binomial(n+r-1, r-1) count vectors, exactly. Known before
	// any is built: an array of a million copies is refused at once
	// instead of after filling the budget with vectors.
	if r := reachableLocal(comp); countVectors(n, r) > float64(maxLocal) {
		return nil, option.Errorf("%w: %w: array %s has %.4g count vectors when aggregated (%d copies over %d local states), more than %d (raise {MaxStates})",
			ErrTooManyStates, ErrPopulation, name, countVectors(n, r), n, r, maxLocal)
	}
	init := make([]int32, k)
	init[0] = int32(n)
	index[key(init)] = 0
	l.Counts = append(l.Counts, init)
	for s := 0; s < len(l.Counts); s++ {
		v := l.Counts[s]
		var out []localTrans
		for d, cnt := range v {
			if cnt == 0 {
				continue
			}
			for _, t := range comp.trans[d] {
				w := append([]int32(nil), v...)
				w[d]--
				w[t.target]++
				kw := key(w)
				id, ok := index[kw]
				if !ok {
					if len(l.Counts) >= maxLocal {
						return nil, option.Errorf("%w: %w: array %s has more than %d count vectors when aggregated (raise {MaxStates})", ErrTooManyStates, ErrPopulation, name, maxLocal)
					}
					id = int32(len(l.Counts))
					index[kw] = id
					l.Counts = append(l.Counts, w)
				}
				merged := false
				for i := range out {
					if out[i].action == t.action && out[i].target == id && out[i].passive == t.passive {
						out[i].rate += float64(cnt) * t.rate
						merged = true
						break
					}
				}
				if !merged {
					out = append(out, localTrans{action: t.action, passive: t.passive, rate: float64(cnt) * t.rate, target: id})
				}
			}
		}
		l.trans = append(l.trans, out)
	}
	l.NumLocal = len(l.Counts)
	return l, nil
}

// ErrPopulation marks (wrapped with ErrTooManyStates) an array whose
// count vectors alone are too many: fluid analysis and simulation answer
// such models without the chain.
var ErrPopulation = errors.New("a population too large for its chain")

// reachableLocal is the number of comp's local states reachable from the
// first.
func reachableLocal(comp *Component) int {
	seen := make([]bool, len(comp.States))
	seen[0] = true
	stack := []int{0}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, t := range comp.trans[d] {
			if !seen[t.target] {
				seen[t.target] = true
				stack = append(stack, int(t.target))
			}
		}
	}
	r := 0
	for _, v := range seen {
		if v {
			r++
		}
	}
	return r
}

// countVectors is binomial(n+r-1, r-1), the ways of placing n copies on r
// local states, in floating point (+Inf past float64's range).
func countVectors(n, r int) float64 {
	c := 1.0
	for i := 1; i < r; i++ {
		c = c * float64(n+i) / float64(i)
	}
	return c
}

// pack assigns each leaf its bit field; a field never straddles two words.
func (s *Structure) pack() error {
	word, used := 0, uint(0)
	for _, l := range s.Leaves {
		width := uint(bits.Len(uint(l.NumLocal - 1)))
		if width > 64 {
			return fmt.Errorf("component %s has too many local states", l.Name)
		}
		if used+width > 64 {
			word++
			used = 0
		}
		l.word, l.shift = word, used
		if width == 64 {
			l.mask = ^uint64(0)
		} else {
			l.mask = 1<<width - 1
		}
		used += width
	}
	s.Words = word + 1
	stride := int64(1)
	s.RadixSize = 1
	for _, l := range s.Leaves {
		l.stride = stride
		if stride > math.MaxInt64/int64(l.NumLocal) {
			s.RadixSize = 0 // too large to number
			break
		}
		stride *= int64(l.NumLocal)
		s.RadixSize = stride
	}
	return nil
}

// radix is the mixed-radix number of a packed state.
func (s *Structure) radix(state []uint64) int64 {
	r := int64(0)
	for _, l := range s.Leaves {
		r += int64(l.Local(state)) * l.stride
	}
	return r
}

// alphabet is the set of actions a compiled subtree can perform.
func alphabet(n node) map[int32]bool {
	out := map[int32]bool{}
	var walk func(n node)
	walk = func(n node) {
		switch n := n.(type) {
		case *constNode:
			walk(n.orig)
		case *leafNode:
			for _, ts := range n.leaf.trans {
				for _, t := range ts {
					out[t.action] = true
				}
			}
		case *parNode:
			for _, k := range n.kids {
				walk(k)
			}
		case *coopNode:
			walk(n.x)
			walk(n.y)
		case *multiCoopNode:
			for _, k := range n.kids {
				walk(k)
			}
		case *hideNode:
			inner := alphabet(n.child)
			for a := range inner {
				if n.hidden[a] {
					a = TauAction
				}
				out[a] = true
			}
		}
	}
	walk(n)
	return out
}

// StateNames lists the local state names of a packed state, one per leaf.
func (s *Structure) StateNames(state []uint64) []string {
	out := make([]string, len(s.Leaves))
	for i, l := range s.Leaves {
		out[i] = l.LocalName(l.Local(state))
	}
	return out
}

// ActionID returns the id of a named action.
func (s *Structure) ActionID(name string) (int32, bool) {
	id, ok := s.actionID[name]
	return id, ok
}

// sortedActions returns the ids of a set in increasing order.
func sortedActions(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
