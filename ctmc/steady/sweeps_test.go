package steady

import (
	"context"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
)

// TestSweepsAgainstParts: Gauss-Seidel on the 100,842-state product chain
// of 24 applications on 6 independent machines, in one block and in two
// on two goroutines, against the throughputs of each machine's own chain
// solved by GTH (the product's throughputs are exactly its parts'): every
// throughput within 10 times its estimate plus 1e-13, the estimate within
// the tolerance, and auto choosing the sweeps, saying so.
func TestSweepsAgainstParts(t *testing.T) {
	src := testmodels.Mapping(24, 6, 1)
	c := testchain.Chain(t, src)
	parts, err := ctmc.Decompose(testchain.Structure(t, src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, p := range parts {
		r, err := Solve(context.Background(), p.Chain, Options{Method: MethodDirect})
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range ctmc.Throughputs(p.Chain, r.Pi) {
			want[tp.Action] += tp.Value
		}
	}
	for _, g := range []int{1, 2} {
		res, err := Solve(context.Background(), c, Options{Goroutines: g})
		if err != nil {
			t.Fatal(err)
		}
		if res.Method != MethodSweeps || !strings.Contains(res.Reason, "Gauss-Seidel") || res.MaxThroughputError > 1e-12 {
			t.Fatalf("goroutines %d: method %s (%s), estimate %g", g, res.Method, res.Reason, res.MaxThroughputError)
		}
		if blocks := map[int]string{1: "one block", 2: "two blocks"}[g]; !strings.Contains(res.Reason, blocks) {
			t.Errorf("goroutines %d: %s", g, res.Reason)
		}
		n := 0
		for _, tp := range ctmc.Throughputs(c, res.Pi) {
			w, ok := want[tp.Action]
			if !ok {
				continue
			}
			n++
			if rel := math.Abs(tp.Value-w) / w; rel > 10*res.ThroughputError[tp.Action]+1e-13 {
				t.Errorf("goroutines %d: throughput(%s) = %.17g, parts %.17g (relative error %.3g, estimate %.3g)", g, tp.Action, tp.Value, w, rel, res.ThroughputError[tp.Action])
			}
		}
		if n != 24 {
			t.Errorf("%d throughputs compared, want 24", n)
		}
	}
}
