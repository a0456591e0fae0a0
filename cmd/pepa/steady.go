package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/models"
)

// steadyCmd is 'pepa steady': the long-run distribution of one model and
// its measures.
type steadyCmd struct {
	analysisBase
	opt steady.Options
}

func runSteady(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parseSteady(ctx, e, args)
	if code >= 0 {
		return code
	}
	return runAnalysis(ctx, e, a)
}

func parseSteady(ctx context.Context, e *env, args []string) (*steadyCmd, context.Context, int) {
	fs := newFlags(e, "steady", "steady [flags] FILE",
		`  pepa steady testdata/pc-lan.pepa                  throughputs and utilisations
  pepa steady --format csv -o lan.csv testdata/pc-lan.pepa
  pepa steady --method bicgstab --tolerance 1e-13 testdata/active-badge.pepa
  pepa steady --verbose testdata/fork.pepa
        two closed classes: the long-run distribution from the initial state; --verbose says which solver ran and why
  pepa steady --memory 2G --verbose testdata/pc-lan.pepa
        within 2 GiB of memory; --verbose prints the budget, where it came from, and the stages
`)
	a := &steadyCmd{analysisBase: analysisBase{verb: "steady"}}
	a.o.register(fs)
	fs.Float64Var(&a.opt.Tolerance, "tolerance", 1e-12, "gauss-seidel, bicgstab: iterate until the estimated error of every throughput, relative to itself, is at most `TOL` (floor 1e-13), and fail if it cannot; gth and sparse-gth report their estimate whatever it is")
	fs.IntVar(&a.opt.MaxIterations, "max-iterations", 100000, "give up (with an error) after `N` BiCGSTAB iterations, or N sweeps of a forced gauss-seidel")
	fs.Float64Var(&a.opt.Omega, "omega", 1, "ignored (the former Gauss-Seidel solver's SOR factor; kept so scripts keep working)")
	method := fs.String("method", "auto", "`METHOD`: auto (per closed class: gth up to 2000 states; above, in turn, sparse-gth first when its predicted work is small, gauss-seidel, sparse-gth, bicgstab, then sparse-gth whatever its work; each failure (no convergence, a breakdown, probabilities beyond float64, the memory budget) hands over to the next; --verbose says which ran and why each before failed), gth (dense direct), sparse-gth (direct by nested dissection, probabilities kept with their own exponents), gauss-seidel (sweeps over the chain in place), bicgstab (ILU(0)-preconditioned, iterative)")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	a.files = files
	if ctx, code = a.o.validate(ctx, e, "steady"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "steady"}
	c.require(len(files) == 1, "need exactly one model file")
	c.require(a.opt.Tolerance > 0 && a.opt.MaxIterations > 0 && a.opt.Omega > 0 && a.opt.Omega < 2, "--tolerance and --max-iterations must be positive and --omega in (0, 2)")
	c.oneOf("--method", *method, "auto", steady.MethodDirect, steady.MethodSparse, steady.MethodSweeps, steady.MethodIterative)
	if c.failed() {
		return nil, ctx, c.code
	}
	if *method != "auto" {
		a.opt.Method = *method
	}
	return a, ctx, -1
}

func (a *steadyCmd) solve(ctx context.Context, e *env, in []models.Input, derive deriver) (any, error) {
	out, err := steady.Analyze(ctx, in[0].Model, steady.Request{
		Compile: ctmc.Options{Aggregate: a.o.aggregate, MaxStates: a.o.maxStates},
		Derive:  func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) { return derive(ctx, 0, s) },
		Solve:   a.opt,
	})
	if err != nil {
		return nil, err
	}
	a.timer().mark("steady state", fmt.Sprintf("%s, %d iterations", out.Result.Method, out.Result.Iterations))
	return out, nil
}

func (a *steadyCmd) render(e *env, result any) int {
	out := result.(*steady.Report)
	res := out.Result
	name := displayName(a.files[0])
	if a.o.verbose {
		fmt.Fprintf(e.stderr, "pepa steady: %s: solver: %s: %s\n", name, res.Method, res.Reason)
	}
	a.timer().print(e.stderr, "steady", name)
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch a.o.format {
		case "json":
			return writeJSON(w, a.document(out))
		case "csv":
			return steadyCSV(w, out)
		}
		return steadyText(w, name, out)
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
