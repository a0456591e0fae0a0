package passage

import (
	"context"
	"math"
	"testing"
)

// The values the seed paper's authors report (../shared/examples/README.md),
// beta = 45 s: each machine's first action is the source and its last the
// target (plugin); initial semantics ends at the first completion of the
// machine's cycle.
var published = []struct {
	file     string
	machines [][2][]string // per machine: first actions, last actions
	initial  []float64
	plugin   []float64
}{
	{
		file: "../../shared/examples/iccs2020-mapping-a.pepa",
		machines: [][2][]string{
			{{"compute5"}, {"compute20"}},
			{{"compute6"}, {"compute16"}},
			{{"compute1"}, {"compute7"}},
			{{"compute2"}, {"compute19"}},
			{{"compute8"}, {"compute18"}},
		},
		initial: []float64{0.9479664996, 0.9999999573, 0.9998649087, 0.8677076536, 0.9963294003},
		plugin:  []float64{0.9611916506, 0.9999999798, 0.9999157699, 0.8392089592, 0.9963099695},
	},
	{
		file: "../../shared/examples/iccs2020-mapping-b.pepa",
		machines: [][2][]string{
			{{"compute3"}, {"compute20"}},
			{{"compute2"}, {"compute19"}},
			{{"compute1"}, {"compute13"}},
			{{"compute9"}, {"compute15"}},
			{{"compute6"}, {"compute16"}},
		},
		initial: []float64{0.8960844473, 0.9831210805, 0.9939933862, 0.9906936458, 0.9163321694},
		plugin:  []float64{0.8915728832, 0.9856319205, 0.9951899774, 0.9920228500, 0.9071145601},
	},
}

func TestPublishedValues(t *testing.T) {
	for _, pub := range published {
		c := chainOfFile(t, pub.file)
		pi, err := SteadyForPlugin(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		var initial, plugin []Problem
		for _, m := range pub.machines {
			initial = append(initial, InitialProblem(c, actions(t, c, m[1]...)))
			pr, err := PluginProblem(c, pi, actions(t, c, m[0]...), actions(t, c, m[1]...))
			if err != nil {
				t.Fatal(err)
			}
			plugin = append(plugin, pr)
		}
		for _, sem := range []struct {
			name  string
			probs []Problem
			want  []float64
		}{{"initial", initial, pub.initial}, {"plugin", plugin, pub.plugin}} {
			rs, err := Solve(context.Background(), c, sem.probs, Options{Horizon: 45})
			if err != nil {
				t.Fatal(err)
			}
			for m, r := range rs {
				got := cdf(t, r, 45)
				t.Logf("%s M%d: %.12f vs %.10f", sem.name, m+1, got, sem.want[m])
				if math.Abs(got-sem.want[m]) > 1e-9 {
					t.Errorf("%s %s M%d: P(F <= 45) = %.10f, published %.10f", pub.file, sem.name, m+1, got, sem.want[m])
				}
			}
		}
	}
}
