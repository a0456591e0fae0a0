package steady

import (
	"context"
	"fmt"

	"pepa/ctmc"
	"pepa/lang"
)

// Request is one steady-state analysis of a model: how its chain is
// compiled and derived, and how it is solved.
type Request struct {
	// Compile is how the model is compiled (aggregation, the state limit).
	Compile ctmc.Options
	// Derive derives the compiled structure's chain; nil means ctmc.Derive
	// within Compile.MaxStates. A caller passes its own to show progress
	// or time the stage.
	Derive ctmc.DeriveFunc
	// Solve is how the chain is solved (Solve's options).
	Solve Options
}

// Report is a steady-state analysis: the chain, its solution, and what
// is measured on it.
type Report struct {
	Chain        *ctmc.Chain
	Result       *Result
	Throughputs  []ctmc.Throughput  // by action name
	Utilisations []ctmc.Utilisation // in the system equation's order
}

// DeadlockError says that the chain has deadlocked states: a chain that
// stops has no steady state worth the name (every run ends in one of
// them); Chain.Deadlocks lists them.
type DeadlockError struct{ Chain *ctmc.Chain }

func (d *DeadlockError) Error() string {
	i := int(d.Chain.Deadlocks[0])
	return fmt.Sprintf("deadlock in state %d: %s", i, d.Chain.StateString(i))
}

// Analyze compiles m, derives its chain, refuses a chain with deadlocks
// (*DeadlockError), solves it (Solve) and measures its throughputs and
// utilisations.
func Analyze(ctx context.Context, m *lang.Model, req Request) (*Report, error) {
	s, err := ctmc.Compile(m, req.Compile)
	if err != nil {
		return nil, err
	}
	c, err := ctmc.DeriveWith(ctx, s, req.Derive, req.Compile.MaxStates)
	if err != nil {
		return nil, err
	}
	if len(c.Deadlocks) > 0 {
		return nil, &DeadlockError{c}
	}
	res, err := Solve(ctx, c, req.Solve)
	if err != nil {
		return nil, err
	}
	return &Report{Chain: c, Result: res, Throughputs: ctmc.Throughputs(c, res.Pi), Utilisations: ctmc.Utilisations(c, res.Pi)}, nil
}
