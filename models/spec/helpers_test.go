package spec

import (
	"io"
	"testing"

	"pepa/internal/testing/mappingtest"
	"pepa/models"
)

// generate writes the model of a mapping and reads back its pragmas.
func generate(t *testing.T, in *Instance, m Mapping) (string, *models.Pragmas) {
	t.Helper()
	return mappingtest.Generated(t, func(w io.Writer) error { return in.Generate(w, m) })
}

// analyzeDecomposed analyses a model by groups of coupled machines.
func analyzeDecomposed(t *testing.T, src string, opt models.Options) *models.Result {
	t.Helper()
	return mappingtest.AnalyzeDecomposed(t, src, opt)
}

// randomSpec makes a specification with apps applications and machines
// machines, seeded ETC and perturbations, and one (round-robin) mapping.
func randomSpec(t testing.TB, apps, machines int, seed uint64) *Instance {
	t.Helper()
	in, err := ParseSpec("s.json", mappingtest.RandomSpecJSON(apps, machines, seed))
	if err != nil {
		t.Fatal(err)
	}
	return in
}
