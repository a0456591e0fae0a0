package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"pepa/ctmc"
)

func runSteady(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "steady", "steady [flags] FILE",
		`  pepa steady testdata/pc-lan.pepa                  throughputs and utilisations
  pepa steady --format csv -o lan.csv testdata/pc-lan.pepa
  pepa steady --method bicgstab --tolerance 1e-13 testdata/active-badge.pepa
  pepa steady --memory 2G --verbose testdata/pc-lan.pepa
        within 2 GiB of memory; --verbose prints the budget, where it came from, and the stages
`)
	var o outputFlags
	o.register(fs)
	tol := fs.Float64("tolerance", 1e-12, "bicgstab: refine until the estimated error of every throughput, relative to itself, is at most `TOL` (floor 1e-13), and fail if it cannot; gth reports its estimate whatever it is")
	maxIter := fs.Int("max-iterations", 100000, "give up (with an error) after `N` BiCGSTAB iterations (iterative method)")
	omega := fs.Float64("omega", 1, "ignored (the former Gauss-Seidel solver's SOR factor; kept so scripts keep working)")
	method := fs.String("method", "auto", "`METHOD`: auto (gth up to 2000 states in the closed class, bicgstab above, and gth after all up to 16000 states if bicgstab cannot reach the tolerance), gth (direct), bicgstab (iterative)")
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
	case ctmc.MethodDirect, ctmc.MethodIterative:
		m0 = *method
	default:
		return usageError(e, "steady", "--method must be auto, gth or bicgstab")
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
	res, err := ctmc.Steady(ctx, c, ctmc.SteadyOptions{Tolerance: *tol, MaxIterations: *maxIter, Omega: *omega, Method: m0})
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
		return exitInvalid
	}
	tps := ctmc.Throughputs(c, res.Pi)
	uts := ctmc.Utilisations(c, res.Pi)
	timer.mark("steady state", fmt.Sprintf("%d sweeps", res.Iterations))
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
			}{Model: displayName(name), States: c.N, Transitions: c.NumTransitions(), Iterations: res.Iterations, Residual: res.Residual,
				Method: res.Method, Closed: res.ClosedStates, Transient: res.Transient, MaxError: res.MaxThroughputError, ErrorKind: ctmc.ErrorBoundKind}
			for _, t := range tps {
				out.Throughput = append(out.Throughput, tp{t.Action, t.Value, res.ThroughputError[t.Action]})
			}
			for _, u := range uts {
				out.Utilisation = append(out.Utilisation, ut{u.Component, u.State, u.Value})
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
			return nil
		}
		fmt.Fprintf(w, "model:    %s\n", displayName(name))
		fmt.Fprintf(w, "states:   %d (%d transitions)\n", c.N, c.NumTransitions())
		if res.Transient > 0 {
			fmt.Fprintf(w, "closed:   %d states in the closed class, %d transient states (probability 0)\n", res.ClosedStates, res.Transient)
		}
		switch res.Method {
		case ctmc.MethodDirect:
			fmt.Fprintf(w, "solver:   GTH state reduction (direct)\n")
		default:
			fmt.Fprintf(w, "solver:   BiCGSTAB with ILU(0) (iterative), %d iterations\n", res.Iterations)
		}
		fmt.Fprintf(w, "accuracy: estimated error of every throughput at most %.2g relative to itself (%s)\n\n", res.MaxThroughputError, ctmc.ErrorBoundKind)
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
