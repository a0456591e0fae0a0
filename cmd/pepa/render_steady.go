package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"pepa/ctmc/steady"
)

// document is what --format json prints of a steady state.
func (a *steadyCmd) document(result any) any {
	o := result.(*steady.Report)
	c, res, tps, uts := o.Chain, o.Result, o.Throughputs, o.Utilisations
	type tp struct {
		Action        string  `json:"action"`
		Throughput    float64 `json:"throughput"`
		RelativeError float64 `json:"relative_error"`
	}
	type ut struct {
		Component  string  `json:"component"`
		State      string  `json:"state"`
		Population float64 `json:"population"`
	}
	type class struct {
		Name        string  `json:"name"`
		States      []int32 `json:"states"`
		Probability float64 `json:"probability"`
		Method      string  `json:"method"`
		Iterations  int     `json:"iterations"`
		MaxError    float64 `json:"max_relative_error"`
	}
	out := struct {
		Model       string  `json:"model"`
		States      int     `json:"states"`
		Transitions int     `json:"transitions"`
		Iterations  int     `json:"iterations"`
		Residual    float64 `json:"residual"`
		Method      string  `json:"method"`
		Closed      int     `json:"closed_states"`
		Transient   int     `json:"transient_states"`
		MaxError    float64 `json:"max_relative_error"`
		ErrorKind   string  `json:"error_kind"`
		Throughput  []tp    `json:"throughput"`
		Utilisation []ut    `json:"utilisation"`
		Classes     []class `json:"closed_classes,omitempty"`
		AbsError    float64 `json:"class_probability_relative_error,omitempty"`
	}{AbsError: res.AbsorptionError, Model: displayName(a.files[0]), States: c.N, Transitions: c.NumTransitions(), Iterations: res.Iterations, Residual: res.Residual,
		Method: res.Method, Closed: res.ClosedStates, Transient: res.Transient, MaxError: res.MaxThroughputError, ErrorKind: steady.ErrorBoundKind}
	for _, t := range tps {
		out.Throughput = append(out.Throughput, tp{t.Action, t.Value, res.ThroughputError[t.Action]})
	}
	for _, u := range uts {
		out.Utilisation = append(out.Utilisation, ut{u.Component, u.State, u.Value})
	}
	for _, cr := range res.Classes {
		out.Classes = append(out.Classes, class{cr.Name, cr.States, cr.Probability, cr.Method, cr.Iterations, cr.MaxThroughputError})
	}
	return out
}

// steadyCSV is the measures as CSV, a row each.
func steadyCSV(w io.Writer, o *steady.Report) error {
	res, tps, uts := o.Result, o.Throughputs, o.Utilisations
	fmt.Fprintln(w, "measure,component,name,value")
	for _, t := range tps {
		fmt.Fprintf(w, "throughput,,%s,%s\n", csvQuote(t.Action), fmtFloat(t.Value))
	}
	for _, t := range tps {
		fmt.Fprintf(w, "throughput_relative_error,,%s,%s\n", csvQuote(t.Action), fmtFloat(res.ThroughputError[t.Action]))
	}
	for _, u := range uts {
		fmt.Fprintf(w, "utilisation,%s,%s,%s\n", csvQuote(u.Component), csvQuote(u.State), fmtFloat(u.Value))
	}
	for _, cr := range res.Classes {
		fmt.Fprintf(w, "class_probability,,%s,%s\n", csvQuote(cr.Name), fmtFloat(cr.Probability))
	}
	return nil
}

// steadyText is the steady state as text: the chain, how it was solved,
// the throughputs and the populations.
func steadyText(w io.Writer, name string, o *steady.Report) error {
	c, res, tps, uts := o.Chain, o.Result, o.Throughputs, o.Utilisations
	fmt.Fprintf(w, "model:    %s\n", name)
	fmt.Fprintf(w, "states:   %d (%d transitions)\n", c.N, c.NumTransitions())
	switch {
	case len(res.Classes) > 0:
		fmt.Fprintf(w, "closed:   %d closed classes (%d states), %d transient states (probability 0); the long-run distribution from the initial state\n", len(res.Classes), res.ClosedStates, res.Transient)
		fmt.Fprintf(w, "          (estimated error of the class probabilities %.2g relative to themselves)\n", res.AbsorptionError)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  class\tstates\tprobability\tsuch as\tstate numbers")
		for k, cr := range res.Classes {
			fmt.Fprintf(tw, "  %d\t%d\t%.10g\t(%s)\t%s\n", k+1, len(cr.States), cr.Probability, cr.Name, stateList(cr.States, 8))
		}
		tw.Flush()
	case res.Transient > 0:
		fmt.Fprintf(w, "closed:   %d states in the closed class, %d transient states (probability 0)\n", res.ClosedStates, res.Transient)
	}
	switch res.Method {
	case steady.MethodDirect:
		fmt.Fprintf(w, "solver:   GTH state reduction (direct)\n")
	case steady.MethodSparse:
		fmt.Fprintf(w, "solver:   sparse GTH state reduction (direct, nested dissection, scaled probabilities)\n")
	case steady.MethodSweeps:
		fmt.Fprintf(w, "solver:   Gauss-Seidel sweeps (iterative), %d sweeps\n", res.Iterations)
	default:
		fmt.Fprintf(w, "solver:   BiCGSTAB with ILU(0) (iterative), %d iterations\n", res.Iterations)
	}
	fmt.Fprintf(w, "accuracy: estimated error of every throughput at most %.2g relative to itself (%s)\n\n", res.MaxThroughputError, steady.ErrorBoundKind)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "action\tthroughput\trelative error (est.)")
	for _, t := range tps {
		fmt.Fprintf(tw, "%s\t%.10g\t%.2g\n", t.Action, t.Value, res.ThroughputError[t.Action])
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tlocal state\tpopulation")
	for _, u := range uts {
		fmt.Fprintf(tw, "%s\t%s\t%.10g\n", u.Component, u.State, u.Value)
	}
	return tw.Flush()
}
