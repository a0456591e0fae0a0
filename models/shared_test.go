package models

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/reference"
	"pepa/lang"
)

// sharedSpec is a small specification with a shared network: M1 and M2
// stage input over Net (A1, A2 and A3 have data, A5 none), M3 uses none.
// Rates by hand (workload 1 -> 2, availability 1 -> 0.5): r = 1 / ETC,
// p = 0.5 / (ETC * 2) = 1 / (4 ETC); a request 1 / latency = 2; a transfer
// rate / data: A1 10/20, A2 10/10, A3 10/5.
func sharedSpec(capacity int) string {
	return fmt.Sprintf(`{"etc": [[2, 4, 3], [5, 2, 4], [3, 6, 2], [4, 5, 1], [6, 4, 5]],
 "workload": {"nominal": 1, "perturbed": 2},
 "availability": {"nominal": 1, "perturbed": 0.5},
 "resources": {"Net": {"machines": ["M1", "M2"], "rate": 10, "latency": 0.5, "capacity": %d,
   "data": {"A1": 20, "A2": 10, "A3": 5}}},
 "mappings": [{"name": "m", "allocation": {"M1": ["A1", "A3"], "M2": ["A2", "A5"], "M3": ["A4"]}}]}`, capacity)
}

// handBuiltShared is sharedSpec's mapping written out by hand, with
// finished machines stopped (a terminal state MjDone with a private
// self-loop) and no application components (passive single-state
// components change no rate): Net's states count the transfers under way.
func handBuiltShared(capacity int) string {
	var b strings.Builder
	b.WriteString(`M1 = (req1, 2).(xfer1, 0.5).M1go;
M1go = (compute1, 0.5).(req3, 2).(xfer3, 2).(compute3, 0.3333333333333333).M1Done
     + (compute1, 0.125).(req3, 2).(xfer3, 2).(compute3, 0.08333333333333333).M1Done;
M2 = (req2, 2).(xfer2, 1).M2go;
M2go = (compute2, 0.5).(compute5, 0.25).M2Done + (compute2, 0.125).(compute5, 0.0625).M2Done;
M3 = (compute4, 1).M3Done + (compute4, 0.25).M3Done;
M1Done = (idle1, 1).M1Done;
M2Done = (idle2, 1).M2Done;
M3Done = (idle3, 1).M3Done;
`)
	switch capacity {
	case 1:
		b.WriteString(`Net0 = (req1, infty).Net1 + (req2, infty).Net1 + (req3, infty).Net1;
Net1 = (xfer1, infty).Net0 + (xfer2, infty).Net0 + (xfer3, infty).Net0;
`)
	case 2:
		b.WriteString(`Net0 = (req1, infty).Net1 + (req2, infty).Net1 + (req3, infty).Net1;
Net1 = (req1, infty).Net2 + (req2, infty).Net2 + (req3, infty).Net2
     + (xfer1, infty).Net0 + (xfer2, infty).Net0 + (xfer3, infty).Net0;
Net2 = (xfer1, infty).Net1 + (xfer2, infty).Net1 + (xfer3, infty).Net1;
`)
	}
	b.WriteString("(M1 <> M2 <> M3) <req1, req2, req3, xfer1, xfer2, xfer3> Net0\n")
	return b.String()
}

// TestSharedGenMatchesHandBuilt: the model gen writes for a specification
// with a shared network (capacity 1 and 2) parses, robustness solves it by
// groups (M1 and M2 with Net, M3 alone), and every figure (each machine's
// P(F <= beta) and E[F], P(all), E[makespan]) equals that of the mapping
// written out by hand with terminal states, solved by the reference
// semantics (internal/reference, no code shared with ctmc or passage), to
// 1e-9.
func TestSharedGenMatchesHandBuilt(t *testing.T) {
	const beta = 6.0
	for _, capacity := range []int{1, 2} {
		in, err := ParseSpec("s.json", []byte(sharedSpec(capacity)))
		if err != nil {
			t.Fatal(err)
		}
		var src strings.Builder
		if err := in.Generate(&src, in.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		m, diags := lang.Load("gen.pepa", []byte(src.String()))
		if diags.HasErrors() {
			t.Fatalf("capacity %d: %v\n%s", capacity, diags.Err(), src.String())
		}
		pragmas, err := ReadPragmas(m.File)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AnalyzeGroups(context.Background(), s, Options{Beta: beta, Epsilon: 1e-12, Pragmas: pragmas})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Groups) != 2 || !slices.Equal(got.Groups[0].Machines, []string{"M1", "M2"}) || got.Groups[0].Solved != "exact" ||
			!slices.Contains(got.Groups[0].Components, "Net") ||
			!slices.Equal(got.Groups[1].Machines, []string{"M3"}) || got.Groups[1].Solved != "alone" {
			t.Errorf("capacity %d: groups %+v, want M1, M2 with Net (exact) and M3 alone", capacity, got.Groups)
		}

		hm, diags := lang.Load("hand.pepa", []byte(handBuiltShared(capacity)))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		rc, err := reference.Derive(context.Background(), hm, reference.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for j, last := range []string{"compute3", "compute5", "compute4"} {
			p := rc.InitialActions([]string{last})
			v, _ := rc.CDFs(p, []float64{beta})
			mean, err := rc.Mean(p)
			if err != nil {
				t.Fatal(err)
			}
			mr := got.Machines[j]
			if math.Abs(mr.PByBeta-v[0]) > 1e-9 || math.Abs(mr.Mean-mean) > 1e-9 {
				t.Errorf("capacity %d: %s P(F <= %g) %.12g E[F] %.12g, hand-built %.12g %.12g", capacity, mr.Name, beta, mr.PByBeta, mr.Mean, v[0], mean)
			}
		}
		done := make([]bool, rc.N())
		for i, st := range rc.States {
			done[i] = st[0] == "M1Done" && st[1] == "M2Done" && st[2] == "M3Done"
		}
		all := rc.InitialStates(done)
		v, _ := rc.CDFs(all, []float64{beta})
		makespan, err := rc.Mean(all)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.PAllByBeta-v[0]) > 1e-9 || math.Abs(got.ExpectedMakespan-makespan) > 1e-9*makespan {
			t.Errorf("capacity %d: P(all) %.12g E[makespan] %.12g, hand-built %.12g %.12g", capacity, got.PAllByBeta, got.ExpectedMakespan, v[0], makespan)
		}
	}
}
