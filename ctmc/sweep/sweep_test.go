package sweep

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

func TestParseVary(t *testing.T) {
	p, err := ParseVary("avail=0.5:1:0.05")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}
	if p.Name != "avail" || !reflect.DeepEqual(p.Values, want) {
		t.Fatalf("got %s = %v", p.Name, p.Values)
	}
	p, err = ParseVary(" r1 = 1, 2,4,8")
	if err != nil || p.Name != "r1" || !reflect.DeepEqual(p.Values, []float64{1, 2, 4, 8}) {
		t.Fatalf("got %+v, %v", p, err)
	}
	for _, bad := range []string{"avail", "=1,2", "a=1:2", "a=2:1:0.1", "a=1:2:0", "a=x,1", "a=1:1e9:1e-3"} {
		if _, err := ParseVary(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGrid(t *testing.T) {
	g := Grid([]Param{{"a", []float64{1, 2}}, {"b", []float64{10, 20, 30}}})
	want := [][]float64{{1, 10}, {1, 20}, {1, 30}, {2, 10}, {2, 20}, {2, 30}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("got %v", g)
	}
}

const model = `// a comment
r1 = 2 * r0; r0 = 0.5;
s = (r1 + 1) ;
P = (a, r1).(b, s).P;
P
`

// TestEditSource: the text edit and the AST edit give models with the
// same rates, and the text is the source with only the definitions'
// right-hand sides changed.
func TestEditSource(t *testing.T) {
	out, err := EditSource("m.pepa", []byte(model), []string{"r1", "s"}, []float64{0.25, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(model, "r1 = 2 * r0;", "r1 = 0.25;", 1), "s = (r1 + 1) ;", "s = 3;", 1)
	if string(out) != want {
		t.Fatalf("edited:\n%s\nwant:\n%s", out, want)
	}
	byText, diags := lang.Load("m.pepa", out)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	byAST, err := SetRates("m.pepa", []byte(model), []string{"r1", "s"}, []float64{0.25, 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*lang.Model{byText, byAST} {
		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		var rates []float64
		for _, tr := range s.Leaves[0].Transitions(0) {
			rates = append(rates, tr.Rate)
		}
		for _, tr := range s.Leaves[0].Transitions(1) {
			rates = append(rates, tr.Rate)
		}
		if !reflect.DeepEqual(rates, []float64{0.25, 3}) {
			t.Fatalf("rates %v", rates)
		}
	}
	if _, err := EditSource("m.pepa", []byte(model), []string{"nosuch"}, []float64{1}); err == nil {
		t.Fatal("an undefined constant was accepted")
	}
	if _, err := SetRates("m.pepa", []byte(model), []string{"r1"}, []float64{-1}); err == nil || !strings.Contains(err.Error(), "m.pepa:") {
		t.Fatalf("a negative rate: %v", err)
	}
}

// TestCrossings: two lines crossing at a known point; bisection finds it
// to the tolerance, and the direction is right.
func TestCrossings(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4}
	f := func(x float64) []float64 { return []float64{0.2 + 0.1*x, 0.5 - math.Sqrt(x)/10, 0.9} }
	ys := make([][]float64, 3)
	for _, x := range xs {
		v := f(x)
		for k := range ys {
			ys[k] = append(ys[k], v[k])
		}
	}
	eval := func(_ context.Context, x float64) ([]float64, error) { return f(x), nil }
	cs, err := Crossings(context.Background(), xs, []string{"up", "down", "flat"}, ys, eval, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("%d crossings: %+v", len(cs), cs)
	}
	// 0.2 + 0.1 x = 0.5 - sqrt(x)/10: with u = sqrt(x), u^2 + u - 3 = 0.
	u := (-1 + math.Sqrt(13)) / 2
	c := cs[0]
	if c.A != "up" || c.B != "down" || !c.AOvertakes || c.Lo != 1 || c.Hi != 2 || math.Abs(c.X-u*u) > 1e-8 {
		t.Fatalf("crossing %+v, want x = %.10f", c, u*u)
	}
}
