package models

import (
	"context"
	"testing"

	"pepa/ctmc"
)

// TestChain: pepa states's one call. Without Stopped the chain is the
// model's as ctmc derives it; with Stopped it is the chain of the model
// with its machines stopped (more deadlocks: the batch ends), and every
// deadlock is the end of the batch; a derive past Compile.MaxStates fails.
func TestChain(t *testing.T) {
	m := loadInput(t, "../testdata/coupled/shared-net.pepa").Model
	s, err := ctmc.Compile(m, ctmc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	r, err := Chain(context.Background(), m, ChainRequest{Stage: func(name, _ string) { stages = append(stages, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Chain.N != plain.N || r.Chain.NumTransitions() != plain.NumTransitions() || r.BatchEnd {
		t.Errorf("not stopped: %d states, %d transitions, batch end %v; want %d, %d, false", r.Chain.N, r.Chain.NumTransitions(), r.BatchEnd, plain.N, plain.NumTransitions())
	}
	if len(stages) != 1 || stages[0] != "compile" {
		t.Errorf("stages %v, want [compile]", stages)
	}
	stopped, err := Chain(context.Background(), m, ChainRequest{Stopped: true})
	if err != nil {
		t.Fatal(err)
	}
	if !stopped.BatchEnd || len(stopped.Chain.Deadlocks) <= len(plain.Deadlocks) {
		t.Errorf("stopped: batch end %v, %d deadlocks (%d without stopping)", stopped.BatchEnd, len(stopped.Chain.Deadlocks), len(plain.Deadlocks))
	}
	if _, err := Chain(context.Background(), m, ChainRequest{Compile: ctmc.Options{MaxStates: 10}}); err == nil {
		t.Error("--max-states 10: no error")
	}
}
