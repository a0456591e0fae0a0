package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"pepa/cmd/pepa/internal/render"
	"pepa/ctmc"
)

// outputFlags are the flags every analysis verb shares.
type outputFlags struct {
	format    string
	out       string
	maxStates int
	aggregate bool
	verbose   bool // a stage timing line on standard error
	memory    memoryFlag
	// separateRates compiles with ctmc.Options.SeparateRates, which
	// derivatives with respect to rates need.
	separateRates bool
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "format", "text", "output format: text, json or csv")
	fs.StringVar(&o.out, "o", "", "write the result to `FILE` (atomically) instead of standard output")
	fs.IntVar(&o.maxStates, "max-states", 0, "refuse models with more than `N` states, failing early with \"model too large\"; it also bounds the\n"+
		"sequential components, an aggregated array's count vectors and one state's transitions (4N, at least 65536). 0: the\n"+
		"memory budget (--memory) divided by 160 bytes, what a derived state with about 8 transitions costs (measured: 823,543\n"+
		"states, 6.59M transitions, 127 MB peak); the solvers' vectors are checked against the budget when they are made")
	o.memory.register(fs)
	fs.BoolVar(&o.verbose, "verbose", false, "print the memory budget and how long each stage took (load, compile, derive, solve) on standard error")
	fs.BoolVar(&o.aggregate, "aggregate", true, "count identical copies of arrays P[n] instead of keeping each copy (same results, fewer states)")
}

// validate checks the flags, sets the memory budget (and --max-states
// from it, unless given) and returns ctx carrying the budget, or a
// non-negative exit code.
func (o *outputFlags) validate(ctx context.Context, e *env, verb string) (context.Context, int) {
	switch o.format {
	case "text", "json", "csv":
	default:
		return ctx, usageError(e, verb, "unknown --format %q (want text, json or csv)", o.format)
	}
	if o.maxStates < 0 {
		return ctx, usageError(e, verb, "--max-states must be positive")
	}
	ctx, code := o.memory.resolve(ctx, e, verb)
	if code >= 0 {
		return ctx, code
	}
	if o.maxStates == 0 {
		o.maxStates, o.memory.defaulted = statesFor(o.memory.budget), true
	}
	if o.verbose {
		fmt.Fprintf(e.stderr, "pepa %s: %s\n", verb, o.memory.describeBudget(o.maxStates))
	}
	return ctx, -1
}

// writeOutput sends the result to -o (via a temporary file renamed into
// place) or to standard output.
func writeOutput(e *env, path string, write func(w io.Writer) error) error {
	if path == "" || path == "-" {
		bw := bufio.NewWriter(e.stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return writeFileAtomicFunc(path, write)
}

// writeJSON is the JSON every verb prints (render.WriteJSON).
func writeJSON(w io.Writer, v any) error { return render.WriteJSON(w, v) }

// reportDeadlocks prints the deadlocked states (at most a few) as errors.
func reportDeadlocks(e *env, name string, c *ctmc.Chain) {
	fmt.Fprintln(e.stderr, deadlockLines(name, c))
}

// deadlockLines are the deadlocked states (at most five) as error lines.
func deadlockLines(name string, c *ctmc.Chain) string {
	var lines []string
	for k, d := range c.Deadlocks {
		if k == 5 {
			lines = append(lines, fmt.Sprintf("%s: error: ... and %d more deadlocked states", displayName(name), len(c.Deadlocks)-5))
			break
		}
		lines = append(lines, fmt.Sprintf("%s: error: deadlock in state %d: %s", displayName(name), d, c.StateString(int(d))))
	}
	return strings.Join(lines, "\n")
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
