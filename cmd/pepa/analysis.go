package main

import (
	"context"
	"errors"
	"fmt"
	"pepa/ctmc/steady"
	"time"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/models"
	"pepa/models/observe"
)

// An analysis is a verb that solves models (robustness, steady, passage,
// states, simulate): its flags, parsed and checked into a value of its own
// type; one library call on the loaded models (solve); and a renderer
// (render, with document for --format json). sweep parses the same flags
// and calls solve at every point of its grid with that point's models.
type analysis interface {
	base() *analysisBase
	// solve makes the verb's one library call on the models (checked, in
	// the order of the files), deriving product chains with derive.
	solve(ctx context.Context, e *env, in []models.Input, derive deriver) (any, error)
	// document is the result as --format json prints it.
	document(result any) any
	// render writes the result in the chosen format (and warnings on
	// standard error) and returns the exit code.
	render(e *env, result any) int
}

// analysisBase is what every analysis verb has: its name, its model files
// and the common flags; timers, one per model, for --verbose.
type analysisBase struct {
	verb    string
	files   []string
	o       outputFlags
	timers  []*stageTimer
	sources [][]byte // the model files' text, for shard headers
}

func (b *analysisBase) base() *analysisBase { return b }

// deriver derives the chain of s, the structure of model k (the k-th
// file), with the verb's limits; a sweep's derives each model once.
type deriver func(ctx context.Context, k int, s *ctmc.Structure) (*ctmc.Chain, error)

// runAnalysis runs a parsed analysis verb: it loads the models, makes
// the one call and renders the result.
func runAnalysis(ctx context.Context, e *env, a analysis) int {
	b := a.base()
	in, code := loadInputs(e, b)
	if code >= 0 {
		return code
	}
	r, err := a.solve(ctx, e, in, cliDeriver(e, b))
	if err != nil {
		return b.fail(ctx, e, err)
	}
	return a.render(e, r)
}

// loadInputs reads, parses and checks every model file, printing the
// diagnostics, and starts each model's stage timer.
func loadInputs(e *env, b *analysisBase) ([]models.Input, int) {
	var in []models.Input
	b.timers = make([]*stageTimer, len(b.files))
	for k, name := range b.files {
		b.timers[k] = newStageTimer(b.o.verbose)
		m, src, code := loadModelSource(e, b.verb, name)
		if code >= 0 {
			return nil, code
		}
		b.sources = append(b.sources, src)
		b.timers[k].mark("load", "")
		in = append(in, models.Input{Name: displayName(name), Model: m})
	}
	return in, -1
}

// cliDeriver derives a chain within the verb's --max-states, with
// progress on a terminal, marking the derive stage.
func cliDeriver(e *env, b *analysisBase) deriver {
	return func(ctx context.Context, k int, s *ctmc.Structure) (*ctmc.Chain, error) {
		opt := ctmc.DeriveOptions{MaxStates: b.o.maxStates}
		if e.stderrTerminal {
			name := displayName(b.files[k])
			opt.Progress = func(n int, d time.Duration) {
				fmt.Fprintf(e.stderr, "\rderiving %s: %d states (%.0f states/s)   ", name, n, float64(n)/d.Seconds())
			}
			defer fmt.Fprint(e.stderr, "\r\033[K")
		}
		c, err := ctmc.Derive(ctx, s, opt)
		if err == nil && k < len(b.timers) {
			b.timers[k].mark("derive", derivedDetail(c, b.timers[k]))
		}
		return c, err
	}
}

// fail reports an analysis's failure (message) and returns the exit
// code.
func (b *analysisBase) fail(ctx context.Context, e *env, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "pepa %s: interrupted\n", b.verb)
		return exitInterrupted
	}
	fmt.Fprintln(e.stderr, b.message(err))
	return exitInvalid
}

// message is an analysis's failure as diagnostics: FILE: error: MESSAGE (a
// malformed pragma names its own position; a chain with deadlocks lists
// them), with what helps when the chain passes a --max-states that came
// from the memory budget.
func (b *analysisBase) message(err error) string {
	var pe *models.PragmaError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	var ee *observe.EventError
	if errors.As(err, &ee) && ee.File != "" {
		return ee.Error() // a record's row names its own file and line
	}
	name := ""
	if len(b.files) > 0 {
		name = displayName(b.files[0])
	}
	var ie *models.InputError
	if errors.As(err, &ie) {
		name, err = ie.Name, ie.Err
	}
	var de *steady.DeadlockError
	if errors.As(err, &de) {
		return deadlockLines(name, de.Chain)
	}
	return fmt.Sprintf("%s: error: %v", name, b.o.memory.explainLimit(err))
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
