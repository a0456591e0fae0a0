package ctmc

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"pepa/internal/testing/reference"
	"pepa/lang"
)

// TestStateCounts: the chains of the project's models have the states the
// reference semantics (internal/testing/reference, no code shared with this
// package) finds: unaggregated, its count; aggregated, the number of its
// states once the copies of each array are taken as a multiset (the
// lumping aggregation makes), computed from its state vectors.
func TestStateCounts(t *testing.T) {
	tests := []struct {
		file   string
		states int // by hand, where worked out (0: the reference alone)
	}{
		{"../testdata/pc-lan.pepa", 128},
		{"../testdata/pc-lan-6.pepa", 768},
		{"../testdata/active-badge.pepa", 0},
		{"../testdata/arrays.pepa", 0},
		{"../testdata/mapping-a.pepa", 5 * 5 * 5 * 5}, // 3 applications a machine: 2*3-1 local states
		{"../../shared/examples/iccs2020-mapping-a.pepa", 10395},
	}
	for _, tt := range tests {
		src, err := os.ReadFile(tt.file)
		if err != nil {
			t.Logf("%s: %v", tt.file, err)
			continue
		}
		m, diags := lang.Load(tt.file, src)
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		rc, err := reference.Derive(context.Background(), m, reference.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lumped := map[string]bool{}
		for _, st := range rc.States {
			lumped[multisetKey(rc.Leaves, st)] = true
		}
		for _, agg := range []bool{true, false} {
			c := derive(t, string(src), Options{Aggregate: agg})
			want := rc.N()
			if agg {
				want = len(lumped)
			}
			if c.N != want {
				t.Errorf("%s aggregate=%v: %d states, the reference %d", tt.file, agg, c.N, want)
			}
			if !agg && c.NumTransitions() != rc.DistinctTransitions() {
				t.Errorf("%s: %d transitions, the reference %d", tt.file, c.NumTransitions(), rc.DistinctTransitions())
			}
			if tt.states > 0 && c.N != tt.states {
				t.Errorf("%s aggregate=%v: %d states, want %d", tt.file, agg, c.N, tt.states)
			}
		}
	}
}

// multisetKey is a state's key with the derivatives of leaves of the same
// name (the copies of an array) sorted.
func multisetKey(leaves, st []string) string {
	groups := map[string][]string{}
	var names []string
	for i, l := range leaves {
		if _, ok := groups[l]; !ok {
			names = append(names, l)
		}
		groups[l] = append(groups[l], st[i])
	}
	var b strings.Builder
	for _, n := range names {
		g := groups[n]
		sort.Strings(g)
		b.WriteString(n + "=" + strings.Join(g, "|") + ";")
	}
	return b.String()
}
