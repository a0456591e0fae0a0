package plot

import (
	"context"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/models"
	"pepa/models/spec"
)

// analyzeDecomposed analyses a model by groups of coupled machines.
func analyzeDecomposed(t *testing.T, src string, opt models.Options) *models.Result {
	t.Helper()
	s := testchain.Structure(t, src)
	res, err := models.AnalyzeGroups(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// loadEnergySpec is testdata/spec-energy.json, whose power has some idle
// power > 0.
func loadEnergySpec(t *testing.T) *spec.Instance {
	t.Helper()
	in, err := spec.LoadSpec("../../testdata/spec-energy.json")
	if err != nil {
		t.Fatal(err)
	}
	if in.Power == nil || in.Power.IdleFree() {
		t.Fatal("testdata/spec-energy.json should give power with some idle power > 0")
	}
	return in
}
