package models

import (
	"context"
	"math"
	"testing"
)

// TestMachineChainMatchesModel: the chains optimize builds directly give
// the same finishing-time probabilities and means as the PEPA models gen
// writes, analysed the usual way (pragmas included).
func TestMachineChainMatchesModel(t *testing.T) {
	for _, spec := range []string{"../testdata/spec-example.json", "../testdata/spec-owners.json"} {
		in, err := LoadSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in.Mappings {
			src, pragmas := generate(t, in, m)
			res := analyzeDecomposed(t, src, Options{Beta: 20, Pragmas: pragmas})
			for _, mr := range res.Machines {
				j := indexOfName(in.Machines, mr.Name)
				var apps []int
				for _, a := range m.Allocation[mr.Name] {
					apps = append(apps, indexOfName(in.Apps, a))
				}
				got, err := in.machineFinish(context.Background(), j, apps, 20, 1e-10, true)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got.PByBeta-mr.PByBeta) > 1e-9 || math.Abs(got.Mean-mr.Mean) > 1e-9*mr.Mean {
					t.Errorf("%s %s %s: direct chain %.12g (mean %.12g), model %.12g (mean %.12g)", spec, m.Name, mr.Name, got.PByBeta, got.Mean, mr.PByBeta, mr.Mean)
				}
			}
		}
	}
}
