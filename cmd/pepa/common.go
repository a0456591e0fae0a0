package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"pepa/ctmc"
	"pepa/lang"
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// loadModel reads, parses and checks one model, printing diagnostics. It
// returns a non-negative exit code on failure.
func loadModel(e *env, verb, name string) (*lang.Model, int) {
	m, _, code := loadModelSource(e, verb, name)
	return m, code
}

// loadModelSource is loadModel that also returns the model's text.
func loadModelSource(e *env, verb, name string) (*lang.Model, []byte, int) {
	src, err := readInput(e, name)
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa %s: %v\n", verb, err)
		return nil, nil, exitUsage
	}
	m, diags := lang.Load(displayName(name), src)
	printDiags(e, diags, true)
	if m == nil {
		return nil, nil, exitInvalid
	}
	return m, src, -1
}

// compileModel compiles a checked model.
func compileModel(e *env, name string, m *lang.Model, o *outputFlags) (*ctmc.Structure, int) {
	s, err := ctmc.Compile(m, ctmc.Options{Aggregate: o.aggregate, MaxStates: o.maxStates, SeparateRates: o.separateRates})
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), o.memory.explainLimit(err))
		return nil, exitInvalid
	}
	return s, -1
}

// deriveModel compiles and derives a model's chain, with progress on a
// terminal.
func deriveModel(ctx context.Context, e *env, verb, name string, m *lang.Model, o *outputFlags) (*ctmc.Chain, int) {
	s, code := compileModel(e, name, m, o)
	if code >= 0 {
		return nil, code
	}
	return deriveStructure(ctx, e, verb, name, s, o)
}

// deriveStructure derives a compiled model's chain.
func deriveStructure(ctx context.Context, e *env, verb, name string, s *ctmc.Structure, o *outputFlags) (*ctmc.Chain, int) {
	opt := ctmc.DeriveOptions{MaxStates: o.maxStates}
	if e.stderrTerminal {
		opt.Progress = func(n int, d time.Duration) {
			fmt.Fprintf(e.stderr, "\rderiving %s: %d states (%.0f states/s)   ", displayName(name), n, float64(n)/d.Seconds())
		}
	}
	derive := func(s *ctmc.Structure) (*ctmc.Chain, error) { return ctmc.Derive(ctx, s, opt) }
	var c *ctmc.Chain
	var err error
	if key, ok := e.chainKey[name]; ok && e.chains != nil {
		c, err = e.chains.Chain(ctx, key, s, derive)
	} else {
		c, err = derive(s)
	}
	if e.stderrTerminal {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "pepa %s: interrupted\n", verb)
			return nil, exitInterrupted
		}
		fmt.Fprintf(e.stderr, "%s: error: %v\n", displayName(name), o.memory.explainLimit(err))
		return nil, exitInvalid
	}
	return c, -1
}

// reportDeadlocks prints the deadlocked states (at most a few) as errors.
func reportDeadlocks(e *env, name string, c *ctmc.Chain) {
	for k, d := range c.Deadlocks {
		if k == 5 {
			fmt.Fprintf(e.stderr, "%s: error: ... and %d more deadlocked states\n", displayName(name), len(c.Deadlocks)-5)
			break
		}
		fmt.Fprintf(e.stderr, "%s: error: deadlock in state %d: %s\n", displayName(name), d, c.StateString(int(d)))
	}
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
