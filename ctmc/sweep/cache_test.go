package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"pepa/ctmc"
)

// TestChainCache: points asking at once for one model's chain get, each,
// what deriving their own model gives (rerated from one derivation), and a
// point whose values merge two local derivatives gets its own derivation,
// kept for the points of its structure.
func TestChainCache(t *testing.T) {
	const src = "v1 = 1; v2 = 2; w = 0.5;\nP = (a, w).(b, v1).P + (c, 1).(b, v2).P;\nQ = (d, w).Q + (e, 3).Q;\nP <> Q\n"
	ctx := context.Background()
	values := [][]float64{{1, 2, 0.5}, {1, 3, 0.7}, {2, 2, 0.5}, {4, 1, 2}, {1.5, 2.5, 1}, {2, 2, 0.9}}
	var cc ChainCache
	got := make([]*ctmc.Chain, len(values))
	var wg sync.WaitGroup
	for i, v := range values {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := SetRates("m.pepa", []byte(src), []string{"v1", "v2", "w"}, v)
			if err != nil {
				t.Error(err)
				return
			}
			s, err := ctmc.Compile(m, ctmc.DefaultOptions)
			if err != nil {
				t.Error(err)
				return
			}
			got[i], err = cc.Chain(ctx, "m", s, func(s *ctmc.Structure) (*ctmc.Chain, error) { return ctmc.Derive(ctx, s, ctmc.DeriveOptions{}) })
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, v := range values {
		m, _ := SetRates("m.pepa", []byte(src), []string{"v1", "v2", "w"}, v)
		s, _ := ctmc.Compile(m, ctmc.DefaultOptions)
		want, err := ctmc.Derive(ctx, s, ctmc.DeriveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := got[i]
		if c == nil || c.N != want.N || !slices.Equal(c.Col, want.Col) || !slices.Equal(c.Act, want.Act) || !slices.Equal(c.RowPtr, want.RowPtr) {
			t.Fatalf("values %v: the cached chain's structure differs from the derived one's", v)
		}
		for e := range want.Col {
			if a, b := c.RateAt(int64(e)), want.RateAt(int64(e)); math.Float64bits(a) != math.Float64bits(b) {
				t.Fatalf("values %v, transition %d: rate %v, derived %v", v, e, a, b)
			}
		}
	}
	st := cc.Stats()
	// v1 = v2 merges (b, v1).P and (b, v2).P: two of the six points have
	// the other structure, and whichever point derived first, a point of
	// the other structure is derived again.
	if st.Derived != 1 || st.Derived+st.Rerated+st.Changed != len(values) || st.Changed < 1 {
		t.Errorf("stats %+v", st)
	}
	t.Log(fmt.Sprintf("%+v", st))
}

// TestMerge: ranges of a grid merge into the whole in grid order, crossings
// in the order a scan of the whole grid finds them; ranges that are not one
// grid's are refused.
func TestMerge(t *testing.T) {
	params := []Param{{"r", []float64{1, 2, 3, 4}}}
	row := func(i int) []Column { return []Column{{"m", float64(i)}} }
	part := func(first int, rows ...int) *Result {
		r := &Result{Verb: "robustness", Params: params, Series: []string{"a", "b"}, First: first}
		for _, i := range rows {
			r.Rows = append(r.Rows, row(i))
		}
		return r
	}
	p1, p2 := part(0, 0, 1), part(2, 2, 3)
	// Two crossings at one value: the pair (0, 1) before (0, 2) whatever the
	// ranges' order.
	p1.Crossings = []Crossing{{A: "a", B: "b", X: 2.5, Order: [3]int{0, 1, 1}}}
	p2.Crossings = []Crossing{{A: "a", B: "b", X: 1.5, Order: [3]int{0, 1, 0}}, {A: "a", B: "c", X: 2.5, Order: [3]int{0, 2, 2}}}
	got, err := Merge([]*Result{p2, p1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 4 || got.Rows[3][0].Value != 3 {
		t.Fatalf("rows %v", got.Rows)
	}
	order := []float64{got.Crossings[0].X, got.Crossings[1].X, got.Crossings[2].X}
	if order[0] != 1.5 || got.Crossings[1].Order != [3]int{0, 1, 1} || got.Crossings[2].Order != [3]int{0, 2, 2} {
		t.Fatalf("crossings %+v", got.Crossings)
	}
	other := part(2, 2, 3)
	other.Params = []Param{{"r", []float64{1, 2, 3, 5}}}
	for _, c := range []struct {
		parts []*Result
		want  string
	}{
		{[]*Result{p1}, "the results hold 2 of the grid's 4 points"},
		{[]*Result{p1, part(3, 3)}, "points 2 to 2 are missing"},
		{[]*Result{p1, part(1, 1, 2, 3)}, "points from 1 are given twice"},
		{[]*Result{p1, other}, "of different sweeps"},
	} {
		if _, err := Merge(c.parts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
