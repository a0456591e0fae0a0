package models

import (
	"reflect"
	"strings"
	"testing"
)

func TestFindMachinesNamed(t *testing.T) {
	s := structureOf(t, `r = 1;
A1 = (c1, infty).A1; A2 = (c2, infty).A2;
M1 = (c1, r).M1; M2 = (c2, r).M2;
(A1 <> A2) <c1, c2> (M1 <> M2)`)
	for _, tt := range []struct {
		named []string
		want  string // the machines found, or the error's text
	}{
		{nil, "M1 M2"},
		{[]string{"M2"}, "M2"},
		{[]string{"M2", "M1"}, "M2 M1"},
		{[]string{"M1", "M1"}, "Machines: M1 is named twice"},
		{[]string{"M3"}, `Machines: no component "M3"`},
		{[]string{"A1"}, "Machines: component A1 is not a machine"},
	} {
		ms, err := FindMachines(s, tt.named)
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			got = strings.Join(names, " ")
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("FindMachines(%v) = %q, want %q...", tt.named, got, tt.want)
		}
	}
}

func TestUncomputed(t *testing.T) {
	s := structureOf(t, `r = 1;
A1 = (c1, infty).A1; A2 = (c2, infty).A2; A3 = (c3, infty).(c4, infty).A3;
M1 = (c1, r).M1; M2 = (c2, r).M2;
(A1 <> A2 <> A3) <c1, c2, c3, c4> (M1 <> M2)`)
	all, err := FindMachines(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"application A3 is computed by no machine (no machine performs c3, c4)"}
	if got := Uncomputed(s, all); !reflect.DeepEqual(got, want) {
		t.Errorf("Uncomputed = %q, want %q", got, want)
	}
	// Naming one machine does not make the other's application uncomputed.
	one, err := FindMachines(s, []string{"M1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := Uncomputed(s, one); !reflect.DeepEqual(got, want) {
		t.Errorf("Uncomputed with M1 only = %q, want %q", got, want)
	}
}

// TestUncomputedResources: a network whose slots an owner component (no
// machine) takes is no uncomputed application, while a single-state
// application that only a non-machine performs is one.
func TestUncomputedResources(t *testing.T) {
	s := structureOf(t, `r = 1;
A1 = (c1, infty).A1; A2 = (c2, infty).A2;
M1 = (c1, r).M1;
O = (req, r).(xfer, r).O + (c2, r).O + (c1, infty).O;
Net = (req, infty).Net1; Net1 = (xfer, infty).Net;
(A1 <> A2) <c1, c2> ((M1 <c1> O) <req, xfer> Net)`)
	all, err := FindMachines(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"application A2 is computed by no machine (no machine performs c2)"}
	if got := Uncomputed(s, all); !reflect.DeepEqual(got, want) {
		t.Errorf("Uncomputed = %q, want %q", got, want)
	}
}
