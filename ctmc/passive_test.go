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
