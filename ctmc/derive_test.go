package ctmc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"pepa/internal/testmodels"
	"pepa/lang"
)

// TestDeriveMatchesSequential: the chunked, parallel exploration numbers
// states and lists transitions exactly as the single-threaded one, on every
// model of testdata and on generated ones larger than a chunk, with one
// worker and with several.
func TestDeriveMatchesSequential(t *testing.T) {
	srcs := map[string]string{
		"workstations-3-2-2": testmodels.Workstations(3, 2, 2),
		"workstations-5-4":   testmodels.Workstations(5, 4),
		"mapping-20x5":       testmodels.Mapping(20, 5, 1),
	}
	files, _ := filepath.Glob("../testdata/*.pepa")
	more, _ := filepath.Glob("../testdata/*/*.pepa")
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = string(b)
	}
	for _, procs := range []int{1, 3} {
		old := runtime.GOMAXPROCS(procs)
		for name, src := range srcs {
			m, diags := lang.Load(name, []byte(src))
			if diags.HasErrors() {
				t.Fatalf("%s: %v", name, diags.Err())
			}
			s1, err := Compile(m, DefaultOptions)
			if err != nil {
				t.Fatal(err)
			}
			s2, _ := Compile(m, DefaultOptions)
			want, err1 := deriveSequential(context.Background(), s1, DeriveOptions{})
			got, err2 := Derive(context.Background(), s2, DeriveOptions{})
			if err1 != nil || err2 != nil {
				if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
					t.Errorf("%s: errors %v and %v", name, err1, err2)
				}
				continue
			}
			if got.N != want.N || !slices.Equal(got.States, want.States) || !slices.Equal(got.RowPtr, want.RowPtr) ||
				!slices.Equal(got.Col, want.Col) || !slices.Equal(got.Act, want.Act) || !slices.Equal(got.Rate, want.Rate) ||
				!slices.Equal(got.Deadlocks, want.Deadlocks) {
				t.Errorf("%s (GOMAXPROCS %d): chains differ: %d states, %d transitions; want %d, %d", name, procs, got.N, len(got.Col), want.N, len(want.Col))
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestDeriveErrorsMatchSequential: the state limit is reported as the
// single-threaded exploration reports it, inside a chunk and across chunks.
func TestDeriveErrorsMatchSequential(t *testing.T) {
	cases := []struct {
		name, src string
		max       int
	}{
		{"limit", testmodels.Workstations(5, 4), 300},
		{"limit-large", testmodels.Workstations(5, 5, 4), 20000},
		{"limit-small", testmodels.Workstations(5, 4), 7},
	}
	for _, tc := range cases {
		m, diags := lang.Load(tc.name, []byte(tc.src))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", tc.name, diags.Err())
		}
		s1, _ := Compile(m, DefaultOptions)
		s2, _ := Compile(m, DefaultOptions)
		_, err1 := deriveSequential(context.Background(), s1, DeriveOptions{MaxStates: tc.max})
		_, err2 := Derive(context.Background(), s2, DeriveOptions{MaxStates: tc.max})
		if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
			t.Errorf("%s: errors %v and %v", tc.name, err1, err2)
		}
		if tc.max > 0 && !errors.Is(err2, ErrTooManyStates) {
			t.Errorf("%s: %v does not wrap ErrTooManyStates", tc.name, err2)
		}
	}
}
