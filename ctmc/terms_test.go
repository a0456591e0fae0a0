package ctmc

import (
	"sort"
	"strings"
	"testing"

	"pepa/lang"
)

// The rule of semantics.md section 1: local derivatives are terms. A
// constant is a derivative of its own; anonymous terms are identified by
// action, rate value and continuation (prefixes) or branches in order
// (choices). The expected counts below are worked out by hand from that
// rule; the comments give the derivatives and the reachable states.

func localStates(c *Chain, leaf int) []string {
	return append([]string(nil), c.S.Leaves[leaf].Comp.States...)
}

func TestTermIdentityCounts(t *testing.T) {
	tests := []struct {
		name        string
		src         string
		states      int
		transitions int
		derivs      []string // the first leaf's derivatives, in discovery order (nil: not checked)
	}{
		{
			// P, then P's body's target R, then R's targets P and Q.
			name:   "a constant is a derivative of its own",
			src:    "P = Q; Q = (a, 1.0).R; R = (b, 2.0).P + (c, 3.0).Q; P",
			states: 3, transitions: 4,
			derivs: []string{"P", "R", "Q"},
		},
		{
			// P and the one term (c, 2.0).P reached by a and by b.
			name:   "anonymous terms identified by structure",
			src:    "P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 2.0).P; P",
			states: 2, transitions: 3,
			derivs: []string{"P", "(c, 2.0).P"},
		},
		{
			// The rate is compared by value: r is 2.0.
			name:   "rates compared by value",
			src:    "r = 2.0; P = (a, 1.0).(c, r).P + (b, 1.0).(c, 2.0).P; P",
			states: 2, transitions: 3,
		},
		{
			// Different rate values: two derivatives.
			name:   "different rates are different terms",
			src:    "P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 3.0).P; P",
			states: 3, transitions: 4,
		},
		{
			// Different continuations: two derivatives.
			name:   "different continuations are different terms",
			src:    "P = (a, 1.0).(c, 2.0).P + (b, 1.0).(c, 2.0).Q; Q = (d, 1.0).P; P",
			states: 4, transitions: 5,
		},
		{
			// Idle -req-> Busy -done-> Waiting -req-> Busy: the aliases
			// Idle and Waiting are two derivatives with the same
			// activities; Working is never reached as a term.
			name:   "aliases",
			src:    "Idle = Waiting; Waiting = (req, 1.0).Busy; Busy = Working; Working = (done, 2.0).Waiting; Idle",
			states: 3, transitions: 3,
			derivs: []string{"Idle", "Busy", "Waiting"},
		},
		{
			// Where the plug-in drops a branch: Q + Q is a race of Q with
			// itself, one transition at twice the rate (a self-loop).
			name:   "Q + Q is a race",
			src:    "P = Q + Q; Q = (a, 1.0).P; P",
			states: 1, transitions: 1,
		},
		{
			// P and X = Q + (b, 2.0).P: X does Q's c and its own b.
			name:   "constant inside an anonymous choice",
			src:    "P = (a, 1.0).(Q + (b, 2.0).P); Q = (c, 3.0).P; P",
			states: 2, transitions: 3,
		},
		{
			name:   "nested parenthesised terms",
			src:    "P = (a, 1.0).((b, 2.0).((c, 3.0).P)); P",
			states: 3, transitions: 3,
		},
		{
			// S chooses a bit; the channel carries it; the receiver
			// acknowledges with one term (ack, 2.0).R whichever bit came:
			// R has 2 derivatives (R, K), the channel 3 (Ch, D0, D1),
			// and every pair is reachable: 3 * 2 = 6 states. Transitions:
			// (Ch,R) send0 send1; (D0,R) deliver0; (D1,R) deliver1;
			// (Ch,K) send0 send1 ack; (D0,K) ack; (D1,K) ack: 9.
			name: "bit channel (alternating-bit style)",
			src: `S = (send0, 1.0).S + (send1, 1.0).S;
Ch = (send0, infty).(deliver0, 5.0).Ch + (send1, infty).(deliver1, 5.0).Ch;
R = (deliver0, infty).(ack, 2.0).R + (deliver1, infty).(ack, 2.0).R;
(S <send0, send1> Ch) <deliver0, deliver1> R`,
			states: 6, transitions: 9,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, agg := range []bool{true, false} {
				c := derive(t, tt.src, Options{Aggregate: agg})
				if c.N != tt.states || c.NumTransitions() != tt.transitions {
					t.Errorf("%d states, %d transitions; want %d, %d", c.N, c.NumTransitions(), tt.states, tt.transitions)
				}
				if tt.derivs != nil && strings.Join(localStates(c, 0), "|") != strings.Join(tt.derivs, "|") {
					t.Errorf("derivatives %q, want %q", localStates(c, 0), tt.derivs)
				}
			}
		})
	}
}

// TestDerivativeNames: the names users see are the constants they
// wrote, and anonymous derivatives are named by their text.
func TestDerivativeNames(t *testing.T) {
	c := derive(t, "M1 = (start, 1.0).Busy; Busy = (run, 2.0).(done, 3.0).M1; M1", DefaultOptions)
	got := localStates(c, 0)
	sort.Strings(got)
	want := []string{"(done, 3.0).M1", "Busy", "M1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("names %q, want %q", got, want)
	}
}

// TestPredicateOnAliases: a predicate names the derivatives users wrote.
// M1 = Idle is its own derivative: M1 -start-> Busy -done-> Done -reset->
// Idle -start-> Busy: four local states, and M1 == Done holds in one.
func TestPredicateOnAliases(t *testing.T) {
	c := derive(t, "M1 = Idle; Idle = (start, 1.0).Busy; Busy = (done, 2.0).Done; Done = (reset, 3.0).Idle; M1", DefaultOptions)
	if got := strings.Join(localStates(c, 0), "|"); got != "M1|Busy|Done|Idle" {
		t.Fatalf("derivatives %s, want M1|Busy|Done|Idle", got)
	}
	for text, want := range map[string]string{"M1 == Done": "Done", "M1 == Idle": "Idle", "M1 == M1": "M1"} {
		p, err := ParsePredicate(c.S, text)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, in := range SelectStates(c, p) {
			if in {
				got = append(got, c.StateString(i))
			}
		}
		if strings.Join(got, "|") != want {
			t.Errorf("%s holds in %q, want %s", text, got, want)
		}
	}
}

// TestSeparateRates: merging prefixes by rate value alone would make the
// derivative with respect to s vanish (the (c, s) prefix would be no
// transition's source); SeparateRates keeps rates of different
// dependence apart, and still merges the same rate written twice.
func TestSeparateRates(t *testing.T) {
	src := "r = 2.0; s = 2.0; P = (a, 1.0).(c, r).P + (b, 1.0).(c, s).P; P"
	if c := derive(t, src, DefaultOptions); c.N != 2 {
		t.Errorf("by value: %d states, want 2", c.N)
	}
	c := derive(t, src, Options{Aggregate: true, SeparateRates: true})
	if c.N != 3 {
		t.Fatalf("separate rates: %d states, want 3", c.N)
	}
	leaf := c.S.Leaves[0]
	sources := map[string]bool{}
	for st := 0; st < leaf.NumLocal; st++ {
		for _, tr := range leaf.Transitions(st) {
			for _, p := range tr.Prefixes {
				sources[lang.ProcessString(p)] = true
			}
		}
	}
	if !sources["(c, r).P"] || !sources["(c, s).P"] {
		t.Errorf("transition sources %v: want both (c, r).P and (c, s).P", sources)
	}
	same := derive(t, "r = 2.0; P = (a, 1.0).(c, r).P + (b, 1.0).(c, r).P; P", Options{SeparateRates: true})
	if same.N != 2 {
		t.Errorf("the same rate twice: %d states, want 2", same.N)
	}
}
