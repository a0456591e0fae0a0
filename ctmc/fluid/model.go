package fluid

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"pepa/ctmc"
	"pepa/lang"
)

// Group is one population of the model: Copies copies of one sequential
// component, each in one of its local states.
type Group struct {
	Name      string   // unique: "Client", or "Client#2" for a second group of Client
	Component string   // the component's name
	States    []string // its local states, the initial one first
	Copies    int
	Offset    int // index of its first local state in a population vector
}

// Model is the fluid ODE of a model's populations, compiled into a flat
// program (see doc.go): dx/dt = F(x) for the vector x of every group's
// local-state populations, in group order.
type Model struct {
	Groups []Group
	// Labels are the actions as the top of the model sees them, by name
	// ("tau" for the silent and hidden ones): the actions whose
	// throughput is reported. Every activity has one.
	Labels []string
	// Dim is the number of populations.
	Dim int

	x0 []float64
	// the program: leaf activities, then combination ops in post-order
	acts    []activity
	ops     []op
	opIn    []int32 // the inputs of every op, op k's at opIn[ops[k].in:ops[k].end]
	passive []bool  // by slot: a passive apparent rate (a weight)
	roots   []int32 // slots at the top of the tree (factor 1), by label
	slots   int
	zero    int32 // a slot that is always 0 (an action one side of a cooperation never performs)
	// below[op][j] are the activities under the op's j-th input (min ops
	// only): the pairs that fire jointly, for second moments.
	below [][][]int32
	// scale is the largest rate in the model, for tolerances on rates.
	minRate, maxRate float64
}

// activity is one activity of one group's local state: its flow is
// rate * x[src] * factor[slot].
type activity struct {
	group    int32
	src, dst int32 // population indices
	rate     float64
	slot     int32  // the group's apparent-rate slot of the action
	label    string // the action as the top of the model sees it (tau if hidden)
	action   string // the action as written
}

type opKind uint8

const (
	opSum opKind = iota // a parallel composition, or the silent actions of a hiding
	opMin               // a cooperation on the action
)

type op struct {
	kind    opKind
	out     int32
	in, end int32
}

// Build compiles a checked model's populations into its fluid ODE.
//
// Errors: an action that a component performs both actively and passively
// where that component (or a parallel composition holding it) cooperates
// on it, and a passive activity never synchronised with an active partner.
func Build(m *lang.Model) (*Model, error) {
	p, err := ctmc.CompilePopulations(m)
	if err != nil {
		return nil, err
	}
	return FromPopulations(p)
}

// FromPopulations compiles a population structure into its fluid ODE.
func FromPopulations(p *ctmc.Populations) (*Model, error) {
	b := &builder{p: p, m: &Model{minRate: math.Inf(1)}}
	for _, g := range p.Groups {
		b.m.Groups = append(b.m.Groups, Group{Name: g.Name, Component: g.Component.Name, States: g.Component.States, Copies: g.Copies, Offset: b.m.Dim})
		b.m.Dim += len(g.Component.States)
	}
	b.m.x0 = make([]float64, b.m.Dim)
	for _, g := range b.m.Groups {
		b.m.x0[g.Offset] = float64(g.Copies)
	}
	b.m.zero = b.newSlot(false)
	top, err := b.node(p.Root, nil)
	if err != nil {
		return nil, err
	}
	// The top's actions are the labels, in name order; the throughput of
	// each is its apparent rate at the top (a joint firing counts once).
	byName := map[string]int32{}
	for a, s := range top {
		if b.m.passive[s] || b.mixed[s] {
			return nil, fmt.Errorf("action %s is passive and never synchronised with an active partner (in component %s)", p.Actions[a], b.performer(s))
		}
		byName[p.Actions[a]] = s
		b.m.Labels = append(b.m.Labels, p.Actions[a])
	}
	sort.Strings(b.m.Labels)
	for _, name := range b.m.Labels {
		b.m.roots = append(b.m.roots, byName[name])
	}
	b.m.slots = len(b.m.passive)
	b.m.below = b.activitiesBelow()
	if len(b.m.acts) == 0 {
		b.m.minRate, b.m.maxRate = 1, 1
	}
	return b.m, nil
}

type builder struct {
	p     *ctmc.Populations
	m     *Model
	mixed []bool  // by slot: active and passive activities of the action on one side
	owner []int32 // by slot: a group that performs it (for messages)
}

func (b *builder) newSlot(passive bool) int32 {
	b.m.passive = append(b.m.passive, passive)
	b.mixed = append(b.mixed, false)
	b.owner = append(b.owner, -1)
	return int32(len(b.m.passive) - 1)
}

func (b *builder) performer(s int32) string {
	if g := b.owner[s]; g >= 0 {
		return b.m.Groups[g].Name
	}
	return "?"
}

// node compiles a subtree; it returns the slot of every action the
// subtree shows to its parent (hidden ones merged into tau, id 0).
// hidden are the actions hidden by the subtree's ancestors, for labels.
func (b *builder) node(n *ctmc.PopNode, hidden map[int32]bool) (map[int32]int32, error) {
	switch n.Kind {
	case ctmc.PopGroup:
		return b.group(n.Group, hidden), nil
	case ctmc.PopHide:
		h := map[int32]bool{}
		for a := range hidden {
			h[a] = true
		}
		for _, a := range n.Actions {
			h[a] = true
		}
		kid, err := b.node(n.Kids[0], h)
		if err != nil {
			return nil, err
		}
		isHidden := map[int32]bool{}
		for _, a := range n.Actions {
			isHidden[a] = true
		}
		out := map[int32]int32{}
		var silent []int32
		for _, a := range sortedKeys(kid) {
			if a == ctmc.TauAction || isHidden[a] {
				silent = append(silent, kid[a])
				continue
			}
			out[a] = kid[a]
		}
		if len(silent) > 0 {
			s, err := b.combine(opSum, silent, "")
			if err != nil {
				return nil, err
			}
			out[ctmc.TauAction] = s
		}
		return out, nil
	}
	kids := make([]map[int32]int32, len(n.Kids))
	for i, k := range n.Kids {
		var err error
		if kids[i], err = b.node(k, hidden); err != nil {
			return nil, err
		}
	}
	inSet := map[int32]bool{}
	if n.Kind == ctmc.PopCoop {
		for _, a := range n.Actions {
			inSet[a] = true
		}
	}
	all := map[int32]bool{}
	for _, k := range kids {
		for a := range k {
			all[a] = true
		}
	}
	out := map[int32]int32{}
	for _, a := range sortedKeys(all) {
		var in []int32
		missing := false
		for _, k := range kids {
			if s, ok := k[a]; ok {
				in = append(in, s)
			} else {
				missing = true
			}
		}
		if inSet[a] && a != ctmc.TauAction {
			if missing {
				// One side never performs a: the cooperation blocks it.
				in = append(in, b.m.zero)
			}
			s, err := b.combine(opMin, in, b.p.Actions[a])
			if err != nil {
				return nil, err
			}
			out[a] = s
			continue
		}
		if len(in) == 1 {
			out[a] = in[0]
			continue
		}
		s, err := b.combine(opSum, in, "")
		if err != nil {
			return nil, err
		}
		out[a] = s
	}
	return out, nil
}

// combine adds an op over the input slots and returns its output slot.
func (b *builder) combine(kind opKind, in []int32, action string) (int32, error) {
	allPassive, anyPassive, mixed := true, false, false
	owner := int32(-1)
	for _, s := range in {
		if b.mixed[s] {
			mixed = true
		}
		if b.m.passive[s] {
			anyPassive = true
		} else {
			allPassive = false // the zero slot too: a blocked action is active at rate 0
		}
		if owner < 0 {
			owner = b.owner[s]
		}
	}
	if kind == opMin && mixed {
		for _, s := range in {
			if b.mixed[s] {
				return 0, fmt.Errorf("component %s performs %s both actively and passively, and cooperates on it: the fluid semantics needs each side of a cooperation to be active or passive on an action", b.performer(s), action)
			}
		}
	}
	var out int32
	switch kind {
	case opSum:
		out = b.newSlot(allPassive && anyPassive)
		b.mixed[out] = mixed || (anyPassive && !allPassive)
	case opMin:
		out = b.newSlot(allPassive && anyPassive)
	}
	b.owner[out] = owner
	start := int32(len(b.m.opIn))
	b.m.opIn = append(b.m.opIn, in...)
	b.m.ops = append(b.m.ops, op{kind: kind, out: out, in: start, end: int32(len(b.m.opIn))})
	return out, nil
}

// group makes the apparent-rate slots of one group's actions and its
// activities.
func (b *builder) group(gi int, hidden map[int32]bool) map[int32]int32 {
	g := b.p.Groups[gi]
	off := int32(b.m.Groups[gi].Offset)
	out := map[int32]int32{}
	active, passive := map[int32]bool{}, map[int32]bool{}
	for d := range g.Component.States {
		for _, t := range g.Component.Activities(d) {
			if t.Passive {
				passive[t.Action] = true
			} else {
				active[t.Action] = true
			}
		}
	}
	for d := range g.Component.States {
		for _, t := range g.Component.Activities(d) {
			s, ok := out[t.Action]
			if !ok {
				s = b.newSlot(passive[t.Action] && !active[t.Action])
				b.mixed[s] = passive[t.Action] && active[t.Action]
				b.owner[s] = int32(gi)
				out[t.Action] = s
			}
			name := b.p.Actions[t.Action]
			lbl := name
			if hidden[t.Action] {
				lbl = b.p.Actions[ctmc.TauAction]
			}
			b.m.acts = append(b.m.acts, activity{group: int32(gi), src: off + int32(d), dst: off + int32(t.Target), rate: t.Rate,
				slot: s, label: lbl, action: name})
			if !t.Passive {
				b.m.minRate = math.Min(b.m.minRate, t.Rate)
				b.m.maxRate = math.Max(b.m.maxRate, t.Rate)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Initial returns the initial populations: every copy of every group in
// its initial local state.
func (m *Model) Initial() []float64 { return append([]float64(nil), m.x0...) }

// StateName is "Group:State" for population index i.
func (m *Model) StateName(i int) string {
	g := m.groupOf(i)
	return m.Groups[g].Name + ":" + m.Groups[g].States[i-m.Groups[g].Offset]
}

func (m *Model) groupOf(i int) int {
	k := sort.Search(len(m.Groups), func(k int) bool { return m.Groups[k].Offset > i })
	return k - 1
}

// Group returns the index of the group named name (a group name such as
// "Client#2", or a component name when one group has it).
func (m *Model) Group(name string) (int, error) {
	var byComp []int
	for i, g := range m.Groups {
		if g.Name == name {
			return i, nil
		}
		if g.Component == name {
			byComp = append(byComp, i)
		}
	}
	if len(byComp) == 1 {
		return byComp[0], nil
	}
	var names []string
	for _, g := range m.Groups {
		names = append(names, g.Name)
	}
	if len(byComp) > 1 {
		return -1, fmt.Errorf("component %s makes several populations (%s): name one", name, strings.Join(names, ", "))
	}
	return -1, fmt.Errorf("no component %q (the populations are %s)", name, strings.Join(names, ", "))
}

// SmallestGroup is the group with the fewest copies (the first of them).
func (m *Model) SmallestGroup() int {
	best := 0
	for i, g := range m.Groups {
		if g.Copies < m.Groups[best].Copies {
			best = i
		}
	}
	return best
}

// Summary is "2 groups (Client 1000, Server 10), 6 equations".
func (m *Model) Summary() string {
	var parts []string
	for _, g := range m.Groups {
		parts = append(parts, fmt.Sprintf("%s %d", g.Name, g.Copies))
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("... %d more", len(parts)-6))
	}
	return fmt.Sprintf("%d groups (%s), %d equations", len(m.Groups), strings.Join(parts, ", "), m.Dim)
}

// activitiesBelow lists, for every cooperation op, the activities under
// each of its inputs.
func (b *builder) activitiesBelow() [][][]int32 {
	m := b.m
	under := make([][]int32, m.slots)
	for k, a := range m.acts {
		under[a.slot] = append(under[a.slot], int32(k))
	}
	out := make([][][]int32, len(m.ops))
	for oi, o := range m.ops {
		in := m.opIn[o.in:o.end]
		if o.kind == opMin {
			out[oi] = make([][]int32, len(in))
		}
		var all []int32
		for j, s := range in {
			if s == m.zero {
				continue
			}
			if o.kind == opMin {
				out[oi][j] = under[s]
			}
			all = append(all, under[s]...)
		}
		under[o.out] = all
	}
	return out
}
