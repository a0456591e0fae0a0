package ctmc

import (
	"slices"
	"testing"
)

// TestLeafTablesKeepEntryOrder: a leaf's entries are listed in the order
// the leaf lists them, even where one of them equals a constant transition
// (a self-loop of the same action and rate as an application's own
// activity), which subtracting the constant list would take out in its
// place (tables.go).
func TestLeafTablesKeepEntryOrder(t *testing.T) {
	src := "M = (b, 1.0).M + (c, 2.0).N; N = (a, 1.0).M; A = (a, infty).A + (b, 1.0).A; M <a> A"
	s := compileSource(t, src)
	lt, ok := s.IndependentLeaves()
	if !ok {
		t.Fatal("no leaf tables")
	}
	var names []string
	for i := lt.Start[0][0]; i < lt.Start[0][1]; i++ {
		names = append(names, s.Actions[lt.Act[0][i]])
	}
	if want := []string{"b", "c"}; !slices.Equal(names, want) {
		t.Errorf("entries of M: %v, want %v", names, want)
	}
	if len(lt.ConstAct) != 1 || s.Actions[lt.ConstAct[0]] != "b" {
		t.Errorf("constant transitions %v, want b", lt.ConstAct)
	}
}
