package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	_ "pepa/internal/leanc" // the C runtime, when net links it, kept small under ulimit -v
)

// Exit codes shared by every verb (the contract in cli.md).
const (
	exitOK          = 0
	exitInvalid     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// verb is one sub-command.
type verb struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

var verbs = map[string]verb{
	"check":      {"parse and statically check models", runCheck},
	"fmt":        {"print or rewrite models in canonical layout", runFmt},
	"states":     {"derive the CTMC, print its size, export it for PRISM", runStates},
	"steady":     {"steady state: throughput per action, utilisation per local state", runSteady},
	"passage":    {"passage-time CDF (and PDF, mean, quantiles) over a time grid", runPassage},
	"robustness": {"per-machine finishing times and mapping robustness; several files are ranked", runRobustness},
	"simulate":   {"estimate passages, robustness or steady state by simulation, with confidence intervals", runSimulate},
	"sweep":      {"vary rate constants over a grid and collect any verb's measures, with crossing points", runSweep},
	"merge":      {"merge the shard files of a simulate or sweep run into what the whole run prints", runMerge},
	"gen":        {"write mapping models (.pepa) from a mapping specification", runGen},
	"optimize":   {"search for the most robust mapping of a specification", runOptimize},
	"serve":      {"answer a controller over HTTP: robustness conditioned on observed completions, and a page", runServe},
	"fluid":      {"fluid (ODE) analysis of populations: time series, fluid steady state, throughputs, a tagged copy's passage", runFluid},
}

// env is what a verb may touch: its streams.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stderrTerminal bool // show progress on long runs
	// start is when the command started (run sets it): a --budget is the
	// whole command's time.
	start time.Time
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrTerminal: isTerminal(os.Stderr)}
	os.Exit(run(ctx, e, os.Args[1:]))
}

func run(ctx context.Context, e *env, args []string) int {
	if e.start.IsZero() {
		e.start = time.Now()
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			v, ok := verbs[args[1]]
			if !ok {
				fmt.Fprintf(e.stderr, "pepa: unknown verb %q\n", args[1])
				usage(e.stderr)
				return exitUsage
			}
			return v.run(ctx, e, []string{"--help"})
		}
		if len(args) == 0 { // bad usage: the usage goes to stderr
			usage(e.stderr)
			return exitUsage
		}
		usage(e.stdout)
		return exitOK
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "pepa: unknown verb %q\n", args[0])
		usage(e.stderr)
		return exitUsage
	}
	// A verb sets the runtime's soft memory limit from its budget; it is
	// restored for the next run in the same process (tests, sweep).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	code := v.run(ctx, e, args[1:])
	if ctx.Err() != nil && code != exitOK {
		return exitInterrupted
	}
	return code
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "pepa: a compiler and solver for PEPA models of parallel applications on shared machines")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: pepa VERB [flags] FILE...")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Verbs:")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'pepa VERB --help' for a verb's flags and examples.")
	fmt.Fprint(w, docsPointer)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// readInput reads a model file, or standard input for "-".
func readInput(e *env, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(e.stdin)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", name, pe.Err)
		}
		return nil, err
	}
	return b, nil
}

// displayName is the name used in diagnostics for an input.
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// usageError prints a usage problem in the common form and returns exitUsage.
func usageError(e *env, verb, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(e.stderr, "pepa %s: %s\n", verb, strings.TrimSpace(msg))
	fmt.Fprintf(e.stderr, "Run 'pepa %s --help' for usage.\n", verb)
	return exitUsage
}
