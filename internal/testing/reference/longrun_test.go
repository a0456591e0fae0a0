package reference

import (
	"context"
	"math"
	"os"
	"sort"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/lang"
)

// TestLongRunFiles: the long-run distributions of the testdata models with
// several closed classes (the shapes of the plug-in corpus's: a burnt-out
// epidemic with a class per final size, a start state choosing between two
// cycles), ctmc's against the reference's, every throughput and every class
// probability; fork.pepa also against its closed form.
func TestLongRunFiles(t *testing.T) {
	for _, tc := range []struct {
		file    string
		classes int // aggregated (the reference keeps each copy: more)
	}{{"../../../testdata/outbreak.pepa", 7}, {"../../../testdata/fork.pepa", 2}} {
		src, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		m, diags := lang.Load(tc.file, src)
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		rc, err := Derive(context.Background(), m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		classes := rc.ClosedClasses()
		pi, err := rc.Steady()
		if err != nil {
			t.Fatal(err)
		}
		want := rc.Throughputs(pi)
		for _, aggregate := range []bool{true, false} {
			s, err := ctmc.Compile(m, ctmc.Options{Aggregate: aggregate})
			if err != nil {
				t.Fatal(err)
			}
			c, err := ctmc.Derive(context.Background(), s, ctmc.DeriveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := steady.Solve(context.Background(), c, steady.Options{})
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			if aggregate && len(res.Classes) != tc.classes || !aggregate && len(res.Classes) != len(classes) {
				t.Fatalf("%s (aggregate %v): ctmc finds %d closed classes, the reference %d unaggregated", tc.file, aggregate, len(res.Classes), len(classes))
			}
			for _, tp := range ctmc.Throughputs(c, res.Pi) {
				w := want[tp.Action]
				if d := math.Abs(tp.Value - w); d > 1e-12*math.Abs(w) || (w == 0 && tp.Value != 0) {
					t.Errorf("%s (aggregate %v): throughput(%s) = %.17g, reference %.17g", tc.file, aggregate, tp.Action, tp.Value, w)
				}
			}
			if aggregate {
				continue
			}
			// Unaggregated, the classes are the reference's: their
			// probabilities, sorted, pair up.
			prob := rc.Absorption(classes)
			var got []float64
			for _, cr := range res.Classes {
				got = append(got, cr.Probability)
			}
			sort.Float64s(prob)
			sort.Float64s(got)
			for k := range got {
				if math.Abs(got[k]-prob[k]) > 1e-12*prob[k] {
					t.Errorf("%s: class probabilities %v, reference %v", tc.file, got, prob)
					break
				}
			}
		}
		if tc.file == "../../../testdata/fork.pepa" {
			closed := map[string]float64{"l": 0.25 * 0.75, "l2": 0.25 * 0.25 * 3, "r": 0.75 * 1 / 3.0, "r2": 0.75 * 2 / 3.0 * 0.5, "d": 0.75 / 3.0, "b": 0.75 / 3.0}
			for a, w := range closed {
				if math.Abs(want[a]-w) > 1e-15 {
					t.Errorf("fork: reference throughput(%s) = %.17g, closed form %.17g", a, want[a], w)
				}
			}
		}
	}
}
