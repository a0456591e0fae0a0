package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"pepa/ctmc"
	"pepa/ctmc/steady"
)

func runSteady(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "steady", "steady [flags] FILE",
		`  pepa steady testdata/pc-lan.pepa                  throughputs and utilisations
  pepa steady --format csv -o lan.csv testdata/pc-lan.pepa
  pepa steady --method bicgstab --tolerance 1e-13 testdata/active-badge.pepa
  pepa steady --verbose testdata/fork.pepa
        two closed classes: the long-run distribution from the initial state; --verbose says which solver ran and why
  pepa steady --memory 2G --verbose testdata/pc-lan.pepa
        within 2 GiB of memory; --verbose prints the budget, where it came from, and the stages
`)
	var o outputFlags
	o.register(fs)
	tol := fs.Float64("tolerance", 1e-12, "gauss-seidel, bicgstab: iterate until the estimated error of every throughput, relative to itself, is at most `TOL` (floor 1e-13), and fail if it cannot; gth reports its estimate whatever it is")
	maxIter := fs.Int("max-iterations", 100000, "give up (with an error) after `N` BiCGSTAB iterations, or N sweeps of a forced gauss-seidel")
	omega := fs.Float64("omega", 1, "ignored (the former Gauss-Seidel solver's SOR factor; kept so scripts keep working)")
	method := fs.String("method", "auto", "`METHOD`: auto (per closed class: gth up to 2000 states, gauss-seidel above, bicgstab where the sweeps stall, and gth after all up to 16000 states if bicgstab cannot reach the tolerance; --verbose says which ran and why), gth (direct), gauss-seidel (sweeps over the chain in place), bicgstab (ILU(0)-preconditioned, iterative)")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	ctx, code = o.validate(ctx, e, "steady")
	if code >= 0 {
		return code
	}
	if len(files) != 1 {
		return usageError(e, "steady", "need exactly one model file")
	}
	if *tol <= 0 || *maxIter <= 0 || *omega <= 0 || *omega >= 2 {
		return usageError(e, "steady", "--tolerance and --max-iterations must be positive and --omega in (0, 2)")
	}
	var m0 string
	switch *method {
	case "auto":
	case steady.MethodDirect, steady.MethodIterative, steady.MethodSweeps:
		m0 = *method
	default:
		return usageError(e, "steady", "--method must be auto, gth, gauss-seidel or bicgstab")
	}
	name := files[0]
	timer := newStageTimer(o.verbose)
	m, code := loadModel(e, "steady", name)
	if code >= 0 {
		return code
	}
	timer.mark("load", "")
	c, code := deriveModel(ctx, e, "steady", name, m, &o)
	if code >= 0 {
		return code
	}
	timer.mark("compile and derive", derivedDetail(c, timer))
	if len(c.Deadlocks) > 0 {
		reportDeadlocks(e, name, c)
		return exitInvalid
	}
	res, err := steady.Solve(ctx, c, steady.Options{Tolerance: *tol, MaxIterations: *maxIter, Omega: *omega, Method: m0})
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return exitInvalid
	}
	tps := ctmc.Throughputs(c, res.Pi)
	uts := ctmc.Utilisations(c, res.Pi)
	timer.mark("steady state", fmt.Sprintf("%s, %d iterations", res.Method, res.Iterations))
	if o.verbose {
		fmt.Fprintf(e.stderr, "pepa steady: %s: solver: %s: %s\n", displayName(name), res.Method, res.Reason)
	}
	timer.print(e.stderr, "steady", displayName(name))
	err = writeOutput(e, o.out, func(w io.Writer) error {
		switch o.format {
		case "json":
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
			}{AbsError: res.AbsorptionError, Model: displayName(name), States: c.N, Transitions: c.NumTransitions(), Iterations: res.Iterations, Residual: res.Residual,
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
			return writeJSON(w, out)
		case "csv":
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
		fmt.Fprintf(w, "model:    %s\n", displayName(name))
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
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa steady: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// stateList lists up to max state numbers, then how many more.
func stateList(states []int32, max int) string {
	var b strings.Builder
	for k, i := range states {
		if k == max {
			fmt.Fprintf(&b, " ... (%d more)", len(states)-max)
			break
		}
		if k > 0 {
			b.WriteString(" ")
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}
