package randmodel

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
)

// MaxProduct bounds the product of the components' local derivative counts
// (an upper bound on the state count) in the small profile.
const MaxProduct = 250

// Profile sets the size of the models Generate writes.
type Profile struct {
	Name string
	// MinProduct and MaxProduct bound the product of the components'
	// local derivative counts in general models.
	MinProduct, MaxProduct int
	// Components is the most sequential components of a general model
	// (before arrays), States the most named local states of each.
	Components, States int
	// Machines and AppsPerMachine bound mapping models, MaxMapping the
	// product of their machines' local state counts (0: no bound).
	Machines, AppsPerMachine, MaxMapping int
}

// Small is the profile of Generate: chains of a few to a few hundred
// states, for which dense methods are cheap.
var Small = Profile{Name: "small", MinProduct: 1, MaxProduct: MaxProduct, Components: 3, States: 4, Machines: 3, AppsPerMachine: 0}

// Medium writes chains of about 1,000 to 5,000 states, past the sizes at
// which the real solvers switch to their iterative paths (the Krylov
// steady-state solver above 2,000 states, the iterative mean solver on
// blocks above 600) but where the reference's dense methods still run.
var Medium = Profile{Name: "medium", MinProduct: 4000, MaxProduct: 40000, Components: 4, States: 9, Machines: 4, AppsPerMachine: 5, MaxMapping: 6000}

// Model is a generated model.
type Model struct {
	Seed   int64
	Family string // "general" or "mapping"
	Source string
	// Features lists what the generator put in, for the test's tallies.
	Features []string
	// Cycles, for mapping models, lists each machine's cycle-closing
	// actions (its natural passage targets); FirstActions its first ones;
	// Machines their names.
	Cycles       [][]string
	FirstActions [][]string
	Machines     []string
}

// Generate writes the model of a seed in the small profile.
func Generate(seed int64) Model { return GenerateWith(seed, Small) }

// GenerateWith writes the model of a seed in a profile.
func GenerateWith(seed int64, p Profile) Model {
	r := rand.New(rand.NewSource(seed))
	g := &gen{r: r, feats: map[string]bool{}, p: p, extra: rand.New(rand.NewSource(^seed))}
	g.stiff = r.Intn(4) == 0
	if g.stiff {
		g.feat("stiff")
	}
	var m Model
	switch x := r.Intn(60); {
	case x < 2 && p.MinProduct <= 1:
		m = g.mixedArray()
	case x < 22:
		m = g.mapping()
	case x < 32 && p.MinProduct <= 1:
		m = g.coupled()
	default:
		m = g.general()
	}
	m.Seed = seed
	for f := range g.feats {
		m.Features = append(m.Features, f)
	}
	sort.Strings(m.Features)
	return m
}

type gen struct {
	p     Profile
	r     *rand.Rand
	stiff bool
	feats map[string]bool
	defs  []string // rate definitions, in order
	nrate int
	// extra draws the parts added after seeds were fixed (a resource
	// that fails), so that the rest of a seed's model stays as it was.
	extra *rand.Rand
}

func (g *gen) feat(f string) { g.feats[f] = true }

// value draws a rate value: 0.2 to 5 usually, 1e-4 to 1e4 (log-uniform)
// in stiff models.
func (g *gen) value() float64 {
	var v float64
	if g.stiff {
		v = math.Pow(10, -4+8*g.r.Float64())
	} else {
		v = 0.2 + 4.8*g.r.Float64()
	}
	return roundSig(v, 3)
}

// extraValue is value drawn from g.extra.
func (g *gen) extraValue() float64 {
	if g.stiff {
		return roundSig(math.Pow(10, -4+8*g.extra.Float64()), 3)
	}
	return roundSig(0.2+4.8*g.extra.Float64(), 3)
}

func roundSig(v float64, digits int) float64 {
	s := strconv.FormatFloat(v, 'g', digits, 64)
	x, _ := strconv.ParseFloat(s, 64)
	return x
}

func num(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// rate writes an active rate: a literal, a rate name, or an expression.
func (g *gen) rate() string {
	v := g.value()
	switch g.r.Intn(5) {
	case 0:
		g.nrate++
		name := fmt.Sprintf("r%d", g.nrate)
		g.defs = append(g.defs, fmt.Sprintf("%s = %s;", name, num(v)))
		return name
	case 1:
		g.nrate++
		name := fmt.Sprintf("r%d", g.nrate)
		g.defs = append(g.defs, fmt.Sprintf("%s = %s;", name, num(v/2)))
		g.feat("rate-expression")
		return "2 * " + name
	}
	return num(v)
}

// passive writes a passive rate, sometimes weighted.
func (g *gen) passive() string {
	switch g.r.Intn(4) {
	case 0:
		g.feat("weighted-passive")
		return fmt.Sprintf("%d * infty", 2+g.r.Intn(2))
	case 1:
		return "T"
	}
	return "infty"
}

// ---- general models ----

// comp is one sequential component being written.
type comp struct {
	name    string
	k       int      // named local states name, name_1, ...
	local   []string // actions no other component performs
	shared  []string // shared actions it performs
	passive map[string]int
	start   string // the constant the system equation uses
	lines   []string
	derivs  int // local derivatives written (an upper bound)
	copies  int // array size (1: not an array)
	arrSet  []string
	arrCoop bool
	hide    []string
	stop    string // the action of a stop state, if any
}

const (
	modeActive = iota
	modePassive
	modeMixed
)

func (c *comp) state(i int) string {
	if i == 0 {
		return c.name
	}
	return fmt.Sprintf("%s_%d", c.name, i)
}

// system is a general model being drawn: the system equation is
// ((C0 <L1> C1) <L2> C2) ..., sets[j] the set where component j joins
// (j >= 1), or <*> where wildcard[j].
type system struct {
	pool     []string // the shared actions
	comps    []*comp
	sets     [][]string
	wildcard []bool
}

func (g *gen) general() Model {
	r := g.r
	sys := &system{pool: []string{"s1", "s2", "s3"}[:1+r.Intn(3)]}
	n := 1 + r.Intn(g.p.Components)
	if g.p.MinProduct > 1 && n == 1 {
		n = 2 // one component of thousands of states is not what this profile is for
	}
	g.drawComponents(sys, n)
	g.drawSets(sys)
	g.drawPassives(sys)
	g.drawArraysAndHiding(sys)
	g.writeComponents(sys)
	prod := product(sys.comps, g.p.MaxProduct)
	if prod > g.p.MaxProduct || prod < g.p.MinProduct {
		// Too big: drop arrays and extra components, keep the seed's
		// determinism by retrying on the same generator.
		g.defs, g.nrate = nil, 0
		g.feats = map[string]bool{}
		if g.stiff {
			g.feat("stiff")
		}
		return g.general()
	}
	var b strings.Builder
	for _, d := range g.defs {
		b.WriteString(d + "\n")
	}
	for _, c := range sys.comps {
		for _, l := range c.lines {
			b.WriteString(l + "\n")
		}
	}
	eq := g.equation(&b, sys, prod)
	b.WriteString(eq + "\n")
	return Model{Family: "general", Source: b.String()}
}

// drawComponents draws n components: their local states, local actions
// and shared actions (from the pool).
func (g *gen) drawComponents(sys *system, n int) {
	r := g.r
	sys.comps = make([]*comp, n)
	for j := range sys.comps {
		// Fewer local states when there are more components, so that
		// most composed models fit the budget.
		k := 1 + r.Intn(g.p.States+1-n)
		if g.p.MinProduct > 1 {
			k = 2 + r.Intn(g.p.States-1)
		}
		c := &comp{name: string(rune('P' + j)), k: k, passive: map[string]int{}, copies: 1}
		if j >= 3 {
			c.name = fmt.Sprintf("C%d", j)
		}
		for a := 0; a < 1+r.Intn(3); a++ {
			c.local = append(c.local, fmt.Sprintf("%s%d", strings.ToLower(c.name), a))
		}
		for _, s := range sys.pool {
			if r.Intn(2) == 0 {
				c.shared = append(c.shared, s)
			}
		}
		sys.comps[j] = c
	}
}

// drawSets draws the cooperation sets from the pool, sometimes with an
// action a side never performs (blocked).
func (g *gen) drawSets(sys *system) {
	r := g.r
	n := len(sys.comps)
	sys.sets = make([][]string, n)
	sys.wildcard = make([]bool, n)
	for j := 1; j < n; j++ {
		x := r.Intn(6)
		if g.p.MinProduct > 1 && x > 1 && r.Intn(2) == 0 {
			// Big models: synchronisation on every shared action
			// leaves few of the product's states reachable.
			x = 1
		}
		switch x {
		case 0:
			sys.wildcard[j] = true
			g.feat("wildcard")
		case 1:
			// empty: pure interleaving
		default:
			for _, s := range sys.pool {
				if r.Intn(3) > 0 {
					sys.sets[j] = append(sys.sets[j], s)
				}
			}
		}
	}
}

// drawPassives makes passive partners: component j (j >= 1) may be
// passive on an action of its node's set that the left side performs; the
// left side is always active on it (passives are only ever written on
// right children, synchronised where they join).
func (g *gen) drawPassives(sys *system) {
	r := g.r
	comps, sets := sys.comps, sys.sets
	for j := 1; j < len(comps); j++ {
		if sys.wildcard[j] {
			continue
		}
		if r.Intn(2) == 0 {
			// Make sure of one candidate: an action both sides perform,
			// in the set where component j joins.
			a := sys.pool[r.Intn(len(sys.pool))]
			if !contains(comps[j].shared, a) {
				comps[j].shared = append(comps[j].shared, a)
			}
			if i := r.Intn(j); !contains(comps[i].shared, a) {
				comps[i].shared = append(comps[i].shared, a)
			}
			if !contains(sets[j], a) {
				sets[j] = append(sets[j], a)
			}
		}
		left := map[string]bool{}
		for i := 0; i < j; i++ {
			for _, s := range comps[i].shared {
				left[s] = true
			}
		}
		for _, s := range sets[j] {
			if !contains(comps[j].shared, s) || !left[s] || r.Intn(4) == 0 {
				continue
			}
			if r.Intn(3) == 0 {
				comps[j].passive[s] = modeMixed
				g.feat("mixed-passive")
			} else {
				comps[j].passive[s] = modePassive
				g.feat("passive")
			}
		}
	}
}

// drawArraysAndHiding makes components arrays (with a cooperation set or
// not) and hides a local action of some.
func (g *gen) drawArraysAndHiding(sys *system) {
	r := g.r
	for _, c := range sys.comps {
		mixed := false
		for _, m := range c.passive {
			mixed = mixed || m == modeMixed
		}
		// A mixed component in an array is invalid once two copies
		// disagree (one side enables the action both actively and
		// passively); rarely allowed, so that refusals are tested too.
		if mixed && r.Intn(2) == 0 {
			g.feat("mixed-array")
			c.copies = 2
		} else if !mixed && r.Intn(4) == 0 {
			c.copies = 2 + r.Intn(2)
			g.feat("array")
			if r.Intn(2) == 0 {
				c.arrCoop = true
				g.feat("array-coop")
				for _, a := range append(append([]string{}, c.local...), c.shared...) {
					if r.Intn(2) == 0 {
						c.arrSet = append(c.arrSet, a)
					}
				}
			}
		}
		if len(c.local) > 1 && r.Intn(4) == 0 {
			c.hide = []string{c.local[r.Intn(len(c.local))]}
			g.feat("hiding")
		}
	}
}

// writeComponents writes every component's definitions; a component's
// stop action is blocked where it joins: the other side never performs
// it.
func (g *gen) writeComponents(sys *system) {
	for j, c := range sys.comps {
		g.component(c, len(sys.comps) > 1)
		if c.stop == "" {
			continue
		}
		node := j
		if j == 0 {
			node = 1
		}
		if !sys.wildcard[node] {
			sys.sets[node] = append(sys.sets[node], c.stop)
		}
	}
}

// product is the product of the components' local derivative counts (an
// upper bound on the states), counted until it passes limit.
func product(comps []*comp, limit int) int {
	prod := 1
	for _, c := range comps {
		for i := 0; i < c.copies; i++ {
			prod *= c.derivs
			if prod > limit {
				break
			}
		}
	}
	return prod
}

// equation returns the system equation, writing to b the static
// components it uses.
func (g *gen) equation(b *strings.Builder, sys *system, prod int) string {
	r := g.r
	var eq string
	for j, c := range sys.comps {
		t := c.start
		if c.copies > 1 {
			t = fmt.Sprintf("%s[%d]", c.start, c.copies)
			if c.arrCoop {
				t += "[" + strings.Join(c.arrSet, ", ") + "]"
			}
		}
		if len(c.hide) > 0 {
			t = fmt.Sprintf("(%s) / {%s}", t, strings.Join(c.hide, ", "))
		}
		if j == 0 {
			eq = t
			continue
		}
		switch {
		case sys.wildcard[j]:
			eq = fmt.Sprintf("(%s) <*> (%s)", eq, t)
		case len(sys.sets[j]) == 0:
			eq = fmt.Sprintf("(%s) || (%s)", eq, t)
		default:
			eq = fmt.Sprintf("(%s) <%s> (%s)", eq, strings.Join(sys.sets[j], ", "), t)
		}
		if j == 1 && r.Intn(4) == 0 {
			// A static component: a constant whose body is a
			// cooperation, expanded where it is used.
			fmt.Fprintf(b, "Sub = %s;\n", eq)
			eq = "Sub"
			g.feat("static")
		}
	}
	if len(sys.comps) > 1 && r.Intn(5) == 0 {
		// Hide a shared action at the top: its synchronised firings
		// become tau.
		s := sys.pool[r.Intn(len(sys.pool))]
		eq = fmt.Sprintf("(%s) / {%s}", eq, s)
		g.feat("hiding-shared")
	}
	if prod*prod <= g.p.MaxProduct && r.Intn(6) == 0 {
		// Two copies of the whole system, as a static component.
		fmt.Fprintf(b, "Sys = %s;\n", eq)
		switch r.Intn(3) {
		case 0:
			eq = "Sys || Sys"
		case 1:
			eq = "Sys <*> Sys"
		default:
			eq = fmt.Sprintf("Sys <%s> Sys", sys.pool[r.Intn(len(sys.pool))])
		}
		g.feat("static-twice")
	}
	return eq
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// compWriter writes one component's definitions (component).
type compWriter struct {
	g         *gen
	c         *comp
	acts      []string // the actions it performs
	passiveAt []bool   // per named state: are its passive-mode actions passive (mixed mode decides per state)?
	tails     []string // (act, rate).State_i, reused by several branches
	shape     string   // "cycle", "traps" or "stop"
}

// component writes the definitions of one sequential component: named
// states on a cycle (closed, or split into traps for reducible chains),
// extra branches, anonymous chains, aliases and an optional start-up.
func (g *gen) component(c *comp, composed bool) {
	r := g.r
	w := &compWriter{g: g, c: c, acts: append(append([]string{}, c.local...), c.shared...)}
	w.passiveAt = make([]bool, c.k)
	for i := range w.passiveAt {
		w.passiveAt[i] = r.Intn(2) == 0
	}
	// The shape of the local graph.
	w.shape = "cycle"
	if c.k >= 3 && r.Intn(8) == 0 {
		w.shape = "traps" // state 0 leads into two closed traps
		g.feat("reducible-component")
	} else if composed && c.k >= 2 && r.Intn(10) == 0 {
		w.shape = "stop" // the last state only performs a blocked action
		g.feat("stop-state")
	}
	c.derivs = c.k
	bodies := make([][]string, c.k)
	for i := 0; i < c.k; i++ {
		bodies[i] = w.stateBody(i)
	}
	for i := 0; i < c.k; i++ {
		c.lines = append(c.lines, fmt.Sprintf("%s = %s;", c.state(i), strings.Join(bodies[i], " + ")))
	}
	c.start = c.name
	w.aliasAndStartup()
}

// rate is the rate of a prefix of a in a state whose mixed-mode actions
// are passive or not.
func (w *compWriter) rate(a string, statePassive bool) string {
	switch w.c.passive[a] {
	case modePassive:
		return w.g.passive()
	case modeMixed:
		if statePassive {
			return w.g.passive()
		}
	}
	return w.g.rate()
}

// branch writes a chain of 1 to 3 prefixes from named state i ending in
// state target, or (extra branches of a cycle only) in a tail written
// before.
func (w *compWriter) branch(i, target int, extra bool) string {
	r, c := w.g.r, w.c
	var b strings.Builder
	length := 1
	switch x := r.Intn(10); {
	case x >= 9:
		length = 3
	case x >= 6:
		length = 2
	}
	for l := 0; l < length; l++ {
		a := w.acts[r.Intn(len(w.acts))]
		// Inside an anonymous chain the state is fresh: its
		// mixed-mode passivity is drawn per prefix.
		sp := w.passiveAt[i]
		if l > 0 {
			sp = r.Intn(2) == 0
		}
		fmt.Fprintf(&b, "(%s, %s).", a, w.rate(a, sp))
		c.derivs++
	}
	if extra && w.shape == "cycle" && len(w.tails) > 0 && r.Intn(3) == 0 {
		w.g.feat("repeated-anonymous")
		b.WriteString(w.tails[r.Intn(len(w.tails))])
		c.derivs--
		return b.String()
	}
	b.WriteString(c.state(target))
	return b.String()
}

// stateBody is the choice that defines named state i: its branch along
// the shape, extra branches, a weighted passive split; and a tail for
// later branches is remembered.
func (w *compWriter) stateBody(i int) []string {
	c := w.c
	var body []string
	var next int
	switch w.shape {
	case "traps":
		switch {
		case i == 0:
			next = 1
			body = append(body, w.branch(i, 2, false))
		case i == 1 || i == 2:
			next = i // a self-loop trap
		default:
			next = 0
		}
	default:
		next = (i + 1) % c.k
	}
	if w.shape == "stop" && i == c.k-1 {
		c.stop = "stop_" + strings.ToLower(c.name)
		return []string{fmt.Sprintf("(%s, %s).%s", c.stop, w.g.rate(), c.state(i))}
	}
	body = append(body, w.branch(i, next, false))
	body = w.extraBranches(i, body)
	body = w.weightedSplit(i, body)
	// Remember a tail for later branches: (act, rate).State_i.
	a := w.acts[w.g.r.Intn(len(w.acts))]
	if c.passive[a] == modeActive {
		w.tails = append(w.tails, fmt.Sprintf("(%s, %s).%s", a, w.g.rate(), c.state(i)))
		c.derivs++
	}
	return body
}

// extraBranches adds to state i's body random targets (self-loops among
// them), duplicates, the same action to different targets.
func (w *compWriter) extraBranches(i int, body []string) []string {
	r, c := w.g.r, w.c
	for e := r.Intn(3); e > 0; e-- {
		switch r.Intn(4) {
		case 0:
			body = append(body, body[r.Intn(len(body))])
			w.g.feat("duplicate-prefix")
		case 1:
			a := w.acts[r.Intn(len(w.acts))]
			body = append(body, fmt.Sprintf("(%s, %s).%s", a, w.rate(a, w.passiveAt[i]), c.state(i)))
			w.g.feat("self-loop")
		default:
			target := r.Intn(c.k)
			if w.shape == "traps" && i > 0 && i < 3 {
				target = i
			}
			body = append(body, w.branch(i, target, true))
		}
	}
	return body
}

// weightedSplit adds to state i's body, sometimes, weighted passives that
// matter: two passive prefixes of one action to different states, with
// different weights, split the active partner's rate between them in
// proportion to the weights.
func (w *compWriter) weightedSplit(i int, body []string) []string {
	r, c := w.g.r, w.c
	if w.shape != "cycle" || c.k < 2 || r.Intn(2) != 0 {
		return body
	}
	var pas []string
	for _, a := range c.shared {
		if m := c.passive[a]; m == modePassive || m == modeMixed && w.passiveAt[i] {
			pas = append(pas, a)
		}
	}
	if len(pas) == 0 {
		return body
	}
	a := pas[r.Intn(len(pas))]
	w1 := 1 + r.Intn(3)
	w2 := w1 + 1 + r.Intn(2)
	t1 := r.Intn(c.k)
	t2 := (t1 + 1 + r.Intn(c.k-1)) % c.k
	w.g.feat("weighted-split")
	return append(body, fmt.Sprintf("(%s, %d * infty).%s", a, w1, c.state(t1)), fmt.Sprintf("(%s, %d * infty).%s", a, w2, c.state(t2)))
}

// aliasAndStartup sometimes adds an alias (Name_a = Name_j; used as the
// start) and a start-up phase (local actions leading into the cycle once).
func (w *compWriter) aliasAndStartup() {
	g, r, c := w.g, w.g.r, w.c
	if r.Intn(4) == 0 {
		alias := c.name + "_a"
		c.lines = append(c.lines, fmt.Sprintf("%s = %s;", alias, c.state(r.Intn(c.k))))
		c.start = alias
		c.derivs++
		g.feat("alias")
	}
	if r.Intn(4) == 0 {
		boot := c.name + "_boot"
		a := c.local[r.Intn(len(c.local))]
		c.lines = append(c.lines, fmt.Sprintf("%s = (%s, %s).(%s, %s).%s;", boot, a, g.rate(), a, g.rate(), c.start))
		c.start = boot
		c.derivs += 2
		g.feat("startup")
	}
}

// mixedArray writes an array of a component passive on s in one derivative
// and active in another, synchronised with an active partner: valid for lang
// (no passive reaches the top), invalid at run time once the copies
// disagree, since the array then enables s both actively and passively.
func (g *gen) mixedArray() Model {
	g.feat("mixed-array")
	var b strings.Builder
	x, y := g.rate(), g.rate()
	local := ""
	if g.r.Intn(2) == 0 {
		local = fmt.Sprintf(" + (x0, %s).X", g.rate())
	}
	body := fmt.Sprintf("X = (s1, %s).X1%s;\nX1 = (s1, %s).X;\nY = (s1, %s).Y;\n", g.passive(), local, x, y)
	for _, d := range g.defs {
		b.WriteString(d + "\n")
	}
	b.WriteString(body)
	fmt.Fprintf(&b, "X[%d] <s1> Y\n", 2+g.r.Intn(2))
	return Model{Family: "mixed-array", Source: b.String()}
}

// ---- mapping models ----

func (g *gen) mapping() Model {
	r := g.r
	var apps, machines int
	var owner []int
	if g.p.AppsPerMachine == 0 {
		apps = 1 + r.Intn(4)
		machines = 1 + r.Intn(minInt(apps, 3))
		owner = make([]int, apps)
		for i := range owner {
			owner[i] = r.Intn(machines)
		}
		for m := 0; m < machines; m++ { // every machine gets an application
			owner[m] = m
		}
	} else {
		// Every machine computes 3 to AppsPerMachine applications, in an
		// order of their numbers shuffled below.
		machines = 3 + r.Intn(g.p.Machines-2)
		for m := 0; m < machines; m++ {
			for k := 3 + r.Intn(g.p.AppsPerMachine-2); k > 0; k-- {
				owner = append(owner, m)
			}
		}
		r.Shuffle(len(owner), func(x, y int) { owner[x], owner[y] = owner[y], owner[x] })
		apps = len(owner)
	}
	var b strings.Builder
	var appTerms, acts []string
	for i := 0; i < apps; i++ {
		a := fmt.Sprintf("compute%d", i+1)
		acts = append(acts, a)
		name := fmt.Sprintf("A%d", i+1)
		fmt.Fprintf(&b, "%s = (%s, %s).%s;\n", name, a, g.passive(), name)
		if r.Intn(6) == 0 {
			appTerms = append(appTerms, fmt.Sprintf("%s[2]", name))
			g.feat("array")
		} else {
			appTerms = append(appTerms, name)
		}
	}
	m := Model{Family: "mapping"}
	var machTerms []string
	var lines []string
	prod := 1 // product of the machines' local state counts (at most)
	for j := 0; j < machines; j++ {
		var mine []string
		for i, o := range owner {
			if o == j {
				mine = append(mine, acts[i])
			}
		}
		r.Shuffle(len(mine), func(x, y int) { mine[x], mine[y] = mine[y], mine[x] })
		name := fmt.Sprintf("M%d", j+1)
		// Ideal and perturbed paths race on the first action.
		path := func() string {
			var p strings.Builder
			for _, a := range mine {
				fmt.Fprintf(&p, "(%s, %s).", a, g.rate())
			}
			return p.String() + name
		}
		branches := []string{path(), path()}
		if r.Intn(4) == 0 {
			branches = append(branches, path()) // a second perturbation
		}
		prod *= 1 + len(branches)*(len(mine)-1)
		lines = append(lines, fmt.Sprintf("%s = %s;", name, strings.Join(branches, " + ")))
		machTerms = append(machTerms, name)
		m.Machines = append(m.Machines, name)
		m.Cycles = append(m.Cycles, []string{mine[len(mine)-1]})
		m.FirstActions = append(m.FirstActions, []string{mine[0]})
	}
	if g.p.AppsPerMachine > 0 && (prod < 1000 || prod > g.p.MaxMapping) {
		g.defs, g.nrate = nil, 0
		return g.mapping()
	}
	for _, d := range g.defs {
		b.WriteString(d + "\n")
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(appTerms, " <> "), strings.Join(acts, ", "), strings.Join(machTerms, " <> "))
	m.Source = b.String()
	return m
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// ---- coupled mapping models ----

// maxCoupledProduct bounds the product of a coupled model's local state
// counts (machines and shared components).
const maxCoupledProduct = 400

// coupledParts are the pieces of a coupled model being drawn.
type coupledParts struct {
	m                             Model
	appLines, machLines, resLines []string
	appTerms, computes, syncs     []string
	groupTerms, resTerms          []string
	prod                          int // the product of the machines' and resources' local state counts
	napp, nmach                   int
}

// coupled writes a mapping whose machines come in groups of 1 to 4 that
// share a component of 2 to 4 local states (a network, a file server: each
// machine's paths pass through its own use action, which the component
// serves one at a time, passively, with weights, or actively), or that
// cooperate directly on a barrier action; a group of one may share
// nothing. With finished machines stopped, a machine of a group can wait
// for good on a partner that has finished (a barrier), which gives
// infinite means too.
func (g *gen) coupled() Model {
	r := g.r
	g.feat("coupled")
	cp := &coupledParts{m: Model{Family: "coupled"}, prod: 1}
	ngroups := 1 + r.Intn(3)
	for k := 1; k <= ngroups && cp.nmach < 5; k++ {
		g.coupledGroup(cp, k)
	}
	if cp.prod > maxCoupledProduct {
		g.defs, g.nrate = nil, 0
		g.feats = map[string]bool{}
		if g.stiff {
			g.feat("stiff")
		}
		return g.coupled()
	}
	return cp.model(g.defs)
}

// coupledGroup draws group k: one to five machines, coupled by a shared
// resource they use, or by a barrier, or not at all.
func (g *gen) coupledGroup(cp *coupledParts, k int) {
	r := g.r
	size := 1
	if r.Intn(4) > 0 {
		size = 2 + r.Intn(3)
	}
	size = min(size, 5-cp.nmach)
	barrier := size >= 2 && r.Intn(6) == 0
	shared := !barrier && (size >= 2 || r.Intn(2) == 0)
	nres := 2 + r.Intn(3)
	var uses, members []string
	for q := 0; q < size; q++ {
		name, use := g.coupledMachine(cp, k, shared, barrier)
		if use != "" {
			uses = append(uses, use)
		}
		members = append(members, name)
	}
	if barrier {
		cp.syncs = append(cp.syncs, fmt.Sprintf("sync%d", k))
		g.feat("barrier")
		cp.groupTerms = append(cp.groupTerms, "("+strings.Join(members, fmt.Sprintf(" <sync%d> ", k))+")")
	} else {
		cp.groupTerms = append(cp.groupTerms, strings.Join(members, " <> "))
	}
	if shared {
		g.sharedResource(cp, k, uses, nres)
	}
}

// coupledMachine draws a machine of group k with its applications: two or
// three paths through them, with a use of the group's resource (shared)
// or its barrier. It returns the machine's name and its use action ("":
// none).
func (g *gen) coupledMachine(cp *coupledParts, k int, shared, barrier bool) (string, string) {
	r := g.r
	cp.nmach++
	name := fmt.Sprintf("M%d", cp.nmach)
	var mine []string
	for a, apps := 0, 1+r.Intn(3); a < apps; a++ {
		cp.napp++
		act := fmt.Sprintf("compute%d", cp.napp)
		mine = append(mine, act)
		cp.computes = append(cp.computes, act)
		cp.appLines = append(cp.appLines, fmt.Sprintf("A%d = (%s, %s).A%d;", cp.napp, act, g.passive(), cp.napp))
		cp.appTerms = append(cp.appTerms, fmt.Sprintf("A%d", cp.napp))
	}
	use := ""
	if shared {
		use = fmt.Sprintf("use%d", cp.nmach)
	}
	sync := ""
	if barrier {
		sync = fmt.Sprintf("sync%d", k)
	}
	path := func() string {
		steps := append([]string{}, mine...)
		// The use or barrier step comes anywhere before the last
		// application, which closes the cycle.
		for _, extra := range []string{use, sync} {
			if extra == "" {
				continue
			}
			at := r.Intn(len(steps))
			steps = append(steps[:at], append([]string{extra}, steps[at:]...)...)
		}
		var p strings.Builder
		for _, a := range steps {
			fmt.Fprintf(&p, "(%s, %s).", a, g.rate())
		}
		return p.String() + name
	}
	branches := []string{path(), path()}
	if r.Intn(4) == 0 {
		branches = append(branches, path())
	}
	steps := len(mine)
	if shared {
		steps++
	}
	if barrier {
		steps++
	}
	cp.prod *= 1 + len(branches)*(steps-1)
	cp.machLines = append(cp.machLines, fmt.Sprintf("%s = %s;", name, strings.Join(branches, " + ")))
	cp.m.Machines = append(cp.m.Machines, name)
	cp.m.Cycles = append(cp.m.Cycles, []string{mine[len(mine)-1]})
	cp.m.FirstActions = append(cp.m.FirstActions, []string{firstOf(branches[0])})
	return name, use
}

// sharedResource writes Res<k>: state 0 serves one use at a time
// (passively, passively weighted or actively); the others are the
// service's nres-1 phases, back to state 0.
func (g *gen) sharedResource(cp *coupledParts, k int, uses []string, nres int) {
	mode := g.r.Intn(3) // 0 passive, 1 weighted passive, 2 active
	var serve []string
	for i, u := range uses {
		switch mode {
		case 0:
			serve = append(serve, fmt.Sprintf("(%s, infty).Res%d_1", u, k))
		case 1:
			serve = append(serve, fmt.Sprintf("(%s, %d * infty).Res%d_1", u, 1+i%3, k))
			g.feat("weighted-passive")
		default:
			serve = append(serve, fmt.Sprintf("(%s, %s).Res%d_1", u, g.rate(), k))
		}
	}
	// A quarter of the resources fail when idle and are repaired: a cycle
	// of two states that no machine moves, which keeps going after every
	// machine has finished, so that the Laplace engine's blocks (its dense
	// solves, closed blocks holding the mass) are compared too.
	states := nres
	if g.extra.Intn(4) == 0 {
		fail, repair := g.extraValue(), g.extraValue()
		serve = append(serve, fmt.Sprintf("(fail%d, %s).Res%dDown", k, num(fail), k))
		cp.resLines = append(cp.resLines, fmt.Sprintf("Res%dDown = (repair%d, %s).Res%d;", k, k, num(repair), k))
		states++
		g.feat("failing-resource")
	}
	cp.resLines = append(cp.resLines, fmt.Sprintf("Res%d = %s;", k, strings.Join(serve, " + ")))
	for i := 1; i < nres; i++ {
		next := fmt.Sprintf("Res%d_%d", k, i+1)
		if i == nres-1 {
			next = fmt.Sprintf("Res%d", k)
		}
		cp.resLines = append(cp.resLines, fmt.Sprintf("Res%d_%d = (step%d_%d, %s).%s;", k, i, k, i, g.rate(), next))
	}
	cp.resTerms = append(cp.resTerms, fmt.Sprintf("Res%d", k))
	cp.syncs = append(cp.syncs, uses...)
	cp.prod *= states
	g.feat("shared-component")
}

// model writes the model: the rate definitions, the components, and the
// applications cooperating with the machines, which cooperate with the
// resources on their uses.
func (cp *coupledParts) model(defs []string) Model {
	var b strings.Builder
	for _, d := range defs {
		b.WriteString(d + "\n")
	}
	for _, l := range append(append(cp.appLines, cp.machLines...), cp.resLines...) {
		b.WriteString(l + "\n")
	}
	machines := strings.Join(cp.groupTerms, " <> ")
	if len(cp.resTerms) > 0 {
		var uses []string
		for _, s := range cp.syncs {
			if strings.HasPrefix(s, "use") {
				uses = append(uses, s)
			}
		}
		machines = fmt.Sprintf("(%s) <%s> (%s)", machines, strings.Join(uses, ", "), strings.Join(cp.resTerms, " <> "))
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(cp.appTerms, " <> "), strings.Join(cp.computes, ", "), machines)
	cp.m.Source = b.String()
	return cp.m
}

// firstOf is the action of a path's first prefix.
func firstOf(path string) string {
	return path[1:strings.Index(path, ",")]
}
