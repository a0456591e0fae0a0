package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"pepa/ctmc/simulate"
	"pepa/models"
)

func (a *simulateCmd) render(e *env, result any) int {
	out := result.(*simOutcome)
	if out.shard != nil {
		return writeShard(e, "simulate", a.o.out, out.header, out.shard)
	}
	reportSpeed(e, out.info.Model, out.stats())
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch {
		case out.robustness != nil:
			if err := writeSimRobustness(w, a.o.format, out.info, out.robustness, out.energy); err != nil {
				return err
			}
			if out.energy != nil && a.o.format == "text" {
				energyText(w, &models.Ranked{Result: &models.Result{Beta: out.robustness.Beta, Energy: out.energy}})
			}
			return nil
		case out.passage != nil:
			return writeSimPassage(w, a.o.format, out.info, out.what, out.passage)
		}
		return writeSimSteady(w, a.o.format, out.info, out.steady)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa simulate: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// document is what --format json prints.
func (a *simulateCmd) document(result any) any {
	out := result.(*simOutcome)
	switch {
	case out.robustness != nil:
		return simRobustnessDoc(out.info, out.robustness, out.energy)
	case out.passage != nil:
		return simPassageDoc(out.info, out.what, out.passage)
	}
	return simSteadyDoc(out.info, out.steady)
}

// stats are the run's statistics.
func (out *simOutcome) stats() simulate.Stats {
	switch {
	case out.robustness != nil:
		return out.robustness.Stats
	case out.passage != nil:
		return out.passage.Stats
	}
	return out.steady.Stats
}

// simInfo is what the output says about the run: only what does not
// depend on the machine (no timings, no worker count).
type simInfo struct {
	Model        string  `json:"model"`
	Seed         uint64  `json:"seed"`
	Confidence   float64 `json:"confidence"`
	Replications int     `json:"replications"`
	Events       int64   `json:"events"`
	Stopped      string  `json:"stopped_by"`
}

func (s *simInfo) set(st simulate.Stats) {
	s.Replications, s.Events, s.Stopped = st.Replications, st.Events, st.Stopped
}

func (s simInfo) header(w io.Writer) {
	fmt.Fprintf(w, "model:      %s\n", s.Model)
	fmt.Fprintf(w, "simulated:  %d replications, %d events, seed %d, stopped by %s; intervals at %g%% confidence\n",
		s.Replications, s.Events, s.Seed, s.Stopped, 100*s.Confidence)
}

// ciJSON is an interval as JSON: [lo, hi], null ends where unknown.
func ciJSON(iv simulate.Interval) []any { return []any{jsonFloat(iv.Lo), jsonFloat(iv.Hi)} }

// ciText prints an estimate with its interval.
func ciText(iv simulate.Interval, f string) string {
	if math.IsNaN(iv.Value) {
		return "-"
	}
	return fmt.Sprintf(f+" ["+f+", "+f+"]", iv.Value, iv.Lo, iv.Hi)
}

func ciCSV(iv simulate.Interval) string {
	return csvFloat(iv.Value) + "," + csvFloat(iv.Lo) + "," + csvFloat(iv.Hi)
}

func writeSimRobustness(w io.Writer, format string, sim simInfo, r *simulate.RobustnessResult, e *models.EnergyResult) error {
	switch format {
	case "json":
		return writeJSON(w, simRobustnessDoc(sim, r, e))
	case "csv":
		fmt.Fprintln(w, "model,machine,p_by_beta,p_lo,p_hi,mean,mean_lo,mean_hi,q99,q99_lo,q99_hi")
		for _, m := range r.Machines {
			fmt.Fprintf(w, "%s,%s,%s,%s,%s\n", csvQuote(sim.Model), csvQuote(m.Name), ciCSV(m.PByBeta), ciCSV(m.Mean), ciCSV(m.Quantile))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "goal:       beta = %g, initial semantics\n\n", r.Beta)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\tP(F <= %g)\tE[F]\tq99\n", r.Beta)
	for _, m := range r.Machines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, ciText(m.PByBeta, "%.4f"), ciText(m.Mean, "%.4f"), ciText(m.Quantile, "%.4f"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "robustness min_j P(F_j <= %g):   %s  (Bonferroni over %d machines)\n", r.Beta, ciText(r.Robustness, "%.4f"), len(r.Machines))
	fmt.Fprintf(w, "P(max_j F_j <= %g):              %s\n", r.Beta, ciText(r.PAllByBeta, "%.4f"))
	fmt.Fprintf(w, "expected makespan E[max_j F_j]:  %s\n", ciText(r.ExpectedMakespan, "%.4f"))
	if r.Never > 0 {
		fmt.Fprintf(w, "\n%d replications had a machine that never finished (%d stopped at --max-events)\n", r.Never, r.Censored)
	}
	return nil
}

func writeSimPassage(w io.Writer, format string, sim simInfo, what string, r *simulate.PassageResult) error {
	switch format {
	case "json":
		return writeJSON(w, simPassageDoc(sim, what, r))
	case "csv":
		fmt.Fprintln(w, "t,cdf,cdf_lo,cdf_hi")
		for _, p := range r.Points {
			fmt.Fprintf(w, "%s,%s\n", fmtFloat(p.T), ciCSV(p.CDF))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "passage:    from the initial state to %s\n", what)
	fmt.Fprintf(w, "mean:       %s\n", ciText(r.Mean, "%.6g"))
	if r.Never+r.Censored > 0 {
		fmt.Fprintf(w, "            %d replications never reached the target, %d stopped at --max-events (both count as not yet)\n", r.Never, r.Censored)
	}
	fmt.Fprintf(w, "band:       the whole CDF is within %.4g of the estimates at once (DKW)\n\n", r.Band)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "t\tcdf [Wilson interval]")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%g\t%s\n", p.T, ciText(p.CDF, "%.4f"))
	}
	tw.Flush()
	if len(r.Quantiles) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "quantile\tt")
		for _, q := range r.Quantiles {
			fmt.Fprintf(tw, "%g\t%s\n", q.P, ciText(q.T, "%.6g"))
		}
		tw.Flush()
	}
	return nil
}

func writeSimSteady(w io.Writer, format string, sim simInfo, r *simulate.SteadyResult) error {
	switch format {
	case "json":
		return writeJSON(w, simSteadyDoc(sim, r))
	case "csv":
		fmt.Fprintln(w, "measure,component,name,value,lo,hi")
		for _, t := range r.Throughputs {
			fmt.Fprintf(w, "throughput,,%s,%s\n", csvQuote(t.Action), ciCSV(t.Interval))
		}
		for _, p := range r.Populations {
			fmt.Fprintf(w, "utilisation,%s,%s,%s\n", csvQuote(p.Component), csvQuote(p.State), ciCSV(p.Interval))
		}
		return nil
	}
	sim.header(w)
	fmt.Fprintf(w, "method:     batch means, %d streams x %d batches after a warm-up of up to %.4g time units", r.Streams, r.Batches, r.Warmup)
	if r.WarmupBatches > 0 {
		fmt.Fprintf(w, " and %d more batches per stream (detected)", r.WarmupBatches)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "action\tthroughput")
	for _, t := range r.Throughputs {
		fmt.Fprintf(tw, "%s\t%s\n", t.Action, ciText(t.Interval, "%.6g"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tlocal state\tpopulation")
	for _, p := range r.Populations {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Component, p.State, ciText(p.Interval, "%.6g"))
	}
	return tw.Flush()
}

// simRobustnessDoc is simulated robustness figures as JSON.
func simRobustnessDoc(sim simInfo, r *simulate.RobustnessResult, e *models.EnergyResult) map[string]any {
	var ms []map[string]any
	for _, m := range r.Machines {
		ms = append(ms, map[string]any{"name": m.Name,
			"p_by_beta": jsonFloat(m.PByBeta.Value), "p_by_beta_ci": ciJSON(m.PByBeta),
			"mean": jsonFloat(m.Mean.Value), "mean_ci": ciJSON(m.Mean),
			"q99": jsonFloat(m.Quantile.Value), "q99_ci": ciJSON(m.Quantile)})
	}
	doc := map[string]any{"model": sim.Model, "beta": r.Beta, "semantics": "initial", "simulation": sim,
		"machines": ms, "robustness": jsonFloat(r.Robustness.Value), "robustness_ci": ciJSON(r.Robustness),
		"p_all_by_beta": jsonFloat(r.PAllByBeta.Value), "p_all_by_beta_ci": ciJSON(r.PAllByBeta),
		"expected_makespan": jsonFloat(r.ExpectedMakespan.Value), "expected_makespan_ci": ciJSON(r.ExpectedMakespan),
		"unfinished": r.Never}
	if e != nil {
		doc["energy"] = energyJSON(e)
	}
	return doc
}

// simPassageDoc is a simulated passage as JSON.
func simPassageDoc(sim simInfo, what string, r *simulate.PassageResult) map[string]any {
	var pts, qs []map[string]any
	for _, p := range r.Points {
		pts = append(pts, map[string]any{"t": p.T, "cdf": p.CDF.Value, "cdf_ci": ciJSON(p.CDF)})
	}
	for _, q := range r.Quantiles {
		qs = append(qs, map[string]any{"p": q.P, "t": jsonFloat(q.T.Value), "t_ci": ciJSON(q.T)})
	}
	return map[string]any{"model": sim.Model, "semantics": "initial", "passage": what, "simulation": sim,
		"points": pts, "dkw_band": r.Band, "mean": jsonFloat(r.Mean.Value), "mean_ci": ciJSON(r.Mean),
		"quantiles": qs, "never": r.Never, "censored": r.Censored}
}

// simSteadyDoc is a simulated steady state as JSON.
func simSteadyDoc(sim simInfo, r *simulate.SteadyResult) map[string]any {
	var tps, pops []map[string]any
	for _, t := range r.Throughputs {
		tps = append(tps, map[string]any{"action": t.Action, "throughput": t.Value, "ci": ciJSON(t.Interval)})
	}
	for _, p := range r.Populations {
		pops = append(pops, map[string]any{"component": p.Component, "state": p.State, "population": p.Value, "ci": ciJSON(p.Interval)})
	}
	return map[string]any{"model": sim.Model, "simulation": sim, "streams": r.Streams, "batches_per_stream": r.Batches,
		"warmup": r.Warmup, "warmup_batches": r.WarmupBatches, "throughput": tps, "utilisation": pops}
}
