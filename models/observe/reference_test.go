package observe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"pepa/ctmc"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
	"pepa/passage/laplace"
)

// This file is an independent oracle for the figures from observed
// progress (semantics.md section 6), written from the semantics text on
// the reference interpreter's chain of the WHOLE model (no groups): the
// filtered distribution is carried on the product chain with dense matrix
// exponentials of the hidden generator, and the figures are the reference's
// passages from it.

// refModel is a generated mapping model and what the oracle needs of it.
type refModel struct {
	text     string
	machines []string            // machine leaves, in order
	last     map[string][]string // machine -> its cycle-closing actions
	owner    map[string]string   // observed action -> the machine performing it
}

// rate draws a rate in [lo, hi), rounded to two decimals.
func refRate(rng *rand.Rand, lo, hi float64) string {
	return fmt.Sprintf("%.2f", lo+(hi-lo)*rng.Float64())
}

// genRefModel writes a random mapping model: 2-3 machines computing 1-3
// applications each along an ideal and a perturbed path racing on the
// first compute action; sometimes two machines stage through a shared
// passive network (req/xfer, observed), whose reset is hidden; sometimes
// a machine has an owner written into it (arrive/leave, private, hidden).
func genRefModel(rng *rand.Rand) refModel {
	nm := 2 + rng.IntN(2)
	var b strings.Builder
	rm := refModel{last: map[string][]string{}, owner: map[string]string{}}
	apps := make([][]int, nm)
	nApps := 0
	for i := range nm {
		k := 1 + rng.IntN(3)
		for range k {
			nApps++
			apps[i] = append(apps[i], nApps)
		}
	}
	// Networked machines.
	netted := map[int]bool{}
	netReset := false
	if rng.Float64() < 0.5 {
		a := rng.IntN(nm)
		c := (a + 1 + rng.IntN(nm-1)) % nm
		netted[a], netted[c] = true, true
		netReset = rng.Float64() < 0.5
	}
	for a := 1; a <= nApps; a++ {
		fmt.Fprintf(&b, "A%d = (c%d, infty).A%d;\n", a, a, a)
	}
	var netActs []string
	for i := range nm {
		name := fmt.Sprintf("M%d", i+1)
		rm.machines = append(rm.machines, name)
		k := len(apps[i])
		netPos := -1
		if netted[i] {
			netPos = rng.IntN(k)
			netActs = append(netActs, fmt.Sprintf("req%d", i+1), fmt.Sprintf("xfer%d", i+1))
			rm.owner[fmt.Sprintf("req%d", i+1)] = name
			rm.owner[fmt.Sprintf("xfer%d", i+1)] = name
		}
		for _, a := range apps[i] {
			rm.owner[fmt.Sprintf("c%d", a)] = name
		}
		rm.last[name] = []string{fmt.Sprintf("c%d", apps[i][k-1])}
		hasOwner := rng.Float64() < 0.35
		arrive, leave := refRate(rng, 0.05, 0.5), refRate(rng, 0.3, 2)
		type state struct {
			name  string
			moves []string
		}
		var states []state
		add := func(st string, moves ...string) { states = append(states, state{st, moves}) }
		race := name
		if netPos == 0 {
			add(name, fmt.Sprintf("(req%d, %s).%s_q", i+1, refRate(rng, 0.5, 3), name))
			add(name+"_q", fmt.Sprintf("(xfer%d, %s).%s_s", i+1, refRate(rng, 0.5, 3), name))
			race = name + "_s"
		}
		var raceMoves []string
		var pathStates []state
		for _, path := range []string{"r", "p"} {
			type step struct{ act, rate string }
			var steps []step
			for j := 1; j < k; j++ {
				if netPos == j {
					steps = append(steps, step{fmt.Sprintf("req%d", i+1), refRate(rng, 0.5, 3)},
						step{fmt.Sprintf("xfer%d", i+1), refRate(rng, 0.5, 3)})
				}
				steps = append(steps, step{fmt.Sprintf("c%d", apps[i][j]), refRate(rng, 0.1, 2)})
			}
			stName := func(s int) string {
				if s >= len(steps) {
					return name
				}
				return fmt.Sprintf("%s_%s%d", name, path, s+1)
			}
			raceMoves = append(raceMoves, fmt.Sprintf("(c%d, %s).%s", apps[i][0], refRate(rng, 0.1, 2), stName(0)))
			for s, st := range steps {
				pathStates = append(pathStates, state{stName(s), []string{fmt.Sprintf("(%s, %s).%s", st.act, st.rate, stName(s+1))}})
			}
		}
		if race == name {
			states = append([]state{{race, raceMoves}}, states...)
		} else {
			add(race, raceMoves...)
		}
		states = append(states, pathStates...)
		var ownerLines []string
		for si, st := range states {
			moves := st.moves
			if hasOwner && (si == 0 || rng.Float64() < 0.3) {
				moves = append(moves, fmt.Sprintf("(arrive_%s, %s).%s_o", name, arrive, st.name))
				ownerLines = append(ownerLines, fmt.Sprintf("%s_o = (leave_%s, %s).%s;\n", st.name, name, leave, st.name))
			}
			fmt.Fprintf(&b, "%s = %s;\n", st.name, strings.Join(moves, " + "))
		}
		for _, l := range ownerLines {
			b.WriteString(l)
		}
	}
	var net string
	if len(netActs) > 0 {
		var choices []string
		for n := 0; n < len(netActs); n += 2 {
			busy := fmt.Sprintf("Net_%d", n/2+1)
			choices = append(choices, fmt.Sprintf("(%s, infty).%s", netActs[n], busy))
			back := "Net"
			if netReset {
				back = "Net_reset"
			}
			fmt.Fprintf(&b, "%s = (%s, infty).%s;\n", busy, netActs[n+1], back)
		}
		if netReset {
			fmt.Fprintf(&b, "Net_reset = (reset, %s).Net;\n", refRate(rng, 0.5, 3))
		}
		fmt.Fprintf(&b, "Net = %s;\n", strings.Join(choices, " + "))
		net = "Net"
	}
	var as, cs []string
	for a := 1; a <= nApps; a++ {
		as = append(as, fmt.Sprintf("A%d", a))
		cs = append(cs, fmt.Sprintf("c%d", a))
	}
	ms := "(" + strings.Join(rm.machines, " <> ") + ")"
	if net != "" {
		ms = fmt.Sprintf("(%s <%s> Net)", ms, strings.Join(netActs, ", "))
	}
	fmt.Fprintf(&b, "(%s) <%s> %s\n", strings.Join(as, " <> "), strings.Join(cs, ", "), ms)
	rm.text = b.String()
	return rm
}

// refOracle is the reference chain of a model with every machine stopped
// after its last action, and the filtering's matrices.
type refOracle struct {
	rm      refModel
	rc      *reference.Chain
	n       int
	hidden  *mat.Dense // Q_hidden
	leafOf  map[string]int
	done    []bool // every machine finished
	makespn float64
}

func newRefOracle(t *testing.T, rm refModel) (*refOracle, *lang.Model) {
	t.Helper()
	m, diags := lang.Load("gen.pepa", []byte(rm.text))
	if diags.HasErrors() {
		t.Fatalf("generated model: %v\n%s", diags.Err(), rm.text)
	}
	rc, err := reference.Derive(context.Background(), m, reference.Options{Stop: rm.last, MaxStates: 400})
	if err != nil {
		return nil, nil
	}
	o := &refOracle{rm: rm, rc: rc, n: rc.N(), leafOf: map[string]int{}}
	for i, l := range rc.Leaves {
		o.leafOf[l] = i
	}
	for _, mn := range rm.machines {
		if _, ok := o.leafOf[mn]; !ok {
			t.Fatalf("no leaf %s in %v", mn, rc.Leaves)
		}
	}
	o.hidden = mat.NewDense(o.n, o.n, nil)
	for s, ts := range rc.Trans {
		for _, tr := range ts {
			if tr.To == s {
				if _, obs := rm.owner[tr.Action]; obs {
					t.Fatalf("observed self-loop %s in state %d\n%s", tr.Action, s, rm.text)
				}
				continue
			}
			o.hidden.Set(s, s, o.hidden.At(s, s)-tr.Rate)
			if _, obs := rm.owner[tr.Action]; !obs {
				o.hidden.Set(s, tr.To, o.hidden.At(s, tr.To)+tr.Rate)
			}
		}
	}
	o.done = rc.FinishedStates(rm.machines)
	o.makespn, err = rc.Mean(rc.InitialStates(o.done))
	if err != nil {
		t.Fatal(err)
	}
	return o, m
}

// runHidden is alpha exp(Q_hidden dt).
func (o *refOracle) runHidden(alpha []float64, dt float64) []float64 {
	if dt == 0 {
		return alpha
	}
	var q, e mat.Dense
	q.Scale(dt, o.hidden)
	e.Exp(&q)
	out := mat.NewVecDense(o.n, nil)
	out.MulVec(e.T(), mat.NewVecDense(o.n, append([]float64(nil), alpha...)))
	res := make([]float64, o.n)
	for i := range res {
		res[i] = math.Max(0, out.AtVec(i))
	}
	return res
}

// observe is alpha R_{m,a}: the transitions labelled a in which machine m
// moves.
func (o *refOracle) observe(alpha []float64, machine, action string) []float64 {
	out := make([]float64, o.n)
	k := o.leafOf[machine]
	for s, ts := range o.rc.Trans {
		if alpha[s] == 0 {
			continue
		}
		for _, tr := range ts {
			if tr.Action == action && o.rc.States[s][k] != o.rc.States[tr.To][k] {
				out[tr.To] += alpha[s] * tr.Rate
			}
		}
	}
	return out
}

func normalise(alpha []float64) ([]float64, float64) {
	sum := 0.0
	for _, x := range alpha {
		sum += x
	}
	if !(sum > 0) {
		return alpha, sum
	}
	out := make([]float64, len(alpha))
	for i, x := range alpha {
		out[i] = x / sum
	}
	return out, sum
}

// filter is alpha_T for the record at now.
func (o *refOracle) filter(rec []Event, now float64) ([]float64, error) {
	alpha := make([]float64, o.n)
	alpha[0] = 1
	t := 0.0
	for i, ev := range rec {
		alpha = o.runHidden(alpha, ev.Time-t)
		alpha = o.observe(alpha, ev.Machine, ev.Action)
		var sum float64
		if alpha, sum = normalise(alpha); !(sum > 0) {
			return nil, fmt.Errorf("oracle: event %d (%v) impossible", i, ev)
		}
		t = ev.Time
	}
	alpha = o.runHidden(alpha, now-t)
	alpha, sum := normalise(alpha)
	if !(sum > 0) {
		return nil, fmt.Errorf("oracle: record impossible at now")
	}
	return alpha, nil
}

// refFigures are the oracle's figures.
type refFigures struct {
	p, mean     map[string]float64
	pAll, mkspn float64
}

func (o *refOracle) figures(t *testing.T, rec []Event, beta, now float64) refFigures {
	t.Helper()
	alpha, err := o.filter(rec, now)
	if err != nil {
		t.Fatal(err)
	}
	f := refFigures{p: map[string]float64{}, mean: map[string]float64{}}
	finished := map[string]float64{}
	for _, ev := range rec {
		for _, a := range o.rm.last[ev.Machine] {
			if ev.Action == a {
				finished[ev.Machine] = ev.Time
			}
		}
	}
	allRecorded := true // every recorded finish <= beta
	latest := 0.0
	for _, mn := range o.rm.machines {
		if ft, ok := finished[mn]; ok {
			f.mean[mn] = ft
			f.p[mn] = 0
			if ft <= beta {
				f.p[mn] = 1
			} else {
				allRecorded = false
			}
			latest = math.Max(latest, ft)
			continue
		}
		p := reference.Passage{Alpha: alpha, TargetActions: map[string]bool{}}
		for _, a := range o.rm.last[mn] {
			p.TargetActions[a] = true
		}
		f.p[mn] = 0
		if beta > now {
			f.p[mn] = o.rc.CDF(p, beta-now)
		}
		m, err := o.rc.Mean(p)
		if err != nil {
			t.Fatal(err)
		}
		f.mean[mn] = now + m
	}
	if len(finished) == len(o.rm.machines) {
		f.pAll, f.mkspn = 0, latest
		if allRecorded {
			f.pAll = 1
		}
		return f
	}
	all := reference.Passage{Alpha: alpha, TargetStates: o.done}
	f.pAll = 0
	if allRecorded && beta > now {
		f.pAll = o.rc.CDF(all, beta-now)
	}
	m, err := o.rc.Mean(all)
	if err != nil {
		t.Fatal(err)
	}
	f.mkspn = now + m
	return f
}

// simulate draws a record of the reference chain up to now (Gillespie),
// keeping only the observed completions, each named by the machine whose
// local state it changes.
func (o *refOracle) simulate(t *testing.T, rng *rand.Rand, now float64) []Event {
	t.Helper()
	s, clock := 0, 0.0
	var rec []Event
	for {
		total := 0.0
		for _, tr := range o.rc.Trans[s] {
			total += tr.Rate
		}
		if total == 0 {
			return rec
		}
		clock += rng.ExpFloat64() / total
		if clock > now {
			return rec
		}
		u := rng.Float64() * total
		var next reference.Transition
		for _, tr := range o.rc.Trans[s] {
			next = tr
			if u -= tr.Rate; u < 0 {
				break
			}
		}
		if mn, obs := o.rm.owner[next.Action]; obs {
			var moved []string
			for _, m := range o.rm.machines {
				k := o.leafOf[m]
				if o.rc.States[s][k] != o.rc.States[next.To][k] {
					moved = append(moved, m)
				}
			}
			if len(moved) != 1 || moved[0] != mn {
				t.Fatalf("observed %s moves machines %v, want %s\n%s", next.Action, moved, mn, o.rm.text)
			}
			rec = append(rec, Event{Time: round3(clock), Machine: mn, Action: next.Action})
		}
		s = next.To
	}
}

// round3 rounds a simulated time down to 1e-3 (the record as a controller
// would log it; the record stays possible and in order).
func round3(x float64) float64 { return math.Floor(x*1000) / 1000 }

// compareFigures checks the Tracker's figures against the oracle's.
func compareFigures(t *testing.T, what string, got *models.Result, want refFigures, o *refOracle, rec []Event, beta, now float64) bool {
	t.Helper()
	var bad []string
	relClose := func(a, b float64) bool {
		if math.IsInf(a, 1) && math.IsInf(b, 1) {
			return true
		}
		return math.Abs(a-b) <= 1e-8*math.Max(1, math.Abs(b))
	}
	seen := map[string]bool{}
	for _, mr := range got.Machines {
		wp, ok := want.p[mr.Name]
		if !ok {
			bad = append(bad, fmt.Sprintf("unexpected machine %s", mr.Name))
			continue
		}
		seen[mr.Name] = true
		if math.Abs(mr.PByBeta-wp) > 1e-8 || !relClose(mr.Mean, want.mean[mr.Name]) {
			bad = append(bad, fmt.Sprintf("%s: P(F <= beta | R) %.12g E[F | R] %.12g, oracle %.12g %.12g", mr.Name, mr.PByBeta, mr.Mean, wp, want.mean[mr.Name]))
		}
	}
	for _, mn := range o.rm.machines {
		if !seen[mn] {
			bad = append(bad, fmt.Sprintf("machine %s missing", mn))
		}
	}
	if math.Abs(got.PAllByBeta-want.pAll) > 1e-8 || !relClose(got.ExpectedMakespan, want.mkspn) {
		bad = append(bad, fmt.Sprintf("P(all) %.12g E[makespan | R] %.12g, oracle %.12g %.12g", got.PAllByBeta, got.ExpectedMakespan, want.pAll, want.mkspn))
	}
	if len(bad) > 0 {
		var rs []string
		for _, ev := range rec {
			rs = append(rs, fmt.Sprintf("%g,%s,%s", ev.Time, ev.Machine, ev.Action))
		}
		t.Errorf("%s: beta %g now %g, %d states:\n  %s\nrecord:\n  %s\nmodel:\n%s", what, beta, now, o.n,
			strings.Join(bad, "\n  "), strings.Join(rs, "\n  "), o.rm.text)
		return false
	}
	return true
}

// trackerFigures feeds the record to a fresh Tracker and asks its figures.
func trackerFigures(t *testing.T, m *lang.Model, rec []Event, beta, now float64) *models.Result {
	t.Helper()
	ctx := context.Background()
	tr, err := NewTracker(ctx, m, ctmc.DefaultOptions, models.Options{Question: models.Question{Epsilon: 1e-13}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range rec {
		if err := tr.Add(ctx, ev, ""); err != nil {
			t.Fatalf("event %v refused: %v", ev, err)
		}
	}
	r, err := tr.Figures(ctx, beta, now)
	if err != nil {
		t.Fatalf("figures: %v", err)
	}
	return r
}

// TestReferenceFiltering compares the Tracker's figures on random models
// and simulated records with the whole-chain oracle.
func TestReferenceFiltering(t *testing.T) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(20261127, 6))
	ctx := context.Background()
	cases, models_, failures := 0, 0, 0
	kinds := map[string]int{}
	for cases < 220 && failures < 3 {
		rm := genRefModel(rng)
		o, m := newRefOracle(t, rm)
		if o == nil || o.n > 300 {
			continue
		}
		models_++
		if strings.Contains(rm.text, "Net") {
			kinds["net"]++
		}
		if strings.Contains(rm.text, "arrive_") {
			kinds["owner"]++
		}
		if strings.Contains(rm.text, "reset") {
			kinds["reset"]++
		}
		for range 5 {
			now := round3(rng.Float64() * 1.3 * o.makespn)
			rec := o.simulate(t, rng, now)
			tr, err := NewTracker(ctx, m, ctmc.DefaultOptions, models.Options{Question: models.Question{Epsilon: 1e-13}})
			if err != nil {
				t.Fatalf("%v\n%s", err, rm.text)
			}
			for _, ev := range rec {
				if err := tr.Add(ctx, ev, ""); err != nil {
					t.Fatalf("event %v refused: %v\n%s", ev, err, rm.text)
				}
			}
			// The Laplace engine's lane: the filtering (passage.Hidden)
			// and every figure by Laplace-transform inversion, forced.
			trl, err := NewTracker(ctx, m, ctmc.DefaultOptions, models.Options{Question: models.Question{Epsilon: 1e-12, Transient: passage.EngineLaplace}})
			if err != nil {
				t.Fatalf("%v\n%s", err, rm.text)
			}
			for _, ev := range rec {
				if err := trl.Add(ctx, ev, ""); err != nil {
					if errors.Is(err, laplace.ErrNotApplicable) {
						kinds["laplace not applicable"]++
						trl = nil
						break
					}
					t.Fatalf("laplace lane: event %v refused: %v\n%s", ev, err, rm.text)
				}
			}
			kinds[fmt.Sprintf("events %d+", len(rec)/5*5)]++
			for _, ev := range rec {
				if ev.Action == rm.last[ev.Machine][0] {
					kinds["machines finished in the record"]++
				}
			}
			betas := []float64{round3(now + (0.2+1.2*rng.Float64())*o.makespn)}
			if rng.Float64() < 0.3 {
				betas = append(betas, round3(now*rng.Float64()))
			}
			for _, beta := range betas {
				if beta < now {
					kinds["beta < now"]++
				}
				got, err := tr.Figures(ctx, beta, now)
				if err != nil {
					t.Fatalf("figures: %v\n%s", err, rm.text)
				}
				want := o.figures(t, rec, beta, now)
				if !compareFigures(t, fmt.Sprintf("case %d", cases), got, want, o, rec, beta, now) {
					failures++
				}
				if trl != nil {
					gl, err := trl.Figures(ctx, beta, now)
					switch {
					case errors.Is(err, laplace.ErrNotApplicable):
						kinds["laplace not applicable"]++
					case err != nil:
						t.Fatalf("laplace lane: figures: %v\n%s", err, rm.text)
					default:
						kinds["laplace lane"]++
						if !compareFigures(t, fmt.Sprintf("case %d (laplace)", cases), gl, want, o, rec, beta, now) {
							failures++
						}
					}
				}
			}
			cases++
		}
	}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ks []string
	for _, k := range keys {
		ks = append(ks, fmt.Sprintf("%s: %d", k, kinds[k]))
	}
	t.Logf("%d cases on %d models (%s) in %v", cases, models_, strings.Join(ks, ", "), time.Since(start))
}

// TestReferenceHandPicked: an empty record at now > 0, a record in which
// every machine finished, and beta before now, on a coupled model with an
// owner and a hidden network reset.
func TestReferenceHandPicked(t *testing.T) {
	const text = `A1 = (c1, infty).A1; A2 = (c2, infty).A2; A3 = (c3, infty).A3;
M1 = (req1, 2.0).M1_q + (arrive_M1, 0.3).M1_o;
M1_o = (leave_M1, 1.1).M1;
M1_q = (xfer1, 1.5).M1_s;
M1_s = (c1, 0.7).M1_r1 + (c1, 0.3).M1_p1;
M1_r1 = (c2, 0.9).M1;
M1_p1 = (c2, 0.25).M1;
M2 = (c3, 0.6).M2_r1 + (c3, 0.2).M2_p1;
M2_r1 = (req2, 1.2).M2_r2;
M2_r2 = (xfer2, 2.5).M2;
M2_p1 = (req2, 0.4).M2_p2;
M2_p2 = (xfer2, 0.8).M2;
Net = (req1, infty).Net_1 + (req2, infty).Net_2;
Net_1 = (xfer1, infty).Net_reset;
Net_2 = (xfer2, infty).Net_reset;
Net_reset = (reset, 0.9).Net;
(A1 <> A2 <> A3) <c1, c2, c3> ((M1 <> M2) <req1, xfer1, req2, xfer2> Net)
`
	rm := refModel{
		text:     text,
		machines: []string{"M1", "M2"},
		last:     map[string][]string{"M1": {"c2"}, "M2": {"xfer2"}},
		owner: map[string]string{"req1": "M1", "xfer1": "M1", "c1": "M1", "c2": "M1",
			"c3": "M2", "req2": "M2", "xfer2": "M2"},
	}
	o, m := newRefOracle(t, rm)
	if o == nil {
		t.Fatal("reference refused the model")
	}
	full := []Event{
		{Time: 0.8, Machine: "M2", Action: "c3"},
		{Time: 1.1, Machine: "M1", Action: "req1"},
		{Time: 1.9, Machine: "M1", Action: "xfer1"},
		{Time: 3.0, Machine: "M2", Action: "req2"},
		{Time: 3.2, Machine: "M1", Action: "c1"},
		{Time: 3.4, Machine: "M2", Action: "xfer2"},
		{Time: 6.5, Machine: "M1", Action: "c2"},
	}
	for _, c := range []struct {
		what      string
		rec       []Event
		beta, now float64
	}{
		{"empty record at now 2.5", nil, 8, 2.5},
		{"empty record, beta before now", nil, 1, 2.5},
		{"empty record at 0", nil, 4, 0},
		{"partial record", full[:4], 9, 3.1},
		{"partial record, M2 waiting on the network", full[:3], 9, 2.9},
		{"partial record, beta before now", full[:5], 3, 4},
		{"M2 finished", full[:6], 6, 5},
		{"M2 finished, beta before its finish", full[:6], 3.3, 5},
		{"every machine finished", full, 7, 8},
		{"every machine finished, beta between", full, 5, 8},
		{"every machine finished, beta before now", full, 6.6, 10},
	} {
		got := trackerFigures(t, m, c.rec, c.beta, c.now)
		want := o.figures(t, c.rec, c.beta, c.now)
		compareFigures(t, c.what, got, want, o, c.rec, c.beta, c.now)
	}
}
