package ctmc

import (
	"context"
	"math"
	"os"
	"testing"

	"pepa/lang"
)

// derive loads, compiles and derives a model given as source text.
func derive(t testing.TB, src string, opt Options) *Chain {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check:\n%v", diags.Err())
	}
	s, err := Compile(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Derive(context.Background(), s, DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deriveFile(t testing.TB, name string, opt Options) *Chain {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Skip(err)
	}
	return derive(t, string(b), opt)
}

func compileFile(t testing.TB, name string) *Structure {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Skip(err)
	}
	m, diags := lang.Load(name, b)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s, err := Compile(m, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func deriveLimited(t testing.TB, name string, max int) (*Chain, error) {
	t.Helper()
	return Derive(context.Background(), compileFile(t, name), DeriveOptions{MaxStates: max})
}

// near reports whether a is within tol of b, relative to b (absolute below 1).
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
