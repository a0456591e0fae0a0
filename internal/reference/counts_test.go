package reference_test

import (
	"context"
	"testing"

	"pepa/ctmc"
	"pepa/internal/randmodel"
	"pepa/internal/reference"
	"pepa/lang"
)

// TestStateCounts compares the unaggregated real chain's state and
// transition counts with the reference's (transitions counted once per
// source, target and action, as ctmc stores them).
//
// Passes with branch derive (local derivatives as terms, issue 13).
func TestStateCounts(t *testing.T) {
	n := *flagN
	if testing.Short() {
		n = 40
	}
	ctx := context.Background()
	compared, bad := 0, 0
	for i := 0; i < n; i++ {
		gm := randmodel.Generate(*flagSeed + int64(i))
		lm, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatalf("seed %d: %v", gm.Seed, diags.Err())
		}
		rc, err := reference.Derive(ctx, lm, reference.Options{MaxStates: maxRefSize})
		if err != nil {
			continue // dropped: counted by TestDifferential
		}
		s, err := ctmc.Compile(lm, ctmc.Options{Aggregate: false})
		if err != nil {
			t.Errorf("seed %d: compile: %v", gm.Seed, err)
			continue
		}
		c, err := ctmc.Derive(ctx, s, ctmc.DeriveOptions{MaxStates: 100000})
		if err != nil {
			t.Errorf("seed %d: derive: %v", gm.Seed, err)
			continue
		}
		compared++
		if c.N != rc.N() || c.NumTransitions() != rc.DistinctTransitions() {
			bad++
			if bad <= 5 {
				t.Errorf("seed %d: real chain has %d states and %d transitions, the reference %d and %d\nmodel:\n%s",
					gm.Seed, c.N, c.NumTransitions(), rc.N(), rc.DistinctTransitions(), gm.Source)
			}
		}
	}
	t.Logf("%d models compared, %d with other counts", compared, bad)
}
