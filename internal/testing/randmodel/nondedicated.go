package randmodel

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
)

// NonDedicated writes a mapping model of the non-dedicated kind at real
// time scales: one to three machines whose applications' work is Erlang
// (one to three phases, jobs of hundreds to thousands of seconds), most
// with an owner written into the machine (jobs arriving and served in one
// to six phases, capacity one or two; preemptive, or sharing the
// processor equally), some staging each application's input through a
// network that fails when idle and is repaired in one to five phases.
// Rates spread over up to 10^7: the chains, with finished machines
// stopped, are stiff and have cycles (an owner's, the network's failures),
// many of them with complex eigenvalues (a cycle of three states or
// more: owner jobs in two phases, repairs in two). The product of the
// machines' and the network's local state counts is at most maxStates
// (resampled until it is), so the reference's stiff oracles can solve
// the chain.
func NonDedicated(seed int64, maxStates int) Model {
	r := rand.New(rand.NewSource(seed))
	for {
		m, prod := nonDedicated(r)
		if prod <= maxStates {
			m.Seed = seed
			return m
		}
	}
}

// logUniform draws from [lo, hi] uniformly in the logarithm, to three
// significant digits.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return roundSig(lo*math.Pow(hi/lo, r.Float64()), 3)
}

// ndWriter holds what nonDedicated accumulates across machines: the
// source, the features, the model's lists and the product of the local
// state counts. Its methods draw from r in a fixed order, so a seed
// always gives the same model.
type ndWriter struct {
	r     *rand.Rand
	b     strings.Builder
	feats map[string]bool
	m     Model
	// appTerms and computes name the applications and their cooperation
	// set; machTerms the machines; stagings the req/xfer actions shared
	// with the network.
	appTerms, computes, machTerms, stagings []string
	prod, napp                              int
}

func nonDedicated(r *rand.Rand) (Model, int) {
	w := &ndWriter{r: r, feats: map[string]bool{}, prod: 1}
	w.m.Family = "nondedicated"
	// Half the models are two or three machines staging over a network
	// (each with one application, to keep the product small).
	nm := 1 + r.Intn(3)
	withNet := r.Intn(2) == 0
	if withNet {
		nm = 2 + r.Intn(2)
	}
	for j := 1; j <= nm; j++ {
		w.machine(j, withNet && (j <= 2 || r.Intn(2) == 0))
	}
	system := strings.Join(w.machTerms, " <> ")
	if len(w.stagings) > 0 {
		system = w.network(system)
	}
	fmt.Fprintf(&w.b, "(%s) <%s> (%s)\n", strings.Join(w.appTerms, " <> "), strings.Join(w.computes, ", "), system)
	m := w.m
	m.Source = w.b.String()
	for f := range w.feats {
		m.Features = append(m.Features, f)
	}
	sort.Strings(m.Features)
	return m, w.prod
}

// ndOwner is a machine's owner: states 0..capacity (jobs present) with
// service in one phase, or idle and the k phases of one job's service
// (capacity one, k from 2 to 6: a cycle of k+1 states, whose eigenvalues
// lie up to about 90 - 180/(k+1) degrees from the negative real axis).
// present false: no owner, one state.
type ndOwner struct {
	machine               string
	present, phased       bool
	sharing               bool // processor shared equally, else preemptive
	k, capacity           int
	arriveRate, serveRate float64
}

// ndMove is one owner transition: its action, rate and next owner state.
type ndMove struct {
	act  string
	rate float64
	next int
}

// ndStep is one step of a machine's progress.
type ndStep struct {
	act  string
	rate float64
	work bool // slowed or stopped by the owner
}

// drawOwner draws a machine's owner.
func (w *ndWriter) drawOwner(machine string) ndOwner {
	r := w.r
	o := ndOwner{machine: machine}
	o.present = r.Intn(4) > 0
	o.phased = o.present && r.Intn(2) == 0
	if o.phased {
		o.k = 2 + r.Intn(5)
	}
	if o.present {
		o.capacity = 1
		if !o.phased && r.Intn(2) == 0 {
			o.capacity = 2
		}
		w.feats["owner"] = true
	}
	o.sharing = o.present && r.Intn(2) == 0
	if o.sharing {
		w.feats["sharing"] = true
	} else if o.present {
		w.feats["preemptive"] = true
	}
	if o.phased {
		w.feats["owner-phases"] = true
	}
	// Owners as slow as the jobs (their cycles' poles then matter at the
	// goal) to thousands of times faster; drawn with or without an owner.
	o.arriveRate = logUniform(r, 1e-4, 10)
	o.serveRate = logUniform(r, 1e-3, 1000)
	return o
}

// states is the owner's local state count.
func (o ndOwner) states() int {
	switch {
	case o.phased:
		return 1 + o.k
	case o.present:
		return 1 + o.capacity
	}
	return 1
}

// speed is the speed of the work with the owner in state s.
func (o ndOwner) speed(s int) float64 {
	if s == 0 {
		return 1
	}
	if !o.sharing {
		return 0
	}
	jobs := s
	if o.phased {
		jobs = 1
	}
	return 1 / float64(jobs+1)
}

// moves lists the owner's transitions from state s.
func (o ndOwner) moves(s int) []ndMove {
	if !o.present {
		return nil
	}
	var mv []ndMove
	switch {
	case o.phased:
		switch {
		case s == 0:
			mv = append(mv, ndMove{"arrive_" + o.machine, o.arriveRate, 1})
		case s < o.k:
			mv = append(mv, ndMove{fmt.Sprintf("serve%d_%s", s, o.machine), float64(o.k) * o.serveRate, s + 1})
		default:
			mv = append(mv, ndMove{fmt.Sprintf("serve%d_%s", s, o.machine), float64(o.k) * o.serveRate, 0})
		}
	default:
		if s < o.capacity {
			mv = append(mv, ndMove{"arrive_" + o.machine, o.arriveRate, s + 1})
		}
		if s > 0 {
			mv = append(mv, ndMove{"leave_" + o.machine, o.serveRate, s - 1})
		}
	}
	return mv
}

// machine draws and writes machine j: its owner, its applications and
// their two branches (the second's work up to half as long again).
func (w *ndWriter) machine(j int, stage bool) {
	r := w.r
	name := fmt.Sprintf("M%d", j)
	owner := w.drawOwner(name)
	napps := 1 + r.Intn(2)
	if stage {
		napps = 1
	}
	var mine []int
	for a := 0; a < napps; a++ {
		w.napp++
		mine = append(mine, w.napp)
		w.appTerms = append(w.appTerms, fmt.Sprintf("A%d", w.napp))
		w.computes = append(w.computes, fmt.Sprintf("compute%d", w.napp))
		fmt.Fprintf(&w.b, "A%d = (compute%d, infty).A%d;\n", w.napp, w.napp, w.napp)
	}
	branches := w.drawBranches(j, stage, mine)
	w.writeMachine(name, owner, branches)
	n := len(branches[0])
	w.prod *= owner.states() * (1 + 2*(n-1))
	w.machTerms = append(w.machTerms, name)
	if stage {
		w.stagings = append(w.stagings, fmt.Sprintf("req%d", j), fmt.Sprintf("xfer%d", j))
	}
	w.m.Machines = append(w.m.Machines, name)
	w.m.Cycles = append(w.m.Cycles, []string{fmt.Sprintf("compute%d", mine[len(mine)-1])})
	w.m.FirstActions = append(w.m.FirstActions, []string{branches[0][0].act})
}

// drawBranches draws the machine's progress: per branch, per application
// (mine), the request and transfer (when staging) and the work's phases.
func (w *ndWriter) drawBranches(j int, stage bool, mine []int) [][]ndStep {
	r := w.r
	// Per application: its phases, its mean (the perturbed branch's up to
	// half as long again) and its transfer's rates.
	phases, means, reqs, xfers := make([]int, len(mine)), make([]float64, len(mine)), make([]float64, len(mine)), make([]float64, len(mine))
	for i := range mine {
		phases[i], means[i] = 1+r.Intn(3), logUniform(r, 200, 5000)
		reqs[i], xfers[i] = logUniform(r, 100, 1e4), logUniform(r, 10, 1e4)
		if phases[i] > 1 {
			w.feats["erlang-work"] = true
		}
	}
	var branches [][]ndStep
	for br := 0; br < 2; br++ {
		var steps []ndStep
		for i, a := range mine {
			if stage {
				steps = append(steps, ndStep{fmt.Sprintf("req%d", j), reqs[i], false},
					ndStep{fmt.Sprintf("xfer%d", j), xfers[i], false})
				w.feats["staging"] = true
			}
			k := phases[i]
			mean := means[i]
			if br == 1 {
				mean = roundSig(mean*(1+r.Float64()/2), 3)
			}
			for p := 1; p <= k; p++ {
				act := fmt.Sprintf("w%d_%d", a, p)
				if p == k {
					act = fmt.Sprintf("compute%d", a)
				}
				steps = append(steps, ndStep{act, roundSig(float64(k)/mean, 3), true})
			}
		}
		branches = append(branches, steps)
	}
	return branches
}

// writeMachine writes the machine's local states. The start (branch not
// yet taken) is progress 0 of branch 0's first step; each branch's step
// i >= 1 a state of its own. Names: M (start, owner 0), M_s_o<o> (start,
// owner o), M_b<br>_<i>_o<o>.
func (w *ndWriter) writeMachine(name string, owner ndOwner, branches [][]ndStep) {
	state := func(br, i, o int) string {
		if i == 0 {
			if o == 0 {
				return name
			}
			return fmt.Sprintf("%s_s_o%d", name, o)
		}
		return fmt.Sprintf("%s_b%d_%d_o%d", name, br, i, o)
	}
	n := len(branches[0])
	// alternatives lists a state's choices: its progress step (when the
	// owner lets it run) and the owner's moves.
	alternatives := func(steps []ndStep, br, i, o int) []string {
		var alts []string
		st := steps[i]
		if rate := st.rate * speedIf(st.work, owner.speed(o)); rate > 0 {
			alts = append(alts, fmt.Sprintf("(%s, %s).%s", st.act, num(roundSig(rate, 6)), next(state, br, i+1, n, o)))
		}
		return alts
	}
	for o := 0; o < owner.states(); o++ {
		// The start: both branches race on their first step.
		alts := append(alternatives(branches[0], 0, 0, o), alternatives(branches[1], 1, 0, o)...)
		for _, mv := range owner.moves(o) {
			alts = append(alts, fmt.Sprintf("(%s, %s).%s", mv.act, num(mv.rate), state(0, 0, mv.next)))
		}
		fmt.Fprintf(&w.b, "%s = %s;\n", state(0, 0, o), strings.Join(alts, " + "))
		for br := 0; br < 2; br++ {
			for i := 1; i < n; i++ {
				alts := alternatives(branches[br], br, i, o)
				for _, mv := range owner.moves(o) {
					alts = append(alts, fmt.Sprintf("(%s, %s).%s", mv.act, num(mv.rate), state(br, i, mv.next)))
				}
				fmt.Fprintf(&w.b, "%s = %s;\n", state(br, i, o), strings.Join(alts, " + "))
			}
		}
	}
}

// network writes the network the staging machines share: one transfer at
// a time; it fails when idle and is repaired in one to five phases. It
// returns the system with the network attached.
func (w *ndWriter) network(system string) string {
	r := w.r
	var serveAlts []string
	for k := 0; k < len(w.stagings); k += 2 {
		j := w.stagings[k][len("req"):]
		serveAlts = append(serveAlts, fmt.Sprintf("(req%s, infty).Net_%s", j, j))
		fmt.Fprintf(&w.b, "Net_%s = (xfer%s, infty).Net;\n", j, j)
	}
	states := 1 + len(w.stagings)/2
	if r.Intn(3) > 0 {
		repairs := 1 + r.Intn(5)
		serveAlts = append(serveAlts, fmt.Sprintf("(fail, %s).Down1", num(logUniform(r, 0.001, 1))))
		rep := logUniform(r, 1, 1000)
		for p := 1; p <= repairs; p++ {
			nextState := fmt.Sprintf("Down%d", p+1)
			if p == repairs {
				nextState = "Net"
			}
			fmt.Fprintf(&w.b, "Down%d = (repair%d, %s).%s;\n", p, p, num(roundSig(float64(repairs)*rep, 6)), nextState)
		}
		states += repairs
		w.feats["failing-network"] = true
		if repairs > 1 {
			w.feats["repair-phases"] = true
		}
	}
	fmt.Fprintf(&w.b, "Net = %s;\n", strings.Join(serveAlts, " + "))
	w.prod *= states
	return fmt.Sprintf("(%s) <%s> Net", system, strings.Join(w.stagings, ", "))
}

// speedIf is speed for a step of work, 1 for another (a transfer goes on
// while an owner job is at the processor).
func speedIf(work bool, speed float64) float64 {
	if work {
		return speed
	}
	return 1
}

// next is the state after step i-1 of branch br (i = n: the cycle closes,
// back to the start with the owner as it is).
func next(state func(br, i, o int) string, br, i, n, o int) string {
	if i == n {
		return state(0, 0, o)
	}
	return state(br, i, o)
}
