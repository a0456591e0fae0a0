package ctmc_test

import (
	"slices"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

// TestDecomposeInnerBlocking: an action blocked for good inside a
// cooperation (Q's s1: P/{p2} never performs it) is not performed by
// that side in a cooperation above, so R_boot's s1 is blocked too. When
// the parts took the syntactic alphabet, R_boot's part cycled through s1
// (5 states against the model's 4, its steady state on states the model
// never returns to), and a plug-in passage from r0 was answered where
// the reference refuses it (differential seed 900397). The parts'
// product must be the model's chain.
func TestDecomposeInnerBlocking(t *testing.T) {
	src := `r1 = 0.68; r2 = 2.28; r3 = 2.05;
P = (p2, 4.31).P + (p1, 1.8).P;
Q = (s1, 3 * infty).Q;
R = (r1, 0.778).(s1, 4.7).(r1, 2 * r2).R;
R_boot = (r0, 1.84).(r0, 2 * r3).R;
(((P) / {p2}) <s1> (Q)) <s1> (R_boot)
`
	s := testchain.Structure(t, src)
	c := testchain.Chain(t, src)
	parts, err := ctmc.Decompose(s)
	if err != nil {
		t.Fatal(err)
	}
	product := 1
	for _, p := range parts {
		product *= p.Chain.N
		if p.Leaf.Name == "R_boot" && !slices.Contains(p.Blocked, "s1") {
			t.Errorf("R_boot's part does not block s1 (blocked: %v)", p.Blocked)
		}
	}
	if product != c.N {
		t.Errorf("the parts' chains multiply to %d states, the model's chain has %d", product, c.N)
	}
}
