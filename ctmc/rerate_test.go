package ctmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"pepa/internal/testing/randmodel"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
)

// compileText compiles a model given as text (nil, error if it does not
// check).
func compileText(t *testing.T, src string) (*Structure, error) {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	return Compile(m, DefaultOptions)
}

// sameChain compares a rerated chain with a derived one: states, rows,
// targets, actions, deadlocks, and every transition's rate, bit for bit.
func sameChain(t *testing.T, what string, got, want *Chain) {
	t.Helper()
	if got.N != want.N || !slices.Equal(got.States, want.States) || !slices.Equal(got.RowPtr, want.RowPtr) ||
		!slices.Equal(got.Col, want.Col) || !slices.Equal(got.Act, want.Act) || !slices.Equal(got.Deadlocks, want.Deadlocks) {
		t.Fatalf("%s: the rerated chain's structure differs from the derived one's", what)
	}
	for e := range want.Col {
		if a, b := got.RateAt(int64(e)), want.RateAt(int64(e)); math.Float64bits(a) != math.Float64bits(b) {
			t.Fatalf("%s: transition %d: rate %v, derived %v", what, e, a, b)
		}
	}
}

var rateDef = regexp.MustCompile(`\b([a-z]\d+) = ([0-9.e+-]+);`)

// scaleRates multiplies every rate definition "xK = v;" of a model by
// factor^K (by factor when uniform).
func scaleRates(src string, factor float64, uniform bool) string {
	return rateDef.ReplaceAllStringFunc(src, func(def string) string {
		m := rateDef.FindStringSubmatch(def)
		v, _ := strconv.ParseFloat(m[2], 64)
		k, _ := strconv.Atoi(m[1][1:])
		if uniform {
			k = 1
		}
		return fmt.Sprintf("%s = %s;", m[1], strconv.FormatFloat(v*math.Pow(factor, float64(k)), 'g', -1, 64))
	})
}

// TestRerateEqualsDerive: on random models (general and mapping-shaped)
// whose rate constants are changed, Rerate gives Derive's chain exactly,
// or refuses with ErrStructureChanged, and then Derive's chain does differ
// in structure.
func TestRerateEqualsDerive(t *testing.T) {
	ctx := context.Background()
	rerated, refused := 0, 0
	for seed := int64(1); seed <= 400; seed++ {
		mod := randmodel.Generate(seed)
		s, err := compileText(t, mod.Source)
		if err != nil {
			continue
		}
		c, err := Derive(ctx, s, DeriveOptions{})
		if err != nil {
			continue
		}
		for _, factor := range []float64{1.37, -1.37, 1} {
			src := scaleRates(mod.Source, math.Abs(factor), factor < 0)
			s2, err := compileText(t, src)
			if err != nil {
				t.Fatalf("seed %d: the scaled model does not compile: %v", seed, err)
			}
			want, derr := Derive(ctx, s2, DeriveOptions{})
			got, err := Rerate(ctx, c, s2)
			switch {
			case errors.Is(err, ErrStructureChanged):
				refused++
				if derr == nil && want.N == c.N && slices.Equal(want.RowPtr, c.RowPtr) && slices.Equal(want.Col, c.Col) && slices.Equal(want.Act, c.Act) {
					t.Fatalf("seed %d, factor %g: refused (%v), but the derived chain has the same structure", seed, factor, err)
				}
				if factor == 1 {
					t.Fatalf("seed %d: the model itself refused: %v", seed, err)
				}
			case err != nil:
				t.Fatalf("seed %d: %v", seed, err)
			case derr != nil:
				t.Fatalf("seed %d: rerated, but Derive fails: %v", seed, derr)
			default:
				rerated++
				sameChain(t, fmt.Sprintf("seed %d, factor %g", seed, factor), got, want)
				if got.RateIndex != nil && c.RateIndex != nil && &got.RateIndex[0] != &c.RateIndex[0] && factor == 1 {
					t.Errorf("seed %d: the same rates were indexed afresh", seed)
				}
			}
		}
	}
	t.Logf("%d rerated, %d refused", rerated, refused)
	if rerated < 300 {
		t.Fatalf("only %d chains rerated", rerated)
	}
}

// TestRerateCases: a mapping model's rates changed (c's indices kept, the
// arrays shared); two rates equal in c and not in s (indexed afresh); and a
// change of values that merges two local derivatives (refused).
func TestRerateCases(t *testing.T) {
	ctx := context.Background()
	base := testmodels.Mapping(9, 3, 1)
	c, err := Derive(ctx, mustCompile(t, base), DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := mustCompile(t, scaleRates(base, 1.1, true))
	got, err := Rerate(ctx, c, s2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Derive(ctx, s2, DeriveOptions{})
	sameChain(t, "mapping", got, want)
	// Rates scaled by factor^i: r1 = r8 in the model, apart now.
	s2 = mustCompile(t, scaleRates(base, 1.1, false))
	apartRates, err := Rerate(ctx, c, s2)
	if err != nil {
		t.Fatal(err)
	}
	want2, _ := Derive(ctx, s2, DeriveOptions{})
	sameChain(t, "mapping, rates apart", apartRates, want2)
	if apartRates.RateIndex == nil || &apartRates.RateIndex[0] == &c.RateIndex[0] || len(apartRates.RateTable) <= len(c.RateTable) {
		t.Error("rates apart: not indexed afresh")
	}
	if &got.Col[0] != &c.Col[0] || &got.RateIndex[0] != &c.RateIndex[0] || slices.Equal(got.RateTable, c.RateTable) {
		t.Error("the mapping's rerated chain does not share the arrays with a new table")
	}

	// r1 = r2 in the first model: one rate of the table; then apart.
	equal := "r1 = 0.5; r2 = 0.5;\nP = (a, r1).Q + (b, r2).Q; Q = (c, 1).P;\nP"
	c, _ = Derive(ctx, mustCompile(t, equal), DeriveOptions{})
	s2 = mustCompile(t, "r1 = 0.5; r2 = 0.7;\nP = (a, r1).Q + (b, r2).Q; Q = (c, 1).P;\nP")
	if got, err = Rerate(ctx, c, s2); err != nil {
		t.Fatal(err)
	}
	want, _ = Derive(ctx, s2, DeriveOptions{})
	sameChain(t, "apart", got, want)
	if len(got.RateTable) != 3 {
		t.Errorf("rates apart: table %v", got.RateTable)
	}

	// (b, v1).P and (b, v2).P are one derivative when v1 = v2.
	apart := "v1 = 1; v2 = 2;\nP = (a, 1).(b, v1).P + (c, 1).(b, v2).P;\nP"
	c, _ = Derive(ctx, mustCompile(t, apart), DeriveOptions{})
	s2 = mustCompile(t, "v1 = 2; v2 = 2;\nP = (a, 1).(b, v1).P + (c, 1).(b, v2).P;\nP")
	if _, err := Rerate(ctx, c, s2); !errors.Is(err, ErrStructureChanged) {
		t.Fatalf("merged derivatives: %v", err)
	}

	// The same components cooperating on another action: another model.
	c, _ = Derive(ctx, mustCompile(t, "P = (a, 1).(b, 2).P; Q = (a, 1).(b, 3).Q;\nP <a> Q"), DeriveOptions{})
	if _, err := Rerate(ctx, c, mustCompile(t, "P = (a, 1).(b, 2).P; Q = (a, 1).(b, 3).Q;\nP <b> Q")); !errors.Is(err, ErrStructureChanged) {
		t.Fatalf("another cooperation set: %v", err)
	}

	// More distinct rates than a table holds: the rates themselves, as
	// Derive lists them then.
	defer func(limit int) { rateTableLimit = limit }(rateTableLimit)
	rateTableLimit = 3
	many := testmodels.Mapping(6, 2, 1)
	c, _ = Derive(ctx, mustCompile(t, many), DeriveOptions{})
	s2 = mustCompile(t, scaleRates(many, 1.1, false))
	if got, err = Rerate(ctx, c, s2); err != nil {
		t.Fatal(err)
	}
	want, _ = Derive(ctx, s2, DeriveOptions{})
	if got.Rates == nil || want.Rates == nil {
		t.Fatalf("a table of 3 rates: rerated %d rates, derived %d", len(got.Rates), len(want.Rates))
	}
	sameChain(t, "a full table", got, want)
	// c with a table, s's rates past it (rates that were equal come apart).
	rateTableLimit = 1 << 16
	c, _ = Derive(ctx, mustCompile(t, many), DeriveOptions{})
	rateTableLimit = len(c.RateTable) + 1
	if got, err = Rerate(ctx, c, s2); err != nil {
		t.Fatal(err)
	}
	want, _ = Derive(ctx, s2, DeriveOptions{})
	if got.Rates == nil || want.Rates == nil {
		t.Fatalf("a table of %d rates: rerated %d rates, derived %d", rateTableLimit, len(got.Rates), len(want.Rates))
	}
	sameChain(t, "a table full in s", got, want)
	rateTableLimit = 1 << 16

	// A chain whose transitions were released (passage.Options.ReleaseChain).
	released := *c
	released.Col, released.Act, released.RateIndex, released.Rates = nil, nil, nil, nil
	if _, err := Rerate(ctx, &released, mustCompile(t, apart)); err == nil || errors.Is(err, ErrStructureChanged) {
		t.Fatalf("a released chain: %v", err)
	}
}

func mustCompile(t *testing.T, src string) *Structure {
	t.Helper()
	s, err := compileText(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func BenchmarkRerateMapping28x7(b *testing.B) {
	ctx := context.Background()
	src := testmodels.Mapping(28, 7, 1)
	m, _ := lang.Load("m.pepa", []byte(src))
	s, _ := Compile(m, DefaultOptions)
	c, err := Derive(ctx, s, DeriveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m2, _ := lang.Load("m.pepa", []byte(scaleRates(src, 1.01, true)))
	s2, _ := Compile(m2, DefaultOptions)
	b.Run("derive", func(b *testing.B) {
		for b.Loop() {
			if _, err := Derive(ctx, s2, DeriveOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rerate", func(b *testing.B) {
		for b.Loop() {
			if _, err := Rerate(ctx, c, s2); err != nil {
				b.Fatal(err)
			}
		}
	})
}
