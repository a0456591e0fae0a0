package steady

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

func loadModel(t *testing.T, src string) *lang.Model {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check:\n%v", diags.Err())
	}
	return m
}

// TestAnalyze: one call from a model to its measures. A machine that
// works at 2 and fails at 0.5 beside a repairman (closed form: up 4/5 of
// the time, so work throughput 1.6 and fail 0.4); a chain that stops is
// refused with a *DeadlockError naming the state; the derive hook is
// used when given.
func TestAnalyze(t *testing.T) {
	m := loadModel(t, `M = (work, 2.0).M + (fail, 0.5).Mdown;
Mdown = (repair, 2.0).M;
R = (repair, 2.0).R;
M <repair> R
`)
	called := false
	rep, err := Analyze(context.Background(), m, Request{
		Compile: ctmc.DefaultOptions,
		Derive: func(ctx context.Context, s *ctmc.Structure) (*ctmc.Chain, error) {
			called = true
			return ctmc.Derive(ctx, s, ctmc.DeriveOptions{})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Error("the derive hook was not used")
	}
	want := map[string]float64{"work": 1.6, "fail": 0.4, "repair": 0.4}
	for _, tp := range rep.Throughputs {
		if math.Abs(tp.Value-want[tp.Action]) > 1e-13 {
			t.Errorf("%s throughput %.15g, want %g", tp.Action, tp.Value, want[tp.Action])
		}
	}
	if len(rep.Throughputs) != 3 || rep.Chain.N != 2 || len(rep.Utilisations) == 0 {
		t.Errorf("%d throughputs, %d states, %d utilisations", len(rep.Throughputs), rep.Chain.N, len(rep.Utilisations))
	}
	dead := loadModel(t, "P = (go, 1.0).Q;\nQ = (stop, 1.0).Q;\nR = (go, 1.0).R;\nP <go, stop> R\n")
	_, err = Analyze(context.Background(), dead, Request{Compile: ctmc.DefaultOptions})
	var de *DeadlockError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "deadlock in state 1") {
		t.Fatalf("got %v, want a deadlock in state 1", err)
	}
}
