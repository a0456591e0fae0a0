package ctmc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/lang"
)

// FuzzDerive: any model that checks compiles and derives (up to a state
// limit) without panicking, with and without aggregation, and both give
// chains whose rows are well formed; small deadlock-free chains solve or
// fail with an error.
func FuzzDerive(f *testing.F) {
	names, _ := filepath.Glob("../testdata/*.pepa")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"P = (a, 1).P; P[3]",
		"P = (a, 1).(b, 2).P; Q = (a, infty).Q; (P <a> Q)/{b}",
		"P = (a, 1).P + (a, 2*infty).P; Q = (a, 3).Q; P <*> Q",
		"P = (a, 1).Q; Q = (b, 1).Q; S = P <> P; S <b> S",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<14 {
			return
		}
		m, _ := lang.Load("fuzz.pepa", src)
		if m == nil {
			return
		}
		for _, agg := range []bool{true, false} {
			s, err := ctmc.Compile(m, ctmc.Options{Aggregate: agg})
			if err != nil {
				continue
			}
			c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{MaxStates: 2000})
			if err != nil {
				continue
			}
			if len(c.RowPtr) != c.N+1 || c.RowPtr[c.N] != int64(len(c.Col)) {
				t.Fatalf("malformed CSR: %d states, %d row pointers, %d entries", c.N, len(c.RowPtr), len(c.Col))
			}
			for k, j := range c.Col {
				if j < 0 || int(j) >= c.N || !(c.RateAt(int64(k)) > 0) {
					t.Fatalf("transition %d to %d at rate %g", k, j, c.RateAt(int64(k)))
				}
			}
			if len(c.Deadlocks) == 0 && c.N <= 200 {
				steady.Solve(context.Background(), c, steady.Options{MaxIterations: 200})
			}
			_, _ = ctmc.Decompose(s)
		}
	})
}
