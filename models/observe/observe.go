package observe

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/option"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
)

// Event is one observed completion: machine Machine completed action
// Action at Time. Line is its line in a record file (0: not from a file).
type Event struct {
	Time    float64 `json:"time"`
	Machine string  `json:"machine"`
	Action  string  `json:"action"`
	Line    int     `json:"-"`
}

// EventError is an event that cannot be taken: malformed, out of order,
// or impossible for the model given the events before it.
type EventError struct {
	File  string // "" when the event did not come from a file
	Line  int
	Event Event
	Msg   string
}

func (e *EventError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s:%d: error: %s", e.File, e.Line, e.Msg)
	}
	return "event " + strconv.Quote(fmt.Sprintf("%g,%s,%s", e.Event.Time, e.Event.Machine, e.Event.Action)) + ": " + e.Msg
}

// ReadRecord reads a record: CSV with the header time,machine,action and a
// row per completion, in time order. Errors name the file and line.
func ReadRecord(name string, r io.Reader) ([]Event, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var out []Event
	header := false
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &EventError{File: name, Line: pe.Line, Msg: pe.Err.Error()}
			}
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if !header {
			if len(row) != 3 || strings.TrimSpace(row[0]) != "time" || strings.TrimSpace(row[1]) != "machine" || strings.TrimSpace(row[2]) != "action" {
				return nil, &EventError{File: name, Line: line, Msg: fmt.Sprintf("expected the header time,machine,action, found %q", strings.Join(row, ","))}
			}
			header = true
			continue
		}
		if len(row) != 3 {
			return nil, &EventError{File: name, Line: line, Msg: fmt.Sprintf("expected 3 fields (time,machine,action), found %d", len(row))}
		}
		t, err := strconv.ParseFloat(strings.TrimSpace(row[0]), 64)
		if err != nil || !(t >= 0) || math.IsInf(t, 0) {
			return nil, &EventError{File: name, Line: line, Msg: fmt.Sprintf("time %q: expected a finite number of seconds >= 0", row[0])}
		}
		out = append(out, Event{Time: t, Machine: strings.TrimSpace(row[1]), Action: strings.TrimSpace(row[2]), Line: line})
	}
	if !header {
		return nil, &EventError{File: name, Line: 1, Msg: "empty record: expected the header time,machine,action"}
	}
	return out, nil
}

// group is one group's filtered state. Add replaces alpha and t, never
// writes into them, so that a Snapshot may share them.
type group struct {
	gc       *models.GroupChain
	observed []bool    // by action id of gc.Chain's structure
	span     float64   // the longest time the filter runs on at once (passage.HiddenSpan)
	alpha    []float64 // filtered distribution at time t, summing to 1
	t        float64
}

// machineRef is where a machine is: its group and its index there.
type machineRef struct {
	g, k int
}

// Tracker follows one model's record (semantics.md section 6); safe for
// concurrent use. Add takes its lock for the filtering of one completion;
// Figures only to read the record's state, then computes without it, so
// that figures for several goals of one record run at once.
type Tracker struct {
	mu       sync.Mutex
	s        *ctmc.Structure
	opt      models.Options
	groups   []group
	machines map[string]machineRef
	finished map[string]float64 // machines whose cycle the record completed, when
	last     float64            // the latest event's time
	events   int
	epsilon  float64
}

// RangeError is a time past what the filter can run to: the record's
// latest completion is too long before it for the chain's rates
// (passage.MaxHiddenSteps uniformization steps at most).
type RangeError struct {
	What       string  // "now" or "time"
	Value, Max float64 // the time asked, the latest one taken
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %g is out of range: at most %g for this model and record (the filter runs on at most %d uniformization steps of the model's fastest rate past a group's last completion)",
		e.What, e.Value, e.Max, passage.MaxHiddenSteps)
}

// NewTracker compiles model m (with its pragmas) and derives its groups'
// chains (finished machines stopped) with their start distributions: an
// empty record. opt sets the machines, epsilon and engines as for
// models.AnalyzeGroups (initial semantics; Beta is given to Figures).
func NewTracker(ctx context.Context, m *lang.Model, copt ctmc.Options, opt models.Options) (*Tracker, error) {
	s, err := ctmc.Compile(m, copt)
	if err != nil {
		return nil, err
	}
	if opt.Pragmas, err = models.ReadPragmas(m.File); err != nil {
		return nil, err
	}
	if opt.Semantics != "" && opt.Semantics != passage.Initial || opt.Cycling {
		return nil, errors.New("figures from observed progress are defined under initial semantics with finished machines stopped")
	}
	opt.Semantics = passage.Initial
	if opt.Epsilon <= 0 {
		opt.Epsilon = 1e-10
	}
	opt.Chains = &models.ChainCache{}
	t := &Tracker{s: s, machines: map[string]machineRef{}, finished: map[string]float64{}, epsilon: opt.Epsilon}
	// GroupStart is set before deriving so that the chains are the ones
	// AnalyzeGroups will use with it (a machine alone derived, not its
	// own chain).
	opt.GroupStart = func([]*ctmc.Leaf, *ctmc.Chain) ([]float64, error) {
		return nil, errors.New("observe: a start asked before Figures (a bug)")
	}
	gcs, err := models.DeriveGroups(ctx, s, opt)
	if err != nil {
		return nil, err
	}
	t.groups = make([]group, len(gcs))
	for gi := range gcs {
		gc := &gcs[gi]
		g := &t.groups[gi]
		*g = group{gc: gc, observed: make([]bool, len(gc.Chain.S.Actions))}
		passive := map[int32]bool{}
		for _, l := range gc.Chain.S.Leaves {
			for st := 0; st < l.NumLocal; st++ {
				for _, tr := range l.Transitions(st) {
					if tr.Passive {
						passive[tr.Action] = true
					}
				}
			}
		}
		for k, mc := range gc.Machines {
			t.machines[mc.Name] = machineRef{gi, k}
			for st := 0; st < mc.Leaf.NumLocal; st++ {
				for _, tr := range mc.Leaf.Transitions(st) {
					if passive[tr.Action] {
						g.observed[tr.Action] = true
					}
				}
			}
		}
		g.span = passage.HiddenSpan(gc.Chain, g.observed, opt.Transient)
		if g.alpha, err = models.PartStart(gc.Chain, opt.Pragmas); err != nil {
			return nil, err
		}
	}
	t.opt = opt
	return t, nil
}

// Snapshot is a Tracker at the record taken so far, which later Adds to t
// do not change (and Adds to it do not change t): the chains are shared,
// the filtered state copied (a few pointers a group).
func (t *Tracker) Snapshot() *Tracker {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &Tracker{s: t.s, opt: t.opt, groups: append([]group(nil), t.groups...), machines: t.machines,
		finished: make(map[string]float64, len(t.finished)), last: t.last, events: t.events, epsilon: t.epsilon}
	for n, at := range t.finished {
		c.finished[n] = at
	}
	return c
}

// FinishedAt is when the record completed machine's cycle (ok false while
// it runs, or when there is no such machine).
func (t *Tracker) FinishedAt(machine string) (at float64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok = t.finished[machine]
	return at, ok
}

// Events is the number of events taken.
func (t *Tracker) Events() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events
}

// Add takes one completion: its group's distribution runs on to its time
// and through the observed transitions; the other groups are untouched.
// An impossible event leaves the Tracker as it was.
func (t *Tracker) Add(ctx context.Context, ev Event, file string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	fail := func(format string, args ...any) error {
		return &EventError{File: file, Line: ev.Line, Event: ev, Msg: fmt.Sprintf(format, args...)}
	}
	if !(ev.Time >= 0) || math.IsInf(ev.Time, 0) {
		return fail("time %g: expected a finite number of seconds >= 0", ev.Time)
	}
	if ev.Time < t.last {
		return fail("time %g is before the previous event's (%g): the record must be in time order", ev.Time, t.last)
	}
	ref, ok := t.machines[ev.Machine]
	if !ok {
		names := make([]string, 0, len(t.machines))
		for n := range t.machines {
			names = append(names, n)
		}
		sort.Strings(names)
		return fail("no machine %q (the machines are %s)", ev.Machine, strings.Join(names, ", "))
	}
	if at, done := t.finished[ev.Machine]; done {
		return fail("machine %s finished its cycle at %g: it completes nothing after", ev.Machine, at)
	}
	g := &t.groups[ref.g]
	mc := g.gc.Machines[ref.k]
	c := g.gc.Chain
	a := int32(-1)
	for id, name := range c.S.Actions {
		if name == ev.Action {
			a = int32(id)
		}
	}
	if a < 0 || !g.observed[a] || !performs(mc.Leaf, a) {
		return fail("machine %s has no observable action %s (it performs %s)", ev.Machine, ev.Action, strings.Join(observableNames(c, g.observed, mc.Leaf), ", "))
	}
	if ev.Time-g.t > g.span {
		return fail("%v", &RangeError{What: "time", Value: ev.Time, Max: g.t + g.span})
	}
	alpha, _, err := passage.HiddenWith(ctx, c, g.alpha, g.observed, ev.Time-g.t, t.epsilon/4, t.opt.Transient)
	if err != nil {
		return err
	}
	moved := observeBy(c, alpha, a, mc.Leaf)
	total := 0.0
	for _, x := range moved {
		total += x
	}
	if !(total > 0) {
		return fail("impossible: machine %s cannot complete %s at %g given the record before it", ev.Machine, ev.Action, ev.Time)
	}
	for i := range moved {
		moved[i] /= total
	}
	g.alpha, g.t = moved, ev.Time
	t.last = ev.Time
	t.events++
	for _, l := range mc.Last {
		if l == a {
			t.finished[ev.Machine] = ev.Time
		}
	}
	return nil
}

// performs reports whether the leaf has an activity labelled a.
func performs(l *ctmc.Leaf, a int32) bool {
	for st := 0; st < l.NumLocal; st++ {
		for _, tr := range l.Transitions(st) {
			if tr.Action == a {
				return true
			}
		}
	}
	return false
}

// observableNames lists the leaf's observed actions.
func observableNames(c *ctmc.Chain, observed []bool, l *ctmc.Leaf) []string {
	seen := map[int32]bool{}
	var out []string
	for st := 0; st < l.NumLocal; st++ {
		for _, tr := range l.Transitions(st) {
			if observed[tr.Action] && !seen[tr.Action] {
				seen[tr.Action] = true
				out = append(out, c.S.Actions[tr.Action])
			}
		}
	}
	sort.Strings(out)
	return out
}

// observeBy is passage.Observe restricted to the transitions in which the
// machine's leaf performs a (so that an action two machines share is the
// named machine's completion only).
func observeBy(c *ctmc.Chain, alpha []float64, a int32, leaf *ctmc.Leaf) []float64 {
	moved := passage.Observe(c, alpha, a)
	if shared := sharedByOthers(c, a, leaf); !shared {
		return moved
	}
	out := make([]float64, c.N)
	for s, x := range alpha {
		if x == 0 {
			continue
		}
		from := leaf.Local(c.State(s))
		for e := c.RowPtr[s]; e < c.RowPtr[s+1]; e++ {
			if c.Act[e] == a && leaf.Local(c.State(int(c.Col[e]))) != from || c.Act[e] == a && selfLoopOf(leaf, from, a) {
				out[c.Col[e]] += x * c.RateAt(e)
			}
		}
	}
	return out
}

// sharedByOthers reports whether another machine-like active leaf of c
// performs a too.
func sharedByOthers(c *ctmc.Chain, a int32, leaf *ctmc.Leaf) bool {
	for _, l := range c.S.Leaves {
		if l == leaf {
			continue
		}
		for st := 0; st < l.NumLocal; st++ {
			for _, tr := range l.Transitions(st) {
				if tr.Action == a && !tr.Passive {
					return true
				}
			}
		}
	}
	return false
}

// selfLoopOf reports whether the leaf has a self-loop on a in local state st.
func selfLoopOf(l *ctmc.Leaf, st int, a int32) bool {
	for _, tr := range l.Transitions(st) {
		if tr.Action == a && tr.Target == st {
			return true
		}
	}
	return false
}

// Figures are the robustness figures at time now given the record so far
// (now at least the latest event's time), as models.AnalyzeGroups reports
// them: finishing times, means and quantiles absolute; a machine whose
// cycle the record completed is finished at its recorded time.
//
// The work stops when ctx ends (its error returned); a now too far past a
// group's last completion for its chain's rates is a *RangeError.
func (t *Tracker) Figures(ctx context.Context, beta, now float64) (*models.Result, error) {
	// The record as of now; Add replaces what it changes, so the copy is
	// read without the lock.
	t = t.Snapshot()
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("the makespan goal beta must be a positive number of seconds, not %g", beta)
	}
	if !(now >= t.last) || math.IsInf(now, 0) {
		return nil, fmt.Errorf("now (%g) is before the record's latest event (%g)", now, t.last)
	}
	for _, g := range t.groups {
		if now-g.t > g.span {
			maxNow := math.Inf(1)
			for _, h := range t.groups {
				maxNow = math.Min(maxNow, h.t+h.span)
			}
			return nil, &RangeError{What: "now", Value: now, Max: maxNow}
		}
	}
	// Each group's filtered distribution at now.
	at := map[string][]float64{}
	for _, g := range t.groups {
		alpha, _, err := passage.HiddenWith(ctx, g.gc.Chain, g.alpha, g.observed, now-g.t, t.epsilon/4, t.opt.Transient)
		if err != nil {
			return nil, err
		}
		total := 0.0
		for _, x := range alpha {
			total += x
		}
		if !(total > 0) {
			return nil, fmt.Errorf("the record has probability 0 by %g (the model cannot wait that long without a completion)", now)
		}
		for i := range alpha {
			alpha[i] /= total
		}
		at[groupKey(g.gc.Leaves)] = alpha
	}
	var running []string
	for _, g := range t.groups {
		for _, mc := range g.gc.Machines {
			if _, done := t.finished[mc.Name]; !done {
				running = append(running, mc.Name)
			}
		}
	}
	var res *models.Result
	if len(running) > 0 {
		opt := t.opt
		opt.Machines = running
		opt.Beta = beta - now
		if opt.Beta <= 0 {
			opt.Beta = math.Max(1e-9*math.Max(1, now), math.SmallestNonzeroFloat64) // P(F <= beta) is 0: set below
		}
		opt.GroupStart = func(leaves []*ctmc.Leaf, c *ctmc.Chain) ([]float64, error) {
			alpha, ok := at[groupKey(leaves)]
			if !ok || len(alpha) != c.N {
				return nil, fmt.Errorf("observe: no filtered state for the group of %s (a bug)", strings.Join(ctmc.LeafNames(leaves), ", "))
			}
			return alpha, nil
		}
		r, err := models.AnalyzeGroups(ctx, t.s, opt)
		if err != nil {
			return nil, err
		}
		shift(r, now, beta)
		res = r
	} else {
		res = &models.Result{Semantics: passage.Initial, Solved: "decomposed", Independent: true, MakespanError: 0}
	}
	res.Beta = beta
	t.addFinished(res, beta)
	res.Why = fmt.Sprintf("conditioned on %s observed up to t = %g (%d of %d machines finished)", plural(t.events, "completion", "completions"), now, len(t.finished), len(t.machines))
	return res, nil
}

func groupKey(leaves []*ctmc.Leaf) string { return strings.Join(ctmc.LeafNames(leaves), "\x00") }

// shift turns figures computed from now into absolute ones: means,
// quantiles and the expected makespan move by now; with beta <= now no
// running machine can meet the goal.
func shift(r *models.Result, now, beta float64) {
	late := beta <= now
	for i := range r.Machines {
		mr := &r.Machines[i]
		mr.Mean += now
		mr.Quantile += now
		mr.MeanLo, mr.MeanHi = mr.MeanLo+now, mr.MeanHi+now
		mr.QuantileLo, mr.QuantileHi = mr.QuantileLo+now, mr.QuantileHi+now
		if late {
			mr.PByBeta, mr.PByBetaLo, mr.PByBetaHi = 0, math.NaN(), math.NaN()
		}
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		g.Mean += now
		if late {
			g.PAllByBeta = 0
		}
	}
	r.ExpectedMakespan += now
	r.MakespanLo, r.MakespanHi = r.MakespanLo+now, r.MakespanHi+now
	if late {
		r.PAllByBeta, r.Robustness = 0, 0
	}
}

// addFinished adds the machines the record finished: P(F <= beta) 1 or 0
// by their recorded time, their mean and quantile that time; the
// robustness and P(all) take them in, and the expected makespan is the
// latest recorded time when every machine has finished.
func (t *Tracker) addFinished(r *models.Result, beta float64) {
	names := make([]string, 0, len(t.finished))
	for n := range t.finished {
		names = append(names, n)
	}
	sort.Strings(names)
	latest := 0.0
	all := true
	for _, n := range names {
		at := t.finished[n]
		ref := t.machines[n]
		mc := t.groups[ref.g].gc.Machines[ref.k]
		p := 0.0
		if at <= beta {
			p = 1
		}
		all = all && p == 1
		latest = math.Max(latest, at)
		nan := math.NaN()
		r.Machines = append(r.Machines, models.MachineResult{Name: n, Applications: mc.Apps, FirstActions: mc.FirstNames(t.groups[ref.g].gc.Chain.S),
			LastActions: mc.LastNames(t.groups[ref.g].gc.Chain.S), PByBeta: p, Mean: at, Quantile: at, Availability: nan, Slowdown: nan,
			PByBetaLo: nan, PByBetaHi: nan, MeanLo: nan, MeanHi: nan, QuantileLo: nan, QuantileHi: nan,
			Note: fmt.Sprintf("finished at %g (recorded)", at)})
	}
	// The machines in the model's order.
	order := map[string]int{}
	for _, l := range t.s.Leaves {
		order[l.Name] = len(order)
	}
	sort.SliceStable(r.Machines, func(i, j int) bool { return order[r.Machines[i].Name] < order[r.Machines[j].Name] })
	if len(names) == 0 {
		return
	}
	r.Robustness = 1
	for _, mr := range r.Machines {
		r.Robustness = math.Min(r.Robustness, mr.PByBeta)
	}
	running := len(r.Machines) > len(names)
	if !all {
		r.PAllByBeta = 0
	} else if !running {
		r.PAllByBeta = 1
	}
	if !running {
		r.ExpectedMakespan, r.MakespanError = latest, 0
		r.Joint = "every machine finished (recorded)"
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Robustness is models.Robustness conditioned on a record (the same one
// for every model: each model's machines must be those it names) at time
// now: each model's figures by a Tracker fed the whole record, ranked as
// models.Rank ranks them. file names the record in errors. Only the
// request's goal, machines, epsilon, compile options and tie apply.
func Robustness(ctx context.Context, in []models.Input, req models.Request, record []Event, file string, now float64) (*models.Report, error) {
	if len(in) == 0 {
		return nil, errors.New("no model given")
	}
	if req.Semantics != "" && req.Semantics != passage.Initial || req.Cycling || req.Flat || req.Sensitivity || req.Energy != nil || req.Simulate != nil {
		return nil, option.Errorf("figures from observed progress are computed by groups under initial semantics, finished machines stopped: not with {Semantics} plugin, {Cycling}, {Flat}, {Sensitivity}, {Simulate} or the energy figures")
	}
	rep := &models.Report{Beta: req.Beta, Semantics: passage.Initial, Tie: req.Tie, Simulations: make([]*simulate.Stats, len(in))}
	for _, m := range in {
		t, err := NewTracker(ctx, m.Model, req.Compile, models.Options{Question: models.Question{Machines: req.Machines, Epsilon: req.Epsilon, Quantile: req.Quantile, Transient: req.Transient, NoQuantile: req.NoQuantile},
			MaxGroupStates: req.Compile.MaxStates})
		if err != nil {
			return nil, &models.InputError{Name: m.Name, Err: err}
		}
		for _, ev := range record {
			if err := t.Add(ctx, ev, file); err != nil {
				return nil, err
			}
		}
		r, err := t.Figures(ctx, req.Beta, now)
		if err != nil {
			return nil, &models.InputError{Name: m.Name, Err: err}
		}
		r.Model = m.Name
		rep.Results = append(rep.Results, r)
	}
	rep.Ranking = models.Rank(rep.Results, req.Tie)
	return rep, nil
}
