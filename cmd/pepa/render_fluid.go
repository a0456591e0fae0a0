package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"pepa/ctmc/fluid"
	"pepa/ctmc/fluid/fluidplot"
)

func (a *fluidCmd) render(e *env, result any) int {
	res := result.(*fluid.Analysis)
	name := displayName(a.files[0])
	a.timer().print(e.stderr, "fluid", name)
	for _, w := range fluidWarnings(res) {
		fmt.Fprintf(e.stderr, "%s: warning: %s\n", name, w)
	}
	if a.o.verbose {
		fmt.Fprintf(e.stderr, "pepa fluid: %s: %s\n", name, res.Model.Summary())
	}
	if a.plotFormat != "" {
		if err := writeOutput(e, a.plotPath, func(w io.Writer) error { return fluidplot.Write(w, a.plotFormat, name, res) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa fluid: %v\n", err)
			return exitInvalid
		}
	}
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch a.o.format {
		case "json":
			return writeJSON(w, a.document(res))
		case "csv":
			return fluidCSV(w, res, a.pdf)
		}
		return fluidText(w, name, res, a.opt, a.pdf)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa fluid: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// approximationNote is what every output says of its figures.
const approximationNote = "fluid (ODE) approximation: the limit of the chain's mean populations as every population grows (semantics.md section 8), not the chain's exact figures; errors shrink as 1/N for means in smooth models"

// fluidWarnings are the caveats of an analysis, for standard error.
func fluidWarnings(res *fluid.Analysis) []string {
	var out []string
	g := res.Model.Groups[res.Smallest]
	if g.Copies == 1 {
		var ones []string
		for _, h := range res.Model.Groups {
			if h.Copies == 1 {
				ones = append(ones, h.Name)
			}
		}
		out = append(out, fmt.Sprintf("%s: population 1: the fluid approximation is poor at population 1 (one copy is in one local state at a time; the fluid spreads it over several); --check measures how far it is from the chain", strings.Join(limitNames(ones, 6), ", ")))
	}
	if st := res.Steady; st != nil && !st.Settled {
		out = append(out, fmt.Sprintf("the trajectory has not settled by t = %g (residual %.3g): the figures are where it stood%s", st.Time, st.Residual, swingText(res.Model, st)))
	}
	if c := res.Check; c != nil && c.Against == "simulation" && c.Outside > 0 {
		out = append(out, fmt.Sprintf("%d of %d figures lie outside simulation's %g%% intervals", c.Outside, c.Compared, 100*c.Confidence))
	}
	return out
}

func swingText(m *fluid.Model, st *fluid.Steady) string {
	if len(st.Swings) == 0 {
		return ""
	}
	var parts []string
	for i, s := range st.Swings {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(st.Swings)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%s between %.6g and %.6g", m.StateName(s.State), s.Min, s.Max))
	}
	return fmt.Sprintf("; over t in [%g, %g] it still moves (an oscillation, or a slow approach): %s", st.Swings[0].From, st.Swings[0].To, strings.Join(parts, ", "))
}

// stateKeys are the JSON keys of the populations: the local state's name,
// "Group:State" where two groups have a local state of that name.
func stateKeys(m *fluid.Model) []string {
	count := map[string]int{}
	for _, g := range m.Groups {
		for _, s := range g.States {
			count[s]++
		}
	}
	var out []string
	for _, g := range m.Groups {
		for _, s := range g.States {
			if count[s] > 1 {
				out = append(out, g.Name+":"+s)
			} else {
				out = append(out, s)
			}
		}
	}
	return out
}

func nanNull(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// document is what --format json prints.
// fluidDoc is the JSON document of a fluid analysis.
type fluidDoc struct {
	Model         string               `json:"model"`
	Approximation string               `json:"approximation"`
	Note          string               `json:"note"`
	Groups        []fluidGroupDoc      `json:"groups"`
	Times         []float64            `json:"times,omitempty"`
	Populations   map[string][]float64 `json:"populations,omitempty"`
	StdDevs       map[string][]float64 `json:"stddevs,omitempty"`
	Throughputs   map[string][]float64 `json:"throughputs,omitempty"`
	Solver        *fluidSolverDoc      `json:"solver,omitempty"`
	Steady        *fluidSteadyDoc      `json:"steady,omitempty"`
	Passage       *fluidPassageDoc     `json:"passage,omitempty"`
	Check         *fluidCheckDoc       `json:"check,omitempty"`
	Warnings      []string             `json:"warnings,omitempty"`
}

type fluidGroupDoc struct {
	Name      string   `json:"name"`
	Component string   `json:"component"`
	Copies    int      `json:"copies"`
	States    []string `json:"states"`
}
type fluidSolverDoc struct {
	Method      string   `json:"method"`
	SwitchedAt  *float64 `json:"switched_at,omitempty"`
	Steps       int      `json:"steps"`
	Rejected    int      `json:"rejected"`
	Evaluations int      `json:"evaluations"`
	RelTol      float64  `json:"rtol"`
	AbsTol      float64  `json:"atol_per_copy"`
}
type fluidSwingDoc struct {
	State    string  `json:"state"`
	Min, Max float64 `json:"-"`
	Low      float64 `json:"min"`
	High     float64 `json:"max"`
	From     float64 `json:"from"`
	To       float64 `json:"to"`
}
type fluidSteadyDoc struct {
	Populations map[string]float64 `json:"populations"`
	StdDevs     map[string]float64 `json:"stddevs,omitempty"`
	Throughputs map[string]float64 `json:"throughputs"`
	Residual    float64            `json:"residual"`
	Settled     bool               `json:"settled"`
	Time        float64            `json:"time"`
	Polished    bool               `json:"refined_by_newton"`
	Stopped     bool               `json:"stopped"`
	Swings      []fluidSwingDoc    `json:"still_moving,omitempty"`
	Solver      fluidSolverDoc     `json:"solver"`
}
type fluidPointDoc struct {
	T   float64  `json:"t"`
	CDF float64  `json:"cdf"`
	PDF *float64 `json:"pdf,omitempty"`
}
type fluidPassageDoc struct {
	Component     string             `json:"component"`
	Semantics     string             `json:"semantics"`
	Start         map[string]float64 `json:"start"`
	TargetStates  []string           `json:"target_states,omitempty"`
	TargetActions []string           `json:"target_actions,omitempty"`
	Mean          *float64           `json:"mean"`
	MeanNote      string             `json:"mean_unavailable,omitempty"`
	Points        []fluidPointDoc    `json:"points"`
	Solver        fluidSolverDoc     `json:"solver"`
}
type fluidRowDoc struct {
	Kind       string   `json:"kind"`
	Component  string   `json:"component,omitempty"`
	Name       string   `json:"name"`
	Fluid      float64  `json:"fluid"`
	Chain      float64  `json:"chain"`
	Low        *float64 `json:"low,omitempty"`
	High       *float64 `json:"high,omitempty"`
	Difference float64  `json:"difference"`
}
type fluidCheckDoc struct {
	Against          string        `json:"against"`
	How              string        `json:"how"`
	States           int           `json:"states,omitempty"`
	SteadyPopulation *float64      `json:"steady_population_distance"`
	SteadyThroughput *float64      `json:"steady_throughput_distance"`
	SteadyStdDev     *float64      `json:"steady_stddev_distance,omitempty"`
	SeriesPopulation *float64      `json:"series_population_distance"`
	SeriesThroughput *float64      `json:"series_throughput_distance"`
	Outside          int           `json:"outside_intervals,omitempty"`
	Compared         int           `json:"compared,omitempty"`
	Rows             []fluidRowDoc `json:"rows,omitempty"`
}

// solverDoc is an integration's statistics with the tolerances asked.
func (a *fluidCmd) solverDoc(s fluid.IntegratorStats) fluidSolverDoc {
	out := fluidSolverDoc{Method: s.Method, Steps: s.Steps, Rejected: s.Rejected, Evaluations: s.Evaluations, RelTol: a.opt.RelTol, AbsTol: a.opt.AbsTol}
	out.SwitchedAt = nanNull(s.SwitchedAt)
	return out
}

func (a *fluidCmd) document(result any) any {
	res := result.(*fluid.Analysis)
	m := res.Model
	keys := stateKeys(m)
	doc := fluidDoc{Model: displayName(a.files[0]), Approximation: "fluid", Note: approximationNote, Warnings: fluidWarnings(res)}
	for _, g := range m.Groups {
		doc.Groups = append(doc.Groups, fluidGroupDoc{g.Name, g.Component, g.Copies, g.States})
	}
	if s := res.Series; s != nil {
		a.seriesDoc(&doc, m, keys, s)
	}
	if st := res.Steady; st != nil {
		doc.Steady = a.steadyDoc(m, keys, st)
	}
	if ps := res.Passage; ps != nil {
		doc.Passage = a.passageDoc(m, ps)
	}
	if c := res.Check; c != nil {
		doc.Check = checkDoc(c)
	}
	return doc
}

// seriesDoc fills the time series' figures.
func (a *fluidCmd) seriesDoc(doc *fluidDoc, m *fluid.Model, keys []string, s *fluid.Series) {
	doc.Times = s.Times
	doc.Populations = map[string][]float64{}
	for i, k := range keys {
		doc.Populations[k] = s.Populations[i]
	}
	if s.Variances != nil {
		doc.StdDevs = map[string][]float64{}
		for i, k := range keys {
			sd := make([]float64, len(s.Variances[i]))
			for j, v := range s.Variances[i] {
				sd[j] = math.Sqrt(v)
			}
			doc.StdDevs[k] = sd
		}
	}
	doc.Throughputs = map[string][]float64{}
	for i, l := range m.Labels {
		doc.Throughputs[l] = s.Throughputs[i]
	}
	so := a.solverDoc(s.Stats)
	doc.Solver = &so
}

// steadyDoc is the steady state's figures.
func (a *fluidCmd) steadyDoc(m *fluid.Model, keys []string, st *fluid.Steady) *fluidSteadyDoc {
	sd := &fluidSteadyDoc{Populations: map[string]float64{}, Throughputs: map[string]float64{}, Residual: st.Residual, Settled: st.Settled,
		Time: st.Time, Polished: st.Polished, Stopped: st.Stopped, Solver: a.solverDoc(st.Stats)}
	for i, k := range keys {
		sd.Populations[k] = st.Populations[i]
		if st.Variances != nil {
			if sd.StdDevs == nil {
				sd.StdDevs = map[string]float64{}
			}
			sd.StdDevs[k] = math.Sqrt(st.Variances[i])
		}
	}
	for i, l := range m.Labels {
		sd.Throughputs[l] = st.Throughputs[i]
	}
	for _, s := range st.Swings {
		sd.Swings = append(sd.Swings, fluidSwingDoc{State: keys[s.State], Low: s.Min, High: s.Max, From: s.From, To: s.To})
	}
	return sd
}

// passageDoc is the tagged copy's passage.
func (a *fluidCmd) passageDoc(m *fluid.Model, ps *fluid.Passage) *fluidPassageDoc {
	pd := &fluidPassageDoc{Component: ps.Group, Semantics: ps.Semantics, Start: map[string]float64{}, TargetStates: ps.TargetStates,
		TargetActions: ps.TargetActions, Mean: nanNull(ps.Mean), MeanNote: ps.MeanNote, Solver: a.solverDoc(ps.Stats)}
	gi, _ := m.Group(ps.Group)
	for d, p := range ps.Start {
		if p > 0 {
			pd.Start[m.Groups[gi].States[d]] = p
		}
	}
	for i, t := range ps.Times {
		pt := fluidPointDoc{T: t, CDF: ps.CDF[i]}
		if a.pdf {
			pt.PDF = &ps.PDF[i]
		}
		pd.Points = append(pd.Points, pt)
	}
	return pd
}

// checkDoc is the distance to the chain or to simulation.
func checkDoc(c *fluid.Check) *fluidCheckDoc {
	cd := &fluidCheckDoc{Against: c.Against, How: c.How, States: c.States, SteadyPopulation: nanNull(c.SteadyPopulation), SteadyThroughput: nanNull(c.SteadyThroughput),
		SteadyStdDev: nanNull(c.SteadyStdDev), SeriesPopulation: nanNull(c.SeriesPopulation), SeriesThroughput: nanNull(c.SeriesThroughput),
		Outside: c.Outside, Compared: c.Compared}
	for _, r := range c.Rows {
		cd.Rows = append(cd.Rows, fluidRowDoc{Kind: r.Kind, Component: r.Group, Name: r.Name, Fluid: r.Fluid, Chain: r.Chain, Low: nanNull(r.Low), High: nanNull(r.High), Difference: r.Difference})
	}
	return cd
}

// fluidCSV is one row per figure: measure,component,name,t,value.
func fluidCSV(w io.Writer, res *fluid.Analysis, pdf bool) error {
	m := res.Model
	fmt.Fprintln(w, "measure,component,name,t,value")
	row := func(measure, comp, name, t string, v float64) {
		fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", measure, csvQuote(comp), csvQuote(name), t, fmtFloat(v))
	}
	state := func(i int) (string, string) {
		for _, g := range m.Groups {
			if i >= g.Offset && i < g.Offset+len(g.States) {
				return g.Name, g.States[i-g.Offset]
			}
		}
		return "", ""
	}
	if s := res.Series; s != nil {
		for k, t := range s.Times {
			for i := range s.Populations {
				g, st := state(i)
				row("population", g, st, fmtFloat(t), s.Populations[i][k])
			}
			if s.Variances != nil {
				for i := range s.Variances {
					g, st := state(i)
					row("stddev", g, st, fmtFloat(t), math.Sqrt(s.Variances[i][k]))
				}
			}
			for a, l := range m.Labels {
				row("throughput", "", l, fmtFloat(t), s.Throughputs[a][k])
			}
		}
	}
	if st := res.Steady; st != nil {
		for i, v := range st.Populations {
			g, s := state(i)
			row("steady_population", g, s, "", v)
		}
		if st.Variances != nil {
			for i, v := range st.Variances {
				g, s := state(i)
				row("steady_stddev", g, s, "", math.Sqrt(v))
			}
		}
		for a, l := range m.Labels {
			row("steady_throughput", "", l, "", st.Throughputs[a])
		}
		row("steady_residual", "", "", "", st.Residual)
	}
	if ps := res.Passage; ps != nil {
		for i, t := range ps.Times {
			row("passage_cdf", ps.Group, "", fmtFloat(t), ps.CDF[i])
			if pdf {
				row("passage_pdf", ps.Group, "", fmtFloat(t), ps.PDF[i])
			}
		}
		if !math.IsNaN(ps.Mean) {
			row("passage_mean", ps.Group, "", "", ps.Mean)
		}
	}
	if c := res.Check; c != nil {
		for _, d := range []struct {
			name string
			v    float64
		}{{"check_steady_population_distance", c.SteadyPopulation}, {"check_steady_throughput_distance", c.SteadyThroughput},
			{"check_steady_stddev_distance", c.SteadyStdDev}, {"check_series_population_distance", c.SeriesPopulation},
			{"check_series_throughput_distance", c.SeriesThroughput}} {
			if !math.IsNaN(d.v) {
				row(d.name, "", c.Against, "", d.v)
			}
		}
	}
	return nil
}

// fluidText is the analysis for people.
func fluidText(w io.Writer, name string, res *fluid.Analysis, opt fluid.Options, pdf bool) error {
	m := res.Model
	fmt.Fprintf(w, "model:    %s\n", name)
	fmt.Fprintf(w, "analysis: %s\n", approximationNote)
	var groups []string
	for _, g := range m.Groups {
		groups = append(groups, fmt.Sprintf("%s %d copies (%d local states)", g.Name, g.Copies, len(g.States)))
	}
	fmt.Fprintf(w, "groups:   %s; %d equations\n", strings.Join(limitNames(groups, 8), ", "), m.Dim)
	fmt.Fprintf(w, "accuracy: every integration step within rtol %g, atol %g per copy (the fluid figures to about 100 times that)\n", opt.RelTol, opt.AbsTol)
	if c := res.Check; c != nil {
		fmt.Fprintf(w, "check:    %s\n", checkLine(c))
	}
	if s := res.Series; s != nil {
		fluidSeriesText(w, m, s)
	}
	if st := res.Steady; st != nil {
		fluidSteadyText(w, m, st)
	}
	if ps := res.Passage; ps != nil {
		fluidPassageText(w, m, ps, pdf)
	}
	if c := res.Check; c != nil && len(c.Rows) > 0 {
		fluidCheckText(w, c)
	}
	return nil
}

// fluidSeriesText is the time series: the mean populations and the
// throughputs at each time.
func fluidSeriesText(w io.Writer, m *fluid.Model, s *fluid.Series) {
	fmt.Fprintf(w, "\ntime series (mean populations; %s):\n", solverLine(s.Stats))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"t"}
	for i := 0; i < m.Dim; i++ {
		head = append(head, m.StateName(i))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for k, t := range s.Times {
		cells := []string{fmt.Sprintf("%g", t)}
		for i := 0; i < m.Dim; i++ {
			c := fmt.Sprintf("%.6g", s.Populations[i][k])
			if s.Variances != nil {
				c += fmt.Sprintf(" ±%.3g", math.Sqrt(s.Variances[i][k]))
			}
			cells = append(cells, c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nthroughputs:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "t\t"+strings.Join(m.Labels, "\t"))
	for k, t := range s.Times {
		cells := []string{fmt.Sprintf("%g", t)}
		for a := range m.Labels {
			cells = append(cells, fmt.Sprintf("%.6g", s.Throughputs[a][k]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

// fluidSteadyText is the steady state: how it was reached, the
// populations and the throughputs.
func fluidSteadyText(w io.Writer, m *fluid.Model, st *fluid.Steady) {
	fmt.Fprintln(w)
	switch {
	case st.Stopped:
		fmt.Fprintf(w, "steady state: every flow has stopped by t = %g (the fluid is stuck: the chain may deadlock)\n", st.Time)
	case st.Settled:
		how := ""
		if st.Polished {
			how = "; refined by Newton's method"
		}
		fmt.Fprintf(w, "steady state: the fixed point, reached by t = %g; residual max|dx/dt| / largest throughput = %.2g%s (%s)\n", st.Time, st.Residual, how, solverLine(st.Stats))
	default:
		fmt.Fprintf(w, "steady state: NOT SETTLED by t = %g: residual %.3g%s\n", st.Time, st.Residual, swingText(m, st))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if st.Variances != nil {
		fmt.Fprintln(tw, "component\tlocal state\tpopulation\tstd dev (linear noise)")
	} else {
		fmt.Fprintln(tw, "component\tlocal state\tpopulation")
	}
	for _, g := range m.Groups {
		for d, s := range g.States {
			if st.Variances != nil {
				fmt.Fprintf(tw, "%s\t%s\t%.10g\t%.6g\n", g.Name, s, st.Populations[g.Offset+d], math.Sqrt(st.Variances[g.Offset+d]))
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%.10g\n", g.Name, s, st.Populations[g.Offset+d])
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "action\tthroughput")
	for a, l := range m.Labels {
		fmt.Fprintf(tw, "%s\t%.10g\n", l, st.Throughputs[a])
	}
	tw.Flush()
}

// fluidPassageText is the tagged passage: what it measures, its mean and
// its CDF (and density).
func fluidPassageText(w io.Writer, m *fluid.Model, ps *fluid.Passage, pdf bool) {
	fmt.Fprintln(w)
	gi, _ := m.Group(ps.Group)
	var start []string
	for d, p := range ps.Start {
		if p > 0 {
			start = append(start, fmt.Sprintf("%s %.4g", m.Groups[gi].States[d], p))
		}
	}
	end := ""
	if len(ps.TargetActions) > 0 {
		end = "its first " + strings.Join(ps.TargetActions, " or ")
	} else {
		end = "entering " + strings.Join(ps.TargetStates, " or ")
	}
	if ps.Semantics == "plugin" {
		fmt.Fprintf(w, "tagged passage (plug-in semantics, populations at their steady state): one copy of %s from %s until %s (%s)\n", ps.Group, strings.Join(start, ", "), end, solverLine(ps.Stats))
	} else {
		fmt.Fprintf(w, "tagged passage: one copy of %s from its initial local state %s until %s, the populations moving from their initial values (%s)\n", ps.Group, m.Groups[gi].States[0], end, solverLine(ps.Stats))
	}
	if math.IsNaN(ps.Mean) {
		note := ps.MeanNote
		if note == "" {
			note = "not asked"
		}
		fmt.Fprintf(w, "mean:     unavailable: %s\n", note)
	} else {
		fmt.Fprintf(w, "mean:     %.10g\n", ps.Mean)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if pdf {
		fmt.Fprintln(tw, "t\tCDF\tPDF")
	} else {
		fmt.Fprintln(tw, "t\tCDF")
	}
	for i, t := range ps.Times {
		if pdf {
			fmt.Fprintf(tw, "%g\t%.10f\t%.6g\n", t, ps.CDF[i], ps.PDF[i])
		} else {
			fmt.Fprintf(tw, "%g\t%.10f\n", t, ps.CDF[i])
		}
	}
	tw.Flush()
}

// fluidCheckText is the check of the steady state against the chain or a
// simulation.
func fluidCheckText(w io.Writer, c *fluid.Check) {
	fmt.Fprintf(w, "\ncheck against %s at the steady state:\n", c.Against)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if c.Against == "simulation" {
		fmt.Fprintf(tw, "figure\tcomponent\tname\tfluid\tsimulation\t%g%% interval\tdifference\n", 100*c.Confidence)
	} else {
		fmt.Fprintln(tw, "figure\tcomponent\tname\tfluid\tchain (exact)\tdifference")
	}
	for _, r := range c.Rows {
		if c.Against == "simulation" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.8g\t%.8g\t[%.6g, %.6g]\t%.3g\n", r.Kind, r.Group, r.Name, r.Fluid, r.Chain, r.Low, r.High, r.Difference)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.8g\t%.8g\t%.3g\n", r.Kind, r.Group, r.Name, r.Fluid, r.Chain, r.Difference)
		}
	}
	tw.Flush()
}

func solverLine(s fluid.IntegratorStats) string {
	method := map[string]string{fluid.MethodRodas4: "RODAS4, stiff", fluid.MethodDopri5: "Dormand-Prince 5(4)"}[s.Method]
	if method == "" {
		method = s.Method
	}
	if !math.IsNaN(s.SwitchedAt) {
		method = fmt.Sprintf("Dormand-Prince 5(4), then RODAS4 from t = %.4g (stiff)", s.SwitchedAt)
	}
	return fmt.Sprintf("%s, %d steps, %d rejected", method, s.Steps, s.Rejected)
}

// checkLine is the check in one line.
func checkLine(c *fluid.Check) string {
	var parts []string
	if !math.IsNaN(c.SteadyPopulation) {
		parts = append(parts, fmt.Sprintf("steady populations within %.3g of their group's copies, throughputs within %.3g of the largest", c.SteadyPopulation, c.SteadyThroughput))
	}
	if !math.IsNaN(c.SteadyStdDev) {
		parts = append(parts, fmt.Sprintf("standard deviations within %.3g of the copies", c.SteadyStdDev))
	}
	if !math.IsNaN(c.SeriesPopulation) {
		parts = append(parts, fmt.Sprintf("time series within %.3g (populations) and %.3g (throughputs)", c.SeriesPopulation, c.SeriesThroughput))
	}
	if c.Against == "simulation" {
		parts = append(parts, fmt.Sprintf("%d of %d figures outside the %g%% intervals", c.Outside, c.Compared, 100*c.Confidence))
	}
	what := map[string]string{"exact": "against the exact chain", "simulation": "against simulation", "none": "not checked"}[c.Against]
	if len(parts) == 0 {
		return fmt.Sprintf("%s: %s", what, c.How)
	}
	return fmt.Sprintf("%s (%s): %s", what, c.How, strings.Join(parts, "; "))
}
