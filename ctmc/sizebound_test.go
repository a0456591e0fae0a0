package ctmc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSizeBoundRefusesAtOnce: independent arrays whose count vectors
// multiply past the limit are refused before any state is explored, as a
// population (ErrPopulation); a small independent model gets its exact
// size as the bound (checked against the derived chain); a cooperating
// model whose bound is far above its reachable set is derived as before.
func TestSizeBoundRefusesAtOnce(t *testing.T) {
	s := compileSrc(t, `A = (a, 1.0).A2; A2 = (b, 2.0).A3; A3 = (c, 3.0).A;
B = (d, 1.0).B2; B2 = (e, 2.0).B3; B3 = (f, 3.0).B;
A[300] || B[300]`)
	if b, exact := s.SizeBound(); !exact || b != 45451.0*45451 {
		t.Fatalf("bound %g exact %v, want 45451^2 exactly", b, exact)
	}
	start := time.Now()
	_, err := Derive(context.Background(), s, DeriveOptions{MaxStates: 1000000})
	if !errors.Is(err, ErrTooManyStates) || !errors.Is(err, ErrPopulation) {
		t.Fatalf("%v, want a population too large", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refused after %v, want at once", took)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("library error names a flag: %v", err)
	}
	// Exact on a small independent model.
	small := compileSrc(t, `A = (a, 1.0).A2; A2 = (b, 2.0).A3; A3 = (c, 3.0).A;
B = (d, 1.0).B2 + (g, 1.0).B3; B2 = (e, 2.0).B3; B3 = (f, 3.0).B;
A[4] || B[3] || B`)
	c, err := Derive(context.Background(), small, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, exact := small.SizeBound(); !exact || b != float64(c.N) {
		t.Errorf("bound %g (exact %v), derived %d states", b, exact, c.N)
	}
	// Cooperation: the bound (1001^2) is not the size (1001: the two
	// arrays move together), and a limit between them derives.
	coop := compileSrc(t, `C = (req, 1.0).C2; C2 = (rep, 2.0).C;
S = (req, 1.0).S2; S2 = (rep, 2.0).S;
C[1000] <req, rep> S[1000]`)
	if b, exact := coop.SizeBound(); exact || b != 1001.0*1001 {
		t.Fatalf("bound %g exact %v, want 1001^2 and not exact", b, exact)
	}
	c, err = Derive(context.Background(), coop, DeriveOptions{MaxStates: 5000})
	if err != nil || c.N != 1001 {
		t.Fatalf("cooperating arrays under a limit above their 1001 states: %v", err)
	}
}
