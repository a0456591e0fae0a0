package ctmc

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestArrayCooperationAsBinaryChain: P[n][set] is one n-ary node; the same
// model written out as P <set> P <set> ... <set> P is a chain of binary
// nodes. Both must give the same chain, state for state and transition for
// transition (same order, same rates).
func TestArrayCooperationAsBinaryChain(t *testing.T) {
	defs := []string{
		// Two ways to do a in one state, shared with a passive partner.
		"P = (a, 1.0).(b, 2.0).P + (a, 3.0).(c, 0.5).P; Q = (a, infty).(d, 1.5).Q;",
		// Passive copies cooperating among themselves and with an active
		// partner.
		"P = (a, infty).(b, 2.0).P + (a, 2 * infty).(c, 1.0).P; Q = (a, 4.0).Q;",
		// Static elements.
		"R = (a, 1.0).(b, 1.0).R; S = (b, infty).(e, 2.0).S; P = R <b> S; Q = (a, 2.0).Q + (e, 1.0).Q;",
	}
	for _, def := range defs {
		for _, n := range []int{2, 3, 4} {
			copies := make([]string, n)
			for i := range copies {
				copies[i] = "P"
			}
			array := fmt.Sprintf("%s (P[%d][a]) <a> Q", def, n)
			chain := fmt.Sprintf("%s (%s) <a> Q", def, strings.Join(copies, " <a> "))
			for _, agg := range []bool{true, false} {
				ca := derive(t, array, Options{Aggregate: agg})
				cb := derive(t, chain, Options{Aggregate: agg})
				if ca.N != cb.N || ca.NumTransitions() != cb.NumTransitions() {
					t.Fatalf("%s: %d states %d transitions, binary chain %d, %d", array, ca.N, ca.NumTransitions(), cb.N, cb.NumTransitions())
				}
				for i := 0; i < ca.N; i++ {
					if !sameWords(ca.State(i), cb.State(i)) {
						t.Fatalf("%s: state %d is %s, binary chain %s", array, i, ca.StateString(i), cb.StateString(i))
					}
				}
				for k := range ca.Col {
					if ca.Col[k] != cb.Col[k] || ca.Act[k] != cb.Act[k] || math.Abs(ca.RateAt(int64(k))-cb.RateAt(int64(k))) > 1e-14*cb.RateAt(int64(k)) {
						t.Fatalf("%s: transition %d differs: %d %s %g, binary chain %d %s %g", array, k,
							ca.Col[k], ca.S.Actions[ca.Act[k]], ca.RateAt(int64(k)), cb.Col[k], cb.S.Actions[cb.Act[k]], cb.RateAt(int64(k)))
					}
				}
			}
		}
	}
}

func sameWords(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestArrayCooperationMixed: a copy enabling a both actively and passively
// leaves the apparent rate undefined, as in a binary cooperation.
func TestArrayCooperationMixed(t *testing.T) {
	err := deriveErr(t, "P = (a, 1.0).P + (a, infty).P; Q = (a, 1.0).Q; P[3][a] <a> Q", DefaultOptions)
	if err == nil || !strings.Contains(err.Error(), "both actively and passively") {
		t.Fatalf("got %v", err)
	}
}
