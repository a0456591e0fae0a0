package ctmc

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pepa/lang"
)

// TestCountVectorsExact: an aggregated array of n copies over r reachable
// local states has binomial(n+r-1, r-1) count vectors, the figure the
// early refusal uses, counted here against the enumeration itself on
// components with choices, cycles, a passive action and a state only
// reached through another; and a million copies are refused at once,
// with ErrPopulation.
func TestCountVectorsExact(t *testing.T) {
	shapes := []struct {
		defs  string
		first string
		r     int
	}{
		{"P = (a, 1).P1; P1 = (b, 2).P;", "P", 2},
		{"P = (a, 1).P1 + (c, 3).P2; P1 = (b, 2).P; P2 = (d, 1).P1;", "P", 3},
		{"P = (a, 1).P1; P1 = (b, infty).P2; P2 = (c, 1).P3; P3 = (d, 4).P;", "P", 4},
	}
	for _, sh := range shapes {
		for n := 2; n <= 7; n++ { // a single copy is not aggregated
			src := fmt.Sprintf("%s Q = (b, 1).Q; %s[%d] <b> Q", sh.defs, sh.first, n)
			m, diags := lang.Load("count.pepa", []byte(src))
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			s, err := Compile(m, DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			leaf := s.Leaves[0]
			if leaf.Copies != n {
				t.Fatalf("%s: leaf of %d copies", src, leaf.Copies)
			}
			if got, want := float64(leaf.NumLocal), countVectors(n, sh.r); got != want {
				t.Errorf("%s: %v count vectors enumerated, binomial gives %v", src, got, want)
			}
			// One below the exact count is refused, the exact count is not.
			limit := leaf.NumLocal
			for _, max := range []int{limit - 1, limit} {
				opt := DefaultOptions
				opt.MaxStates = max
				_, err := Compile(m, opt)
				if (err != nil) != (max < limit) {
					t.Errorf("%s, --max-states %d (exact %d): %v", src, max, limit, err)
				}
			}
		}
	}
	m, diags := lang.Load("million.pepa", []byte("U = (req, 1).U1; U1 = (resp, 1).U2; U2 = (think, 1).U; S = (req, 1).S1; S1 = (resp, 1).S; U[1000000] <req, resp> S[1000]"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	start := time.Now()
	_, err := Compile(m, DefaultOptions)
	if !errors.Is(err, ErrTooManyStates) || !errors.Is(err, ErrPopulation) {
		t.Fatalf("a million copies: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("a million copies refused after %v", took)
	}
}
