package ctmc

import (
	"fmt"

	"math"
	"pepa/lang"
	"sync"
	"testing"
)

// TestEnabledMatchesDerive: for every state of several chains, the
// transitions an Evaluator lists, applied to the packed state and summed
// per (target, action), are exactly the chain's row as Derive built it.
func TestEnabledMatchesDerive(t *testing.T) {
	chains := map[string]*Chain{
		"pc-lan":   deriveFile(t, "../testdata/pc-lan.pepa", DefaultOptions),
		"badge":    deriveFile(t, "../testdata/active-badge.pepa", DefaultOptions),
		"arrays":   deriveFile(t, "../testdata/arrays.pepa", Options{}),
		"mapping":  deriveFile(t, "../testdata/mapping-a.pepa", DefaultOptions),
		"hide":     derive(t, "P = (a, 1).(b, 2).P; Q = (a, infty).Q; (P <a> Q)/{b}", DefaultOptions),
		"apparent": derive(t, "P = (a, 1).P + (a, 2).Q; Q = (b, 3).P; R = (a, 4).R + (a, 1).S; S = (c, 1).R; P <a> R", DefaultOptions),
	}
	for name, c := range chains {
		t.Run(name, func(t *testing.T) { checkEnabled(t, c) })
	}
}

func checkEnabled(t *testing.T, c *Chain) {
	w := c.S.Words
	index := map[string]int{}
	key := func(s []uint64) string { return fmt.Sprint(s) }
	for i := 0; i < c.N; i++ {
		index[key(c.State(i))] = i
	}
	ev := c.S.NewEvaluator()
	var buf Transitions
	type edge struct {
		to  int
		act int32
	}
	st := make([]uint64, w)
	for i := 0; i < c.N; i++ {
		if err := ev.Enabled(c.State(i), &buf); err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		got := map[edge]float64{}
		for k := 0; k < buf.Len(); k++ {
			copy(st, c.State(i))
			buf.Apply(k, st)
			j, ok := index[key(st)]
			if !ok {
				t.Fatalf("state %d: transition %d leads to a state the chain does not have", i, k)
			}
			got[edge{j, buf.Action(k)}] += buf.Rates()[k]
		}
		want := map[edge]float64{}
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			want[edge{int(c.Col[k]), c.Act[k]}] += c.RateAt(k)
		}
		if len(got) != len(want) {
			t.Fatalf("state %d: %d transitions, chain has %d", i, len(got), len(want))
		}
		for e, r := range want {
			if math.Abs(got[e]-r) > 1e-12*r {
				t.Fatalf("state %d -> %d (%s): rate %g, chain %g", i, e.to, c.S.Actions[e.act], got[e], r)
			}
		}
	}
}

// TestEvaluatorsIndependent: evaluators used at the same time by several
// goroutines give the same lists as one used alone (each has its own
// scratch buffers).
func TestEvaluatorsIndependent(t *testing.T) {
	c := deriveFile(t, "../testdata/pc-lan.pepa", DefaultOptions)
	sums := make([]float64, 4)
	var wg sync.WaitGroup
	for g := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := c.S.NewEvaluator()
			var buf Transitions
			for rep := 0; rep < 50; rep++ {
				for i := 0; i < c.N; i++ {
					if err := ev.Enabled(c.State(i), &buf); err != nil {
						panic(err)
					}
					for k, r := range buf.Rates() {
						sums[g] += r * float64(k+1) * float64(i+1)
					}
				}
			}
		}()
	}
	wg.Wait()
	for g := 1; g < len(sums); g++ {
		if sums[g] != sums[0] {
			t.Fatalf("goroutine %d: checksum %g, goroutine 0: %g", g, sums[g], sums[0])
		}
	}
}

func TestEnabledErrors(t *testing.T) {
	m := compileSrc(t, "P = (a, 1).P + (a, 2*infty).P; Q = (a, 3).Q; P <*> Q")
	ev := m.NewEvaluator()
	var buf Transitions
	if err := ev.Enabled(make([]uint64, m.Words), &buf); err == nil {
		t.Fatal("an action both active and passive on one side was accepted")
	}
	if err := ev.Enabled(make([]uint64, m.Words+1), &buf); err == nil {
		t.Fatal("a state of the wrong size was accepted")
	}
}

func compileSrc(t *testing.T, src string) *Structure {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s, err := Compile(m, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
