package spec

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/reference"
	"pepa/lang"
	"pepa/models"
)

// This file checks the models gen writes for owners and pools together
// with shared resources against models written out here from the rules of
// semantics.md (sections 3 and 4), without looking at what gen writes: a
// machine is a path of steps (the first application's request and
// transfer, the race of the ideal and perturbed paths on the first compute
// action, then each application's request, transfer and compute), owners
// and pools are written as plain state machines, and the reference
// interpreter (internal/testing/reference) solves the result.

// hRate writes a rate exactly (shortest round-trip form).
func hRate(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// hStep is one activity of a machine's path.
type hStep struct {
	action  string
	rate    float64
	compute bool // the processor's work (else a request or transfer)
}

// hApp is an application as one machine computes it: its ETC there and
// its input on the network (0: none, or the machine does not use it).
type hApp struct {
	name string
	etc  float64
	data float64
}

// hNetParams are the network's rate and latency.
type hNetParams struct{ rate, latency float64 }

// hOwn is an owner written into its machine's own states (no "uses").
type hOwn struct {
	arrival, service float64
	capacity         int
	sharing, pause   bool
}

// hMachine is one machine: ideal rate r = eta / ETC, perturbed rate
// p = etaP / (ETC * wlP) (nominal workload 1, perturbed wlP); before an
// application with data d, a request at 1/latency and a transfer at
// rate/d.
type hMachine struct {
	name        string
	apps        []hApp
	eta, etaP   float64
	wlP         float64
	net         hNetParams
	own         *hOwn // an owner in the machine's states, or nil
	prefix      []hStep
	ideal, pert []hStep
}

func (m *hMachine) build() {
	m.prefix, m.ideal, m.pert = nil, nil, nil
	for k, a := range m.apps {
		var stage []hStep
		if a.data > 0 {
			stage = []hStep{{"req_" + a.name, 1 / m.net.latency, false}, {"xfer_" + a.name, m.net.rate / a.data, false}}
		}
		r := m.eta / a.etc
		p := m.etaP / (a.etc * m.wlP)
		if k == 0 {
			m.prefix = stage // common to both paths: before the race
		} else {
			m.ideal = append(m.ideal, stage...)
			m.pert = append(m.pert, stage...)
		}
		m.ideal = append(m.ideal, hStep{"compute_" + a.name, r, true})
		m.pert = append(m.pert, hStep{"compute_" + a.name, p, true})
	}
}

// last is the compute action of the machine's last application.
func (m *hMachine) last() string { return "compute_" + m.apps[len(m.apps)-1].name }

// netActions are the machine's requests and transfers.
func (m *hMachine) netActions() []string {
	var out []string
	for _, a := range m.apps {
		if a.data > 0 {
			out = append(out, "req_"+a.name, "xfer_"+a.name)
		}
	}
	return out
}

func (m *hMachine) computeActions() []string {
	var out []string
	for _, a := range m.apps {
		out = append(out, "compute_"+a.name)
	}
	return out
}

type hEdge struct {
	step hStep
	to   string
}

type hNode struct {
	name  string
	edges []hEdge
}

// nodes are the machine's local states (without an owner), first the
// initial one; Done is left out.
func (m *hMachine) nodes() []hNode {
	done := m.name + "_Done"
	next := func(tag string, k, n int) string {
		if k < n {
			return fmt.Sprintf("%s_%s%d", m.name, tag, k)
		}
		return done
	}
	var out []hNode
	race := m.name + "_go"
	for k, s := range m.prefix {
		to := race
		if k+1 < len(m.prefix) {
			to = fmt.Sprintf("%s_c%d", m.name, k+1)
		}
		out = append(out, hNode{fmt.Sprintf("%s_c%d", m.name, k), []hEdge{{s, to}}})
	}
	out = append(out, hNode{race, []hEdge{{m.ideal[0], next("i", 1, len(m.ideal))}, {m.pert[0], next("p", 1, len(m.pert))}}})
	for k := 1; k < len(m.ideal); k++ {
		out = append(out, hNode{next("i", k, len(m.ideal)), []hEdge{{m.ideal[k], next("i", k+1, len(m.ideal))}}})
	}
	for k := 1; k < len(m.pert); k++ {
		out = append(out, hNode{next("p", k, len(m.pert)), []hEdge{{m.pert[k], next("p", k+1, len(m.pert))}}})
	}
	return out
}

// start is the machine's initial local state (with an owner: with n owner
// jobs).
func (m *hMachine) start(n int) string {
	s := m.nodes()[0].name
	if m.own != nil {
		s += fmt.Sprintf("_%d", n)
	}
	return s
}

func (m *hMachine) done() string { return m.name + "_Done" }

// text writes the machine's definitions. With an owner of its own, each
// local state is paired with the number n of owner jobs: arrivals at
// `arrival` while n < capacity; preemptive: work only at n = 0, each
// departure at `service`; sharing: work at rate/(n+1) and departures at
// service n/(n+1); "pause": requests and transfers only at n = 0. Done is
// terminal (a private self-loop), the owner with it.
//
// Under sharing the processor is shared between the owner's jobs and the
// machine's work only while the machine computes: while it requests or
// transfers input (its work not at the processor) the owner's jobs have
// the processor to themselves and leave at `service` (semantics.md
// section 4, "Owners and shared resources together").
func (m *hMachine) text() string {
	var b strings.Builder
	term := func(terms []string) string {
		return strings.Join(terms, "\n    + ")
	}
	for _, nd := range m.nodes() {
		if m.own == nil {
			var terms []string
			for _, e := range nd.edges {
				terms = append(terms, fmt.Sprintf("(%s, %s).%s", e.step.action, hRate(e.step.rate), e.to))
			}
			fmt.Fprintf(&b, "%s = %s;\n", nd.name, term(terms))
			continue
		}
		o := m.own
		at := func(name string, n int) string {
			if name == m.done() {
				return name
			}
			return fmt.Sprintf("%s_%d", name, n)
		}
		for n := 0; n <= o.capacity; n++ {
			var terms []string
			for _, e := range nd.edges {
				rate := e.step.rate
				switch {
				case e.step.compute && o.sharing:
					rate /= float64(n + 1)
				case e.step.compute && n > 0:
					continue // preempted
				case !e.step.compute && o.pause && n > 0:
					continue // paused
				}
				terms = append(terms, fmt.Sprintf("(%s, %s).%s", e.step.action, hRate(rate), at(e.to, n)))
			}
			if n < o.capacity {
				terms = append(terms, fmt.Sprintf("(oarr_%s, %s).%s", m.name, hRate(o.arrival), at(nd.name, n+1)))
			}
			if n > 0 {
				dep := o.service
				computing := false
				for _, e := range nd.edges {
					computing = computing || e.step.compute
				}
				if o.sharing && computing {
					dep = o.service * float64(n) / float64(n+1)
				}
				terms = append(terms, fmt.Sprintf("(odep_%s, %s).%s", m.name, hRate(dep), at(nd.name, n-1)))
			}
			fmt.Fprintf(&b, "%s = %s;\n", at(nd.name, n), term(terms))
		}
	}
	fmt.Fprintf(&b, "%s = (idle_%s, 1).%s;\n", m.done(), m.name, m.done())
	return b.String()
}

// hNet is a resource's slot counter Net_0..Net_c: every request takes a
// slot (passively, so only while one is free), every transfer frees one.
func hNet(capacity int, reqs, xfers []string) string {
	var b strings.Builder
	for k := 0; k <= capacity; k++ {
		var terms []string
		if k < capacity {
			for _, a := range reqs {
				terms = append(terms, fmt.Sprintf("(%s, infty).Net_%d", a, k+1))
			}
		}
		if k > 0 {
			for _, a := range xfers {
				terms = append(terms, fmt.Sprintf("(%s, infty).Net_%d", a, k-1))
			}
		}
		fmt.Fprintf(&b, "Net_%d = %s;\n", k, strings.Join(terms, "\n    + "))
	}
	return b.String()
}

// hStagingOwner is an owner whose jobs stage over the network: OW_n has n
// jobs at the processor and none staging, OWq_n one job requesting a slot,
// OWx_n one job holding it for its transfer. Arrivals only with no job
// staging and n < capacity (the staging job counts); departures at
// `service` with n > 0 whatever is staging; with n = 0 it lets the
// machine's actions in `enable` through (passively). Requests and
// transfers (oreq, oxfer) take and free Net's slots in the whole model;
// written alone (enable nil) it is the owner's own chain, every request
// served at once, for a stationary start.
func hStagingOwner(arrival, service float64, capacity int, reqRate, xferRate float64, enable []string) string {
	var b strings.Builder
	for n := 0; n <= capacity; n++ {
		for _, stage := range []string{"", "q", "x"} {
			if stage != "" && n == capacity {
				continue
			}
			var terms []string
			switch stage {
			case "":
				if n < capacity {
					terms = append(terms, fmt.Sprintf("(oarr, %s).OWq_%d", hRate(arrival), n))
				}
			case "q":
				terms = append(terms, fmt.Sprintf("(oreq, %s).OWx_%d", hRate(reqRate), n))
			case "x":
				terms = append(terms, fmt.Sprintf("(oxfer, %s).OW_%d", hRate(xferRate), n+1))
			}
			if n > 0 {
				terms = append(terms, fmt.Sprintf("(odep, %s).OW%s_%d", hRate(service), stage, n-1))
			} else {
				for _, a := range enable {
					terms = append(terms, fmt.Sprintf("(%s, infty).OW%s_0", a, stage))
				}
			}
			fmt.Fprintf(&b, "OW%s_%d = %s;\n", stage, n, strings.Join(terms, "\n    + "))
		}
	}
	return b.String()
}

// hPool is a pool's occupancy: Lab_S, S the set of desktops with a user (a
// bit per desktop). With u = |S| users present and u < min(users,
// desktops), a user arrives at (users - u) a and sits at each free desktop
// with equal probability: rate (users - u) a / (desktops - u) to each;
// each user leaves at s; a free desktop lets its machine's actions in
// enable[j] through (passively).
func hPool(users int, arrival, service float64, enable [][]string) string {
	var b strings.Builder
	k := len(enable)
	for set := 0; set < 1<<k; set++ {
		u := bits.OnesCount(uint(set))
		if u > users {
			continue
		}
		var terms []string
		for j := 0; j < k; j++ {
			if set&(1<<j) != 0 {
				terms = append(terms, fmt.Sprintf("(leave%d, %s).Lab_%d", j+1, hRate(service), set&^(1<<j)))
				continue
			}
			if u < users {
				terms = append(terms, fmt.Sprintf("(sit%d, %s).Lab_%d", j+1, hRate(float64(users-u)*arrival/float64(k-u)), set|1<<j))
			}
			for _, a := range enable[j] {
				terms = append(terms, fmt.Sprintf("(%s, infty).Lab_%d", a, set))
			}
		}
		fmt.Fprintf(&b, "Lab_%d = %s;\n", set, strings.Join(terms, "\n    + "))
	}
	return b.String()
}

// hModel assembles machines, an optional external component (a staging
// owner or a pool, defs and its initial state, cooperating on ext) and
// the network: ((M1 <> M2 ...) <ext> X) <requests, transfers> Net_0.
func hModel(ms []*hMachine, extDefs, extStart string, ext []string, netCap int, ownerNet bool) string {
	var b strings.Builder
	var reqs, xfers, starts []string
	for _, m := range ms {
		m.build()
		b.WriteString(m.text())
		starts = append(starts, m.start(0))
		for _, a := range m.netActions() {
			if strings.HasPrefix(a, "req_") {
				reqs = append(reqs, a)
			} else {
				xfers = append(xfers, a)
			}
		}
	}
	if ownerNet {
		reqs, xfers = append(reqs, "oreq"), append(xfers, "oxfer")
	}
	b.WriteString(extDefs)
	b.WriteString(hNet(netCap, reqs, xfers))
	sys := "(" + strings.Join(starts, " <> ") + ")"
	if extStart != "" {
		sys = fmt.Sprintf("(%s <%s> %s)", sys, strings.Join(ext, ", "), extStart)
	}
	fmt.Fprintf(&b, "%s <%s> Net_0\n", sys, strings.Join(append(reqs, xfers...), ", "))
	return b.String()
}

// hStart is a start distribution over the hand model's states: weight w
// on the state where leaf `leaf` (named by its initial local state) is in
// local state key and every other leaf in its initial one.
func hStart(t *testing.T, rc *reference.Chain, leaf string, weights map[string]float64) []float64 {
	t.Helper()
	l := slices.Index(rc.States[0], leaf)
	if l < 0 {
		t.Fatalf("no leaf starts in %s: %v", leaf, rc.States[0])
	}
	alpha := make([]float64, rc.N())
	found := 0.0
	for i, st := range rc.States {
		w, ok := weights[st[l]]
		if !ok {
			continue
		}
		same := true
		for k := range st {
			if k != l && st[k] != rc.States[0][k] {
				same = false
				break
			}
		}
		if same {
			alpha[i] = w
			found += w
		}
	}
	if math.Abs(found-1) > 1e-14 {
		t.Fatalf("start distribution: found %g of the mass among the states", found)
	}
	return alpha
}

// hGeometric is pi_n proportional to rho^n, n = 0..capacity, keyed by
// key(n).
func hGeometric(rho float64, capacity int, key func(int) string) map[string]float64 {
	out := map[string]float64{}
	sum := 0.0
	for n := 0; n <= capacity; n++ {
		sum += math.Pow(rho, float64(n))
	}
	for n := 0; n <= capacity; n++ {
		out[key(n)] = math.Pow(rho, float64(n)) / sum
	}
	return out
}

// hStagingStationary is the steady state of a staging owner's own chain
// (requests served at 1/latency, every slot free) conditioned on no job
// staging, keyed by OW_n, solved by the reference.
func hStagingStationary(t *testing.T, arrival, service float64, capacity int, reqRate, xferRate float64) map[string]float64 {
	t.Helper()
	src := hStagingOwner(arrival, service, capacity, reqRate, xferRate, nil) + "OW_0\n"
	m, diags := lang.Load("owner.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("%v\n%s", diags.Err(), src)
	}
	rc, err := reference.Derive(context.Background(), m, reference.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pi, err := rc.Steady()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	sum := 0.0
	for i, st := range rc.States {
		if strings.HasPrefix(st[0], "OW_") {
			out[st[0]] += pi[i]
			sum += pi[i]
		}
	}
	if len(out) != capacity+1 {
		t.Fatalf("owner chain: %d idle states, want %d", len(out), capacity+1)
	}
	for k := range out {
		out[k] /= sum
	}
	return out
}

// hCase is a specification and its mapping written out by hand.
type hCase struct {
	name     string
	spec     string
	beta     float64
	machines []*hMachine // the machines that compute, in model order
	hand     string
	// start, if set, gives the hand model's start distribution.
	start func(t *testing.T, rc *reference.Chain) []float64
	// prism, if set, are figures computed elsewhere: per machine P(F <=
	// beta) and E[F], then P(all) and E[makespan].
	prism []float64
}

// checkHand generates the specification's mapping, solves it by groups as
// robustness does (with its pragmas), and compares every machine's P(F <=
// beta) and E[F], P(all) and E[makespan] with the hand-built model solved
// by the reference, to 1e-9 (means relative).
func checkHand(t *testing.T, c hCase) {
	t.Helper()
	in, err := ParseSpec("s.json", []byte(c.spec))
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	var src strings.Builder
	if err := in.Generate(&src, in.Mappings[0]); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	m, diags := lang.Load("gen.pepa", []byte(src.String()))
	if diags.HasErrors() {
		t.Fatalf("%s: %v", c.name, diags.Err())
	}
	pragmas, err := models.ReadPragmas(m.File)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctmc.Compile(m, ctmc.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := models.AnalyzeGroups(context.Background(), s, models.Options{Question: models.Question{Beta: c.beta, Epsilon: 1e-12},
		Pragmas: pragmas})
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if len(got.Groups) != 1 || len(got.Groups[0].Machines) != len(c.machines) {
		t.Errorf("%s: groups %+v, want one group of every machine", c.name, got.Groups)
	}

	hm, diags := lang.Load("hand.pepa", []byte(c.hand))
	if diags.HasErrors() {
		t.Fatalf("%s: %v\n%s", c.name, diags.Err(), c.hand)
	}
	rc, err := reference.Derive(context.Background(), hm, reference.Options{})
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	alpha := make([]float64, rc.N())
	alpha[0] = 1
	if c.start != nil {
		alpha = c.start(t, rc)
	}
	var figures []float64
	for _, hmach := range c.machines {
		p := reference.Passage{Alpha: alpha, TargetActions: map[string]bool{hmach.last(): true}}
		v, e := rc.CDFs(p, []float64{c.beta})
		mean, err := rc.Mean(p)
		if err != nil {
			t.Fatal(err)
		}
		figures = append(figures, v[0], mean)
		k := slices.IndexFunc(got.Machines, func(mr models.MachineResult) bool { return mr.Name == hmach.name })
		if k < 0 {
			t.Errorf("%s: no machine %s in %+v", c.name, hmach.name, got.Machines)
			continue
		}
		mr := got.Machines[k]
		if math.Abs(mr.PByBeta-v[0]) > 1e-9+e[0] || math.Abs(mr.Mean-mean) > 1e-9*math.Max(1, mean) {
			t.Errorf("%s: %s P(F <= %g) %.12g E[F] %.12g, hand-built %.12g %.12g", c.name, mr.Name, c.beta, mr.PByBeta, mr.Mean, v[0], mean)
		}
	}
	if len(got.Machines) != len(c.machines) {
		t.Errorf("%s: %d machines analysed, want %d", c.name, len(got.Machines), len(c.machines))
	}
	done := make([]bool, rc.N())
	for i, st := range rc.States {
		done[i] = true
		for _, hmach := range c.machines {
			if !slices.Contains(st, hmach.done()) {
				done[i] = false
			}
		}
	}
	all := reference.Passage{Alpha: alpha, TargetStates: done}
	v, e := rc.CDFs(all, []float64{c.beta})
	makespan, err := rc.Mean(all)
	if err != nil {
		t.Fatal(err)
	}
	figures = append(figures, v[0], makespan)
	if math.Abs(got.PAllByBeta-v[0]) > 1e-9+e[0] || math.Abs(got.ExpectedMakespan-makespan) > 1e-9*makespan+got.MakespanError {
		t.Errorf("%s: P(all) %.12g E[makespan] %.12g, hand-built %.12g %.12g", c.name, got.PAllByBeta, got.ExpectedMakespan, v[0], makespan)
	}
	t.Logf("%s: %d hand states, beta %g, figures %.12g", c.name, rc.N(), c.beta, figures)
	if c.prism != nil {
		for k, want := range c.prism {
			if math.Abs(figures[k]-want) > 1e-9*math.Max(1, want) {
				t.Errorf("%s: hand-built figure %d is %.12g, PRISM %.12g", c.name, k, figures[k], want)
			}
		}
	}
}

// ownerStagesSpec: M1 (an owner of its own) and M2 stage over Net; ETC
// column M1 = 2, 4, 3, 5, M2 = 3, 2, 5, 4; workload 1 -> 1.5; M2's
// availability 1 -> 0.8. M1 computes A1 (data 20) then A2 (data 10), M2
// A3 (data 15) then A4 (no data).
func ownerStagesSpec(owner string, netCap int) string {
	return fmt.Sprintf(`{"etc": [[2, 3], [4, 2], [3, 5], [5, 4]], "workload": {"nominal": 1, "perturbed": 1.5},
 "availability": {"nominal": [1, 1], "perturbed": [1, 0.8]},
 "owners": {"M1": %s},
 "resources": {"Net": {"machines": ["M1", "M2"], "rate": 10, "latency": 0.5, "capacity": %d, "data": {"A1": 20, "A2": 10, "A3": 15}}},
 "mappings": [{"name": "m", "allocation": {"M1": ["A1", "A2"], "M2": ["A3", "A4"]}}]}`, owner, netCap)
}

// TestOwnerStagesHandBuilt: a machine with an owner of its own that stages
// its input over a network shared with another machine. For a preemptive
// owner with transfers going on (idle start, Net capacity 2), a
// preemptive owner that pauses the transfers (stationary start, capacity
// 2, Net capacity 1: also checked against PRISM's figures) and a sharing
// owner (capacity 2, idle, Net capacity 2), the figures robustness
// computes on gen's model (each machine's P(F <= beta) and E[F], P(all),
// E[makespan]) equal those of the model written by hand, owner states in
// the machine, solved by the reference, to 1e-9. A stationary start weighs
// the hand model's states with pi_n proportional to (arrival/service)^n.
func TestOwnerStagesHandBuilt(t *testing.T) {
	net := hNetParams{rate: 10, latency: 0.5}
	machines := func(own *hOwn) []*hMachine {
		return []*hMachine{
			{name: "M1", apps: []hApp{{"A1", 2, 20}, {"A2", 4, 10}}, eta: 1, etaP: 1, wlP: 1.5, net: net, own: own},
			{name: "M2", apps: []hApp{{"A3", 5, 15}, {"A4", 4, 0}}, eta: 1, etaP: 0.8, wlP: 1.5, net: net},
		}
	}
	cases := []struct {
		name   string
		owner  string
		own    hOwn
		netCap int
		beta   float64
		prism  []float64
	}{
		{"preemptive, continue, idle", `{"arrival": 0.3, "service": 1.2, "capacity": 1, "discipline": "preemptive", "start": "idle"}`,
			hOwn{arrival: 0.3, service: 1.2, capacity: 1}, 2, 12, nil},
		{"preemptive, pause, stationary", `{"arrival": 0.2, "service": 1, "capacity": 2, "discipline": "preemptive", "start": "stationary", "transfers": "pause"}`,
			hOwn{arrival: 0.2, service: 1, capacity: 2, pause: true}, 1, 10,
			[]float64{0.354541288408, 13.8462378115, 0.497294026758, 11.5812642710, 0.190952201137, 16.5325322225}},
		{"sharing, continue, idle", `{"arrival": 0.4, "service": 0.9, "capacity": 2, "discipline": "sharing", "start": "idle", "transfers": "continue"}`,
			hOwn{arrival: 0.4, service: 0.9, capacity: 2, sharing: true}, 2, 14, nil},
	}
	for _, tc := range cases {
		own := tc.own
		ms := machines(&own)
		c := hCase{name: tc.name, spec: ownerStagesSpec(tc.owner, tc.netCap), beta: tc.beta, machines: ms,
			hand: hModel(ms, "", "", nil, tc.netCap, false), prism: tc.prism}
		if strings.Contains(tc.owner, "stationary") {
			c.start = func(t *testing.T, rc *reference.Chain) []float64 {
				return hStart(t, rc, ms[0].start(0), hGeometric(own.arrival/own.service, own.capacity, ms[0].start))
			}
		}
		checkHand(t, c)
	}
}

// TestOwnerUsesResourceHandBuilt: an owner whose jobs stage over Net
// (data 12: each job requests a slot at 1/latency, transfers at 10/12,
// then joins the processor queue; one staging job at a time, counted in
// the capacity; only jobs at the processor preempt M1's work) on machine
// M1, beside M2 staging over Net. Sub-cases: M1's applications stage
// nothing (idle start, capacity 2; stationary start, capacity 1, Net
// capacity 2), and M1 staging its own input with transfers paused. The
// figures robustness computes on gen's model equal those of the model
// written by hand (the owner a component of its own, holding Net's slots),
// solved by the reference, to 1e-9; the stationary start is the owner's
// own chain's steady state (slots always free, from the reference)
// conditioned on no job staging.
func TestOwnerUsesResourceHandBuilt(t *testing.T) {
	net := hNetParams{rate: 10, latency: 0.5}
	spec := func(owner string, netCap int, data string) string {
		return fmt.Sprintf(`{"etc": [[2, 3], [4, 2], [3, 5], [5, 4]], "workload": {"nominal": 1, "perturbed": 1.5},
 "availability": {"nominal": [1, 1], "perturbed": [1, 0.8]},
 "owners": {"M1": %s},
 "resources": {"Net": {"machines": ["M1", "M2"], "rate": 10, "latency": 0.5, "capacity": %d, "data": %s}},
 "mappings": [{"name": "m", "allocation": {"M1": ["A1", "A2"], "M2": ["A3", "A4"]}}]}`, owner, netCap, data)
	}
	cases := []struct {
		name       string
		owner      string
		arrival    float64
		service    float64
		capacity   int
		stationary bool
		pause      bool
		netCap     int
		data       string
		m1data     [2]float64
		beta       float64
	}{
		{"idle, capacity 2", `{"arrival": 0.3, "service": 0.8, "capacity": 2, "start": "idle", "uses": ["Net"], "data": 12}`,
			0.3, 0.8, 2, false, false, 1, `{"A3": 15, "A4": 5}`, [2]float64{}, 12},
		{"stationary, capacity 1", `{"arrival": 0.3, "service": 0.8, "capacity": 1, "start": "stationary", "uses": ["Net"], "data": 12}`,
			0.3, 0.8, 1, true, false, 2, `{"A3": 15, "A4": 5}`, [2]float64{}, 12},
		{"M1 stages, pause", `{"arrival": 0.3, "service": 0.8, "capacity": 2, "start": "idle", "transfers": "pause", "uses": ["Net"], "data": {"Net": 12}}`,
			0.3, 0.8, 2, false, true, 1, `{"A1": 20, "A2": 10, "A3": 15}`, [2]float64{20, 10}, 14},
	}
	for _, tc := range cases {
		m2data := [2]float64{15, 5}
		if tc.m1data[0] > 0 {
			m2data = [2]float64{15, 0}
		}
		ms := []*hMachine{
			{name: "M1", apps: []hApp{{"A1", 2, tc.m1data[0]}, {"A2", 4, tc.m1data[1]}}, eta: 1, etaP: 1, wlP: 1.5, net: net},
			{name: "M2", apps: []hApp{{"A3", 5, m2data[0]}, {"A4", 4, m2data[1]}}, eta: 1, etaP: 0.8, wlP: 1.5, net: net},
		}
		ms[0].build()
		enable := ms[0].computeActions()
		if tc.pause {
			enable = append(enable, ms[0].netActions()...)
		}
		reqRate, xferRate := 1/net.latency, net.rate/12
		owner := hStagingOwner(tc.arrival, tc.service, tc.capacity, reqRate, xferRate, enable)
		c := hCase{name: tc.name, spec: spec(tc.owner, tc.netCap, tc.data), beta: tc.beta, machines: ms,
			hand: hModel(ms, owner, "OW_0", enable, tc.netCap, true)}
		if tc.stationary {
			pi := hStagingStationary(t, tc.arrival, tc.service, tc.capacity, reqRate, xferRate)
			c.start = func(t *testing.T, rc *reference.Chain) []float64 { return hStart(t, rc, "OW_0", pi) }
		}
		checkHand(t, c)
	}
}

// TestPoolHandBuilt: a pool Lab of three desktops D1..D3 and two users
// (arrival 0.3 each while away, stay of mean 2), D1 and D2 staging over
// Net, D3 computing one application; a sub-case where D3 computes nothing
// (still a seat), one with transfers paused while a user sits, and one
// with three users (every desktop can be taken). The figures robustness
// computes on gen's model equal those of the model written by hand (the
// pool's occupancy a component with a state per set of occupied desktops,
// each arrival sent to a free desktop uniformly), solved by the reference,
// to 1e-9.
func TestPoolHandBuilt(t *testing.T) {
	net := hNetParams{rate: 10, latency: 0.5}
	// ETC columns D1 = 2, 4, 3, 5; D2 = 3, 2, 5, 4; D3 = 4, 3, 2, 3.
	spec := func(pool, alloc string) string {
		return fmt.Sprintf(`{"machines": ["D1", "D2", "D3"], "etc": [[2, 3, 4], [4, 2, 3], [3, 5, 2], [5, 4, 3]],
 "workload": {"nominal": 1, "perturbed": 1.5},
 "availability": {"nominal": 1, "perturbed": 1},
 "pools": {"Lab": %s},
 "resources": {"Net": {"machines": ["D1", "D2"], "rate": 10, "latency": 0.5, "data": {"A1": 20, "A3": 15, "A4": 10}}},
 "mappings": [{"name": "m", "allocation": %s}]}`, pool, alloc)
	}
	cases := []struct {
		name  string
		pool  string
		alloc string
		users int
		pause bool
		apps  [3][]hApp
		beta  float64
	}{
		{"three desktops", `{"machines": ["D1", "D2", "D3"], "users": 2, "arrival": 0.3, "service": 0.5}`,
			`{"D1": ["A1", "A2"], "D2": ["A3"], "D3": ["A4"]}`, 2, false,
			[3][]hApp{{{"A1", 2, 20}, {"A2", 4, 0}}, {{"A3", 5, 15}}, {{"A4", 3, 0}}}, 10},
		{"D3 computes nothing", `{"machines": ["D1", "D2", "D3"], "users": 2, "arrival": 0.3, "service": 0.5}`,
			`{"D1": ["A1", "A2"], "D2": ["A3", "A4"], "D3": []}`, 2, false,
			[3][]hApp{{{"A1", 2, 20}, {"A2", 4, 0}}, {{"A3", 5, 15}, {"A4", 4, 10}}, nil}, 14},
		{"pause", `{"machines": ["D1", "D2", "D3"], "users": 2, "arrival": 0.3, "service": 0.5, "transfers": "pause"}`,
			`{"D1": ["A1", "A2"], "D2": ["A3"], "D3": ["A4"]}`, 2, true,
			[3][]hApp{{{"A1", 2, 20}, {"A2", 4, 0}}, {{"A3", 5, 15}}, {{"A4", 3, 0}}}, 10},
		{"three users", `{"machines": ["D1", "D2", "D3"], "users": 3, "arrival": 0.3, "service": 0.5}`,
			`{"D1": ["A1", "A2"], "D2": ["A3"], "D3": ["A4"]}`, 3, false,
			[3][]hApp{{{"A1", 2, 20}, {"A2", 4, 0}}, {{"A3", 5, 15}}, {{"A4", 3, 0}}}, 10},
	}
	for _, tc := range cases {
		var ms []*hMachine
		enable := make([][]string, 3)
		var ext []string
		for j, apps := range tc.apps {
			if len(apps) == 0 {
				continue
			}
			m := &hMachine{name: fmt.Sprintf("D%d", j+1), apps: apps, eta: 1, etaP: 1, wlP: 1.5, net: net}
			m.build()
			enable[j] = m.computeActions()
			if tc.pause {
				enable[j] = append(enable[j], m.netActions()...)
			}
			ext = append(ext, enable[j]...)
			ms = append(ms, m)
		}
		lab := hPool(tc.users, 0.3, 0.5, enable)
		checkHand(t, hCase{name: tc.name, spec: spec(tc.pool, tc.alloc), beta: tc.beta, machines: ms,
			hand: hModel(ms, lab, "Lab_0", ext, 1, false)})
	}
}
