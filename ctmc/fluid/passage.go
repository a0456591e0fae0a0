package fluid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// ErrAmbiguousTag is returned (wrapped) when the target actions do not say
// which component's copy to follow.
var ErrAmbiguousTag = errors.New("name the component whose copy to follow")

// PassageQuery asks for a tagged copy's passage time (semantics.md
// section 8; Hayden and Bradley 2010): one copy of a group followed while
// its rates are those the fluid populations give.
type PassageQuery struct {
	// Tag names the group one copy of which is followed ("" : the one
	// that performs the target actions, or the component the target
	// predicate names).
	Tag string
	// SourceActions, when given, ask for the plug-in's semantics: the
	// copy starts in the local states its source actions enter, weighted
	// by how often it leaves them at the fluid steady state, with every
	// population at that steady state; the passage ends on entering a
	// state its target actions enter (and that no source action enters).
	SourceActions []string
	// TargetActions end the passage at the copy's first firing of one of
	// them (without SourceActions: from the initial state, every copy in
	// its initial local state at t = 0).
	TargetActions []string
	// Target is a predicate on the tagged component's local state
	// ("Client == Wait || Client == Fail"): the passage ends on entering a
	// state where it holds.
	Target string
	Times  []float64 // sorted, >= 0
	// NoMean skips the mean passage time.
	NoMean bool
}

// Passage is a tagged copy's passage-time distribution.
type Passage struct {
	Group     string // the tagged group
	Semantics string // "initial" or "plugin"
	// Start is the copy's start distribution over the group's local
	// states.
	Start []float64
	// TargetStates are the local states that end the passage (a
	// predicate, or the plug-in semantics); TargetActions the actions
	// whose firing ends it.
	TargetStates  []string
	TargetActions []string
	Times         []float64
	CDF, PDF      []float64
	// Mean is the mean passage time (NaN: not computed, see MeanNote).
	Mean     float64
	MeanNote string
	Stats    IntegratorStats
}

// Passage computes a tagged copy's passage-time CDF and density on
// q.Times, and its mean: by integrating, with the populations, the
// Kolmogorov equations of the copy's local state (its rates the flows of
// its activities per copy), until the copy has arrived or the populations
// have settled, then the rest in closed form at the settled rates.
func (m *Model) Passage(ctx context.Context, q PassageQuery, opt Options) (*Passage, error) {
	if err := opt.fill(); err != nil {
		return nil, err
	}
	if (len(q.TargetActions) > 0) == (q.Target != "") {
		return nil, fmt.Errorf("a tagged passage needs target actions or a target predicate, not both")
	}
	if len(q.SourceActions) > 0 && len(q.TargetActions) == 0 {
		return nil, fmt.Errorf("source actions (the plug-in's semantics) need target actions")
	}
	for i, t := range q.Times {
		if !(t >= 0) || math.IsInf(t, 0) || (i > 0 && t < q.Times[i-1]) {
			return nil, fmt.Errorf("times must be finite, >= 0 and sorted (got %g)", t)
		}
	}
	ps, err := m.passageSetup(q)
	if err != nil {
		return nil, err
	}
	out := &Passage{Group: m.Groups[ps.g].Name, Semantics: "initial", Times: append([]float64(nil), q.Times...), Mean: math.NaN()}
	y := m.Initial()
	k := len(m.Groups[ps.g].States)
	y = append(y, make([]float64, k+2)...)
	if len(q.SourceActions) > 0 {
		out.Semantics = "plugin"
		st, err := m.SteadyState(ctx, 1, opt)
		if err != nil {
			return nil, err
		}
		if !st.Settled {
			return nil, fmt.Errorf("the plug-in's semantics starts from the fluid steady state, and the trajectory has not settled by t = %g (residual %.3g)", st.Time, st.Residual)
		}
		copy(y, st.Populations)
		ps.frozen = true
		if err := ps.pluginStart(q, y[:m.Dim]); err != nil {
			return nil, err
		}
	}
	copy(y[m.Dim:m.Dim+k], ps.start)
	out.Start = append([]float64(nil), ps.start...)
	for d, stop := range ps.stop {
		if stop {
			out.TargetStates = append(out.TargetStates, m.Groups[ps.g].States[d])
		}
	}
	if len(ps.absorbActions) > 0 {
		out.TargetActions = ps.absorbActions
	}
	atol := m.absTol(opt)
	for i := 0; i < k+2; i++ {
		atol = append(atol, 1e-13)
	}
	it, err := newIntegrator(ps, opt.Method, opt.RelTol, atol)
	if err != nil {
		return nil, err
	}
	t := 0.0
	out.CDF = make([]float64, len(q.Times))
	out.PDF = make([]float64, len(q.Times))
	for i, tk := range q.Times {
		if err := it.advance(ctx, t, tk, y); err != nil {
			return nil, err
		}
		t = tk
		out.CDF[i] = clamp01(ps.cdf(y))
		out.PDF[i] = math.Max(ps.density(y), 0)
	}
	if !q.NoMean {
		if err := ps.mean(ctx, it, t, y, opt, out); err != nil {
			return nil, err
		}
	}
	out.Stats = it.stats
	if out.Stats.Method == "" {
		out.Stats.Method = it.method
	}
	return out, nil
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// passageSystem is the populations, the tagged copy's local-state
// probabilities p, the absorbed mass A (target actions fired) and the
// integral of the survival function: y = [x | p | A | M].
type passageSystem struct {
	m      *Model
	e      *evaluator
	g      int
	k      int
	acts   []int  // the tagged group's activities
	absorb []bool // by acts index: fires into A
	stop   []bool // by local state: in the target (absorbing)
	start  []float64
	frozen bool // the populations are held (plug-in semantics)
	fd     []float64
	fd2    []float64
	typ    []float64 // components' scales: a hundredth of a group's copies, 1 for probabilities

	absorbActions []string
}

func (m *Model) passageSetup(q PassageQuery) (*passageSystem, error) {
	g := -1
	var err error
	var pred *localPredicate
	if q.Target != "" {
		if pred, err = parseLocalPredicate(q.Target); err != nil {
			return nil, err
		}
	}
	switch {
	case q.Tag != "":
		if g, err = m.Group(q.Tag); err != nil {
			return nil, err
		}
	case pred != nil:
		if g, err = m.Group(pred.component); err != nil {
			return nil, err
		}
	default:
		want := map[string]bool{}
		for _, a := range q.TargetActions {
			want[a] = true
		}
		var gs []int
		var names []string
		for gi, grp := range m.Groups {
			for _, a := range m.acts {
				if int(a.group) == gi && want[a.label] {
					gs = append(gs, gi)
					names = append(names, grp.Name)
					break
				}
			}
		}
		if len(gs) == 0 {
			return nil, fmt.Errorf("no component performs %s", strings.Join(q.TargetActions, ", "))
		}
		if len(gs) > 1 {
			return nil, fmt.Errorf("%s performed by %s: %w", strings.Join(q.TargetActions, ", "), strings.Join(names, " and "), ErrAmbiguousTag)
		}
		g = gs[0]
	}
	grp := m.Groups[g]
	if pred != nil && pred.component != grp.Name && pred.component != grp.Component {
		return nil, fmt.Errorf("the target predicate names %s, but the tagged copy is one of %s", pred.component, grp.Name)
	}
	ps := &passageSystem{m: m, e: m.newEvaluator(), g: g, k: len(grp.States)}
	ps.stop = make([]bool, ps.k)
	performs := map[string]bool{}
	for i, a := range m.acts {
		if int(a.group) == g {
			ps.acts = append(ps.acts, i)
			performs[a.label] = true
		}
	}
	if err := m.checkActions(g, q.SourceActions, performs); err != nil {
		return nil, err
	}
	if err := m.checkActions(g, q.TargetActions, performs); err != nil {
		return nil, err
	}
	ps.absorb = make([]bool, len(ps.acts))
	ps.start = make([]float64, ps.k)
	ps.start[0] = 1
	switch {
	case pred != nil:
		for d, s := range grp.States {
			hit, err := pred.holds(s, grp.States)
			if err != nil {
				return nil, err
			}
			ps.stop[d] = hit
		}
		any := false
		for _, s := range ps.stop {
			any = any || s
		}
		if !any {
			return nil, fmt.Errorf("the target predicate %q holds in no local state of %s", q.Target, grp.Name)
		}
	case len(q.SourceActions) == 0:
		want := map[string]bool{}
		for _, a := range q.TargetActions {
			want[a] = true
		}
		for j, i := range ps.acts {
			if want[m.acts[i].label] {
				ps.absorb[j] = true
			}
		}
		ps.absorbActions = append([]string(nil), q.TargetActions...)
		sort.Strings(ps.absorbActions)
	}
	ps.fd, ps.fd2 = make([]float64, ps.dim()), make([]float64, ps.dim())
	ps.typ = make([]float64, ps.dim())
	for i := range ps.typ {
		ps.typ[i] = 1
	}
	for _, g := range m.Groups {
		for d := range g.States {
			ps.typ[g.Offset+d] = math.Max(1, 0.01*float64(g.Copies))
		}
	}
	return ps, nil
}

// checkActions checks that the tagged group performs every action named.
func (m *Model) checkActions(g int, names []string, performs map[string]bool) error {
	for _, a := range names {
		if performs[a] {
			continue
		}
		for _, act := range m.acts {
			if act.action == a && act.label != a {
				return fmt.Errorf("action %s is hidden: outside its hiding it is tau", a)
			}
		}
		return fmt.Errorf("%s does not perform %s", m.Groups[g].Name, a)
	}
	return nil
}

// pluginStart sets the plug-in semantics's start and target at the
// steady-state populations x: source states are the local states a source
// action enters, weighted by their population times their exit rate (the
// embedded chain's steady state); target states those a target action
// enters that are not source states.
func (ps *passageSystem) pluginStart(q PassageQuery, x []float64) error {
	m := ps.m
	grp := m.Groups[ps.g]
	src, tgt := map[string]bool{}, map[string]bool{}
	for _, a := range q.SourceActions {
		src[a] = true
	}
	for _, a := range q.TargetActions {
		tgt[a] = true
	}
	isSrc, isTgt := make([]bool, ps.k), make([]bool, ps.k)
	ps.e.run(x)
	exit := make([]float64, ps.k)
	for _, i := range ps.acts {
		a := &m.acts[i]
		d := int(a.dst) - grp.Offset
		s := int(a.src) - grp.Offset
		if src[a.label] {
			isSrc[d] = true
		}
		if tgt[a.label] {
			isTgt[d] = true
		}
		if s != d {
			exit[s] += ps.e.copyRate(i)
		}
	}
	total := 0.0
	for d := range ps.start {
		ps.start[d] = 0
		if isSrc[d] {
			ps.start[d] = x[grp.Offset+d] * exit[d]
			total += ps.start[d]
		}
		ps.stop[d] = isTgt[d] && !isSrc[d]
	}
	if total == 0 {
		return fmt.Errorf("at the fluid steady state no copy of %s is in a state entered by %s", grp.Name, strings.Join(q.SourceActions, ", "))
	}
	for d := range ps.start {
		ps.start[d] /= total
	}
	any := false
	for _, s := range ps.stop {
		any = any || s
	}
	if !any {
		return fmt.Errorf("every state of %s entered by %s is also entered by %s: the plug-in's semantics has no target state", grp.Name, strings.Join(q.TargetActions, ", "), strings.Join(q.SourceActions, ", "))
	}
	return nil
}

func (ps *passageSystem) dim() int { return ps.m.Dim + ps.k + 2 }

func (ps *passageSystem) deriv(y, dy []float64) {
	m := ps.m
	n := m.Dim
	x := y[:n]
	ps.e.run(x)
	if ps.frozen {
		for i := 0; i < n; i++ {
			dy[i] = 0
		}
	} else {
		ps.e.drift(dy[:n])
	}
	p, dp := y[n:n+ps.k], dy[n:n+ps.k]
	for d := range dp {
		dp[d] = 0
	}
	off := int32(m.Groups[ps.g].Offset)
	dA := 0.0
	for j, i := range ps.acts {
		a := &m.acts[i]
		s := a.src - off
		if ps.stop[s] {
			continue
		}
		r := ps.e.copyRate(i) * p[s]
		if ps.absorb[j] {
			dp[s] -= r
			dA += r
			continue
		}
		if a.dst == a.src {
			continue
		}
		dp[s] -= r
		dp[a.dst-off] += r
	}
	dy[n+ps.k] = dA
	dy[n+ps.k+1] = 1 - ps.cdf(y)
}

func (ps *passageSystem) jac(y, j []float64) { fdJacobian(ps.deriv, y, ps.typ, ps.fd, ps.fd2, j) }

// cdf is the probability that the copy has arrived.
func (ps *passageSystem) cdf(y []float64) float64 {
	n := ps.m.Dim
	c := y[n+ps.k]
	for d, stop := range ps.stop {
		if stop {
			c += y[n+d]
		}
	}
	return c
}

// density is the rate at which probability arrives.
func (ps *passageSystem) density(y []float64) float64 {
	m := ps.m
	n := m.Dim
	ps.e.run(y[:n])
	off := int32(m.Groups[ps.g].Offset)
	r := 0.0
	for j, i := range ps.acts {
		a := &m.acts[i]
		s := a.src - off
		if ps.stop[s] {
			continue
		}
		if ps.absorb[j] || (ps.stop[a.dst-off] && a.dst != a.src) {
			r += ps.e.copyRate(i) * y[n+int(s)]
		}
	}
	return r
}

// mean continues the integration from (t, y) in doubling windows until
// the survival probability is below 1e-13 (the rest of the integral is
// then below 1e-13 times the time scale), or the populations have settled
// (the rest is then the mean time to absorption of the copy's chain at
// the settled rates, solved exactly), and sets out.Mean.
func (ps *passageSystem) mean(ctx context.Context, it *integrator, t float64, y []float64, opt Options, out *Passage) error {
	m := ps.m
	n := m.Dim
	window := math.Max(t, 1/m.maxRate)
	maxTime := opt.MaxTime
	if maxTime == 0 {
		maxTime = math.Ldexp(1/m.minRate, 40)
	}
	dx := make([]float64, n)
	for {
		surv := 1 - ps.cdf(y)
		if surv <= 1e-13 {
			out.Mean = y[n+ps.k+1]
			return nil
		}
		settled := ps.frozen
		if !settled {
			m.Drift(y[:n], dx)
			settled = m.relResidual(y[:n], dx) <= opt.SteadyTol
		}
		if settled {
			tail, ok := ps.tail(y)
			if !ok {
				out.MeanNote = fmt.Sprintf("the tagged copy may never arrive: %.3g of it is in states that cannot reach the target at the settled rates", surv)
				return nil
			}
			out.Mean = y[n+ps.k+1] + tail
			return nil
		}
		if t >= maxTime {
			out.MeanNote = fmt.Sprintf("not computed: by t = %g the copy has arrived with probability %.6g and the populations have not settled", t, 1-surv)
			return nil
		}
		next := math.Min(t+window, maxTime)
		if err := it.advance(ctx, t, next, y); err != nil {
			return err
		}
		t = next
		window *= 2
	}
}

// tail is the expected remaining time to arrive from the copy's current
// distribution at the rates of the current populations: p . tau with
// (-Q_NN) tau = 1 on the states not in the target.
func (ps *passageSystem) tail(y []float64) (float64, bool) {
	m := ps.m
	n := m.Dim
	ps.e.run(y[:n])
	var live []int
	pos := make([]int, ps.k)
	for d := 0; d < ps.k; d++ {
		pos[d] = -1
		if !ps.stop[d] {
			pos[d] = len(live)
			live = append(live, d)
		}
	}
	L := len(live)
	a := make([]float64, L*L)
	off := int32(m.Groups[ps.g].Offset)
	for j, i := range ps.acts {
		act := &m.acts[i]
		s := int(act.src - off)
		if ps.stop[s] {
			continue
		}
		r := ps.e.copyRate(i)
		d := int(act.dst - off)
		if !ps.absorb[j] && d == s {
			continue
		}
		a[pos[s]*L+pos[s]] += r
		if !ps.absorb[j] && !ps.stop[d] {
			a[pos[s]*L+pos[d]] -= r
		}
	}
	piv := make([]int, L)
	if !luFactor(a, piv, L) {
		return 0, false
	}
	tau := make([]float64, L)
	for i := range tau {
		tau[i] = 1
	}
	luSolve(a, piv, L, tau)
	s := 0.0
	for i, d := range live {
		if math.IsNaN(tau[i]) || math.IsInf(tau[i], 0) || tau[i] < 0 {
			return 0, false
		}
		s += y[n+d] * tau[i]
	}
	return s, true
}
