package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"pepa/cmd/pepa/internal/render"
	"pepa/models"
	"pepa/models/plot"
)

// The JSON of a robustness result is package render's, which pepa serve
// prints too.
var (
	jsonFloat    = render.Float
	intervalJSON = render.Interval
	energyJSON   = render.Energy
	resultJSON   = render.Result
)

func (a *robustnessCmd) render(e *env, result any) int {
	rep := result.(*models.Report)
	for i, r := range rep.Results {
		name := r.Model
		if st := rep.Simulations[i]; st != nil {
			reportSpeed(e, name, *st)
		}
		if i < len(a.timers) {
			a.timers[i].print(e.stderr, "robustness", name)
		}
		if a.o.verbose {
			for _, g := range r.Groups {
				if g.Transient != "" {
					fmt.Fprintf(e.stderr, "pepa robustness: %s: group %s: %s: %s\n", name, strings.Join(g.Machines, ", "), g.Transient, g.TransientWhy)
				}
			}
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(e.stderr, "%s: warning: %s\n", name, w)
		}
		if r.Epsilon > a.req.Epsilon {
			fmt.Fprintf(e.stderr, "%s: warning: --epsilon %g is below what the engines can keep in float64 (uniformization over its series' steps, Laplace inversion on its contour); every probability is within %.2g instead\n", name, a.req.Epsilon, r.Epsilon)
		}
		for _, mr := range r.Machines {
			if mr.Note != "" {
				fmt.Fprintf(e.stderr, "%s: warning: machine %s: %s\n", name, mr.Name, mr.Note)
			}
		}
	}
	if a.plotFormat != "" {
		// In the order given for one model, best first for several.
		if err := writeOutput(e, a.plotPath, func(w io.Writer) error { return plot.WritePlot(w, a.plotFormat, rep.Ranking) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa robustness: %v\n", err)
			return exitInvalid
		}
	}
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch a.o.format {
		case "json":
			return writeJSON(w, a.document(rep))
		case "csv":
			return robustnessCSV(w, rep, a.summary)
		}
		if len(rep.Ranking) == 1 {
			return textResult(w, rep.Ranking[0])
		}
		return textRanking(w, rep.Ranking, rep.Beta, string(rep.Semantics), rep.Tie)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa robustness: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// document is what --format json prints: one mapping's figures, or the
// ranking of several.
func (a *robustnessCmd) document(result any) any {
	rep := result.(*models.Report)
	if len(rep.Ranking) == 1 {
		return resultJSON(rep.Ranking[0], false)
	}
	var ms []map[string]any
	for _, r := range rep.Ranking {
		ms = append(ms, resultJSON(r, true))
	}
	return map[string]any{"beta": rep.Beta, "semantics": string(rep.Semantics), "tie": rep.Tie, "mappings": ms}
}

// series are the mappings' robustness in the order of the files, whose
// crossings a sweep finds.
func (a *robustnessCmd) series(result any) []float64 {
	rep := result.(*models.Report)
	out := make([]float64, len(rep.Results))
	for k, r := range rep.Results {
		out[k] = r.Robustness
	}
	return out
}

// robustnessCSV is the CSV: one row per model (summary), per machine (one
// model) or per mapping of a ranking.
func robustnessCSV(w io.Writer, rep *models.Report, summary bool) error {
	if summary {
		head, cells := energyCSV(rep.Ranking)
		fmt.Fprintln(w, "model,robustness,p_all_by_beta,expected_makespan,states,semantics,beta"+head)
		for _, r := range rep.Results {
			fmt.Fprintf(w, "%s,%s,%s,%s,%d,%s,%s%s\n", csvQuote(r.Model), csvFloat(r.Robustness), csvFloat(r.PAllByBeta), csvFloat(r.ExpectedMakespan), r.States, r.Semantics, fmtFloat(r.Beta), cells(&models.Ranked{Result: r}))
		}
		return nil
	}
	if len(rep.Ranking) == 1 {
		r := rep.Ranking[0]
		fmt.Fprintln(w, "model,machine,applications,p_by_beta,mean,q99")
		for _, m := range r.Machines {
			fmt.Fprintf(w, "%s,%s,%d,%s,%s,%s\n", csvQuote(r.Model), csvQuote(m.Name), m.Applications, csvFloat(m.PByBeta), csvFloat(m.Mean), csvFloat(m.Quantile))
		}
		return nil
	}
	head, cells := energyCSV(rep.Ranking)
	fmt.Fprintln(w, "rank,model,robustness,p_all_by_beta,expected_makespan,group,states"+head)
	for _, r := range rep.Ranking {
		fmt.Fprintf(w, "%d,%s,%s,%s,%s,%d,%d%s\n", r.Rank, csvQuote(r.Model), csvFloat(r.Robustness), csvFloat(r.PAllByBeta), csvFloat(r.ExpectedMakespan), r.Group, r.States, cells(r))
	}
	return nil
}

func csvFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return ""
	case math.IsInf(x, 1):
		return "inf"
	}
	return fmtFloat(x)
}

func textResult(w io.Writer, r *models.Ranked) error {
	if r.Solved == "simulated" {
		fmt.Fprintf(w, "model:      %s (product of local state counts %.6g; %s)\n", r.Model, r.ProductStates, r.Why)
	} else if r.Solved == "decomposed" {
		fmt.Fprintf(w, "model:      %s (solved by groups: %s; %d states in all, %.6g in their product)\n", r.Model, r.Why, r.States, r.ProductStates)
	} else {
		fmt.Fprintf(w, "model:      %s (%d states, solved flat: %s)\n", r.Model, r.States, r.Why)
	}
	fmt.Fprintf(w, "goal:       beta = %g, %s semantics\n", r.Beta, r.Semantics)
	var names []string
	for _, m := range r.Machines {
		names = append(names, m.Name)
	}
	fmt.Fprintf(w, "machines:   %s\n", strings.Join(limitNames(names, 12), ", "))
	// One line per group of coupled (or simulated) machines, one for all
	// the machines alone.
	var alone []string
	label := "groups:     "
	shown := 0
	for _, g := range r.Groups {
		if g.Solved == "alone" {
			alone = append(alone, g.Machines...)
			continue
		}
		if shown++; shown <= 20 {
			fmt.Fprintf(w, "%s%s\n", label, groupText(g, r.Beta))
			label = "            "
		}
	}
	if shown > 20 {
		fmt.Fprintf(w, "%s... %d more groups of coupled machines (--format json lists them)\n", label, shown-20)
	}
	if len(alone) > 0 && shown > 0 {
		fmt.Fprintf(w, "%salone:  %s\n", label, strings.Join(limitNames(alone, 12), ", "))
	}
	fmt.Fprintln(w)
	owners := false
	for _, m := range r.Machines {
		owners = owners || !math.IsNaN(m.Availability)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := fmt.Sprintf("machine\tapps\tP(F <= %g)\tE[F]\tq99\t", r.Beta)
	if owners {
		header += "availability\tslowdown\t"
	}
	fmt.Fprintln(tw, header)
	for _, m := range r.Machines {
		row := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t", m.Name, m.Applications, textFloat(m.PByBeta, "%.10f"), textFloat(m.Mean, "%.4f"), textFloat(m.Quantile, "%.4f"))
		if !math.IsNaN(m.PByBetaLo) {
			// Simulated: the estimates with their intervals.
			row = fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t", m.Name, m.Applications, textInterval(m.PByBeta, m.PByBetaLo, m.PByBetaHi, "%.4f"),
				textInterval(m.Mean, m.MeanLo, m.MeanHi, "%.4f"), textInterval(m.Quantile, m.QuantileLo, m.QuantileHi, "%.4f"))
		}
		if owners {
			row += fmt.Sprintf("%s\t%s\t", textFloat(m.Availability, "%.4f"), textFloat(m.Slowdown, "%.4f"))
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	fmt.Fprintln(w)
	lo, hi, simulated := math.Inf(1), math.Inf(1), false
	for _, m := range r.Machines {
		if math.IsNaN(m.PByBetaLo) {
			lo, hi = math.Min(lo, m.PByBeta), math.Min(hi, m.PByBeta)
		} else {
			lo, hi, simulated = math.Min(lo, m.PByBetaLo), math.Min(hi, m.PByBetaHi), true
		}
	}
	if simulated {
		// Between the smallest lower and the smallest upper end of the
		// machines' intervals (each at the stated level, not jointly).
		fmt.Fprintf(w, "robustness min_j P(F_j <= %g):   %s\n", r.Beta, textInterval(r.Robustness, lo, hi, "%.6f"))
	} else {
		fmt.Fprintf(w, "robustness min_j P(F_j <= %g):   %.10f\n", r.Beta, r.Robustness)
	}
	if r.Confidence > 0 && !math.IsNaN(r.PAllLo) {
		fmt.Fprintf(w, "P(max_j F_j <= %g):              %s  (%s)\n", r.Beta, textInterval(r.PAllByBeta, r.PAllLo, r.PAllHi, "%.6f"), r.Joint)
	} else {
		fmt.Fprintf(w, "P(max_j F_j <= %g):              %s  (%s)\n", r.Beta, textFloat(r.PAllByBeta, "%.10f"), r.Joint)
	}
	if math.IsNaN(r.ExpectedMakespan) {
		fmt.Fprintf(w, "expected makespan E[max_j F_j]:  unavailable\n")
	} else if r.Confidence > 0 && !math.IsNaN(r.MakespanLo) {
		fmt.Fprintf(w, "expected makespan E[max_j F_j]:  %s  (%g%% interval)\n", textInterval(r.ExpectedMakespan, r.MakespanLo, r.MakespanHi, "%.4f"), 100*r.Confidence)
	} else {
		fmt.Fprintf(w, "expected makespan E[max_j F_j]:  %s  (error <= %.2g)\n", textFloat(r.ExpectedMakespan, "%.6f"), r.MakespanError)
	}
	energyText(w, r)
	return textSensitivity(w, r)
}

// textSensitivity prints the sensitivities, the bottleneck machine and the
// application whose slowdown costs the most (models.SensitivitySummary).
func textSensitivity(w io.Writer, r *models.Ranked) error {
	if r.Sensitive == nil {
		return nil
	}
	any := false
	for i := range r.Machines {
		m := &r.Machines[i]
		sv := m.Sensitivity
		if sv == nil {
			continue
		}
		if !any {
			fmt.Fprintf(w, "\nsensitivity: dP(F <= %g)/d rate per machine; the radius is the uniform slowdown of all\n", r.Beta)
			fmt.Fprintf(w, "the machine's rates at which P(F <= %g) falls to %g\n\n", r.Beta, sv.Level)
			any = true
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\tradius %.4f\trate\tvalue\tdP/drate\telasticity\tapplication\t\n", m.Name, sv.Radius)
		for _, rs := range sv.Rates {
			fmt.Fprintf(tw, "\t\t%s\t%.6g\t%.6g\t%.6g\t%s\t\n", rs.Rate, rs.Value, rs.Derivative, rs.Elasticity, rs.Application)
		}
		tw.Flush()
	}
	bottleneck := &r.Machines[r.Sensitive.Bottleneck]
	fmt.Fprintf(w, "\nbottleneck machine: %s (radius %.4f, P(F <= %g) = %.6f)\n", bottleneck.Name, bottleneck.Sensitivity.Radius, r.Beta, bottleneck.PByBeta)
	if c := r.Sensitive; c.Costliest != "" {
		fmt.Fprintf(w, "costliest application: %s on %s: slowing its rates by 1%% lowers P(F_%s <= %g) by %.3g\n",
			c.Costliest, c.Machine, c.Machine, r.Beta, c.Cost/100)
	}
	return nil
}

func textFloat(x float64, f string) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "inf"
	}
	return fmt.Sprintf(f, x)
}

func textRanking(w io.Writer, ranked []*models.Ranked, beta float64, sem string, tie float64) error {
	fmt.Fprintf(w, "goal: beta = %g, %s semantics; equal makespan within %g%%\n\n", beta, sem, tie*100)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	energy, budget := hasEnergy(ranked)
	head := fmt.Sprintf("rank\tmapping\trobustness\tP(all <= %g)\tE[makespan]\t", beta)
	if energy {
		head += "E[energy] (J)\t"
		if budget {
			head += "P(E <= B)\tP(both)\t"
		}
	}
	fmt.Fprintln(tw, head+"group")
	for _, r := range ranked {
		note := ""
		if r.GainOverGroup > 0 {
			note = fmt.Sprintf("  (+%.4f robustness over the group's least robust; misses the goal %.2f times less often)", r.GainOverGroup, r.MissRatio)
		}
		cells := ""
		if energy {
			cells = strings.Join(energyColumns(r, budget, func(x float64) string { return textFloat(x, "%.6g") }), "\t") + "\t"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.6f\t%.6f\t%.4f\t%s%d%s\n", r.Rank, r.Model, r.Robustness, r.PAllByBeta, r.ExpectedMakespan, cells, r.Group, note)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range ranked {
		var parts []string
		for _, m := range r.Machines {
			parts = append(parts, fmt.Sprintf("%s %s", m.Name, textFloat(m.PByBeta, "%.4f")))
		}
		fmt.Fprintf(w, "%s: %s\n", r.Model, strings.Join(parts, ", "))
	}
	for _, r := range ranked {
		if !hasSensitivity(r) {
			continue
		}
		fmt.Fprintf(w, "\n== %s (rank %d)\n", r.Model, r.Rank)
		if err := textSensitivity(w, r); err != nil {
			return err
		}
	}
	return nil
}

func hasSensitivity(r *models.Ranked) bool {
	for _, m := range r.Machines {
		if m.Sensitivity != nil {
			return true
		}
	}
	return false
}

// groupText is one group's line: its machines, what couples them, how it
// was solved and its figures.
func groupText(g models.GroupResult, beta float64) string {
	var shared []string
	isMachine := map[string]bool{}
	for _, m := range g.Machines {
		isMachine[m] = true
	}
	for _, c := range g.Components {
		if !isMachine[c] {
			shared = append(shared, c)
		}
	}
	who := strings.Join(g.Machines, ", ")
	switch {
	case len(shared) > 0:
		who += " sharing " + strings.Join(shared, ", ")
	case len(g.Machines) > 1:
		who += " (cooperating)"
	}
	if g.Solved == "alone" && len(g.Machines) == 1 {
		return fmt.Sprintf("%s alone (%d states)", who, g.States)
	}
	line := fmt.Sprintf("%s: %s", who, g.Solved)
	if g.States > 0 {
		line += fmt.Sprintf(", %d states", g.States)
	}
	line += fmt.Sprintf("; P(all <= %g) %s", beta, textFloat(g.PAllByBeta, "%.10f"))
	if g.Solved == "simulated" {
		line += fmt.Sprintf(" in [%.6f, %.6f]", g.PAllLo, g.PAllHi)
	}
	return line + fmt.Sprintf(", E[all finished] %s", textFloat(g.Mean, "%.6f"))
}

// limitNames keeps the first n names and says how many more there are.
func limitNames(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

// textInterval prints an estimate with its interval.
func textInterval(v, lo, hi float64, f string) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(f+" ["+f+", "+f+"]", v, lo, hi)
}
