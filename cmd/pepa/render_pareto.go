package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"strings"
	"text/tabwriter"
	"time"

	"pepa/models"
	"pepa/models/optimize"
	"pepa/models/plot"
	"pepa/models/spec"
)

// paretoArgs are optimize --pareto's settings.
type paretoArgs struct {
	spec                 string
	beta                 float64
	power                models.PowerFlags // over the specification's
	budget               time.Duration
	seed                 uint64
	maxEnumerate         int
	energyBudget         float64
	format, mappingOut   string
	plotPath, plotFormat string
}

// paretoCloudSample is how many of the mappings the energy bounds rule
// off the front still get their exact energy for a plot's cloud.
const paretoCloudSample = 2000

// runPareto is optimize --pareto: the robustness/expected-energy front
// (optimize.ParetoFront), printed, optionally plotted and written as a
// specification of its mappings.
func runPareto(ctx context.Context, e *env, in *spec.Instance, a paretoArgs) int {
	for _, path := range []string{a.mappingOut, a.plotPath} {
		if err := checkWritable(path); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	opt := optimize.ParetoOptions{Beta: a.beta, PowerFlags: a.power, Budget: a.budget, Seed: a.seed, MaxEnumerate: a.maxEnumerate, EnergyBudget: a.energyBudget}
	if a.plotFormat != "" {
		opt.CloudSample = paretoCloudSample
	}
	if e.stderrTerminal {
		opt.Progress = func(p optimize.ParetoProgress) {
			done := fmt.Sprintf("%d", p.Done)
			if p.Total > 0 {
				done += fmt.Sprintf("/%d", p.Total)
			}
			front := ""
			if p.Front > 0 {
				front = fmt.Sprintf(", front %d", p.Front)
			}
			fmt.Fprintf(e.stderr, "\r\033[Koptimize --pareto: %s, %.0f s: %s mappings%s", p.Phase, p.Elapsed.Seconds(), done, front)
		}
	}
	res, err := optimize.ParetoFront(ctx, in, opt)
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	var pe *optimize.PowerError
	if errors.As(err, &pe) {
		if pe.Missing {
			return usageError(e, "optimize", "--pareto needs each machine's power: a \"power\" in %s ({\"busy\": [...], \"idle\": [...]}, watts), or --busy-power (and --idle-power)", a.spec)
		}
		return usageError(e, "optimize", "%v", pe.Err)
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "pepa optimize: interrupted before any mapping was evaluated")
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", a.spec, err)
		return exitInvalid
	}
	in.Power = &res.Power // the power used, in the specification --mapping-out writes
	if a.mappingOut != "" {
		var ms []spec.Mapping
		for _, p := range res.Front {
			ms = append(ms, in.MappingOf(fmt.Sprintf("front-%d", p.Rank), p.Allocation))
		}
		if err := writeOutput(e, a.mappingOut, func(w io.Writer) error { return in.WriteSpec(w, ms...) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	if a.plotFormat != "" && len(res.Front) > 0 {
		if err := writeOutput(e, a.plotPath, func(w io.Writer) error { return plot.WriteParetoPlot(w, a.plotFormat, in, res) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
			return exitInvalid
		}
	}
	if err := writeOutput(e, "", func(w io.Writer) error { return writePareto(w, in, res, a.format) }); err != nil {
		fmt.Fprintf(e.stderr, "pepa optimize: %v\n", err)
		return exitInvalid
	}
	if res.Stopped == optimize.ParetoInterrupted {
		fmt.Fprintln(e.stderr, "pepa optimize: interrupted: the front of the mappings evaluated so far is written")
		return exitInterrupted
	}
	return exitOK
}

// writePareto prints a front as text, JSON or CSV.
func writePareto(w io.Writer, in *spec.Instance, res *optimize.ParetoResult, format string) error {
	heuristic := func(p optimize.ParetoPoint) any {
		if len(p.Heuristics) == 0 {
			return nil
		}
		return strings.Join(p.Heuristics, ", ")
	}
	switch format {
	case "json":
		var front, hs []map[string]any
		for _, p := range res.Front {
			fj := map[string]any{"rank": p.Rank, "robustness": p.Robustness, "expected_energy": jsonFloat(p.ExpectedEnergy),
				"expected_makespan": jsonFloat(p.ExpectedMakespan), "p_all_by_beta": p.PAll,
				"allocation": in.MappingOf("", p.Allocation).Allocation, "heuristic": heuristic(p)}
			if p.Energy != nil {
				fj["energy"] = energyJSON(p.Energy)
			}
			front = append(front, fj)
		}
		for _, h := range res.Heuristics {
			var rank, by any
			if h.Rank > 0 {
				rank = h.Rank
			}
			if h.DominatedBy > 0 {
				by = h.DominatedBy
			}
			hs = append(hs, map[string]any{"name": h.Heuristics[0], "robustness": h.Robustness, "expected_energy": jsonFloat(h.ExpectedEnergy),
				"expected_makespan": jsonFloat(h.ExpectedMakespan), "p_all_by_beta": h.PAll,
				"allocation": in.MappingOf("", h.Allocation).Allocation, "front_rank": rank, "dominated_by": by})
		}
		return writeJSON(w, map[string]any{"beta": res.Beta, "machines": in.Machines,
			"power": map[string]any{"busy": res.Power.Busy, "idle": res.Power.Idle},
			"how":   res.How, "mappings": res.Mappings, "total_mappings": jsonFloat(res.Total), "stopped": res.Stopped,
			"front": front, "heuristics": hs, "machine_solves": res.MachineSolves, "makespans_integrated": res.Integrals,
			"analyses": res.Analyses, "seconds": res.Elapsed.Seconds()})
	case "csv":
		var b strings.Builder
		budget := len(res.Front) > 0 && res.Front[0].Energy != nil
		b.WriteString("rank,robustness,expected_energy,expected_makespan,p_all_by_beta,heuristic")
		if budget {
			b.WriteString(",p_by_budget,p_all_by_beta_within_budget")
		}
		for _, m := range in.Machines {
			b.WriteString("," + csvQuote(m))
		}
		b.WriteByte('\n')
		for _, p := range res.Front {
			h, _ := heuristic(p).(string)
			fmt.Fprintf(&b, "%d,%s,%s,%s,%s,%s", p.Rank, fmtFloat(p.Robustness), fmtFloat(p.ExpectedEnergy),
				fmtFloat(p.ExpectedMakespan), fmtFloat(p.PAll), csvQuote(h))
			if budget {
				fmt.Fprintf(&b, ",%s,%s", csvFloat(p.Energy.PByBudget), csvFloat(p.Energy.PAllWithinBudget))
			}
			for _, apps := range p.Allocation {
				b.WriteString("," + csvQuote(appNames(in, apps)))
			}
			b.WriteByte('\n')
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	return paretoText(w, in, res)
}

func appNames(in *spec.Instance, apps []int) string {
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = in.Apps[a]
	}
	return strings.Join(names, " ")
}

// allocationText is an allocation on one line: "M1: A1 A4 | M2: A2 | M3: -".
func allocationText(in *spec.Instance, alloc [][]int) string {
	parts := make([]string, len(alloc))
	for j, apps := range alloc {
		s := appNames(in, apps)
		if s == "" {
			s = "-"
		}
		parts[j] = in.Machines[j] + ": " + s
	}
	return strings.Join(parts, " | ")
}

// paretoText prints the front as a table, with the energy each mapping
// costs over the front's least, then the heuristics and where they stand.
func paretoText(w io.Writer, in *spec.Instance, res *optimize.ParetoResult) error {
	var pw []string
	for j, m := range in.Machines {
		pw = append(pw, fmt.Sprintf("%s %g/%g", m, res.Power.Busy[j], res.Power.Idle[j]))
	}
	fmt.Fprintf(w, "goal: beta = %g; power busy/idle (W): %s\n", res.Beta, strings.Join(pw, ", "))
	switch res.How {
	case optimize.ParetoEnumerated:
		// No time here: the same specification gives the same bytes.
		fmt.Fprintf(w, "front: %d of %d mappings, every one solved (each machine computing its applications in specification order)\n",
			len(res.Front), res.Mappings)
	default:
		fmt.Fprintf(w, "front: %d of the %d mappings evaluated (of %.3g): the heuristics, the most robust mapping optimize finds, a least-energy\n"+
			"greedy mapping and a Pareto local search from the front's mappings, %.1f s; mappings not evaluated may beat them\n",
			len(res.Front), res.Mappings, res.Total, res.Elapsed.Seconds())
	}
	if res.Stopped == optimize.ParetoInterrupted {
		fmt.Fprintln(w, "interrupted: the front of the mappings evaluated so far")
	}
	fmt.Fprintln(w, "no mapping evaluated is as robust with less expected energy, or more robust with as little")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The energy each mapping costs over the front's least.
	least := math.Inf(1)
	for _, p := range res.Front {
		least = math.Min(least, p.ExpectedEnergy)
	}
	budget := len(res.Front) > 0 && res.Front[0].Energy != nil
	head := "rank\trobustness\tE[energy] (J)\t+kJ\tE[makespan]\tP(all <= beta)\t"
	if budget {
		head += fmt.Sprintf("P(E <= %g)\tP(both)\t", res.Front[0].Energy.Budget)
	}
	fmt.Fprintln(tw, head+"heuristic\tallocation")
	for _, p := range res.Front {
		h := "-"
		if len(p.Heuristics) > 0 {
			h = strings.Join(p.Heuristics, ", ")
		}
		cells := ""
		if budget {
			cells = energyProb(p.Energy.PByBudget, p.Energy.PByBudgetLo, p.Energy.PByBudgetHi, p.Energy.Confidence) + "\t" +
				energyProb(p.Energy.PAllWithinBudget, p.Energy.PAllWithinBudgetLo, p.Energy.PAllWithinBudgetHi, p.Energy.Confidence) + "\t"
		}
		fmt.Fprintf(tw, "%d\t%.6f\t%.1f\t%.2f\t%s\t%.6f\t%s%s\t%s\n", p.Rank, p.Robustness, p.ExpectedEnergy, (p.ExpectedEnergy-least)/1000,
			textFloat(p.ExpectedMakespan, "%.4f"), p.PAll, cells, h, allocationText(in, p.Allocation))
	}
	tw.Flush()
	if budget {
		fmt.Fprintf(w, "\nthe budget's figures: %s\n", res.Front[0].Energy.How)
	}
	if len(res.Heuristics) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nheuristics:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  mapping\trobustness\tE[energy] (J)\tE[makespan]\tP(all <= beta)\tplace")
	for _, h := range res.Heuristics {
		place := "off the front"
		switch {
		case h.Rank > 0:
			place = fmt.Sprintf("on the front (#%d)", h.Rank)
		case h.DominatedBy > 0:
			q := res.Front[h.DominatedBy-1]
			place = fmt.Sprintf("dominated by #%d (%+.4f robustness, %+.1f J)", h.DominatedBy, q.Robustness-h.Robustness, q.ExpectedEnergy-h.ExpectedEnergy)
		}
		fmt.Fprintf(tw, "  %s\t%.6f\t%.1f\t%s\t%.6f\t%s\n", h.Heuristics[0], h.Robustness, h.ExpectedEnergy, textFloat(h.ExpectedMakespan, "%.4f"), h.PAll, place)
	}
	return tw.Flush()
}
