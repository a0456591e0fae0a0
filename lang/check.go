package lang

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Rate is the evaluated rate of an activity: an active rate (Value > 0,
// finite) or a passive one (Passive, Value is the weight w of w*infty).
type Rate struct {
	Passive bool
	Value   float64
}

func (r Rate) String() string {
	if r.Passive {
		if r.Value == 1 {
			return "infty"
		}
		return fmt.Sprintf("%g*infty", r.Value)
	}
	return fmt.Sprintf("%g", r.Value)
}

// ProcKind classifies a process definition.
type ProcKind int

const (
	// Sequential definitions are built from prefix and choice: one component
	// moving between local states.
	Sequential ProcKind = iota
	// Static definitions are cooperations, hidings or arrays of components;
	// they are expanded where they are used.
	Static
)

// RateInfo is a checked rate definition.
type RateInfo struct {
	Decl  *RateDecl
	Value float64 // NaN if it could not be evaluated (an error was reported)
}

// ProcInfo is a checked process definition.
type ProcInfo struct {
	Decl *ProcDecl
	Kind ProcKind
}

// Model is a checked model: every name resolved, every rate evaluated. It is
// only handed out when Check found no errors, so a consumer may rely on the
// invariants below.
//
//   - Every Const in the tree names a key of Procs; every RateRef a key of
//     Rates, except the PEPA Workbench's top used as an activity's rate
//     (or its weight's factor) where no rate is named top: the passive
//     rate, as PrefixRate says.
//   - Every Prefix has an entry in Rates of its activity (PrefixRate), a finite
//     positive rate or a passive one with a finite positive weight.
//   - Every Array has a size >= 1 (ArraySize).
//   - The body of a Sequential definition, and the continuation of every
//     prefix, contain no Coop, Hide or Array: sequential components never
//     change structure, so the state space is finite.
//   - There is no unguarded recursion.
type Model struct {
	File   *File
	Rates  map[string]*RateInfo
	Procs  map[string]*ProcInfo
	System Process

	prefixRates map[*Prefix]Rate
	arraySizes  map[*Array]int
}

// PrefixRate returns the evaluated rate of a prefix of the model.
func (m *Model) PrefixRate(p *Prefix) Rate { return m.prefixRates[p] }

// ArraySize returns the evaluated size of an array of the model.
func (m *Model) ArraySize(a *Array) int { return m.arraySizes[a] }

// MaxArraySize bounds P[n]: larger arrays cannot be solved anyway, and the
// bound keeps a typo from exhausting memory.
const MaxArraySize = 1 << 20

// Load parses and checks a model. The model is nil when there are errors.
func Load(filename string, src []byte) (*Model, Diagnostics) {
	f, diags := parse(filename, src)
	syntaxErrors := diags.HasErrors()
	m, cd := Check(f)
	for _, d := range cd {
		// With a part of the file that did not parse, a warning such as
		// "rate r is defined but never used" may be false: the use may be
		// in that part. Errors stay (broken definitions are not reported
		// as undefined).
		if syntaxErrors && d.Severity == Warning {
			continue
		}
		diags = append(diags, d)
	}
	diags.Sort()
	diags.truncate()
	if diags.HasErrors() {
		return nil, diags
	}
	return m, diags
}

// Check resolves names, evaluates rates and runs the static checks of the
// language specification on a parsed file. It returns the model (nil if there
// were errors) and every diagnostic found.
func Check(f *File) (*Model, Diagnostics) {
	c := &checker{
		f: f,
		m: &Model{
			File:        f,
			Rates:       map[string]*RateInfo{},
			Procs:       map[string]*ProcInfo{},
			System:      f.System,
			prefixRates: map[*Prefix]Rate{},
			arraySizes:  map[*Array]int{},
		},
		rateState: map[string]int{},
		usedRates: map[string]bool{},
	}
	c.collect()
	c.evalRates()
	structural := c.processes()
	if !structural && f.System != nil {
		c.passiveCheck()
	}
	c.unused()
	for _, u := range c.undefinedAt {
		if *u.count > 0 {
			c.diags[u.diag].Msg += fmt.Sprintf(" (and %d more uses)", *u.count)
		}
	}
	c.diags.Sort()
	if c.diags.HasErrors() {
		return nil, c.diags
	}
	return c.m, c.diags
}

type checker struct {
	f     *File
	m     *Model
	diags Diagnostics

	undefinedAt []undefinedUse

	rateState map[string]int // 0 unvisited, 1 in progress, 2 done
	rateStack []string
	usedRates map[string]bool
	// unresolved is set when a process name has no definition (reported,
	// or defined by a statement that failed to parse).
	unresolved bool
	// undefined holds the names reported as undefined, so that a name is
	// reported once, at its first use, however often it is used.
	undefined map[string]*int
}

// undefinedName reports an undefined rate or process at its first use
// (what is wrong is the missing definition; every use is fixed by it).
func (c *checker) undefinedName(pos Pos, what, name, hint string) {
	key := what + " " + name
	if n, ok := c.undefined[key]; ok {
		*n++
		return
	}
	if c.undefined == nil {
		c.undefined = map[string]*int{}
	}
	c.undefined[key] = new(int)
	c.errorf(pos, "undefined %s %s%s", what, name, hint)
	c.undefinedAt = append(c.undefinedAt, undefinedUse{len(c.diags) - 1, c.undefined[key]})
}

type undefinedUse struct {
	diag  int
	count *int
}

func (c *checker) errorf(pos Pos, format string, args ...any) {
	c.diags.add(Diagnostic{File: c.f.Name, Pos: pos, Severity: Error, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) warnf(pos Pos, format string, args ...any) {
	c.diags.add(Diagnostic{File: c.f.Name, Pos: pos, Severity: Warning, Msg: fmt.Sprintf(format, args...)})
}

// ---- declarations ----

func (c *checker) collect() {
	for _, d := range c.f.Decls {
		switch d := d.(type) {
		case *RateDecl:
			if prev, ok := c.m.Rates[d.Name.Name]; ok {
				c.errorf(d.Name.NamePos, "duplicate definition of rate %s (first defined at %s)", d.Name.Name, prev.Decl.Name.NamePos)
				continue
			}
			c.m.Rates[d.Name.Name] = &RateInfo{Decl: d, Value: math.NaN()}
		case *ProcDecl:
			if prev, ok := c.m.Procs[d.Name.Name]; ok {
				c.errorf(d.Name.NamePos, "duplicate definition of process %s (first defined at %s)", d.Name.Name, prev.Decl.Name.NamePos)
				continue
			}
			c.m.Procs[d.Name.Name] = &ProcInfo{Decl: d}
		}
	}
}

// ---- rates ----

func (c *checker) evalRates() {
	for _, d := range c.f.Decls {
		if d, ok := d.(*RateDecl); ok && c.m.Rates[d.Name.Name].Decl == d {
			c.rate(d.Name.Name)
		}
	}
}

// rate evaluates a rate definition, detecting cycles.
func (c *checker) rate(name string) (float64, bool) {
	info := c.m.Rates[name]
	switch c.rateState[name] {
	case 1:
		// A cycle: the stack from name's first appearance.
		i := len(c.rateStack) - 1
		for c.rateStack[i] != name {
			i--
		}
		cycle := append(append([]string{}, c.rateStack[i:]...), name)
		c.errorf(info.Decl.Name.NamePos, "cyclic rate definitions: %s", strings.Join(cycle, " -> "))
		return math.NaN(), false
	case 2:
		return info.Value, !math.IsNaN(info.Value)
	}
	c.rateState[name] = 1
	c.rateStack = append(c.rateStack, name)
	v, ok := c.eval(info.Decl.Value, "rate definition")
	c.rateStack = c.rateStack[:len(c.rateStack)-1]
	c.rateState[name] = 2
	if !ok {
		v = math.NaN()
	}
	info.Value = v
	return v, ok
}

// eval evaluates a numeric rate expression. ok is false if an error was
// reported (or a name it uses had one); the value may still be infinite or
// NaN from arithmetic, which the caller judges.
func (c *checker) eval(e Expr, where string) (float64, bool) {
	switch e := e.(type) {
	case *Number:
		// An infinite literal is out of range, reported by the parser.
		return e.Value, !math.IsInf(e.Value, 0)
	case *RateRef:
		c.usedRates[e.Name] = true
		if _, ok := c.m.Rates[e.Name]; !ok {
			if !c.f.Broken[e.Name] {
				c.undefinedName(e.NamePos, "rate", e.Name, "")
			}
			return math.NaN(), false
		}
		return c.rate(e.Name)
	case *Passive:
		c.errorf(e.InftyPos, "the passive rate infty cannot be used in a %s; it may only be an activity's whole rate or w * infty", where)
		return math.NaN(), false
	case *ParenExpr:
		return c.eval(e.X, where)
	case *Unary:
		v, ok := c.eval(e.X, where)
		if e.Op == '-' {
			v = -v
		}
		return v, ok
	case *Binary:
		x, okx := c.eval(e.X, where)
		y, oky := c.eval(e.Y, where)
		switch e.Op {
		case '+':
			return x + y, okx && oky
		case '-':
			return x - y, okx && oky
		case '*':
			return x * y, okx && oky
		default:
			return x / y, okx && oky
		}
	}
	panic("lang: unknown expression node")
}

// activityRate evaluates the rate of a prefix: a positive expression,
// infty/T, or w * infty.
func (c *checker) activityRate(p *Prefix) {
	e := unparen(p.Rate)
	if c.passive(e) {
		c.m.prefixRates[p] = Rate{Passive: true, Value: 1}
		return
	}
	if b, ok := e.(*Binary); ok && b.Op == '*' {
		w, pas := b.X, unparen(b.Y)
		if !c.passive(pas) {
			w, pas = b.Y, unparen(b.X)
		}
		if c.passive(pas) {
			v, ok := c.eval(w, "passive weight")
			if ok && c.positive(w.Pos(), v, fmt.Sprintf("weight of passive action %s", p.Action.Name)) {
				c.m.prefixRates[p] = Rate{Passive: true, Value: v}
			}
			return
		}
	}
	v, ok := c.eval(p.Rate, "rate expression")
	if ok && c.positive(p.Rate.Pos(), v, fmt.Sprintf("rate of action %s", p.Action.Name)) {
		c.m.prefixRates[p] = Rate{Value: v}
	}
}

// passive reports whether e is the passive rate: infty, T, _ (the
// Imperial PEPA Compiler's spelling), or the PEPA Workbench's top where
// the model defines no rate named top.
func (c *checker) passive(e Expr) bool {
	switch e := e.(type) {
	case *Passive:
		return true
	case *RateRef:
		if e.Name == WorkbenchTop {
			_, defined := c.m.Rates[e.Name]
			return !defined && !c.f.Broken[e.Name]
		}
	}
	return false
}

// WorkbenchTop is the PEPA Workbench's name for the passive rate; it is
// read as infty where the model does not define a rate of that name.
const WorkbenchTop = "top"

func (c *checker) positive(pos Pos, v float64, what string) bool {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.errorf(pos, "%s is %g: a rate must be a finite positive number (division by zero?)", what, v)
	case v <= 0:
		c.errorf(pos, "%s is %g: a rate must be a finite positive number", what, v)
	default:
		return true
	}
	return false
}

func unparen(e Expr) Expr {
	for {
		p, ok := e.(*ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// ---- processes ----

// processes resolves process names, evaluates activity rates and array
// sizes, classifies definitions and finds unguarded recursion. It reports
// whether a structural error was found (one that makes the component
// analysis meaningless).
func (c *checker) processes() bool {
	nerr := len(c.diags.Errors())
	// Names and rates, in source order.
	for _, d := range c.f.Decls {
		if d, ok := d.(*ProcDecl); ok {
			c.resolve(d.Body)
		}
	}
	if c.f.System != nil {
		c.resolve(c.f.System)
	}
	structErr := c.unresolved || len(c.diags.Errors()) > nerr
	nerr = len(c.diags.Errors())

	// Unguarded recursion, then kinds.
	kinds := &kinder{c: c, state: map[string]int{}}
	for _, d := range c.f.Decls {
		if d, ok := d.(*ProcDecl); ok && c.m.Procs[d.Name.Name].Decl == d {
			kinds.unguarded(d.Name.Name)
		}
	}
	if len(c.diags.Errors()) > nerr {
		return true // kinds are not defined on unguarded cycles
	}
	for _, d := range c.f.Decls {
		if d, ok := d.(*ProcDecl); ok && c.m.Procs[d.Name.Name].Decl == d {
			c.m.Procs[d.Name.Name].Kind = kinds.kind(d.Name.Name)
			kinds.checkTerm(d.Body, d.Name.Name)
		}
	}
	if c.f.System != nil {
		kinds.checkTerm(c.f.System, "")
	}
	return structErr || len(c.diags.Errors()) > nerr
}

// resolve checks names and evaluates the rates and sizes in a term.
func (c *checker) resolve(p Process) {
	walkProc(p, func(p Process) {
		switch p := p.(type) {
		case *Prefix:
			c.activityRate(p)
		case *Const:
			c.resolveProc(p.Ident)
		case *Hide:
			for _, id := range p.Actions {
				if id.Name == "tau" {
					c.errorf(id.NamePos, "tau is the silent action and cannot be hidden (hiding makes an action tau)")
				}
			}
		case *Array:
			c.resolveProc(p.Name)
			v, ok := c.eval(p.Size, "array size")
			if !ok {
				return
			}
			if v != math.Trunc(v) || v < 1 || v > MaxArraySize {
				c.errorf(p.Size.Pos(), "array size of %s is %g: it must be a whole number from 1 to %d", p.Name.Name, v, MaxArraySize)
				return
			}
			c.m.arraySizes[p] = int(v)
		}
	})
}

func (c *checker) resolveProc(id Ident) {
	if _, ok := c.m.Procs[id.Name]; ok {
		return
	}
	c.unresolved = true
	if !c.f.Broken[id.Name] {
		hint := ""
		if id.Name == "Stop" {
			hint = " (Stop, the Imperial PEPA Compiler's process that does nothing, is not PEPA: a PEPA component never stops, and a state in which nothing can happen is a deadlock)"
		}
		c.undefinedName(id.NamePos, "process", id.Name, hint)
	}
}

// walkProc calls f on p and every process term inside it (not following
// process names).
func walkProc(p Process, f func(Process)) {
	f(p)
	switch p := p.(type) {
	case *Prefix:
		walkProc(p.Then, f)
	case *Choice:
		for _, a := range p.Alts {
			walkProc(a, f)
		}
	case *Coop:
		walkProc(p.X, f)
		walkProc(p.Y, f)
	case *Hide:
		walkProc(p.X, f)
	case *ParenProc:
		walkProc(p.X, f)
	}
}

type kinder struct {
	c     *checker
	state map[string]int // unguarded DFS: 0 new, 1 on stack, 2 done
	stack []string
	kinds map[string]ProcKind
}

// unguarded finds recursion that does not pass through a prefix.
func (k *kinder) unguarded(name string) {
	switch k.state[name] {
	case 1:
		i := len(k.stack) - 1
		for k.stack[i] != name {
			i--
		}
		cycle := append(append([]string{}, k.stack[i:]...), name)
		k.c.errorf(k.c.m.Procs[name].Decl.Name.NamePos,
			"unguarded recursion: %s (a process must perform an activity before it recurs)", strings.Join(cycle, " -> "))
		return
	case 2:
		return
	}
	k.state[name] = 1
	k.stack = append(k.stack, name)
	unguardedRefs(k.c.m.Procs[name].Decl.Body, func(ref string) {
		if _, ok := k.c.m.Procs[ref]; ok {
			k.unguarded(ref)
		}
	})
	k.stack = k.stack[:len(k.stack)-1]
	k.state[name] = 2
}

// unguardedRefs calls f for each process name in p that is not under a prefix.
func unguardedRefs(p Process, f func(string)) {
	switch p := p.(type) {
	case *Const:
		f(p.Name)
	case *Array:
		f(p.Name.Name)
	case *Choice:
		for _, a := range p.Alts {
			unguardedRefs(a, f)
		}
	case *Coop:
		unguardedRefs(p.X, f)
		unguardedRefs(p.Y, f)
	case *Hide:
		unguardedRefs(p.X, f)
	case *ParenProc:
		unguardedRefs(p.X, f)
	}
}

// kind is the kind of a definition. It terminates because there is no
// unguarded recursion (checked first).
func (k *kinder) kind(name string) ProcKind {
	if kd, ok := k.kinds[name]; ok {
		return kd
	}
	if k.kinds == nil {
		k.kinds = map[string]ProcKind{}
	}
	kd := k.termKind(k.c.m.Procs[name].Decl.Body)
	k.kinds[name] = kd
	return kd
}

func (k *kinder) termKind(p Process) ProcKind {
	switch p := p.(type) {
	case *Prefix, *Choice:
		return Sequential
	case *Const:
		if _, ok := k.c.m.Procs[p.Name]; ok {
			return k.kind(p.Name)
		}
		return Sequential
	case *ParenProc:
		return k.termKind(p.X)
	}
	return Static
}

// checkTerm enforces that prefixes and choices contain only sequential
// terms. owner is the definition being checked ("" for the system equation).
func (k *kinder) checkTerm(p Process, owner string) {
	walkProc(p, func(p Process) {
		switch p := p.(type) {
		case *Prefix:
			if k.termKind(p.Then) == Static {
				k.staticInSequential(p.Then, owner, "a prefix must be followed by a sequential process")
			}
		case *Choice:
			for _, a := range p.Alts {
				if k.termKind(a) == Static {
					k.staticInSequential(a, owner, "both sides of a choice must be sequential processes")
				}
			}
		}
	})
}

func (k *kinder) staticInSequential(p Process, owner, rule string) {
	what := "a cooperation"
	switch q := unparenProc(p).(type) {
	case *Hide:
		what = "a hiding"
	case *Array:
		what = "an array"
	case *Const:
		what = fmt.Sprintf("%s, a composed component", q.Name)
	}
	if owner != "" && k.reaches(p, owner) {
		k.c.errorf(p.Pos(), "recursion through a cooperation: %s recurs inside %s, so its state space is unbounded", owner, what)
		return
	}
	k.c.errorf(p.Pos(), "%s, but this is %s (components cannot change structure)", rule, what)
}

func unparenProc(p Process) Process {
	for {
		q, ok := p.(*ParenProc)
		if !ok {
			return p
		}
		p = q.X
	}
}

// reaches reports whether term p refers, directly or through definitions,
// to the definition target.
func (k *kinder) reaches(p Process, target string) bool {
	seen := map[string]bool{}
	var visit func(p Process) bool
	visit = func(p Process) bool {
		found := false
		walkProc(p, func(q Process) {
			var name string
			switch q := q.(type) {
			case *Const:
				name = q.Name
			case *Array:
				name = q.Name.Name
			default:
				return
			}
			if found || seen[name] {
				return
			}
			seen[name] = true
			if name == target {
				found = true
				return
			}
			if info, ok := k.c.m.Procs[name]; ok && visit(info.Decl.Body) {
				found = true
			}
		})
		return found
	}
	return visit(p)
}

// ---- actions: passive activities, cooperation and hiding sets ----

// alphabet is what a component does: for each action, whether some state
// performs it actively, and the first passive prefix that is not yet
// synchronised with an active partner.
type alphabet struct {
	active  map[string]bool
	passive map[string]Pos
	memo    bool // stored in a memo table: copy before changing
}

func (a *alphabet) clone() *alphabet {
	c := newAlphabet()
	for k, v := range a.active {
		c.active[k] = v
	}
	for k, v := range a.passive {
		c.passive[k] = v
	}
	return c
}

func (a *alphabet) performs(act string) bool {
	_, p := a.passive[act]
	return a.active[act] || p
}

func (a *alphabet) addPassive(act string, pos Pos) {
	if old, ok := a.passive[act]; !ok || pos.Offset < old.Offset {
		a.passive[act] = pos
	}
}

func newAlphabet() *alphabet {
	return &alphabet{active: map[string]bool{}, passive: map[string]Pos{}}
}

type alphaChecker struct {
	c             *checker
	hiddenPassive map[string]Pos       // passive actions that may be hidden
	seq           map[string]*alphabet // sequential definitions, closed under derivatives
	static        map[string]*alphabet // static definitions
}

// passiveCheck reports passive activities that can never be synchronised
// with an active partner. Whether a passive activity is exposed depends on
// which states are reachable (semantics.md section 1: a model is invalid
// when a reachable state enables a passive activity at the top level), so
// the checker reports an error only where that is certain, and the
// derivation decides the rest:
//
//   - error: a component reaches a passive activity through activities
//     that nothing can block (active, on actions in no cooperation set
//     above it), and the activity reaches the top level (or is hidden)
//     unsynchronised, or synchronised only with partners for which the
//     same holds: the state that enables it is reachable;
//   - warning: an action whose every activity reaching the top level is
//     passive, where it is not certain that a state enabling one is
//     reachable.
//
// A component that is passive on an action in one derivative and active in
// another is fine; so is one whose choice between the two is resolved by
// its partners. One state enabling an action both actively and passively
// on one side of a cooperation has no apparent rate (section 1's rule
// r_a is a sum over the enabled activities, undefined when some are
// passive and some not): the derivation reports that, with the state.
func (c *checker) passiveCheck() {
	a := &alphaChecker{c: c, seq: map[string]*alphabet{}, static: map[string]*alphabet{}, hiddenPassive: map[string]Pos{}}
	top := a.term(c.f.System)
	ce := &certainChecker{c: c, alpha: a, memo: map[staticKey]certainSet{}, hidden: map[string]Pos{}}
	certain := ce.term(c.f.System, nil).m

	type item struct {
		act string
		pos Pos
		err bool
	}
	var items []item
	for act, pos := range top.passive {
		if cpos, ok := certain[act]; ok {
			items = append(items, item{act, cpos, true})
		} else if !top.active[act] {
			items = append(items, item{act, pos, false})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].pos.Offset < items[j].pos.Offset })
	for _, it := range items {
		if it.err {
			c.errorf(it.pos, "action %s is passive and never synchronised with an active partner", it.act)
		} else {
			c.warnf(it.pos, "action %s may be passive and never synchronised with an active partner: every %s that reaches the top level is passive (an error if a reachable state enables it)", it.act, it.act)
		}
	}
	items = items[:0]
	for act, pos := range a.hiddenPassive {
		if cpos, ok := ce.hidden[act]; ok {
			items = append(items, item{act, cpos, true})
		} else {
			items = append(items, item{act, pos, false})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].pos.Offset < items[j].pos.Offset })
	for _, it := range items {
		if it.err {
			c.errorf(it.pos, "passive action %s is hidden, so it can never be synchronised with an active partner", it.act)
		} else {
			c.warnf(it.pos, "passive action %s may be hidden, and then it can never be synchronised with an active partner (an error if a reachable state enables it)", it.act)
		}
	}
}

// certainChecker finds the passive activities that are certainly enabled
// at the top level in a reachable state. A component's moves on actions in
// no cooperation set above it (hiding aside) can never be blocked, and the
// moves of different components interleave freely, so every combination of
// the local derivatives the components reach by such moves is a reachable
// state.
type certainChecker struct {
	c      *checker
	alpha  *alphaChecker
	memo   map[staticKey]certainSet // static definitions, by name and context
	hidden map[string]Pos           // passive actions certainly enabled under a hiding of them
}

type staticKey struct {
	name string
	env  *blockEnv
}

// blockEnv is the context of a term: the cooperation sets above it, each
// hiding between them cancelling the sets above it for its actions. It is
// a chain from the term outwards, extended only by non-empty sets and by
// hidings, so a long chain A1 <> A2 <> ... <> An costs nothing.
type blockEnv struct {
	parent *blockEnv
	set    map[string]bool // a cooperation set
	hidden map[string]bool // or a hiding
}

func (b *blockEnv) blocked(act string) bool {
	for ; b != nil; b = b.parent {
		if b.set[act] {
			return true
		}
		if b.hidden[act] {
			return false
		}
	}
	return false
}

// certainSet maps an action to a passive activity certainly enabled; a set
// stored in the memo is shared and copied before it is changed.
type certainSet struct {
	m      map[string]Pos
	shared bool
}

func (cs certainSet) own() certainSet {
	if !cs.shared {
		return cs
	}
	m := make(map[string]Pos, len(cs.m))
	for k, v := range cs.m {
		m[k] = v
	}
	return certainSet{m: m}
}

// term returns, for each action, a passive activity of p certainly enabled
// (and not synchronised inside p) in a reachable state, in context env.
func (ce *certainChecker) term(p Process, env *blockEnv) certainSet {
	switch p := p.(type) {
	case *ParenProc:
		return ce.term(p.X, env)
	case *Const:
		info := ce.c.m.Procs[p.Name]
		if info.Kind == Sequential {
			return ce.sequential(p, env)
		}
		key := staticKey{p.Name, env}
		if cs, ok := ce.memo[key]; ok {
			return cs
		}
		cs := ce.term(info.Decl.Body, env)
		cs.shared = true
		ce.memo[key] = cs
		return cs
	case *Prefix, *Choice:
		return ce.sequential(p, env)
	case *Array:
		// Identical copies reach the same derivatives, all at once: a
		// passive activity certain for one copy is certain for the array,
		// synchronised among the copies or not.
		inner := env
		if len(p.Actions) > 0 {
			inner = &blockEnv{parent: env, set: map[string]bool{}}
			for _, id := range p.Actions {
				inner.set[id.Name] = true
			}
		}
		return ce.term(&Const{p.Name}, inner)
	case *Hide:
		hid := map[string]bool{}
		for _, h := range p.Actions {
			hid[h.Name] = true
		}
		got := ce.term(p.X, &blockEnv{parent: env, hidden: hid})
		for act := range hid {
			pos, ok := got.m[act]
			if !ok {
				continue
			}
			if old, ok := ce.hidden[act]; !ok || pos.Offset < old.Offset {
				ce.hidden[act] = pos
			}
			got = got.own()
			delete(got.m, act)
		}
		return got
	case *Coop:
		set := map[string]bool{}
		if p.Kind == CoopWildcard {
			x, y := ce.alpha.term(p.X), ce.alpha.term(p.Y)
			for act := range x.active {
				if y.performs(act) {
					set[act] = true
				}
			}
			for act := range x.passive {
				if y.performs(act) {
					set[act] = true
				}
			}
		} else {
			for _, id := range p.Actions {
				set[id.Name] = true
			}
		}
		inner := env
		if len(set) > 0 {
			inner = &blockEnv{parent: env, set: set}
		}
		x, y := ce.term(p.X, inner), ce.term(p.Y, inner)
		out := x.own()
		// Shared actions stay only where both sides are certain; walk the
		// smaller of the set and the left side's map (a long chain
		// A1 <> A2 <> ... grows the map, not the set).
		drop := func(act string) {
			if _, both := y.m[act]; set[act] && !both {
				delete(out.m, act)
			}
		}
		if len(set) < len(out.m) {
			for act := range set {
				drop(act)
			}
		} else {
			for act := range out.m {
				drop(act)
			}
		}
		for act, pos := range y.m {
			if _, ok := out.m[act]; !ok && !set[act] {
				out.m[act] = pos
			}
		}
		return out
	}
	return certainSet{m: map[string]Pos{}}
}

// sequential explores the derivatives of a sequential term reachable by
// active moves on unblocked actions and returns the passive activities they
// enable (the first in the source for each action).
func (ce *certainChecker) sequential(start Process, env *blockEnv) certainSet {
	out := map[string]Pos{}
	seen := map[any]bool{}
	var queue []Process
	push := func(t Process) {
		for {
			q, ok := t.(*ParenProc)
			if !ok {
				break
			}
			t = q.X
		}
		var key any = t
		if k, ok := t.(*Const); ok {
			key = k.Name
		}
		if !seen[key] {
			seen[key] = true
			queue = append(queue, t)
		}
	}
	var enabled func(t Process, depth int)
	enabled = func(t Process, depth int) {
		if depth > 1000 {
			return // guarded recursion is checked elsewhere
		}
		switch q := t.(type) {
		case *Prefix:
			r := ce.c.m.prefixRates[q]
			if r.Passive {
				if old, ok := out[q.Action.Name]; !ok || q.Action.NamePos.Offset < old.Offset {
					out[q.Action.Name] = q.Action.NamePos
				}
			} else if !env.blocked(q.Action.Name) {
				push(q.Then)
			}
		case *Choice:
			for _, alt := range q.Alts {
				enabled(alt, depth+1)
			}
		case *ParenProc:
			enabled(q.X, depth+1)
		case *Const:
			if info, ok := ce.c.m.Procs[q.Name]; ok {
				enabled(info.Decl.Body, depth+1)
			}
		}
	}
	push(start)
	for k := 0; k < len(queue); k++ {
		enabled(queue[k], 0)
	}
	return certainSet{m: out}
}

// term computes the alphabet of a process term of the system structure.
func (a *alphaChecker) term(p Process) *alphabet {
	switch p := p.(type) {
	case *ParenProc:
		return a.term(p.X)
	case *Const:
		if a.c.m.Procs[p.Name].Kind == Sequential {
			return a.sequential(p.Name)
		}
		if al, ok := a.static[p.Name]; ok {
			return al
		}
		al := a.term(a.c.m.Procs[p.Name].Decl.Body)
		al.memo = true
		a.static[p.Name] = al
		return al
	case *Prefix, *Choice:
		al := newAlphabet()
		a.collectSeq(p, al, map[string]bool{})
		return al
	case *Array:
		el := a.term(&Const{p.Name})
		a.checkSet(p.Actions, el, el, "the array's components")
		return el
	case *Hide:
		inner := a.term(p.X)
		hidden := map[string]bool{}
		for _, h := range p.Actions {
			if !inner.performs(h.Name) {
				a.c.warnf(h.NamePos, "hidden action %s is never performed", h.Name)
			}
			hidden[h.Name] = true
		}
		al := newAlphabet()
		for act := range inner.active {
			if hidden[act] {
				act = "tau"
			}
			al.active[act] = true
		}
		for act, pos := range inner.passive {
			if hidden[act] {
				if old, ok := a.hiddenPassive[act]; !ok || pos.Offset < old.Offset {
					a.hiddenPassive[act] = pos
				}
				continue
			}
			al.addPassive(act, pos)
		}
		return al
	case *Coop:
		return a.coop(p)
	}
	panic("lang: unknown process node")
}

// coop computes the alphabet of a cooperation. The result reuses the left
// operand's maps when they are not memoised, so a chain A1 <> A2 <> ... <> An
// costs O(n), not O(n^2).
func (a *alphaChecker) coop(p *Coop) *alphabet {
	x, y := a.term(p.X), a.term(p.Y)
	set := map[string]bool{}
	if p.Kind == CoopWildcard {
		small, big := x, y
		if len(small.active)+len(small.passive) > len(big.active)+len(big.passive) {
			small, big = big, small
		}
		for act := range small.active {
			if act != "tau" && big.performs(act) {
				set[act] = true
			}
		}
		for act := range small.passive {
			if act != "tau" && big.performs(act) {
				set[act] = true
			}
		}
	} else {
		a.checkSet(p.Actions, x, y, "")
		for _, id := range p.Actions {
			set[id.Name] = true
		}
	}
	// Decide the shared actions before the left maps are reused.
	type shared struct {
		act     string
		active  bool
		passive []Pos
	}
	var decided []shared
	for act := range set {
		if !x.performs(act) || !y.performs(act) {
			continue // blocked; warned about above
		}
		d := shared{act: act, active: x.active[act] || y.active[act]}
		px, okx := x.passive[act]
		py, oky := y.passive[act]
		if okx && oky {
			d.passive = []Pos{px, py}
		}
		decided = append(decided, d)
	}
	al := x
	if x.memo {
		al = x.clone()
	}
	for act := range set {
		delete(al.active, act)
		delete(al.passive, act)
	}
	for act := range y.active {
		if !set[act] {
			al.active[act] = true
		}
	}
	for act, pos := range y.passive {
		if !set[act] {
			al.addPassive(act, pos)
		}
	}
	for _, d := range decided {
		if d.active {
			al.active[d.act] = true
		}
		for _, pos := range d.passive {
			al.addPassive(d.act, pos)
		}
	}
	return al
}

// checkSet warns about cooperation-set actions that a side never performs.
func (a *alphaChecker) checkSet(set []Ident, x, y *alphabet, both string) {
	for _, id := range set {
		if id.Name == "tau" {
			a.c.errorf(id.NamePos, "tau is the silent action and cannot be in a cooperation set")
			continue
		}
		px, py := x.performs(id.Name), y.performs(id.Name)
		switch {
		case both != "" && !px:
			a.c.warnf(id.NamePos, "action %s in the cooperation set is never performed by %s (potential deadlock)", id.Name, both)
		case !px && !py:
			a.c.warnf(id.NamePos, "action %s in the cooperation set is never performed by either side (potential deadlock)", id.Name)
		case !px:
			a.c.warnf(id.NamePos, "action %s in the cooperation set is never performed by the left side (potential deadlock)", id.Name)
		case !py:
			a.c.warnf(id.NamePos, "action %s in the cooperation set is never performed by the right side (potential deadlock)", id.Name)
		}
	}
}

func (a *alphaChecker) sequential(name string) *alphabet {
	if al, ok := a.seq[name]; ok {
		return al
	}
	al := newAlphabet()
	a.collectSeq(&Const{Ident{Name: name}}, al, map[string]bool{})
	al.memo = true
	a.seq[name] = al
	return al
}

// collectSeq adds the activities of every derivative of a sequential term.
func (a *alphaChecker) collectSeq(p Process, al *alphabet, seen map[string]bool) {
	for {
		switch q := p.(type) {
		case *Prefix:
			r := a.c.m.prefixRates[q]
			if r.Passive {
				al.addPassive(q.Action.Name, q.Action.NamePos)
			} else {
				al.active[q.Action.Name] = true
			}
			p = q.Then
			continue
		case *Choice:
			for _, alt := range q.Alts {
				a.collectSeq(alt, al, seen)
			}
		case *ParenProc:
			p = q.X
			continue
		case *Const:
			if seen[q.Name] {
				return
			}
			seen[q.Name] = true
			if info, ok := a.c.m.Procs[q.Name]; ok {
				p = info.Decl.Body
				continue
			}
		}
		return
	}
}

// ---- unused definitions ----

func (c *checker) unused() {
	for _, d := range c.f.Decls {
		if d, ok := d.(*RateDecl); ok && !c.usedRates[d.Name.Name] && c.m.Rates[d.Name.Name].Decl == d {
			c.warnf(d.Name.NamePos, "rate %s is defined but never used", d.Name.Name)
		}
	}
	if c.f.System == nil {
		return
	}
	used := map[string]bool{}
	var visit func(p Process)
	visit = func(p Process) {
		walkProc(p, func(q Process) {
			var name string
			switch q := q.(type) {
			case *Const:
				name = q.Name
			case *Array:
				name = q.Name.Name
			default:
				return
			}
			if used[name] {
				return
			}
			used[name] = true
			if info, ok := c.m.Procs[name]; ok {
				visit(info.Decl.Body)
			}
		})
	}
	visit(c.f.System)
	for _, d := range c.f.Decls {
		if d, ok := d.(*ProcDecl); ok && !used[d.Name.Name] && c.m.Procs[d.Name.Name].Decl == d {
			c.warnf(d.Name.NamePos, "process %s is defined but never used", d.Name.Name)
		}
	}
}
