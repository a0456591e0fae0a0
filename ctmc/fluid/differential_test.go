package fluid

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

// The differential test of the right-hand side: at every state of the
// chain of count vectors of random small array models, the fluid drift
// F(n) must equal the chain's expected drift sum_j q(n, j) (n_j - n), and
// the fluid throughputs the chain's firing rates in n, exactly (up to
// rounding): the chain's cooperation rule on counts is the fluid rule on
// populations (semantics.md sections 1 and 7). The chain is derived by
// package ctmc, whose code the fluid program does not share.

// randomArrayModel writes a model of 2 or 3 arrays of small components
// cooperating on random sets, with passive partners and hiding.
func randomArrayModel(r *rand.Rand) string {
	actions := []string{"a", "b", "c", "d"}
	k := 2 + r.IntN(2)
	var b strings.Builder
	type act struct {
		action  string
		target  int
		rate    float64
		passive bool
	}
	comps := make([][][]act, k)
	for i := range comps {
		states := 2 + r.IntN(2)
		comps[i] = make([][]act, states)
		for s := range comps[i] {
			for j := 0; j < 1+r.IntN(2); j++ {
				comps[i][s] = append(comps[i][s], act{action: actions[r.IntN(len(actions))], target: r.IntN(states), rate: 0.5 + 2.5*r.Float64()})
			}
		}
	}
	alpha := func(i int) map[string]bool {
		out := map[string]bool{}
		for _, st := range comps[i] {
			for _, a := range st {
				out[a.action] = true
			}
		}
		return out
	}
	// Cooperation sets: random subsets of the shared alphabet.
	set := func(x, y map[string]bool) []string {
		var out []string
		for _, a := range actions {
			if x[a] && y[a] && r.IntN(3) > 0 {
				out = append(out, a)
			}
		}
		if len(out) == 0 && r.IntN(2) == 0 {
			out = append(out, actions[r.IntN(len(actions))])
		}
		return out
	}
	a0, a1 := alpha(0), alpha(1)
	l1 := set(a0, a1)
	// Component 1 is passive on one action of l1 that component 0
	// performs actively (every activity of it), sometimes.
	if len(l1) > 0 && r.IntN(2) == 0 {
		p := l1[r.IntN(len(l1))]
		if a1[p] && a0[p] {
			for s := range comps[1] {
				for j := range comps[1][s] {
					if comps[1][s][j].action == p {
						comps[1][s][j].passive = true
					}
				}
			}
		}
	}
	for i, c := range comps {
		for s, st := range c {
			fmt.Fprintf(&b, "C%d_%d = ", i, s)
			for j, a := range st {
				if j > 0 {
					b.WriteString(" + ")
				}
				rate := fmt.Sprintf("%.3f", a.rate)
				if a.passive {
					rate = fmt.Sprintf("%.3f * infty", a.rate)
				}
				fmt.Fprintf(&b, "(%s, %s).C%d_%d", a.action, rate, i, a.target)
			}
			b.WriteString(";\n")
		}
	}
	n := func() int { return 1 + r.IntN(3) }
	left := fmt.Sprintf("C0_0[%d] <%s> C1_0[%d]", n(), strings.Join(l1, ", "), n())
	if r.IntN(3) == 0 {
		left = fmt.Sprintf("(%s) / {%s}", left, actions[r.IntN(len(actions))])
	}
	if k == 2 {
		b.WriteString(left + "\n")
		return b.String()
	}
	a2 := alpha(2)
	l2 := set(map[string]bool{"a": true, "b": true, "c": true, "d": true}, a2)
	fmt.Fprintf(&b, "(%s) <%s> C2_0[%d]\n", left, strings.Join(l2, ", "), n())
	return b.String()
}

func TestDriftEqualsChainDrift(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 7))
	checked, states, passive, hidden := 0, 0, 0, 0
	for iter := 0; iter < 300; iter++ {
		src := randomArrayModel(r)
		m, _ := lang.Load("random.pepa", []byte(src))
		if m == nil {
			continue // e.g. a passive action the checker can prove unsynchronised
		}
		fm, err := Build(m)
		if err != nil {
			continue // mixed passivity: the fluid refuses it (tested elsewhere)
		}
		s, err := ctmc.Compile(m, ctmc.Options{Aggregate: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{MaxStates: 100000})
		if err != nil {
			continue // a passive activity enabled at the top in some state
		}
		checked++
		if strings.Contains(src, "infty") {
			passive++
		}
		if strings.Contains(src, "/ {") {
			hidden++
		}
		compareDrift(t, src, fm, c)
		states += c.N
	}
	if checked < 100 || passive < 20 || hidden < 20 {
		t.Fatalf("only %d of 300 random models were comparable (%d with passive partners, %d with hiding)", checked, passive, hidden)
	}
	t.Logf("%d models (%d with passive partners, %d with hiding), %d chain states compared", checked, passive, hidden, states)
}

// compareDrift compares, at every state of c, the chain's drift, firing
// rates and second jump moments sum_j q(n, j) (n_j - n)(n_j - n)^T with
// the fluid's drift, throughputs and D at the state's counts (D is the
// linear-noise closure's diffusion: there it must be exact too).
func compareDrift(t *testing.T, src string, fm *Model, c *ctmc.Chain) {
	t.Helper()
	pos := map[[2]string]int{}
	for _, g := range fm.Groups {
		for d, s := range g.States {
			pos[[2]string{g.Component, s}] = g.Offset + d
		}
	}
	counts := func(i int) []float64 {
		x := make([]float64, fm.Dim)
		st := c.State(i)
		for _, l := range c.S.Leaves {
			loc := l.Local(st)
			for d, name := range l.Comp.States {
				p, ok := pos[[2]string{l.Group, name}]
				if !ok {
					t.Fatalf("chain local state %s:%s has no fluid population\n%s", l.Group, name, src)
				}
				x[p] += float64(l.Population(loc, d))
			}
		}
		return x
	}
	label := map[string]int{}
	for i, l := range fm.Labels {
		label[l] = i
	}
	dx := make([]float64, fm.Dim)
	tp := make([]float64, len(fm.Labels))
	n := fm.Dim
	diff := make([]float64, n*n)
	ev := fm.newEvaluator()
	for i := 0; i < c.N; i++ {
		x := counts(i)
		want := make([]float64, fm.Dim)
		wantTP := make([]float64, len(fm.Labels))
		wantD := make([]float64, n*n)
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			rate := c.RateAt(e)
			y := counts(int(c.Col[e]))
			for k := range want {
				want[k] += rate * (y[k] - x[k])
				for l := range want {
					wantD[k*n+l] += rate * (y[k] - x[k]) * (y[l] - x[l])
				}
			}
			name := c.S.Actions[c.Act[e]]
			li, ok := label[name]
			if !ok {
				t.Fatalf("the chain fires %s, which the fluid model has no label for (%v)\n%s", name, fm.Labels, src)
			}
			wantTP[li] += rate
		}
		fm.Drift(x, dx)
		fm.Throughputs(x, tp)
		ev.run(x)
		ev.diffusion(diff)
		for k := range wantD {
			if math.Abs(diff[k]-wantD[k]) > 1e-9*(1+math.Abs(wantD[k])) {
				t.Fatalf("state %s (counts %v): D[%s][%s] %.15g, the chain's %.15g\n%s", c.StateString(i), x, fm.StateName(k/n), fm.StateName(k%n), diff[k], wantD[k], src)
			}
		}
		for k := range want {
			if math.Abs(dx[k]-want[k]) > 1e-9*(1+math.Abs(want[k])) {
				t.Fatalf("state %s (counts %v): drift of %s %.15g, the chain's %.15g\n%s", c.StateString(i), x, fm.StateName(k), dx[k], want[k], src)
			}
		}
		for k := range wantTP {
			if math.Abs(tp[k]-wantTP[k]) > 1e-9*(1+wantTP[k]) {
				t.Fatalf("state %s: throughput of %s %.15g, the chain's %.15g\n%s", c.StateString(i), fm.Labels[k], tp[k], wantTP[k], src)
			}
		}
	}
}
