package ctmc

import (
	"pepa/internal/option"
)

// SizeBound is the product of the leaves' local state counts (count
// vectors for an aggregated array), in float64 so that it never
// overflows: an upper bound on the state space. It is the state space's
// size exactly when no leaf synchronises with another (the composition
// has only parallel composition and hiding above its leaves: every
// combination of the leaves' reachable local states is then reachable).
// With cooperation the reachable set can be far smaller (a closed class
// of 24,321 in a bound of 2,456,301), and the bound decides nothing.
func (s *Structure) SizeBound() (bound float64, exact bool) {
	bound = 1
	for _, l := range s.Leaves {
		bound *= float64(l.NumLocal)
	}
	return bound, independentLeaves(s.root)
}

// independentLeaves reports whether the tree has only leaves, parallel
// composition and hiding (any other node, or one not known here, says
// no).
func independentLeaves(n node) bool {
	switch n := n.(type) {
	case *leafNode:
		return true
	case *parNode:
		for _, k := range n.kids {
			if !independentLeaves(k) {
				return false
			}
		}
		return true
	case *hideNode:
		return independentLeaves(n.child)
	}
	return false
}

// checkSizeBound refuses, before any state is explored, a model whose
// state space is certain to exceed maxStates (its exact size, SizeBound,
// above it). An aggregated array among the leaves makes it a population
// too large for its chain (ErrPopulation) as well.
func (s *Structure) checkSizeBound(maxStates int) error {
	if maxStates <= 0 {
		return nil
	}
	bound, exact := s.SizeBound()
	if !exact || bound <= float64(maxStates) {
		return nil
	}
	for _, l := range s.Leaves {
		if l.Counts != nil {
			return option.Errorf("%w: %w: %d independent components (arrays aggregated into count vectors) make %.4g states, more than %d (raise {MaxStates})",
				ErrTooManyStates, ErrPopulation, len(s.Leaves), bound, maxStates)
		}
	}
	return option.Errorf("%w: %d independent components make %.4g states, more than %d (raise {MaxStates})",
		ErrTooManyStates, len(s.Leaves), bound, maxStates)
}
