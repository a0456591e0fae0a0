package reference_test

import (
	"context"
	"errors"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/randmodel"
	"pepa/internal/testing/reference"
	"pepa/lang"
)

// TestStateCounts compares the unaggregated real chain's state and
// transition counts with the reference's (transitions counted once per
// source, target and action, as ctmc stores them). It fails when fewer than
// minCompared of the models the reference accepts as valid are compared.
func TestStateCounts(t *testing.T) {
	n := *flagN
	if testing.Short() {
		n = 40
	}
	ctx := context.Background()
	models, invalid, tooBig, compared, bad := 0, 0, 0, 0, 0
	for i := 0; i < n; i++ {
		gm := randmodel.Generate(*flagSeed + int64(i))
		models++
		lm, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatalf("seed %d: %v", gm.Seed, diags.Err())
		}
		rc, err := reference.Derive(ctx, lm, reference.Options{MaxStates: smallProfile.refStates})
		switch {
		case errors.Is(err, reference.ErrInvalid):
			invalid++
			continue // TestDifferential checks that the real derivation refuses it too
		case errors.Is(err, reference.ErrTooManyStates):
			tooBig++
			continue
		case err != nil:
			t.Errorf("seed %d: reference: %v", gm.Seed, err)
			continue
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
	t.Logf("%d models: %d compared (%d with other counts), %d invalid, %d past the reference's limit", models, compared, bad, invalid, tooBig)
	if valid := models - invalid; float64(compared) < minCompared*float64(valid) {
		t.Errorf("only %d of %d valid models compared", compared, valid)
	}
}
