package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/membudget"
	"pepa/internal/option"
	"pepa/models/energy"
	"pepa/passage"
)

// EnergyResult are a mapping's energy figures (semantics.md section 5), in
// joules: the expected energy, and with a budget B the probability of
// staying within it and of meeting both the makespan goal and the budget.
type EnergyResult struct {
	// Machines, Busy and Idle are the power used (watts): the machines
	// analysed, then any machine the power names that computes nothing
	// (it finishes at t = 0 and draws its idle power until the makespan).
	Machines   []string
	Busy, Idle []float64

	Expected      float64 // E[E]: sum_j (b_j - i_j) E[F_j] + (sum_j i_j) E[M]
	ExpectedError float64 // bound on its error: (sum_j i_j) times E[M]'s, plus the means'; simulated: the interval's half-width
	// ExpectedSimulated says E[E] is the mean of simulated runs (its
	// interval at Confidence is Expected +- ExpectedError).
	ExpectedSimulated bool
	Budget            float64 // B; NaN: no budget asked

	PByBudget        float64 // P(E <= B)
	PAllWithinBudget float64 // P(max_j F_j <= beta and E <= B)
	// Intervals at Confidence where a figure is simulated; equal to the
	// figure (within epsilon) where it is exact.
	PByBudgetLo, PByBudgetHi               float64
	PAllWithinBudgetLo, PAllWithinBudgetHi float64
	Confidence                             float64

	// How says how each figure was obtained.
	How string
}

// EnergyRequest asks for the energy figures of a Request.
type EnergyRequest struct {
	// Power overrides the models' //pepa:power pragmas (or gives the power
	// of models without them).
	Power PowerFlags
	// Budget is the energy budget B in joules (0: none: E[E] only).
	Budget float64
	// Simulate sets the simulation that estimates what is not exact (the
	// joint figure, and P(E <= B) past MaxStates): replications, seed,
	// confidence. Zero: 100,000 replications, seed 1, 0.95.
	Simulate simulate.Options
	// MaxStates bounds the chain of P(E <= B) (0: no bound): past it, and
	// when the memory budget refuses it, the figure is simulated.
	MaxStates int
}

// defaultEnergyReplications is the simulation's size for the joint figure
// when none is asked: its Clopper-Pearson interval is about +-0.003 wide.
const defaultEnergyReplications = 100_000

// machinePower resolves the power of the analysed machines (r.Machines)
// and of the machines only the pragmas name, from the pragmas and the
// flags; nil when neither gives any.
func machinePower(r *Result, pr *Pragmas, flags PowerFlags) (names []string, p *energy.Power, err error) {
	for _, mr := range r.Machines {
		names = append(names, mr.Name)
	}
	return MachinePower(names, pr, flags)
}

// MachinePower resolves the power of the named machines (those analysed)
// and of the machines only the pragmas name (appended, in the pragmas'
// order), from the pragmas and the flags; nil when neither gives any.
func MachinePower(analysedNames []string, pr *Pragmas, flags PowerFlags) (names []string, p *energy.Power, err error) {
	names = append(names, analysedNames...)
	analysed := map[string]bool{}
	for _, n := range names {
		analysed[n] = true
	}
	var base *energy.Power
	if pr != nil && len(pr.Power) > 0 {
		for _, n := range pr.PowerOrder {
			if !analysed[n] {
				names = append(names, n)
			}
		}
		base = &energy.Power{Busy: make([]float64, len(names)), Idle: make([]float64, len(names))}
		for j, n := range names {
			w, ok := pr.Power[n]
			if !ok {
				w = [2]float64{math.NaN(), 0}
			}
			base.Busy[j], base.Idle[j] = w[0], w[1]
		}
	}
	if base == nil && !flags.Given() {
		return nil, nil, nil
	}
	if p, err = flags.Resolve(names, base); err != nil {
		return nil, nil, err
	}
	for j, b := range p.Busy {
		if math.IsNaN(b) {
			return nil, nil, option.Errorf("no power for machine %s: give it with {BusyPower} or a //pepa:power line", names[j])
		}
	}
	return names, p, nil
}

// energyFigures computes the energy figures of model s (compiled, as
// given: not stopped) whose robustness figures are r, with opt the
// analysis's options (initial semantics, finished machines stopped:
// Request.check refuses energy figures under any other).
func energyFigures(ctx context.Context, s *ctmc.Structure, r *Result, opt Options, req EnergyRequest) (*EnergyResult, error) {
	names, power, err := machinePower(r, opt.Pragmas, req.Power)
	if err != nil {
		return nil, err
	}
	if power == nil {
		if req.Budget > 0 {
			return nil, option.Errorf("an energy budget needs the machines' power: no power is known (give {BusyPower}, or //pepa:power lines in the model)")
		}
		return nil, nil
	}
	e := &EnergyResult{Machines: names, Busy: power.Busy, Idle: power.Idle, Budget: math.NaN(),
		PByBudget: math.NaN(), PAllWithinBudget: math.NaN(), PByBudgetLo: math.NaN(), PByBudgetHi: math.NaN(),
		PAllWithinBudgetLo: math.NaN(), PAllWithinBudgetHi: math.NaN()}
	means := make([]float64, len(names)) // 0 for the machines that compute nothing
	meanErr := 0.0
	for k, mr := range r.Machines {
		means[k] = mr.Mean
		if !math.IsNaN(mr.MeanHi) && r.Confidence > 0 {
			meanErr += math.Abs(power.Busy[k]-power.Idle[k]) * (mr.MeanHi - mr.MeanLo) / 2
		}
	}
	idle := 0.0
	for _, x := range power.Idle {
		idle += x
	}
	e.Expected = energy.Expected(*power, means, r.ExpectedMakespan)
	e.ExpectedError = meanErr
	if idle > 0 {
		e.ExpectedError += idle * r.MakespanError
	}
	how := []string{"E[E] from the means (closed form)"}
	if r.Confidence > 0 {
		how[0] = "E[E] from the means (closed form; the means simulated)"
	}
	if !(req.Budget > 0) {
		e.How = strings.Join(how, "; ")
		return e, nil
	}
	e.Budget = req.Budget
	so := req.Simulate
	if so.Replications == 0 {
		so.Replications = defaultEnergyReplications
	}
	if so.Seed == 0 {
		so.Seed = 1
	}
	if so.Confidence == 0 {
		so.Confidence = 0.95
	}

	// P(E <= B): the passage of the chain whose time is energy.
	exact := true
	p, states, why, err := energyPassage(ctx, s, r, opt, power, req)
	switch {
	case err == nil:
		e.PByBudget, e.PByBudgetLo, e.PByBudgetHi = p, p, p
		how = append(how, fmt.Sprintf("P(E <= B) exact: %s (%d states)", why, states))
	case ctx.Err() == nil && (errors.Is(err, ctmc.ErrTooManyStates) || errors.Is(err, membudget.ErrOverBudget)):
		exact = false
		how = append(how, fmt.Sprintf("P(E <= B) simulated (%v)", err))
	default:
		return nil, err
	}

	// The joint figure: exact when the budget holds whenever the goal does.
	top := 0.0
	for j := range power.Busy {
		top += math.Max(power.Busy[j], power.Idle[j])
	}
	joint := false
	if req.Budget >= r.Beta*top && r.Confidence == 0 {
		e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi = r.PAllByBeta, r.PAllByBeta, r.PAllByBeta
		how = append(how, fmt.Sprintf("joint exact: B >= beta * sum_j max(b_j, i_j) = %g, so every run that meets the goal meets the budget", r.Beta*top))
		joint = true
	}
	if joint && exact {
		e.How = strings.Join(how, "; ")
		return e, nil
	}
	sim, err := simulateEnergy(ctx, s, r, opt, power, req.Budget, so)
	if errors.Is(err, membudget.ErrOverBudget) && ctx.Err() == nil {
		// The runs' finishing times do not fit: what is exact stands.
		how = append(how, fmt.Sprintf("the simulated figures are unavailable (%v)", err))
		e.How = strings.Join(how, "; ")
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	e.Confidence = so.Confidence
	if !exact {
		e.PByBudget, e.PByBudgetLo, e.PByBudgetHi = sim.within.Value, sim.within.Lo, sim.within.Hi
	}
	if !joint {
		e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi = sim.both.Value, sim.both.Lo, sim.both.Hi
		if exact && r.Confidence == 0 {
			// The joint lies within the Frechet bounds of the two exact
			// figures: the interval is cut to them (still a confidence
			// set at its level), and the estimate with it.
			lo := math.Max(0, r.PAllByBeta+e.PByBudget-1-2*opt.Epsilon)
			hi := math.Min(1, math.Min(r.PAllByBeta, e.PByBudget)+opt.Epsilon)
			clamp := func(x float64) float64 { return math.Min(hi, math.Max(lo, x)) }
			e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi = clamp(sim.both.Value), clamp(sim.both.Lo), clamp(sim.both.Hi)
		}
		how = append(how, fmt.Sprintf("joint simulated: %d replications, seed %d, %g%% Clopper-Pearson", sim.n, so.Seed, 100*so.Confidence))
	}
	e.How = strings.Join(how, "; ")
	return e, nil
}

// energyPart is a chain whose passage to target is part of E: each state's
// power (rho), its start, and its target (every machine in it finished).
type energyPart struct {
	c      *ctmc.Chain
	alpha  []float64
	rho    []float64
	target []bool
}

// energyPassage is P(E <= B) as a passage: with every idle power 0, the
// groups' energies are independent and E is their sum, the passage of
// their rate-divided chains run one after the other; otherwise E depends
// on the makespan, and the passage is the product chain's (every machine
// stopped once finished).
func energyPassage(ctx context.Context, s *ctmc.Structure, r *Result, opt Options, power *energy.Power, req EnergyRequest) (float64, int, string, error) {
	machines, err := FindMachines(s, opt.Machines)
	if err != nil {
		return 0, 0, "", err
	}
	stop := stopMap(machines)
	index := map[*ctmc.Leaf]int{}
	for i, m := range machines {
		index[m.Leaf] = i
	}
	// Machines only the power names draw their idle power throughout.
	extra := 0.0
	for j := len(machines); j < len(power.Idle); j++ {
		extra += power.Idle[j]
	}
	var parts []energyPart
	var why string
	if power.IdleFree() {
		for _, g := range s.Groups() {
			var in []int
			for _, l := range g {
				if i, ok := index[l]; ok {
					in = append(in, i)
				}
			}
			if len(in) == 0 {
				continue
			}
			part, err := energyChain(ctx, s, g, stop, machines, in, power, 0, opt, req.MaxStates)
			if err != nil {
				return 0, 0, "", err
			}
			parts = append(parts, part)
		}
		why = fmt.Sprintf("every idle power 0: the %s' energies add, their rate-divided chains run one after the other", Plural(len(parts), "group", "groups"))
		if len(parts) == 1 {
			why = "every idle power 0: one group's rate-divided chain"
		}
	} else {
		if limit := maxEnergyStates(req.MaxStates); productSize(s) > float64(limit) {
			return 0, 0, "", fmt.Errorf("the product chain may have %.3g states, past %d: %w", productSize(s), limit, ctmc.ErrTooManyStates)
		}
		all := make([]int, len(machines))
		for i := range all {
			all[i] = i
		}
		part, err := energyChain(ctx, s, s.Leaves, stop, machines, all, power, extra, opt, req.MaxStates)
		if err != nil {
			return 0, 0, "", err
		}
		parts = []energyPart{part}
		why = "the product chain (idle power makes every machine's energy depend on the makespan), rates divided by the power drawn"
	}
	c, alpha, target, err := concatenate(ctx, parts)
	if err != nil {
		return 0, 0, "", err
	}
	// The engine as for the finishing times: the rate-divided chain is as
	// stiff, and has the same cycles, as the chain it divides.
	probs := []passage.Problem{{Alpha: alpha, TargetStates: target}}
	choice, err := passage.ChooseEngine(ctx, passage.EngineQuery{Chain: c, Alpha: alpha, Sets: [][]bool{target}, Beta: req.Budget, Horizon: req.Budget, Epsilon: opt.Epsilon, Rate: passage.UniformizationRate(c, probs), Force: opt.Transient})
	if err != nil {
		return 0, 0, "", err
	}
	if choice.Engine == passage.EngineLaplace {
		eng := choice.Laplace
		p, err := eng.CDF(0, req.Budget)
		if err != nil {
			return 0, 0, "", err
		}
		check, err := eng.Check(req.Budget)
		if err != nil {
			return 0, 0, "", err
		}
		return p, c.N, why + "; by Laplace-transform inversion (" + choice.Why + "; " + passage.LaplaceNote(eng, check) + ")", nil
	}
	rs, err := passage.Solve(ctx, c, probs, passage.Options{Epsilon: opt.Epsilon, Horizon: req.Budget})
	if err != nil {
		return 0, 0, "", err
	}
	p, err := rs[0].CDF(req.Budget)
	return p, c.N, why, err
}

// maxEnergyStates bounds the product chain of P(E <= B) with idle power:
// the request's bound, at most defaultMaxEnergyStates, past which (by the
// product of the local state counts, before deriving) the figure is
// simulated rather than derived for minutes.
func maxEnergyStates(asked int) int {
	if asked > 0 && asked < defaultMaxEnergyStates {
		return asked
	}
	return defaultMaxEnergyStates
}

const defaultMaxEnergyStates = 4_000_000

// energyChain derives the chain of the leaves (stopped machines), its
// start from the pragmas, the power drawn in each state (the busy power of
// the machines in running, the idle power of those finished, plus extra)
// and the states where every machine in it has finished.
func energyChain(ctx context.Context, s *ctmc.Structure, leaves []*ctmc.Leaf, stop map[*ctmc.Leaf][]int32, machines []*Machine, in []int, power *energy.Power, extra float64, opt Options, maxStates int) (energyPart, error) {
	sub, _, err := s.Restrict(leaves, stop)
	if err != nil {
		return energyPart{}, err
	}
	c, err := ctmc.Derive(ctx, sub, ctmc.DeriveOptions{MaxStates: maxStates})
	if err != nil {
		return energyPart{}, err
	}
	alpha, err := partStart(c, opt.Pragmas)
	if err != nil {
		return energyPart{}, err
	}
	type watch struct {
		leaf       *ctmc.Leaf
		done       int
		busy, idle float64
	}
	var ws []watch
	for _, i := range in {
		l := leafIn(c, machines[i].Leaf)
		ws = append(ws, watch{l, finishedState(l), power.Busy[i], power.Idle[i]})
	}
	part := energyPart{c: c, alpha: alpha, rho: make([]float64, c.N), target: make([]bool, c.N)}
	for st := 0; st < c.N; st++ {
		state := c.State(st)
		rho, all := extra, true
		for _, w := range ws {
			if w.done >= 0 && w.leaf.Local(state) == w.done {
				rho += w.idle
			} else {
				rho += w.busy
				all = false
			}
		}
		part.rho[st], part.target[st] = rho, all
		if !all && !(rho > 0) {
			names := make([]string, len(in))
			for k, i := range in {
				names[k] = machines[i].Name
			}
			return energyPart{}, fmt.Errorf("energy: a state of %s draws no power while a machine still runs (its busy power 0, and every idle power 0): P(E <= B) is not a passage; give the machines a positive busy power", strings.Join(names, ", "))
		}
	}
	return part, nil
}

// concatenate is the chain of the parts run one after the other, each's
// rates divided by its states' power: a transition of part k into its
// target goes instead to part k+1's start (split by its distribution), and
// the last part's target ends the passage. Its size is the parts' summed.
func concatenate(ctx context.Context, parts []energyPart) (*ctmc.Chain, []float64, []bool, error) {
	if len(parts) == 1 {
		return rateDivided(ctx, parts[0])
	}
	// Part k's states in the result: its states outside its target, and
	// for the last part all of them.
	offset := make([]int, len(parts))
	local := make([][]int32, len(parts)) // -1: in the target (replaced)
	n := 0
	for k, p := range parts {
		offset[k] = n
		local[k] = make([]int32, p.c.N)
		for st := 0; st < p.c.N; st++ {
			if p.target[st] && k < len(parts)-1 {
				local[k][st] = -1
				continue
			}
			local[k][st] = int32(n)
			n++
		}
	}
	// The transitions, counted first so that the arrays are made once, at
	// their size, within the memory budget.
	nnz := int64(0)
	for k, p := range parts {
		next := 1
		if k+1 < len(parts) {
			next = max(1, len(parts[k+1].alpha)) // at most that many starts of the next part
		}
		for st := 0; st < p.c.N; st++ {
			if local[k][st] < 0 || p.target[st] {
				continue
			}
			for e := p.c.RowPtr[st]; e < p.c.RowPtr[st+1]; e++ {
				if local[k][p.c.Col[e]] >= 0 {
					nnz++
				} else {
					nnz += int64(next)
				}
			}
		}
	}
	if err := membudget.Check(ctx, fmt.Sprintf("energy: the groups' rate-divided chains, %d states", n), membudget.Bytes(nnz, 16)+membudget.Bytes(int64(n), 9), ""); err != nil {
		return nil, nil, nil, err
	}
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: []string{"tau", "energy"}}, N: n, RowPtr: make([]int64, 1, n+1),
		Col: make([]int32, 0, nnz), Rates: make([]float64, 0, nnz), Act: make([]int32, 0, nnz)}
	target := make([]bool, n)
	// start[k]: part k's start as a distribution over the result's
	// states, its mass on its own target passed on to the next part.
	var start func(k int, w float64, into map[int32]float64)
	start = func(k int, w float64, into map[int32]float64) {
		p := parts[k]
		for st, x := range p.alpha {
			if x == 0 {
				continue
			}
			if local[k][st] < 0 {
				start(k+1, w*x, into)
				continue
			}
			into[local[k][st]] += w * x
		}
	}
	starts := make([]map[int32]float64, len(parts)+1)
	for k := range parts {
		starts[k] = map[int32]float64{}
		start(k, 1, starts[k])
	}
	for k, p := range parts {
		last := k == len(parts)-1
		for st := 0; st < p.c.N; st++ {
			if local[k][st] < 0 {
				continue
			}
			if p.target[st] {
				target[local[k][st]] = true
				c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
				continue // absorbing: the passage ends here
			}
			for e := p.c.RowPtr[st]; e < p.c.RowPtr[st+1]; e++ {
				to := p.c.Col[e]
				rate := p.c.RateAt(e) / p.rho[st]
				if int(to) == st {
					continue // a self-loop changes nothing
				}
				if local[k][to] >= 0 {
					c.Col = append(c.Col, local[k][to])
					c.Rates = append(c.Rates, rate)
					c.Act = append(c.Act, 1)
					continue
				}
				if last {
					return nil, nil, nil, errors.New("energy: a target state of the last part was dropped (a bug)")
				}
				for s2, x := range starts[k+1] {
					c.Col = append(c.Col, s2)
					c.Rates = append(c.Rates, rate*x)
					c.Act = append(c.Act, 1)
				}
			}
			c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
		}
	}
	alpha := make([]float64, n)
	for s2, x := range starts[0] {
		alpha[s2] += x
	}
	return c, alpha, target, nil
}

// rateDivided is one part's chain with every rate divided by its state's
// power: the structure, row pointers, targets and actions are the part's
// own (shared, not copied), only the rates are new; the part's targets
// end the passage (their rows are not read).
func rateDivided(ctx context.Context, p energyPart) (*ctmc.Chain, []float64, []bool, error) {
	c := p.c
	nnz := c.RowPtr[c.N]
	if err := membudget.Check(ctx, fmt.Sprintf("energy: the rate-divided chain, %d states", c.N), membudget.Bytes(nnz, 8), ""); err != nil {
		return nil, nil, nil, err
	}
	rates := make([]float64, nnz)
	for st := 0; st < c.N; st++ {
		rho := p.rho[st]
		if p.target[st] || !(rho > 0) {
			rho = 1 // never read: the passage ends on entering a target
		}
		for e := c.RowPtr[st]; e < c.RowPtr[st+1]; e++ {
			rates[e] = c.RateAt(e) / rho
		}
	}
	return &ctmc.Chain{S: c.S, N: c.N, States: c.States, RowPtr: c.RowPtr, Col: c.Col, Act: c.Act, Rates: rates, Deadlocks: c.Deadlocks}, p.alpha, p.target, nil
}

// energySim are the simulated energy figures.
type energySim struct {
	within, both simulate.Interval
	n            int
}

// simulateEnergy estimates P(E <= B) and P(max F <= beta and E <= B) from
// simulated finishing times (every machine stopped once finished), the
// energy of each run by energy.OfRun.
func simulateEnergy(ctx context.Context, s *ctmc.Structure, r *Result, opt Options, power *energy.Power, budget float64, so simulate.Options) (*energySim, error) {
	spec, machines, err := SimulationSpec(s, r.Beta, opt.Machines, false)
	if err != nil {
		return nil, err
	}
	spec.KeepFinish = true
	if so.Replications > 0 {
		need := membudget.Bytes(int64(so.Replications), int64(len(machines))*8+24)
		if err := membudget.Check(ctx, fmt.Sprintf("energy: the finishing times of %d simulated runs of %d machines", so.Replications, len(machines)), need, option.Text("give fewer {Replications}")); err != nil {
			return nil, err
		}
	}
	if opt.Pragmas != nil {
		if so.Initial, err = simulate.InitialFromNames(s, opt.Pragmas.Initial); err != nil {
			return nil, err
		}
	}
	so.Progress = nil
	res, err := simulate.Robustness(ctx, s, spec, so)
	if err != nil {
		return nil, err
	}
	f := make([]float64, len(power.Busy)) // machines only the power names: 0
	within, both := 0, 0
	for _, run := range res.Finish {
		copy(f, run[:len(machines)])
		en, m := energy.OfRun(*power, f), 0.0
		for _, x := range run {
			m = math.Max(m, x)
		}
		if en <= budget {
			within++
			if m <= r.Beta {
				both++
			}
		}
	}
	n := len(res.Finish)
	return &energySim{within: simulate.ClopperPearson(within, n, so.Confidence), both: simulate.ClopperPearson(both, n, so.Confidence), n: n}, nil
}

// SimulatedEnergy are the energy figures estimated from simulated runs:
// finish holds each run's finishing times of the first machines of power
// (the others compute nothing: 0), +Inf where a machine never finished.
// E[E] is the runs' mean with its Student t interval (ExpectedError its
// half-width; NaN if some run never finished), the probabilities
// Clopper-Pearson; budget 0 asks for E[E] alone.
func SimulatedEnergy(names []string, power *energy.Power, finish [][]float64, beta, budget, confidence float64) *EnergyResult {
	e := &EnergyResult{Machines: names, Busy: power.Busy, Idle: power.Idle, Budget: math.NaN(), Confidence: confidence,
		PByBudget: math.NaN(), PAllWithinBudget: math.NaN(), PByBudgetLo: math.NaN(), PByBudgetHi: math.NaN(),
		PAllWithinBudgetLo: math.NaN(), PAllWithinBudgetHi: math.NaN()}
	f := make([]float64, len(power.Busy))
	energies := make([]float64, 0, len(finish))
	within, both := 0, 0
	for _, run := range finish {
		copy(f, run)
		en, m := energy.OfRun(*power, f), 0.0
		for _, x := range run {
			m = math.Max(m, x)
		}
		energies = append(energies, en)
		if en <= budget {
			within++
			if m <= beta {
				both++
			}
		}
	}
	iv := simulate.MeanInterval(energies, confidence)
	e.Expected, e.ExpectedError, e.ExpectedSimulated = iv.Value, iv.HalfWidth(), true
	e.How = fmt.Sprintf("simulated: %d runs, each run's energy from its finishing times; E[E] their mean (Student t)", len(finish))
	if budget > 0 {
		n := len(finish)
		w, b := simulate.ClopperPearson(within, n, confidence), simulate.ClopperPearson(both, n, confidence)
		e.Budget = budget
		e.PByBudget, e.PByBudgetLo, e.PByBudgetHi = w.Value, w.Lo, w.Hi
		e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi = b.Value, b.Lo, b.Hi
		e.How += "; the probabilities Clopper-Pearson"
	}
	return e
}
