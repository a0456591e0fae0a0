package models

import (
	"context"

	"pepa/ctmc"
	"pepa/lang"
)

// ChainRequest asks for a model's chain as pepa states derives it.
type ChainRequest struct {
	Compile ctmc.Options
	// Stopped derives the model with every machine stopped once it has
	// finished (StopAll): the chain robustness --flat solves.
	Stopped bool
	// Derive derives the chain of the compiled structure (nil:
	// ctmc.Derive within Compile.MaxStates).
	Derive ctmc.DeriveFunc
	// Stage, if set, is told when a stage ends (compile).
	Stage func(name, detail string)
}

// ChainReport is a model's chain, and with Stopped whether every deadlock
// of it is the end of the batch (BatchEnds) rather than a fault.
type ChainReport struct {
	Chain    *ctmc.Chain
	BatchEnd bool
}

// Chain compiles m, stops its machines when asked, and derives the chain.
func Chain(ctx context.Context, m *lang.Model, req ChainRequest) (*ChainReport, error) {
	s, err := ctmc.Compile(m, req.Compile)
	if err != nil {
		return nil, err
	}
	if req.Stage != nil {
		req.Stage("compile", "")
	}
	if req.Stopped {
		if s, err = StopAll(s); err != nil {
			return nil, err
		}
	}
	c, err := ctmc.DeriveWith(ctx, s, req.Derive, req.Compile.MaxStates)
	if err != nil {
		return nil, err
	}
	return &ChainReport{Chain: c, BatchEnd: req.Stopped && BatchEnds(c)}, nil
}
