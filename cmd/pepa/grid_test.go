package main

import "testing"

// A --times grid holds the decimals the user wrote: 3 × 0.1 is
// 0.30000000000000004 in binary, and was printed so in passage and fluid
// tables.
func TestParseGridDecimal(t *testing.T) {
	g, err := parseGrid("0:1:0.1", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	if len(g) != len(want) {
		t.Fatalf("%d points, want %d: %v", len(g), len(want), g)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("point %d = %v, want %v", i, g[i], want[i])
		}
	}
	g, err = parseGrid("100000:100001:0.1", "0.35")
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != 12 || g[0] != 0.35 || g[8] != 100000.7 || g[11] != 100001 {
		t.Errorf("grid %v", g)
	}
}
