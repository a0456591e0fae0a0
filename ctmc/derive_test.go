package ctmc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"pepa/internal/testing/testmodels"
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
		if strings.HasPrefix(f, "../testdata/fluid/") {
			continue // populations for fluid analysis: no chain of them fits
		}
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
				!slices.Equal(got.Col, want.Col) || !slices.Equal(got.Act, want.Act) || !sameRates(got, want) ||
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

// sameRates reports whether two chains have the same rate on every
// transition, however each stores them.
func sameRates(a, b *Chain) bool {
	if len(a.Col) != len(b.Col) {
		return false
	}
	for e := range a.Col {
		if a.RateAt(int64(e)) != b.RateAt(int64(e)) {
			return false
		}
	}
	return true
}

// TestRateTableSpills: past 65,536 distinct rates the chain lists its rates
// explicitly, the ones interned before included; below, every rate keeps
// its index.
func TestRateTableSpills(t *testing.T) {
	c := &Chain{}
	r := newRateInterner()
	var want []float64
	for k := 0; k < 100000; k++ {
		x := float64(k) + 0.5
		if k%3 == 0 {
			x = 7 // a repeated rate
		}
		want = append(want, x)
		if i, ok := r.intern(c, x); ok {
			c.RateIndex = append(c.RateIndex, i)
		} else {
			c.Rates = append(c.Rates, x)
		}
		c.Col = append(c.Col, 0)
	}
	if c.RateIndex != nil || len(c.Rates) != len(want) || !r.full {
		t.Fatalf("after 66,668 distinct rates: index %d entries, rates %d", len(c.RateIndex), len(c.Rates))
	}
	for e, x := range want {
		if got := c.RateAt(int64(e)); got != x {
			t.Fatalf("rate %d = %g, want %g", e, got, x)
		}
	}
	small := &Chain{}
	r = newRateInterner()
	for _, x := range []float64{1, 2, 1, 3, 2} {
		i, _ := r.intern(small, x)
		small.RateIndex = append(small.RateIndex, i)
	}
	if len(small.RateTable) != 3 || len(small.RateIndex) != 5 || small.RateAt(4) != 2 {
		t.Errorf("table %v, index %v", small.RateTable, small.RateIndex)
	}
}

// TestDeriveSpillsRates: a derivation that meets more distinct rates than
// the table holds (the limit lowered to 3 here) lists them explicitly, and
// every rate is the sequential exploration's.
func TestDeriveSpillsRates(t *testing.T) {
	old := rateTableLimit
	rateTableLimit = 3
	defer func() { rateTableLimit = old }()
	m, diags := lang.Load("ws", []byte(testmodels.Workstations(5, 4, 3)))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	s1, _ := Compile(m, DefaultOptions)
	s2, _ := Compile(m, DefaultOptions)
	want, err1 := deriveSequential(context.Background(), s1, DeriveOptions{})
	got, err2 := Derive(context.Background(), s2, DeriveOptions{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if got.RateIndex != nil || len(got.Rates) != len(want.Rates) || !sameRates(got, want) || !slices.Equal(got.Col, want.Col) {
		t.Errorf("spilled chain differs: %d rates listed, want %d", len(got.Rates), len(want.Rates))
	}
}

// TestDerivePipelined: with chunks of 64 states in pieces of 16, most
// chunks are expanded while the one before is numbered, reading the index
// as it is written; the chain is still the sequential exploration's, entry
// for entry, and the state limit fails as it does there.
func TestDerivePipelined(t *testing.T) {
	srcs := map[string]string{
		"workstations-3-3-2": testmodels.Workstations(3, 3, 2),
		"mapping-12x4":       testmodels.Mapping(12, 4, 1),
		"mapping-14x7":       testmodels.Mapping(14, 7, 1),
	}
	for _, procs := range []int{2, 3} {
		old := runtime.GOMAXPROCS(procs)
		for name, src := range srcs {
			for _, max := range []int{0, 500} {
				m, diags := lang.Load(name, []byte(src))
				if diags.HasErrors() {
					t.Fatalf("%s: %v", name, diags.Err())
				}
				s1, _ := Compile(m, DefaultOptions)
				s2, _ := Compile(m, DefaultOptions)
				before := chunksAhead.Load()
				want, err1 := deriveSequential(context.Background(), s1, DeriveOptions{MaxStates: max})
				got, err2 := Derive(context.Background(), s2, DeriveOptions{MaxStates: max, ChunkStates: 64, PieceStates: 16})
				if max > 0 {
					if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
						t.Errorf("%s, limit %d: errors %v and %v", name, max, err1, err2)
					}
					continue
				}
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v, %v", name, err1, err2)
				}
				if chunksAhead.Load()-before < int64(got.N/64/2) {
					t.Errorf("%s: %d of %d chunks expanded ahead", name, chunksAhead.Load()-before, got.N/64)
				}
				if got.N != want.N || !slices.Equal(got.States, want.States) || !slices.Equal(got.RowPtr, want.RowPtr) ||
					!slices.Equal(got.Col, want.Col) || !slices.Equal(got.Act, want.Act) || !sameRates(got, want) ||
					!slices.Equal(got.Deadlocks, want.Deadlocks) {
					t.Errorf("%s (GOMAXPROCS %d): chains differ", name, procs)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestConcurrentDerivationsRestoreGC: derivations run at once (a model's
// groups) each hold the collector off while they make their transition
// arrays; once they are done, the collector's setting is the one they
// found. (Each restoring the setting it had found left it off for good
// after two overlapping pauses.)
func TestConcurrentDerivationsRestoreGC(t *testing.T) {
	s := compileSource(t, testmodels.Workstations(3, 2, 2))
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 80; i++ {
				if _, err := Derive(context.Background(), s, DeriveOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after concurrent derivations the GC percent is %d, want 100", got)
	}
}
