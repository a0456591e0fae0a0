package main

import (
	"math"
	"pepa/ctmc/steady"
	"sort"
	"strconv"

	"pepa/ctmc/simulate"
	"pepa/ctmc/sweep"
	"pepa/models"
	"pepa/passage"
)

// A sweep's measures are the numbers of 'pepa VERB --format json', named
// by their JSON paths (cli.md): object keys joined with ".", an array's
// element named by its identifying field in brackets (a mapping by its
// model, a machine or class by its name, a throughput by its action, a
// population by component:state, a point by t=T, a quantile by t=T,p=P),
// an interval [lo, hi] as NAME.lo and NAME.hi. The settings the verbs echo
// (beta, tie, epsilon, uniformization_rate, level, confidence, seed) and
// what is not a number (strings, booleans, null, lists of names) are not
// measures. The flatteners below read each verb's typed result and add its
// measures in the order of the JSON's keys, sorted at every level as
// encoding/json sorts a map's, so that the columns come in the order the
// verb's JSON shows them. TestSweepColumnsAreTheJSON checks every
// flattener against the JSON document it mirrors.

// measures collects one point's columns.
type measures struct{ cols []sweep.Column }

// num adds a number; a NaN or an infinity is null in the JSON, not a
// measure.
func (m *measures) num(path string, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	m.cols = append(m.cols, sweep.Column{Name: path, Value: x})
}

// interval adds [lo, hi] as path.lo and path.hi when both ends are known
// (an interval with a null end is no pair of numbers).
func (m *measures) interval(path string, lo, hi float64) {
	if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return
	}
	m.num(path+".lo", lo)
	m.num(path+".hi", hi)
}

// element names an array's element by its identifying field, by its
// index when it has none.
func element(path, id string, i int) string {
	if id == "" {
		id = strconv.Itoa(i)
	}
	return path + "[" + id + "]"
}

// numberID is an element's identity from a number field (t=0.5): the
// number as encoding/json writes it (shortest round-trip, exponent form
// below 1e-6 and from 1e21, no leading zero in the exponent).
func numberID(key string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	format := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, x, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return key + "=" + string(b)
}

// joinIDs joins the identities of an element's number fields (t=1,p=0.5),
// leaving out the null ones.
func joinIDs(ids ...string) string {
	out := ""
	for _, id := range ids {
		if id == "" {
			continue
		}
		if out != "" {
			out += ","
		}
		out += id
	}
	return out
}

// echoed are the settings the verbs' JSON echoes, not measures; a key of
// this name is left out wherever it is (a machine named beta in energy's
// power, too).
var echoed = map[string]bool{"beta": true, "tie": true, "epsilon": true, "uniformization_rate": true,
	"level": true, "confidence": true, "seed": true}

// robustnessColumns are a robustness report's measures: one mapping's at
// the top, or mappings[MODEL].… for a ranking.
func robustnessColumns(rep *models.Report) []sweep.Column {
	var m measures
	if len(rep.Ranking) == 1 {
		m.mapping("", rep.Ranking[0], false)
		return m.cols
	}
	for i, r := range rep.Ranking {
		m.mapping(element("mappings", r.Model, i)+".", r, true)
	}
	return m.cols
}

// mapping adds one mapping's figures (render.Result's keys, sorted).
func (m *measures) mapping(p string, r *models.Ranked, ranking bool) {
	if r.Energy != nil {
		m.energy(p+"energy.", r.Energy)
	}
	m.num(p+"expected_makespan", r.ExpectedMakespan)
	hasCI := r.Confidence > 0 && !math.IsNaN(r.PAllLo) && !math.IsNaN(r.PAllHi)
	if hasCI {
		m.interval(p+"expected_makespan_ci", r.MakespanLo, r.MakespanHi)
	}
	m.num(p+"expected_makespan_error", r.MakespanError)
	if ranking {
		m.num(p+"group", float64(r.Group))
	}
	for i, g := range r.Groups {
		gp := element(p+"groups", "", i) + "."
		m.num(gp+"expected_finish", g.Mean)
		m.num(gp+"p_all_by_beta", g.PAllByBeta)
		m.interval(gp+"p_all_by_beta_ci", g.PAllLo, g.PAllHi)
		m.num(gp+"states", float64(g.States))
	}
	for i, mr := range r.Machines {
		m.machine(element(p+"machines", mr.Name, i)+".", &r.Machines[i])
	}
	m.num(p+"p_all_by_beta", r.PAllByBeta)
	if hasCI {
		m.interval(p+"p_all_by_beta_ci", r.PAllLo, r.PAllHi)
	}
	m.num(p+"product_states", r.ProductStates)
	if ranking {
		m.num(p+"rank", float64(r.Rank))
	}
	m.num(p+"robustness", r.Robustness)
	m.num(p+"states", float64(r.States))
}

// machine adds a machine's figures.
func (m *measures) machine(p string, mr *models.MachineResult) {
	m.num(p+"applications", float64(mr.Applications))
	if !math.IsNaN(mr.Availability) {
		m.num(p+"availability", mr.Availability)
	}
	hasCI := !math.IsNaN(mr.PByBetaLo) && !math.IsNaN(mr.PByBetaHi)
	m.num(p+"mean", mr.Mean)
	if hasCI {
		m.interval(p+"mean_ci", mr.MeanLo, mr.MeanHi)
	}
	m.num(p+"p_by_beta", mr.PByBeta)
	if hasCI {
		m.interval(p+"p_by_beta_ci", mr.PByBetaLo, mr.PByBetaHi)
	}
	m.num(p+"q99", mr.Quantile)
	if hasCI {
		m.interval(p+"q99_ci", mr.QuantileLo, mr.QuantileHi)
	}
	if sv := mr.Sensitivity; sv != nil {
		m.num(p+"sensitivity.radius", sv.Radius)
		for i, rs := range sv.Rates {
			rp := element(p+"sensitivity.rates", "", i) + "."
			m.num(rp+"derivative", rs.Derivative)
			m.num(rp+"elasticity", rs.Elasticity)
			m.num(rp+"value", rs.Value)
		}
	}
	if !math.IsNaN(mr.Availability) {
		m.num(p+"slowdown", mr.Slowdown)
	}
}

// energy adds a mapping's energy figures (render.Energy's keys, sorted).
func (m *measures) energy(p string, e *models.EnergyResult) {
	m.num(p+"budget", e.Budget)
	m.num(p+"expected", e.Expected)
	m.num(p+"expected_error", e.ExpectedError)
	m.num(p+"p_all_by_beta_within_budget", e.PAllWithinBudget)
	if e.Confidence > 0 {
		m.interval(p+"p_all_by_beta_within_budget_ci", e.PAllWithinBudgetLo, e.PAllWithinBudgetHi)
	}
	m.num(p+"p_by_budget", e.PByBudget)
	if e.Confidence > 0 {
		m.interval(p+"p_by_budget_ci", e.PByBudgetLo, e.PByBudgetHi)
	}
	order := make([]int, len(e.Machines))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return e.Machines[order[a]] < e.Machines[order[b]] })
	for _, j := range order {
		if echoed[e.Machines[j]] {
			continue
		}
		m.num(p+"power."+e.Machines[j]+".busy", e.Busy[j])
		m.num(p+"power."+e.Machines[j]+".idle", e.Idle[j])
	}
}

// steadyColumns are a steady state's measures.
func steadyColumns(o *steady.Report) []sweep.Column {
	var m measures
	res := o.Result
	if res.AbsorptionError != 0 {
		m.num("class_probability_relative_error", res.AbsorptionError)
	}
	for i, cr := range res.Classes {
		p := element("closed_classes", cr.Name, i) + "."
		m.num(p+"iterations", float64(cr.Iterations))
		m.num(p+"max_relative_error", cr.MaxThroughputError)
		m.num(p+"probability", cr.Probability)
		if len(cr.States) == 2 { // a pair of numbers reads as an interval
			m.interval(p+"states", float64(cr.States[0]), float64(cr.States[1]))
		}
	}
	m.num("closed_states", float64(res.ClosedStates))
	m.num("iterations", float64(res.Iterations))
	m.num("max_relative_error", res.MaxThroughputError)
	m.num("residual", res.Residual)
	m.num("states", float64(o.Chain.N))
	for i, t := range o.Throughputs {
		p := element("throughput", t.Action, i) + "."
		m.num(p+"relative_error", res.ThroughputError[t.Action])
		m.num(p+"throughput", t.Value)
	}
	m.num("transient_states", float64(res.Transient))
	m.num("transitions", float64(o.Chain.NumTransitions()))
	for i, u := range o.Utilisations {
		m.num(element("utilisation", population(u.Component, u.State), i)+".population", u.Value)
	}
	return m.cols
}

// population identifies a population by component:state (none without a
// component).
func population(component, state string) string {
	if component == "" {
		return ""
	}
	return component + ":" + state
}

// passageColumns are a passage's measures.
func passageColumns(an *passage.Analysis, pdf bool) []sweep.Column {
	var m measures
	iterations := 0
	if r := an.Result; r != nil {
		iterations = r.Iterations()
	} else if ld, ok := an.Distribution.(*passage.LaplaceDistribution); ok {
		iterations = ld.Engine.Solves()
	}
	m.num("iterations", float64(iterations))
	if !math.IsInf(an.Mean, 1) {
		m.num("mean", an.Mean)
	}
	for i, pt := range an.Points {
		p := element("points", numberID("t", pt.T), i) + "."
		m.num(p+"cdf", pt.CDF)
		if pdf {
			m.num(p+"pdf", pt.PDF)
		}
		m.num(p+"t", pt.T)
	}
	for i, q := range an.Quantiles {
		t := math.Inf(1) // null: the target is reached with a smaller probability
		if !math.IsInf(q.T, 1) {
			t = q.T
		}
		p := element("quantiles", joinIDs(numberID("t", t), numberID("p", q.P)), i) + "."
		m.num(p+"p", q.P)
		m.num(p+"t", t)
	}
	m.num("states", float64(an.Chain.N))
	return m.cols
}

// statesColumns are a chain's counts.
func statesColumns(o *statesOutcome) []sweep.Column {
	var m measures
	c := o.c
	m.num("components", float64(len(c.S.Leaves)))
	m.num("deadlocks", float64(len(c.Deadlocks)))
	m.num("states", float64(c.N))
	m.num("transitions", float64(c.NumTransitions()))
	return m.cols
}

// simulateColumns are a simulation's estimates.
func simulateColumns(out *simOutcome) []sweep.Column {
	var m measures
	switch {
	case out.robustness != nil:
		m.simRobustness(out.info, out.robustness, out.energy)
	case out.passage != nil:
		m.simPassage(out.info, out.passage)
	default:
		m.simSteady(out.info, out.steady)
	}
	return m.cols
}

// estimate adds an estimate and its interval as NAME and NAME_ci.
func (m *measures) estimate(path string, iv simulate.Interval) {
	m.num(path, iv.Value)
	m.interval(path+"_ci", iv.Lo, iv.Hi)
}

func (m *measures) simulation(sim simInfo) {
	m.num("simulation.events", float64(sim.Events))
	m.num("simulation.replications", float64(sim.Replications))
}

func (m *measures) simRobustness(sim simInfo, r *simulate.RobustnessResult, e *models.EnergyResult) {
	if e != nil {
		m.energy("energy.", e)
	}
	m.estimate("expected_makespan", r.ExpectedMakespan)
	for i, mr := range r.Machines {
		p := element("machines", mr.Name, i) + "."
		m.estimate(p+"mean", mr.Mean)
		m.estimate(p+"p_by_beta", mr.PByBeta)
		m.estimate(p+"q99", mr.Quantile)
	}
	m.estimate("p_all_by_beta", r.PAllByBeta)
	m.estimate("robustness", r.Robustness)
	m.simulation(sim)
	m.num("unfinished", float64(r.Never))
}

func (m *measures) simPassage(sim simInfo, r *simulate.PassageResult) {
	m.num("censored", float64(r.Censored))
	m.num("dkw_band", r.Band)
	m.estimate("mean", r.Mean)
	m.num("never", float64(r.Never))
	for i, pt := range r.Points {
		p := element("points", numberID("t", pt.T), i) + "."
		m.estimate(p+"cdf", pt.CDF)
		m.num(p+"t", pt.T)
	}
	for i, q := range r.Quantiles {
		p := element("quantiles", joinIDs(numberID("t", q.T.Value), numberID("p", q.P)), i) + "."
		m.num(p+"p", q.P)
		m.estimate(p+"t", q.T)
	}
	m.simulation(sim)
}

func (m *measures) simSteady(sim simInfo, r *simulate.SteadyResult) {
	m.num("batches_per_stream", float64(r.Batches))
	m.simulation(sim)
	m.num("streams", float64(r.Streams))
	for i, t := range r.Throughputs {
		p := element("throughput", t.Action, i) + "."
		m.interval(p+"ci", t.Lo, t.Hi)
		m.num(p+"throughput", t.Value)
	}
	for i, u := range r.Populations {
		p := element("utilisation", population(u.Component, u.State), i) + "."
		m.interval(p+"ci", u.Lo, u.Hi)
		m.num(p+"population", u.Value)
	}
	m.num("warmup", r.Warmup)
	m.num("warmup_batches", float64(r.WarmupBatches))
}

// The sweepable verbs' flatteners, as methods of their commands.

func (a *robustnessCmd) columns(result any) []sweep.Column {
	return robustnessColumns(result.(*models.Report))
}

func (a *steadyCmd) columns(result any) []sweep.Column { return steadyColumns(result.(*steady.Report)) }

func (a *passageCmd) columns(result any) []sweep.Column {
	return passageColumns(result.(*passage.Analysis), a.query.PDF)
}

func (a *statesCmd) columns(result any) []sweep.Column { return statesColumns(result.(*statesOutcome)) }

func (a *simulateCmd) columns(result any) []sweep.Column {
	return simulateColumns(result.(*simOutcome))
}
