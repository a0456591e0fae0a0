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

func runStates(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "states", "states [flags] FILE",
		`  pepa states testdata/pc-lan.pepa                  state and transition counts
  pepa states --format json testdata/pc-lan.pepa    the same as JSON
  pepa states --export prism out/lan testdata/pc-lan.pepa
        write out/lan.tra, .sta, .lab for PRISM or Storm (out/ is created if missing)
  pepa states --stopped --export prism out/net testdata/coupled/shared-net.pepa
        the chain robustness --flat solves: every machine stops once finished (state 'finished')
`)
	var o outputFlags
	o.register(fs)
	export := fs.String("export", "", "export format: prism (writes PREFIX.tra, PREFIX.sta, PREFIX.lab; PREFIX is the argument after the format)")
	stopped := fs.Bool("stopped", false, "the model with every machine stopped once it has finished (semantics.md section 3), as robustness solves it; a machine's last local state is then 'finished'")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	ctx, code = o.validate(ctx, e, "states")
	if code >= 0 {
		return code
	}
	var prefix string
	if *export != "" {
		if *export != "prism" {
			return usageError(e, "states", "unknown --export format %q (want prism)", *export)
		}
		if len(files) != 2 {
			return usageError(e, "states", "--export prism needs a PREFIX and a model file: pepa states --export prism PREFIX FILE")
		}
		prefix, files = files[0], files[1:]
	}
	if len(files) != 1 {
		return usageError(e, "states", "need exactly one model file")
	}
	name := files[0]
	timer := newStageTimer(o.verbose)
	m, code := loadModel(e, "states", name)
	if code >= 0 {
		return code
	}
	timer.mark("load", "")
	s, code := compileModel(e, name, m, &o)
	if code >= 0 {
		return code
	}
	if *stopped {
		var err error
		if s, err = models.StopAll(s); err != nil {
			fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), err)
			return exitInvalid
		}
	}
	timer.mark("compile", "")
	c, code := deriveStructure(ctx, e, "states", name, s, &o)
	if code >= 0 {
		return code
	}
	timer.mark("derive", derivedDetail(c, timer))
	if prefix != "" {
		// The prefix's directory is created, as -o's callers expect of
		// a path they name.
		if dir := filepath.Dir(prefix); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
				return exitInvalid
			}
		}
		for _, part := range []struct {
			ext   string
			write func(io.Writer, *ctmc.Chain) error
		}{{".tra", ctmc.WritePrismTra}, {".sta", ctmc.WritePrismSta}, {".lab", ctmc.WritePrismLab}} {
			if err := writeOutput(e, prefix+part.ext, func(w io.Writer) error { return part.write(w, c) }); err != nil {
				fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
				return exitInvalid
			}
		}
		timer.mark("export", "")
	}
	aggregation := "off"
	if o.aggregate {
		aggregation = "on (no array to aggregate)"
		if c.S.Aggregated {
			aggregation = "on (copies of arrays counted)"
		}
	}
	err := writeOutput(e, o.out, func(w io.Writer) error {
		switch o.format {
		case "json":
			return writeJSON(w, map[string]any{
				"model": displayName(name), "states": c.N, "transitions": c.NumTransitions(),
				"deadlocks": len(c.Deadlocks), "aggregated": c.S.Aggregated, "components": len(c.S.Leaves),
			})
		case "csv":
			fmt.Fprintln(w, "model,states,transitions,deadlocks,aggregated,components")
			fmt.Fprintf(w, "%s,%d,%d,%d,%v,%d\n", csvQuote(displayName(name)), c.N, c.NumTransitions(), len(c.Deadlocks), c.S.Aggregated, len(c.S.Leaves))
			return nil
		}
		fmt.Fprintf(w, "model:        %s\n", displayName(name))
		fmt.Fprintf(w, "states:       %d\n", c.N)
		fmt.Fprintf(w, "transitions:  %d\n", c.NumTransitions())
		fmt.Fprintf(w, "deadlocks:    %d\n", len(c.Deadlocks))
		fmt.Fprintf(w, "components:   %d\n", len(c.S.Leaves))
		fmt.Fprintf(w, "aggregation:  %s\n", aggregation)
		if prefix != "" {
			fmt.Fprintf(w, "exported:     %s.tra, %s.sta, %s.lab\n", prefix, prefix, prefix)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa states: %v\n", err)
		return exitInvalid
	}
	timer.print(e.stderr, "states", displayName(name))
	if len(c.Deadlocks) > 0 && !(*stopped && allFinished(c)) {
		reportDeadlocks(e, name, c)
		return exitInvalid
	}
	return exitOK
}

// allFinished reports whether every deadlock of a stopped model is a
// state where every machine has finished (and nothing else moves): the end
// of the batch, not a fault of the model.
func allFinished(c *ctmc.Chain) bool {
	for _, d := range c.Deadlocks {
		for _, l := range c.S.Leaves {
			if l.NumLocal > 1 && l.Counts == nil && l.LocalName(l.Local(c.State(int(d)))) != ctmc.FinishedState && l.LocalName(l.NumLocal-1) == ctmc.FinishedState {
				return false
			}
		}
	}
	return true
}
