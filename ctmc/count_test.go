package ctmc

import "testing"

func TestStateCounts(t *testing.T) {
	tests := []struct {
		file   string
		states int
	}{
		{"../testdata/pc-lan.pepa", 128},
		{"../testdata/pc-lan-6.pepa", 768},
		{"../testdata/active-badge.pepa", 0},
		{"../testdata/arrays.pepa", 0},
		{"../testdata/mapping-a.pepa", 5 * 5 * 5 * 5}, // 3 applications a machine: 2*3-1 local states
		{"../../shared/examples/iccs2020-mapping-a.pepa", 10395},
	}
	for _, tt := range tests {
		for _, agg := range []bool{true, false} {
			c := deriveFile(t, tt.file, Options{Aggregate: agg})
			t.Logf("%s aggregate=%v: %d states, %d transitions, %d deadlocks", tt.file, agg, c.N, c.NumTransitions(), len(c.Deadlocks))
			if tt.states > 0 && c.N != tt.states {
				t.Errorf("%s: %d states, want %d", tt.file, c.N, tt.states)
			}
		}
	}
}
