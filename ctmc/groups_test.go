package ctmc

import (
	"context"
	"slices"
	"testing"

	"pepa/internal/testing/randmodel"
	"pepa/lang"
)

// Restrict with every leaf kept gives the model's own chain, entry for
// entry; and on random models the chain is the product of the groups'
// chains: its states are the product of theirs, and each of its
// transitions that is not a self-loop moves one group (sum over groups of
// a group's transitions times the other groups' states). Self-loops are
// left out of the count: two groups' self-loops with one action (tau,
// after hiding) are one transition of the model, merged by the derivation.
func TestGroupsProduct(t *testing.T) {
	checked, multi := 0, 0
	for seed := int64(1); seed <= 400; seed++ {
		gm := randmodel.Generate(seed)
		m, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		for _, agg := range []bool{false, true} {
			s, err := Compile(m, Options{Aggregate: agg})
			if err != nil {
				t.Fatal(err)
			}
			full, err := Derive(context.Background(), s, DeriveOptions{MaxStates: 100000})
			if err != nil {
				continue // an invalid model: the groups fail too, or miss the state
			}
			all, _, err := s.Restrict(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			same, err := Derive(context.Background(), all, DeriveOptions{MaxStates: 100000})
			if err != nil || same.N != full.N || !slices.Equal(same.Col, full.Col) || !slices.Equal(same.Act, full.Act) || !slices.Equal(same.States, full.States) {
				t.Fatalf("seed %d: the restriction to every leaf differs from the model (%v)\n%s", seed, err, gm.Source)
			}
			groups := s.Groups()
			if len(groups) > 1 {
				multi++
			}
			states, trans := 1.0, 0.0
			var ns, ts []float64
			for _, g := range groups {
				sub, mapping, err := s.Restrict(g, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range g {
					if mapping[l] == nil {
						t.Fatalf("seed %d: leaf %s of its group is not in the sub-model", seed, l.Name)
					}
				}
				c, err := Derive(context.Background(), sub, DeriveOptions{MaxStates: 100000})
				if err != nil {
					t.Fatalf("seed %d: group %v: %v\n%s", seed, LeafNames(g), err, gm.Source)
				}
				ns = append(ns, float64(c.N))
				ts = append(ts, float64(moves(c)))
				states *= float64(c.N)
			}
			for i := range ns {
				trans += ts[i] * states / ns[i]
			}
			if states != float64(full.N) || trans != float64(moves(full)) {
				t.Errorf("seed %d (aggregate %v): groups %d give %g states and %g transitions, the model %d and %d\n%s",
					seed, agg, len(groups), states, trans, full.N, moves(full), gm.Source)
			}
			checked++
		}
	}
	t.Logf("%d chains checked, %d with several groups", checked, multi)
	if checked < 600 || multi < 100 {
		t.Errorf("%d chains checked, %d with several groups: too few", checked, multi)
	}
}

// Stopping a leaf: its stop actions lead to the terminal state, which
// enables nothing, and every other transition is as before.
func TestRestrictStop(t *testing.T) {
	src := `A1 = (c1, infty).A1; A2 = (c2, infty).A2; A3 = (c3, infty).A3;
Net = (x1, infty).(sent, 0.5).Net + (x2, infty).(sent, 0.5).Net;
M1 = (x1, 2.0).(c1, 1.0).(c2, 3.0).M1;
M2 = (x2, 2.0).(c3, 1.5).M2;
(A1 <> A2 <> A3) <c1, c2, c3> ((M1 <> M2) <x1, x2> Net)`
	s := compileSrc(t, src)
	groups := s.Groups()
	if len(groups) != 1 || len(groups[0]) != 3 {
		t.Fatalf("groups %v, want one of M1, M2 and Net", groups)
	}
	var m1, m2 *Leaf
	for _, l := range s.Leaves {
		switch l.Name {
		case "M1":
			m1 = l
		case "M2":
			m2 = l
		}
	}
	c2, _ := s.ActionID("c2")
	c3, _ := s.ActionID("c3")
	sub, mapping, err := s.Restrict(nil, map[*Leaf][]int32{m1: {c2}, m2: {c3}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Derive(context.Background(), sub, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := mapping[m1], mapping[m2]
	if s1.LocalName(s1.NumLocal-1) != FinishedState || s1.NumLocal != m1.NumLocal+1 {
		t.Fatalf("M1's local states: %d, last %q", s1.NumLocal, s1.LocalName(s1.NumLocal-1))
	}
	// Both finished: the only moves left are the network's.
	both := 0
	for i := 0; i < c.N; i++ {
		st := c.State(i)
		if s1.Local(st) != s1.NumLocal-1 || s2.Local(st) != s2.NumLocal-1 {
			continue
		}
		both++
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if a := sub.Actions[c.Act[e]]; a != "sent" {
				t.Errorf("state %s: both machines finished, but %s fires", c.StateString(i), a)
			}
		}
	}
	if both == 0 {
		t.Fatal("no state with both machines finished")
	}
	// Only M1 and its network's moves before it finishes: the chain from
	// the start to M1 finished has x1 (with the net), c1, c2.
	for _, name := range []string{"x1", "c1", "c2", "x2", "c3", "sent"} {
		a, _ := sub.ActionID(name)
		if !slices.Contains(c.Act, a) {
			t.Errorf("action %s never fires", name)
		}
	}
}

// moves counts the transitions that are not self-loops.
func moves(c *Chain) int {
	n := 0
	for i := 0; i < c.N; i++ {
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if int(c.Col[e]) != i {
				n++
			}
		}
	}
	return n
}
