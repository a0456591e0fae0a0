package ctmc

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pepa/internal/testing/testmodels"
)

// coupled adds to a generated mapping a one-slot store that every
// machine's cycle-closing action passes through.
func coupled(apps, machines int) string {
	src := strings.TrimSpace(testmodels.Mapping(apps, machines, 1))
	lines := strings.Split(src, "\n")
	var lasts, alts []string
	for _, l := range testmodels.LastActions(apps, machines) {
		lasts = append(lasts, l[0])
		alts = append(alts, fmt.Sprintf("(%s, infty).Flush", l[0]))
	}
	return fmt.Sprintf("%s\nStore = %s;\nFlush = (flush, 2.0).Store;\n(%s) <%s> Store\n",
		strings.Join(lines[:len(lines)-1], "\n"), strings.Join(alts, " + "), lines[len(lines)-1], strings.Join(lasts, ", "))
}

// TestContextTablesMatchEvaluator: where context tables apply, a state's
// transitions (the base entries of its context and every moving leaf's
// entries) are, summed per (target, action), the Evaluator's.
func TestContextTablesMatchEvaluator(t *testing.T) {
	cases := map[string]struct {
		src  string
		want bool
	}{
		"coupled":    {coupled(7, 3), true},
		"coupled-1":  {coupled(5, 4), true},
		"mapping":    {testmodels.Mapping(7, 3, 1), true},
		"bus":        {"M = (a, 1).(b, 2).M; N = (c, 1).(d, 3).N; Bus = (b, infty).Busy + (d, infty).Busy; Busy = (free, 4).Bus; (M <> N) <b, d> Bus", true},
		"hidden":     {"M = (a, 1).(b, 2).M; N = (c, 1).(d, 3).N; Bus = (b, infty).Busy + (d, infty).Busy; Busy = (free, 4).Bus; ((M <> N) <b, d> Bus)/{b}", true},
		"shared-bus": {"M = (a, 1).(b, 2).M; N = (c, 1).(b, 3).N; Bus = (b, infty).Busy; Busy = (free, 4).Bus; (M <> N) <b> Bus", false},
		"two-movers": {"P = (a, 1).Q; Q = (b, 2).P; R = (a, 3).S; S = (c, 1).R; P <a> R", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := derive(t, tc.src, DefaultOptions)
			ct, ok := c.S.ContextTables()
			if ok != tc.want {
				t.Fatalf("eligible %v, want %v", ok, tc.want)
			}
			if ok {
				checkContextTables(t, c, ct)
			}
		})
	}
}

func checkContextTables(t *testing.T, c *Chain, ct *ContextTables) {
	ev := c.S.NewEvaluator()
	var buf Transitions
	type edge struct {
		key string
		act int32
	}
	st := make([]uint64, c.S.Words)
	setCtx := func(st []uint64, x int) {
		for _, l := range ct.Context {
			l.SetLocal(st, x%l.NumLocal)
			x /= l.NumLocal
		}
	}
	// Every state of a small chain; about 3,000 spread over a large one.
	step := max(1, c.N/3000)
	for i := 0; i < c.N; i += step {
		if err := ev.Enabled(c.State(i), &buf); err != nil {
			t.Fatal(err)
		}
		want := map[edge]float64{}
		for k := 0; k < buf.Len(); k++ {
			copy(st, c.State(i))
			buf.Apply(k, st)
			want[edge{fmt.Sprint(st), buf.Action(k)}] += buf.Rates()[k]
		}
		cx, stride := 0, 1
		for _, l := range ct.Context {
			cx += l.Local(c.State(i)) * stride
			stride *= l.NumLocal
		}
		got := map[edge]float64{}
		for j := ct.BaseStart[cx]; j < ct.BaseStart[cx+1]; j++ {
			copy(st, c.State(i))
			setCtx(st, int(ct.BaseTargetCtx[j]))
			got[edge{fmt.Sprint(st), ct.BaseAct[j]}] += ct.BaseRate[j]
		}
		for k, l := range ct.Leaves {
			idx := l.Local(c.State(i))*ct.Size + cx
			total := 0.0
			for j := ct.Start[k][idx]; j < ct.Start[k][idx+1]; j++ {
				copy(st, c.State(i))
				l.SetLocal(st, int(ct.Target[k][j]))
				setCtx(st, int(ct.TargetCtx[k][j]))
				got[edge{fmt.Sprint(st), ct.Act[k][j]}] += ct.Rate[k][j]
				total += ct.Rate[k][j]
			}
			if math.Abs(total-ct.Total[k][idx]) > 1e-12*total {
				t.Fatalf("leaf %s: total %g, entries %g", l.Name, ct.Total[k][idx], total)
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

// TestContextTablesWhereverEligible: on the project's models, which all
// have the shape the tables describe, the tables are given and match the
// Evaluator (on about 3,000 states of the larger chains).
func TestContextTablesWhereverEligible(t *testing.T) {
	for _, name := range []string{"pc-lan", "pc-lan-6", "active-badge", "mapping-a", "owners/desktops", "owners/server-heavy", "cluster/uneven"} {
		t.Run(name, func(t *testing.T) {
			c := deriveFile(t, "../testdata/"+name+".pepa", DefaultOptions)
			ct, ok := c.S.ContextTables()
			if !ok {
				t.Fatalf("no context tables for %s", name)
			}
			checkContextTables(t, c, ct)
		})
	}
}
