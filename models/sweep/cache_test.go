package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
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
