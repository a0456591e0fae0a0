package testchain

import (
	"context"
	"os"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

// Structure parses, checks and compiles a model given as text.
func Structure(t testing.TB, src string) *ctmc.Structure {
	t.Helper()
	return StructureWith(t, src, ctmc.DefaultOptions)
}

// StructureWith is Structure compiled with opt (aggregation off, say).
func StructureWith(t testing.TB, src string, opt ctmc.Options) *ctmc.Structure {
	t.Helper()
	m, diags := lang.Load("t.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("model does not check:\n%v", diags.Err())
	}
	s, err := ctmc.Compile(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Chain derives the chain of a model given as text.
func Chain(t testing.TB, src string) *ctmc.Chain {
	t.Helper()
	return ChainWith(t, src, ctmc.DefaultOptions)
}

// ChainWith is Chain compiled with opt.
func ChainWith(t testing.TB, src string, opt ctmc.Options) *ctmc.Chain {
	t.Helper()
	c, err := ctmc.Derive(context.Background(), StructureWith(t, src, opt), ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ChainFile derives the chain of a model file; the test is skipped if the
// file is missing (the published examples live outside the project).
func ChainFile(t testing.TB, name string) *ctmc.Chain {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Skip(err)
	}
	return Chain(t, string(b))
}
