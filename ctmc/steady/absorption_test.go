package steady

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

// ringModel is a transient ring of n states P0..P(n-1) (rate speed (1 +
// k%7/3) onwards) from which state k leaves to the closed class A at rate a w_k
// and to the cycle B0, B1 at rate b w_k, w_k = 1 + k%5: whatever the path
// around the ring, every exit splits a : b, so the chain ends in A with
// probability a / (a + b) exactly; B0 and B1 then share B's probability
// 3 : 1 (rates 1 and 3).
func ringModel(n int, a, b, speed float64) string {
	var s strings.Builder
	for k := 0; k < n; k++ {
		w := float64(1 + k%5)
		fmt.Fprintf(&s, "P%d = (next, %g).P%d + (toA, %g).A + (toB, %g).B0;\n", k, speed*(1+float64(k%7)/3), (k+1)%n, a*w, b*w)
	}
	s.WriteString("A = (la, 1.0).A; B0 = (lb, 1.0).B1; B1 = (lb2, 3.0).B0;\nP0\n")
	return s.String()
}

// TestLongRunTwoClasses: the long-run distribution of a chain with two
// closed classes against its closed form, with transient blocks of one
// state (n = 1), solved densely (n = 40) and by sweeps (n = 1500, above
// denseAbsorbBlock; and with the ring 1e9 times faster than its exits,
// where the sweeps stall and the block is eliminated after all), under
// every method for the classes.
func TestLongRunTwoClasses(t *testing.T) {
	const a, b = 0.3, 1.1
	pA := a / (a + b)
	want := map[string]float64{"la": pA, "lb": (1 - pA) * 0.75, "lb2": (1 - pA) * 0.25 * 3}
	for _, tc := range []struct {
		n     int
		speed float64
	}{{1, 1}, {40, 1}, {1500, 1}, {1500, 1e9}} {
		n := tc.n
		c := testchain.Chain(t, ringModel(n, a, b, tc.speed))
		for _, method := range []string{MethodAuto, MethodDirect, MethodIterative, MethodSweeps} {
			res, err := Solve(context.Background(), c, Options{Method: method})
			if err != nil {
				t.Fatalf("n %d, %q: %v", n, method, err)
			}
			if len(res.Classes) != 2 || res.Transient != n || res.ClosedStates != 3 {
				t.Fatalf("n %d, %q: classes %+v, transient %d", n, method, res.Classes, res.Transient)
			}
			if got := res.Classes[0]; got.Name != "A" || len(got.States) != 1 || math.Abs(got.Probability-pA) > 1e-14 {
				t.Errorf("n %d, %q: class 1 %+v, want A with %g", n, method, got, pA)
			}
			if got := res.Classes[1]; got.Name != "B0" || len(got.States) != 2 || math.Abs(got.Probability-(1-pA)) > 1e-14 {
				t.Errorf("n %d, %q: class 2 %+v, want B0, B1 with %g", n, method, got, 1-pA)
			}
			for _, tp := range ctmc.Throughputs(c, res.Pi) {
				w := want[tp.Action]
				rel := math.Abs(tp.Value - w)
				if w != 0 {
					rel /= w
				}
				if rel > 1e-13 || (w != 0 && rel > 10*res.ThroughputError[tp.Action]+1e-13) {
					t.Errorf("n %d, %q: throughput(%s) = %.17g, want %.17g (estimate %.3g)", n, method, tp.Action, tp.Value, w, res.ThroughputError[tp.Action])
				}
			}
		}
	}
}
