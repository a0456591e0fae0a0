package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// memoryFlag is --memory, the budget every solving verb works within.
type memoryFlag struct {
	size   string
	budget *membudget.Budget
	// defaulted: --max-states was not given, so its bound came from the
	// budget (and its error should say so).
	defaulted bool
}

func (m *memoryFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&m.size, "memory", "", "work within `SIZE` of memory (4G, 512M: powers of 1024); default: the smallest of MemAvailable,\n"+
		"the cgroup's limit less its usage, RLIMIT_AS and RLIMIT_DATA less what the process maps at start, and GOMEMLIMIT.\n"+
		"A stage that would not fit fails at once with what it needs and what is left; a hard limit (cgroup, ulimit) caps SIZE")
}

// resolve sets the budget: --memory, else the one ctx carries (a sweep's
// points share the sweep's), else the one detected. It returns ctx with the
// budget, and a non-negative exit code on a bad --memory. Unless inherited,
// the Go runtime's soft memory limit is set from it (run restores it).
func (m *memoryFlag) resolve(ctx context.Context, e *env, verb string) (context.Context, int) {
	inherited := membudget.FromContext(ctx)
	switch {
	case m.size != "":
		n, err := membudget.ParseSize(m.size)
		if err != nil {
			return ctx, usageError(e, verb, "--memory: %v", err)
		}
		m.budget = membudget.Given("--memory", n, detectBudget())
	case inherited != nil:
		m.budget = inherited
		return ctx, -1
	default:
		m.budget = detectBudget()
	}
	var mu sync.Mutex
	m.budget.Warn = func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(e.stderr, "pepa %s: warning: %s\n", verb, msg)
	}
	if m.budget.Note != "" {
		m.budget.Warn(m.budget.Note)
	}
	m.budget.SetRuntimeLimit()
	return membudget.NewContext(ctx, m.budget), -1
}

// detectBudget is membudget.Detect (a variable so that tests can fake a
// machine).
var detectBudget = membudget.Detect

// bytesPerState is what a derived state costs with its transitions, for
// about 8 transitions a state (the mapping models'): the 28-application,
// 7-machine model, 823,543 states and 6,588,344 transitions, peaks at
// 127 MB under 'pepa states' (154 bytes a state). The solvers' vectors
// come on top; they are checked against the budget when they are made.
const bytesPerState = 160

// statesFor is the default --max-states for a budget: the states whose
// chain fits at bytesPerState each. It only makes a chain that cannot fit
// fail early, and bounds what is built before any state exists; the
// stages' own checks hold the budget.
func statesFor(b *membudget.Budget) int {
	return int(max(1, min(b.Limit/bytesPerState, 1<<31-2)))
}

// describeBudget is the --verbose line about the budget.
func (m *memoryFlag) describeBudget(maxStates int) string {
	s := m.budget.String()
	if m.defaulted {
		s += fmt.Sprintf("; --max-states %d by default (%d bytes a state)", maxStates, bytesPerState)
	}
	return s
}

// explainLimit adds to a state-limit error, when the limit was the
// budget's default, where it came from and what helps.
// An array whose populations alone are too many is named to fluid
// analysis too.
func (m *memoryFlag) explainLimit(err error) error {
	fluid := ""
	if errors.Is(err, ctmc.ErrPopulation) {
		fluid = "; 'pepa fluid' analyses such populations without the chain (their mean counts, as every population grows)"
	}
	if !m.defaulted || !errors.Is(err, ctmc.ErrTooManyStates) || errors.Is(err, membudget.ErrOverBudget) || m.budget == nil {
		if fluid != "" {
			return fmt.Errorf("%w%s", err, fluid)
		}
		return err
	}
	return fmt.Errorf("%w: the default --max-states is the %s memory budget (%s) at %d bytes a state; --memory sets the budget, and 'pepa simulate' estimates without the chain%s",
		err, membudget.FormatSize(m.budget.Limit), m.budget.Source.Name, bytesPerState, fluid)
}
