package optimize

import (
	"context"
	"math"
	"testing"

	"pepa/models"
	"pepa/models/spec"
)

// TestMachineChainMatchesModel: the chains optimize builds directly give
// the same finishing-time probabilities and means as the PEPA models gen
// writes, analysed the usual way (pragmas included).
func TestMachineChainMatchesModel(t *testing.T) {
	for _, path := range []string{"../../testdata/spec-example.json", "../../testdata/spec-owners.json"} {
		in, err := spec.LoadSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in.Mappings {
			src, pragmas := generate(t, in, m)
			res := analyzeDecomposed(t, src, models.Options{Question: models.Question{Beta: 20}, Pragmas: pragmas})
			for _, mr := range res.Machines {
				j := spec.IndexOfName(in.Machines, mr.Name)
				var apps []int
				for _, a := range m.Allocation[mr.Name] {
					apps = append(apps, spec.IndexOfName(in.Apps, a))
				}
				got, err := machineFinish(context.Background(), in, j, apps, 20, 1e-10, true)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got.PByBeta-mr.PByBeta) > 1e-9 || math.Abs(got.Mean-mr.Mean) > 1e-9*mr.Mean {
					t.Errorf("%s %s %s: direct chain %.12g (mean %.12g), model %.12g (mean %.12g)", path, m.Name, mr.Name, got.PByBeta, got.Mean, mr.PByBeta, mr.Mean)
				}
			}
		}
	}
}
