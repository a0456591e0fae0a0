package ctmc

import (
	"fmt"
	"math"
	"os"
	"testing"

	"pepa/internal/testing/testmodels"
)

// TestIndependentLeavesMatchEvaluator: where leaf tables apply, the union
// of the leaves' entries and the constant list is, in every state of the
// chain, the Evaluator's list summed per (target, action).
func TestIndependentLeavesMatchEvaluator(t *testing.T) {
	cluster := func(name string) string {
		b, err := os.ReadFile("../testdata/cluster/" + name + ".pepa")
		if err != nil {
			t.Skip(err)
		}
		return string(b)
	}
	cases := map[string]struct {
		src  string
		want bool
	}{
		"mapping":     {testmodels.Mapping(7, 3, 1), true},
		"one-app":     {testmodels.Mapping(5, 4, 1), true}, // machine 4 has one application
		"paired":      {cluster("paired"), true},
		"uneven":      {cluster("uneven"), true},
		"par":         {"P = (a, 1).Q; Q = (b, 2).P + (c, 0.5).Q; R = (d, 3).R; (P <> P <> R)/{b}", true},
		"private":     {"A = (x, infty).A; Z = (tick, 0.7).Z; M = (x, 2).(y, 1).M; (A <> Z) <x> (M <> M)", false},
		"const-x":     {"A = (x, infty).A; Z = (tick, 0.7).Z; M = (x, 2).(y, 1).M; N = (z, 1).(w, 3).N; ((A <> Z) <x> (M <> N))/{y, tick}", true},
		"const-y":     {"A = (x, infty).A; Z = (tick, 0.7).Z; M = (x, 2).(y, 1).M + (x, 1).M; N = (z, 1).(w, 3).N; (M <> N) <x> (A <> Z)", true},
		"coupled":     {"A = (x, infty).A; M = (x, 2).(y, 1).M; N = (x, 1).N; A <x> (M <> N)", false},
		"two-movers":  {"P = (a, 1).Q; Q = (b, 2).P; R = (a, 3).S; S = (c, 1).R; P <a> R", false},
		"hide-mapped": {"A = (x, infty).A; M = (x, 2).(y, 1).M; (A <x> (M <> M))/{y}", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := derive(t, tc.src, DefaultOptions)
			lt, ok := c.S.IndependentLeaves()
			if ok != tc.want {
				t.Fatalf("eligible %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			checkLeafTables(t, c, lt)
		})
	}
}

func checkLeafTables(t *testing.T, c *Chain, lt *LeafTables) {
	ev := c.S.NewEvaluator()
	var buf Transitions
	type edge struct {
		key string
		act int32
	}
	st := make([]uint64, c.S.Words)
	for i := 0; i < c.N; i++ {
		if err := ev.Enabled(c.State(i), &buf); err != nil {
			t.Fatal(err)
		}
		want := map[edge]float64{}
		for k := 0; k < buf.Len(); k++ {
			copy(st, c.State(i))
			buf.Apply(k, st)
			want[edge{fmt.Sprint(st), buf.Action(k)}] += buf.Rates()[k]
		}
		got := map[edge]float64{}
		for k, a := range lt.ConstAct {
			got[edge{fmt.Sprint(c.State(i)), a}] += lt.ConstRate[k]
		}
		for k, l := range lt.Leaves {
			ls := l.Local(c.State(i))
			total := 0.0
			for j := lt.Start[k][ls]; j < lt.Start[k][ls+1]; j++ {
				copy(st, c.State(i))
				l.SetLocal(st, int(lt.Target[k][j]))
				got[edge{fmt.Sprint(st), lt.Act[k][j]}] += lt.Rate[k][j]
				total += lt.Rate[k][j]
			}
			if math.Abs(total-lt.Total[k][ls]) > 1e-12*total {
				t.Fatalf("leaf %s state %d: total %g, entries sum to %g", l.Name, ls, lt.Total[k][ls], total)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("state %d (%s): %d transitions, evaluator %d", i, c.StateString(i), len(got), len(want))
		}
		for e, r := range want {
			if math.Abs(got[e]-r) > 1e-12*r {
				t.Fatalf("state %d (%s): %s at %g, evaluator %g", i, c.StateString(i), c.S.Actions[e.act], got[e], r)
			}
		}
	}
}
