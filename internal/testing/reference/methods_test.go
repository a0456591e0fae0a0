package reference

import (
	"context"
	"flag"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"pepa/internal/testing/randmodel"
	"pepa/lang"
)

// The reference's own methods checked against textbook dense ones on random
// non-stiff models: GTH against an LU solve of pi Q = 0 with sum pi = 1,
// the squaring of exp(G h) - I against gonum's Padé exponential, and the
// eliminated mean passage time against an LU solve of -G m = 1.
func TestMethodsAgreeOnRandomModels(t *testing.T) {
	checked := 0
	for seed := int64(1); checked < 60 && seed < 1000; seed++ {
		gm := randmodel.Generate(seed)
		stiff := false
		for _, f := range gm.Features {
			stiff = stiff || f == "stiff"
		}
		if stiff {
			continue
		}
		m, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		c, err := Derive(context.Background(), m, Options{MaxStates: 200})
		if err != nil {
			continue
		}
		pi, err := c.Steady()
		if err != nil || len(c.ClosedClasses()[0]) != c.N() {
			continue // LU below needs an irreducible chain
		}
		checked++
		n := c.N()
		// pi Q = 0 with the last equation replaced by sum pi = 1.
		a := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for _, tr := range c.Trans[i] {
				if tr.To != i {
					a.Set(tr.To, i, a.At(tr.To, i)+tr.Rate)
					a.Set(i, i, a.At(i, i)-tr.Rate)
				}
			}
		}
		for j := 0; j < n; j++ {
			a.Set(n-1, j, 1)
		}
		b := mat.NewVecDense(n, nil)
		b.SetVec(n-1, 1)
		var x mat.VecDense
		if err := x.SolveVec(a, b); err != nil {
			t.Fatalf("seed %d: LU: %v", seed, err)
		}
		for i := 0; i < n; i++ {
			if math.Abs(x.AtVec(i)-pi[i]) > 1e-11 {
				t.Errorf("seed %d: pi[%d] GTH %g, LU %g", seed, i, pi[i], x.AtVec(i))
			}
		}
		// A passage to the first action of state 0's first transition.
		if len(c.Trans[0]) == 0 {
			continue
		}
		p := c.InitialActions([]string{c.Trans[0][0].Action})
		g, ended := c.absorbing(p)
		for _, tt := range []float64{0.05, 0.7, 4} {
			var scaled, e mat.Dense
			scaled.Scale(tt, g)
			e.Exp(&scaled)
			want := 0.0
			for j := 0; j <= n; j++ {
				if ended[j] {
					want += e.At(0, j)
				}
			}
			if got := c.CDF(p, tt); math.Abs(got-want) > 1e-11 {
				t.Errorf("seed %d: CDF(%g) %g, gonum Exp %g", seed, tt, got, want)
			}
		}
		mean, err := c.Mean(p)
		if err != nil || math.IsInf(mean, 1) {
			continue
		}
		// -G m = 1 on the states that have not ended.
		var live []int
		for i := 0; i < n; i++ {
			if !ended[i] {
				live = append(live, i)
			}
		}
		k := len(live)
		ma := mat.NewDense(k, k, nil)
		ones := mat.NewVecDense(k, nil)
		for r, i := range live {
			ones.SetVec(r, 1)
			for s, j := range live {
				ma.Set(r, s, -g.At(i, j))
			}
		}
		var mv mat.VecDense
		if err := mv.SolveVec(ma, ones); err != nil {
			continue // some state cannot finish: singular
		}
		if math.Abs(mv.AtVec(0)-mean) > 1e-9*mean {
			t.Errorf("seed %d: mean %g, LU %g", seed, mean, mv.AtVec(0))
		}
	}
	if checked < 30 {
		t.Errorf("only %d models checked", checked)
	}
}

// The reference's two CDF methods (scaling and squaring of the dense
// generator, Taylor substeps on the sparse rows) agree within the error
// bound CDFs states, on random models stiff ones included, at times up to
// c t = 2e4.
func TestCDFMethodsAgree(t *testing.T) {
	checked, worst := 0, 0.0
	want := 80
	if *flagMethodModels > 0 {
		want = *flagMethodModels
	}
	for seed := int64(1); checked < want && seed < int64(20*want); seed++ {
		gm := randmodel.Generate(seed)
		m, diags := lang.Load("rand.pepa", []byte(gm.Source))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		c, err := Derive(context.Background(), m, Options{MaxStates: 150})
		if err != nil || len(c.Trans[0]) == 0 {
			continue
		}
		checked++
		actions := []string{c.Trans[0][0].Action}
		if last := c.Trans[c.N()-1]; len(last) > 0 {
			actions = append(actions, last[len(last)-1].Action)
		}
		for _, a := range actions {
			p := c.InitialActions([]string{a})
			rate := c.leaveRate(p)
			var ts []float64
			for _, ct := range []float64{0.01, 0.5, 3, 40, 700, 2e4} {
				ts = append(ts, ct/rate)
			}
			_, errs := c.CDFs(p, ts)
			dense, sparse := c.CDFsBy("dense", p, ts), c.CDFsBy("sparse", p, ts)
			for i := range ts {
				d := math.Abs(dense[i] - sparse[i])
				if d/errs[i] > worst {
					worst = d / errs[i]
					t.Logf("seed %d c t %g: diff %.3g, bound %.3g", seed, ts[i]*rate, d, errs[i])
				}
				if d > errs[i] {
					t.Errorf("seed %d, c t = %g: dense %.17g, sparse %.17g (bound %.3g each)", seed, ts[i]*rate, dense[i], sparse[i], errs[i])
				}
			}
		}
	}
	t.Logf("%d models; largest disagreement %.3g of one method's bound", checked, worst)
	if checked < want*3/4 {
		t.Errorf("only %d models checked", checked)
	}
}

var flagMethodModels = flag.Int("reference.methods", 0, "models TestCDFMethodsAgree checks (0: 80)")
