package ctmc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"pepa/lang"
)

// Populations is a model's structure for population (fluid) analysis: the
// cooperation tree of the system equation with every sequential component
// kept once, with its number of copies, instead of as one leaf per copy or
// as count vectors. Nothing here grows with the number of copies: an array
// P[1000000] is one group of 1,000,000 copies.
//
// The local derivatives, their names and their activities are those
// Compile gives (the same term identity, semantics.md section 1), so a
// population's local states are the local states 'pepa steady' reports.
type Populations struct {
	Actions []string // action names by id; Actions[0] is "tau", as in Structure
	Groups  []*PopulationGroup
	Root    *PopNode
}

// PopulationGroup is one population: Copies copies of one sequential
// component, all starting in its initial local derivative.
type PopulationGroup struct {
	// Name is unique among the groups: the component's name ("Client"),
	// then "Client#2", ... for further groups of the same component that
	// cannot be merged (they sit in different places of the tree).
	Name      string
	Component *Component
	Copies    int
}

// PopKind is what a PopNode does.
type PopKind int

const (
	// PopGroup is a population (PopNode.Group).
	PopGroup PopKind = iota
	// PopParallel is a parallel composition of its kids (no shared action).
	PopParallel
	// PopCoop is a cooperation of its kids on PopNode.Actions: two kids
	// for P <L> Q, n kids for an array P[n][L] (cooperation on one set is
	// associative).
	PopCoop
	// PopHide hides PopNode.Actions of its one kid.
	PopHide
)

// PopNode is a node of the population tree.
type PopNode struct {
	Kind    PopKind
	Group   int // index into Populations.Groups (PopGroup)
	Kids    []*PopNode
	Actions []int32 // the cooperation set (PopCoop) or the hidden actions (PopHide), sorted
}

// Activities lists the activities of the component's local derivative d:
// action, passivity, rate (or passive weight) and target derivative, in
// the order Compile keeps them (a race to one target merged into one
// activity at the summed rate).
func (c *Component) Activities(d int) []LocalTransition {
	out := make([]LocalTransition, len(c.trans[d]))
	for i, t := range c.trans[d] {
		out[i] = LocalTransition{Action: t.action, Passive: t.passive, Rate: t.rate, Target: int(t.target), Prefixes: c.prov[d][i]}
	}
	return out
}

// CompilePopulations builds the population structure of a checked model.
// An array P[n] of a sequential P without a cooperation set is one group
// of n copies; so are copies of one component composed in parallel (P || P,
// P[3] || P[2]: the copies of a parallel composition share every factor of
// the tree above them, so their populations add). Parallel copies of one
// static subtree (an array S[n] of a static S, or S || S) are one subtree
// with every population multiplied: in the fluid semantics n identical
// subsystems started alike stay alike, and the minimum of n equal sums is
// the sum of the minima. An array P[n][L] with a cooperation set makes n
// groups of one copy that cooperate on L.
func CompilePopulations(m *lang.Model) (*Populations, error) {
	c := &compiler{
		m:     m,
		s:     &Structure{Actions: []string{"tau"}, actionID: map[string]int32{"tau": TauAction}, file: m.File.Name},
		comps: map[int32]*Component{},
		names: map[string]int{},
		terms: &termIDs{m: m, byKey: map[string]int32{}, memo: map[lang.Process]int32{}},
	}
	pc := &popCompiler{c: c}
	root, err := pc.term(m.System)
	if err != nil {
		return nil, err
	}
	p := &Populations{Actions: c.s.Actions}
	names := map[string]int{}
	var number func(n *PopNode) *PopNode
	number = func(n *PopNode) *PopNode {
		if n.Kind == PopGroup {
			g := pc.groups[n.Group]
			names[g.Component.Name]++
			name := g.Component.Name
			if k := names[name]; k > 1 {
				name += "#" + strconv.Itoa(k)
			}
			p.Groups = append(p.Groups, &PopulationGroup{Name: name, Component: g.Component, Copies: g.Copies})
			return &PopNode{Kind: PopGroup, Group: len(p.Groups) - 1}
		}
		out := &PopNode{Kind: n.Kind, Actions: n.Actions}
		for _, k := range n.Kids {
			out.Kids = append(out.Kids, number(k))
		}
		return out
	}
	p.Root = number(root)
	return p, nil
}

// popCompiler compiles the system equation into a population tree; its
// groups are numbered again, in tree order, once the tree is final.
type popCompiler struct {
	c      *compiler
	groups []*PopulationGroup
}

func (pc *popCompiler) group(comp *Component, copies int) *PopNode {
	pc.groups = append(pc.groups, &PopulationGroup{Component: comp, Copies: copies})
	return &PopNode{Kind: PopGroup, Group: len(pc.groups) - 1}
}

func (pc *popCompiler) term(p lang.Process) (*PopNode, error) {
	c := pc.c
	switch p := p.(type) {
	case *lang.ParenProc:
		return pc.term(p.X)
	case *lang.Const:
		if c.m.Procs[p.Name].Kind == lang.Static {
			return pc.term(c.m.Procs[p.Name].Decl.Body)
		}
		return pc.group(c.component(p.Name, p), 1), nil
	case *lang.Prefix, *lang.Choice:
		return pc.group(c.component(lang.ProcessString(p), p), 1), nil
	case *lang.Hide:
		kid, err := pc.term(p.X)
		if err != nil {
			return nil, err
		}
		set := map[int32]bool{}
		for _, a := range p.Actions {
			set[c.action(a.Name)] = true
		}
		return &PopNode{Kind: PopHide, Kids: []*PopNode{kid}, Actions: sortedActions(set)}, nil
	case *lang.Coop:
		x, err := pc.term(p.X)
		if err != nil {
			return nil, err
		}
		y, err := pc.term(p.Y)
		if err != nil {
			return nil, err
		}
		set := map[int32]bool{}
		if p.Kind == lang.CoopWildcard {
			ax, ay := pc.alphabet(x), pc.alphabet(y)
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
		if len(set) == 0 {
			return pc.parallel([]*PopNode{x, y}), nil
		}
		return &PopNode{Kind: PopCoop, Kids: []*PopNode{x, y}, Actions: sortedActions(set)}, nil
	case *lang.Array:
		n := c.m.ArraySize(p)
		info := c.m.Procs[p.Name.Name]
		set := map[int32]bool{}
		for _, a := range p.Actions {
			set[c.action(a.Name)] = true
		}
		one := func() (*PopNode, error) {
			if info.Kind == lang.Static {
				return pc.term(info.Decl.Body)
			}
			return pc.group(c.component(p.Name.Name, &lang.Const{Ident: p.Name}), 1), nil
		}
		if len(set) == 0 {
			el, err := one()
			if err != nil {
				return nil, err
			}
			pc.scale(el, n)
			return el, nil
		}
		kids := make([]*PopNode, n)
		for i := range kids {
			el, err := one()
			if err != nil {
				return nil, err
			}
			kids[i] = el
		}
		if n == 1 {
			return kids[0], nil
		}
		return &PopNode{Kind: PopCoop, Kids: kids, Actions: sortedActions(set)}, nil
	}
	return nil, fmt.Errorf("ctmc: unexpected process term %T", p)
}

// scale multiplies every population of a subtree by n.
func (pc *popCompiler) scale(n *PopNode, k int) {
	if n.Kind == PopGroup {
		pc.groups[n.Group].Copies *= k
		return
	}
	for _, kid := range n.Kids {
		pc.scale(kid, k)
	}
}

// parallel composes kids in parallel, flattening nested parallel nodes and
// merging groups of one component (their copies add) and identical
// subtrees (their populations add, position by position).
func (pc *popCompiler) parallel(kids []*PopNode) *PopNode {
	var flat []*PopNode
	for _, k := range kids {
		if k.Kind == PopParallel {
			flat = append(flat, k.Kids...)
		} else {
			flat = append(flat, k)
		}
	}
	out := &PopNode{Kind: PopParallel}
	byKey := map[string]*PopNode{}
	for _, k := range flat {
		key := pc.shape(k)
		if prev, ok := byKey[key]; ok {
			pc.add(prev, k)
			continue
		}
		byKey[key] = k
		out.Kids = append(out.Kids, k)
	}
	if len(out.Kids) == 1 {
		return out.Kids[0]
	}
	return out
}

// add adds the populations of b to those of a, which has the same shape.
func (pc *popCompiler) add(a, b *PopNode) {
	if a.Kind == PopGroup {
		pc.groups[a.Group].Copies += pc.groups[b.Group].Copies
		return
	}
	for i := range a.Kids {
		pc.add(a.Kids[i], b.Kids[i])
	}
}

// shape is a key equal for two subtrees exactly when merging them is
// exact: the same operators, sets and components in the same places and,
// below a cooperation, populations in the same proportions (a lone group
// merges with any group of its component). Proportions are compared as
// the copies themselves, which is what static copies (S || S, S[n]) give.
func (pc *popCompiler) shape(n *PopNode) string {
	var b strings.Builder
	var walk func(n *PopNode, top bool)
	walk = func(n *PopNode, top bool) {
		switch n.Kind {
		case PopGroup:
			g := pc.groups[n.Group]
			fmt.Fprintf(&b, "g%p", g.Component)
			if !top {
				fmt.Fprintf(&b, "x%d", g.Copies)
			}
			return
		case PopParallel:
			b.WriteString("p(")
		case PopCoop:
			b.WriteString("c(")
		case PopHide:
			b.WriteString("h(")
		}
		for _, a := range n.Actions {
			fmt.Fprintf(&b, "%d,", a)
		}
		b.WriteByte(';')
		for _, k := range n.Kids {
			walk(k, false)
			b.WriteByte(' ')
		}
		b.WriteByte(')')
	}
	walk(n, true)
	return b.String()
}

// alphabet is the set of visible actions a population subtree performs
// (hidden ones are tau), as alphabet is for the chain's tree.
func (pc *popCompiler) alphabet(n *PopNode) map[int32]bool {
	out := map[int32]bool{}
	switch n.Kind {
	case PopGroup:
		for _, ts := range pc.groups[n.Group].Component.trans {
			for _, t := range ts {
				out[t.action] = true
			}
		}
	case PopHide:
		hidden := map[int32]bool{}
		for _, a := range n.Actions {
			hidden[a] = true
		}
		for a := range pc.alphabet(n.Kids[0]) {
			if hidden[a] {
				a = TauAction
			}
			out[a] = true
		}
	default:
		for _, k := range n.Kids {
			for a := range pc.alphabet(k) {
				out[a] = true
			}
		}
	}
	return out
}

// ActionNames are the names of action ids, sorted by name.
func (p *Populations) ActionNames(ids []int32) []string {
	out := make([]string, len(ids))
	for i, a := range ids {
		out[i] = p.Actions[a]
	}
	sort.Strings(out)
	return out
}
