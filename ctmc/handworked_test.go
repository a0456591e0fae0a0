package ctmc

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Derived chains against rates, generators and deadlocks worked out by
// hand, and the derivation's limits.

// transitions returns the transitions of state i as "action->target-names:rate".
func transitions(c *Chain, i int) map[string]float64 {
	out := map[string]float64{}
	for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
		key := c.S.Actions[c.Act[k]] + "->" + c.StateString(int(c.Col[k]))
		out[key] += c.RateAt(k)
	}
	return out
}

// TestCooperationRates checks the apparent-rate formula on examples worked
// by hand: rate = (r1 / r_a(P)) (r2 / r_a(Q)) min(r_a(P), r_a(Q)).
func TestCooperationRates(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string]float64
	}{
		{"active/active, the slower wins",
			"X = (a, 2).X1; X1 = (b, 1).X; Y = (a, 3).Y1; Y1 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 2}},
		{"active/active with a race on one side",
			// r_a(X) = 1 + 3 = 4, r_a(Y) = 2: each branch gets its share of min = 2.
			"X = (a, 1).X1 + (a, 3).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 2).Y1; Y1 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 0.5, "a->X2, Y1": 1.5}},
		{"races on both sides",
			// r_a(X) = 4, r_a(Y) = 1 + 5 = 6, min 4: (1/4)(1/6)4, (1/4)(5/6)4, (3/4)(1/6)4, (3/4)(5/6)4.
			"X = (a, 1).X1 + (a, 3).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 1).Y1 + (a, 5).Y2; Y1 = (c, 1).Y; Y2 = (c, 1).Y; X <a> Y",
			map[string]float64{"a->X1, Y1": 1.0 / 6, "a->X1, Y2": 5.0 / 6, "a->X2, Y1": 0.5, "a->X2, Y2": 2.5}},
		{"passive weights share the active rate",
			"X = (a, 2*infty).X1 + (a, infty).X2; X1 = (b, 1).X; X2 = (b, 1).X; Y = (a, 3).Y; X <a> Y",
			map[string]float64{"a->X1, Y": 2, "a->X2, Y": 1}},
		{"passive on both sides, then active",
			// X <a> Y is passive with weight (1)(1) min(2, 1) = 1; with Z the rate is Z's, 5.
			"X = (a, 2*infty).X1; X1 = (b, 1).X; Y = (a, infty).Y1; Y1 = (c, 1).Y; Z = (a, 5).Z; (X <a> Y) <a> Z",
			map[string]float64{"a->X1, Y1, Z": 5}},
		{"parallel copies add their apparent rates",
			// r_a(P || P) = 2 + 2 = 4 against r_a(Q) = 1: each copy fires at 1/2.
			"P = (a, 2).P1; P1 = (b, 1).P; Q = (a, 1).Q1; Q1 = (c, 1).Q; (P <> P) <a> Q",
			map[string]float64{"a->P1, P, Q1": 0.5, "a->P, P1, Q1": 0.5}},
		{"hiding renames to tau",
			"P = (a, 2).P1; P1 = (b, 1).P; P/{a}",
			map[string]float64{"tau->P1": 2}},
		{"unsynchronised actions interleave",
			"P = (a, 2).P1; P1 = (b, 1).P; Q = (c, 3).Q1; Q1 = (d, 1).Q; P <b> Q",
			map[string]float64{"a->P1, Q": 2, "c->P, Q1": 3}},
		{"race to one target adds up",
			"P = (a, 2).P1 + (a, 3).P1; P1 = (b, 1).P; P",
			map[string]float64{"a->P1": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, agg := range []bool{true, false} {
				c := derive(t, tt.src, Options{Aggregate: agg})
				got := transitions(c, 0)
				if len(got) != len(tt.want) {
					t.Errorf("state 0 (%s) has transitions %v, want %v", c.StateString(0), got, tt.want)
					continue
				}
				for k, w := range tt.want {
					if !near(got[k], w, 1e-14) {
						t.Errorf("%s: rate %g, want %g (all: %v)", k, got[k], w, got)
					}
				}
			}
		})
	}
}

// denseGenerator builds the dense generator matrix of a chain.
func denseGenerator(c *Chain) *mat.Dense {
	q := mat.NewDense(c.N, c.N, nil)
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := int(c.Col[k])
			if j != i {
				q.Set(i, j, q.At(i, j)+c.RateAt(k))
				q.Set(i, i, q.At(i, i)-c.RateAt(k))
			}
		}
	}
	return q
}

// TestGeneratorByHand compares a derived generator with one written out by
// hand for a small model: a worker that uses a tool, and a tool that breaks.
func TestGeneratorByHand(t *testing.T) {
	c := derive(t, `
w = 2; u = 3; f = 0.5; r = 4;
Worker = (get, w).Using; Using = (use, u).Worker;
Tool = (get, infty).Busy + (fail, f).Broken; Busy = (use, infty).Tool; Broken = (fix, r).Tool;
Worker <get, use> Tool`, DefaultOptions)
	// States in BFS order, unsynchronised activities first: 0 (Worker, Tool),
	// 1 (Worker, Broken), 2 (Using, Busy).
	names := []string{"Worker, Tool", "Worker, Broken", "Using, Busy"}
	for i, n := range names {
		if got := c.StateString(i); got != n {
			t.Fatalf("state %d is %q, want %q", i, got, n)
		}
	}
	want := mat.NewDense(3, 3, []float64{
		-2.5, 0.5, 2,
		4, -4, 0,
		3, 0, -3,
	})
	if got := denseGenerator(c); !mat.EqualApprox(got, want, 1e-15) {
		t.Fatalf("generator\n%v\nwant\n%v", mat.Formatted(got), mat.Formatted(want))
	}
}

// TestDeadlock: a state with no transition is a deadlock; one whose
// partner keeps moving is not.
func TestDeadlock(t *testing.T) {
	c := derive(t, `
Worker1 = (hammer, 1).(chisel, 1).Worker1; Worker2 = (chisel, 1).(hammer, 1).Worker2;
Hammer = (hammer, infty).Hammer_taken; Hammer_taken = (release, 1).Hammer;
Chisel = (chisel, infty).Chisel_taken; Chisel_taken = (release2, 1).Chisel;
(Worker1 <> Worker2) <hammer, chisel> (Hammer <> Chisel)`, DefaultOptions)
	if len(c.Deadlocks) != 0 {
		t.Fatalf("unexpected deadlocks %v", c.Deadlocks)
	}
	d := derive(t, "P = (a, 1).Stop; Stop = (b, infty).Stop; Q = (c, 1).Q; P <b> Q", DefaultOptions)
	if len(d.Deadlocks) != 0 {
		t.Fatalf("Q keeps going: no deadlock expected, got %v", d.Deadlocks)
	}
	e := derive(t, "P = (a, 1).Stop; Stop = (b, infty).Stop; R = (c, 1).R2; R2 = (d, 1).R2; P <b, d> R", DefaultOptions)
	if len(e.Deadlocks) != 1 {
		t.Fatalf("deadlocks %v, want one", e.Deadlocks)
	}
}

func TestMaxStates(t *testing.T) {
	m := deriveFile(t, "../testdata/pc-lan.pepa", DefaultOptions)
	_ = m
	c, err := deriveLimited(t, "../testdata/pc-lan.pepa", 100)
	if c != nil || !errors.Is(err, ErrTooManyStates) {
		t.Fatalf("got %v, %v", c, err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := compileFile(t, "../testdata/pc-lan-6.pepa")
	if _, err := Derive(ctx, s, DeriveOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
