package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"pepa/ctmc"
	"pepa/models"
)

// statesCmd is 'pepa states': a model's chain, its size, and its export.
type statesCmd struct {
	analysisBase
	prefix  string // --export prism PREFIX
	stopped bool
}

// statesOutcome is a derived chain, and whether its deadlocks are all
// the end of a batch (--stopped).
type statesOutcome struct {
	c        *ctmc.Chain
	batchEnd bool
}

func runStates(ctx context.Context, e *env, args []string) int {
	a, ctx, code := parseStates(ctx, e, args)
	if code >= 0 {
		return code
	}
	return runAnalysis(ctx, e, a)
}

func parseStates(ctx context.Context, e *env, args []string) (*statesCmd, context.Context, int) {
	fs := newFlags(e, "states", "states [flags] FILE",
		`  pepa states testdata/pc-lan.pepa                  state and transition counts
  pepa states --format json testdata/pc-lan.pepa    the same as JSON
  pepa states --export prism out/lan testdata/pc-lan.pepa
        write out/lan.tra, .sta, .lab for PRISM or Storm (out/ is created if missing)
  pepa states --stopped --export prism out/net testdata/coupled/shared-net.pepa
        the chain robustness --flat solves: every machine stops once finished (state 'finished')
`)
	a := &statesCmd{analysisBase: analysisBase{verb: "states"}}
	a.o.register(fs)
	export := fs.String("export", "", "export format: prism (writes PREFIX.tra, PREFIX.sta, PREFIX.lab; PREFIX is the argument after the format)")
	fs.BoolVar(&a.stopped, "stopped", false, "the model with every machine stopped once it has finished (semantics.md section 3), as robustness solves it; a machine's last local state is then 'finished'")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return nil, ctx, code
	}
	if ctx, code = a.o.validate(ctx, e, "states"); code >= 0 {
		return nil, ctx, code
	}
	c := &checker{e: e, verb: "states"}
	if *export != "" {
		c.require(*export == "prism", "unknown --export format %q (want prism)", *export)
		c.require(len(files) == 2, "--export prism needs a PREFIX and a model file: pepa states --export prism PREFIX FILE")
		if !c.failed() {
			a.prefix, files = files[0], files[1:]
		}
	}
	c.require(len(files) == 1, "need exactly one model file")
	if c.failed() {
		return nil, ctx, c.code
	}
	a.files = files
	return a, ctx, -1
}

func (a *statesCmd) solve(ctx context.Context, e *env, in []models.Input, derive deriver) (any, error) {
	req := models.ChainRequest{Compile: ctmc.Options{Aggregate: a.o.aggregate, MaxStates: a.o.maxStates}, Stopped: a.stopped,
		Derive: func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) { return derive(ctx, 0, s) }}
	if t := a.timer(); t != nil {
		req.Stage = t.mark
	}
	r, err := models.Chain(ctx, in[0].Model, req)
	if err != nil {
		return nil, err
	}
	return &statesOutcome{c: r.Chain, batchEnd: r.BatchEnd}, nil
}

// document is what --format json prints of a chain.
func (a *statesCmd) document(result any) any {
	c := result.(*statesOutcome).c
	return map[string]any{
		"model": displayName(a.files[0]), "states": c.N, "transitions": c.NumTransitions(),
		"deadlocks": len(c.Deadlocks), "aggregated": c.S.Aggregated, "components": len(c.S.Leaves),
	}
}

func (a *statesCmd) render(e *env, result any) int {
	out := result.(*statesOutcome)
	c, name := out.c, displayName(a.files[0])
	if a.prefix != "" {
		if code := a.exportPrism(e, c); code >= 0 {
			return code
		}
		a.timer().mark("export", "")
	}
	a.timer().print(e.stderr, "states", name)
	aggregation := "off"
	if a.o.aggregate {
		aggregation = "on (no array to aggregate)"
		if c.S.Aggregated {
			aggregation = "on (copies of arrays counted)"
		}
	}
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch a.o.format {
		case "json":
			return writeJSON(w, a.document(out))
		case "csv":
			fmt.Fprintln(w, "model,states,transitions,deadlocks,aggregated,components")
			fmt.Fprintf(w, "%s,%d,%d,%d,%v,%d\n", csvQuote(name), c.N, c.NumTransitions(), len(c.Deadlocks), c.S.Aggregated, len(c.S.Leaves))
			return nil
		}
		fmt.Fprintf(w, "model:        %s\n", name)
		fmt.Fprintf(w, "states:       %d\n", c.N)
		fmt.Fprintf(w, "transitions:  %d\n", c.NumTransitions())
		fmt.Fprintf(w, "deadlocks:    %d\n", len(c.Deadlocks))
		fmt.Fprintf(w, "components:   %d\n", len(c.S.Leaves))
		fmt.Fprintf(w, "aggregation:  %s\n", aggregation)
		if a.prefix != "" {
			fmt.Fprintf(w, "exported:     %s.tra, %s.sta, %s.lab\n", a.prefix, a.prefix, a.prefix)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
		return exitInvalid
	}
	if len(c.Deadlocks) > 0 && !out.batchEnd {
		reportDeadlocks(e, name, c)
		return exitInvalid
	}
	return exitOK
}

// exportPrism writes the chain as PRISM's .tra, .sta and .lab, creating
// the prefix's directory, as -o's callers expect of a path they name.
func (a *statesCmd) exportPrism(e *env, c *ctmc.Chain) int {
	if dir := filepath.Dir(a.prefix); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
			return exitInvalid
		}
	}
	for _, part := range []struct {
		ext   string
		write func(io.Writer, *ctmc.Chain) error
	}{{".tra", ctmc.WritePrismTra}, {".sta", ctmc.WritePrismSta}, {".lab", ctmc.WritePrismLab}} {
		if err := writeOutput(e, a.prefix+part.ext, func(w io.Writer) error { return part.write(w, c) }); err != nil {
			fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
			return exitInvalid
		}
	}
	return -1
}
