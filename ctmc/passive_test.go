package ctmc

import (
	"context"
	"strings"
	"testing"

	"pepa/lang"
)

// deriveErr derives a model that checks and returns the derivation error.
func deriveErr(t *testing.T, src string, opt Options) error {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check:\n%v", diags.Err())
	}
	s, err := Compile(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Derive(context.Background(), s, DeriveOptions{})
	return err
}

// TestPassiveInOneDerivative: passive on h in one derivative and active in
// the other is valid PEPA. (P0, Q0) -h, 2-> (P1, Q1) (P passive, Q at 2);
// (P1, Q1) -h, 1-> (P0, Q0) (Q passive): pi = (1/3, 2/3), throughput of h
// 2/3 + 2/3 = 4/3.
func TestPassiveInOneDerivative(t *testing.T) {
	c := derive(t, "P = (h, infty).(h, 1.0).P; Q = (h, 2.0).(h, infty).Q; P <h> Q", DefaultOptions)
	if c.N != 2 || c.NumTransitions() != 2 {
		t.Fatalf("%d states, %d transitions; want 2, 2", c.N, c.NumTransitions())
	}
	if got := throughputOf(c, steady(t, c), "h"); !near(got, 4.0/3, 1e-12) {
		t.Errorf("throughput of h %g, want 4/3", got)
	}
	// Mixed across derivatives, resolved by the choice of state: (P0, Q0)
	// -a, min(1, 2)-> (P1, Q1) -a, 3-> (P0, Q0): pi = (3/4, 1/4),
	// throughput 3/4 + 3/4.
	c = derive(t, "P = (a, 1.0).(a, infty).P; Q = (a, 2.0).(a, 3.0).Q; P <a> Q", DefaultOptions)
	if got := throughputOf(c, steady(t, c), "a"); c.N != 2 || !near(got, 1.5, 1e-12) {
		t.Errorf("%d states, throughput of a %g; want 2, 1.5", c.N, got)
	}
}

// TestPassiveExposedInReachableState: the checker cannot know that the
// passive activity is reached (it comes after a synchronised move); the
// derivation reports it with the state and the prefix's position.
func TestPassiveExposedInReachableState(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unsynchronised", "P = (b, 1.0).(a, infty).P; Q = (b, 1.0).Q; P <b> Q",
			[]string{"in state 1 ((a, infty).P, Q)", "action a is passive and never synchronised", "t.pepa:1:14"}},
		{"hidden", "P = (b, 1.0).(a, infty).P; Q = (b, 1.0).Q; (P <b> Q)/{a}",
			[]string{"in state 1 ((a, infty).P, Q)", "hidden", "t.pepa:1:14"}},
		{"passive partners", "P = (b, 1.0).(a, infty).P; Q = (b, 1.0).(a, infty).Q; P <a, b> Q",
			[]string{"in state 1 ((a, infty).P, (a, infty).Q)", "action a is passive", "t.pepa:1:14"}},
		{"in an aggregated array", "P = (b, 1.0).(a, infty).P; Q = (b, 1.0).Q; P[3] <b> Q",
			[]string{"in state 1 ({2*P, 1*(a, infty).P}, Q)", "action a is passive", "t.pepa:1:14"}},
		{"both ways in one state", "P = (a, 1.0).P + (a, infty).P; Q = (a, 2.0).Q; P <a> Q",
			[]string{"in state 0 (P, Q)", "both actively and passively", "active at t.pepa:1:5", "passive at t.pepa:1:18"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := deriveErr(t, tt.src, DefaultOptions)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
