package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/lang"
	"pepa/models"
)

// generate writes the model of a mapping and reads back its pragmas.
func generate(t *testing.T, in *Instance, m Mapping) (string, *models.Pragmas) {
	t.Helper()
	var b bytes.Buffer
	if err := in.Generate(&b, m); err != nil {
		t.Fatal(err)
	}
	f, diags := lang.Parse("m.pepa", b.Bytes())
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	pragmas, err := models.ReadPragmas(f)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), pragmas
}

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

// randomSpec makes a specification with apps applications and machines
// machines, seeded ETC and perturbations, and one (round-robin) mapping.
func randomSpec(t testing.TB, apps, machines int, seed uint64) *Instance {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	etc := make([][]float64, apps)
	for i := range etc {
		base := 1 + 4*rng.Float64()
		etc[i] = make([]float64, machines)
		for j := range etc[i] {
			etc[i][j] = math.Round(base*(0.5+rng.Float64())*100) / 100
		}
	}
	alloc := map[string][]string{}
	for i := 0; i < apps; i++ {
		m := fmt.Sprintf("M%d", i%machines+1)
		alloc[m] = append(alloc[m], fmt.Sprintf("A%d", i+1))
	}
	doc := map[string]any{
		"etc":          etc,
		"workload":     map[string]any{"nominal": 1, "perturbed": map[string]any{"uniform": []float64{1, 1.5}}},
		"availability": map[string]any{"nominal": 1, "perturbed": map[string]any{"uniform": []float64{0.6, 1}}},
		"seed":         seed,
		"mappings":     []any{map[string]any{"name": "rr", "allocation": alloc}},
	}
	b, _ := json.Marshal(doc)
	in, err := ParseSpec("s.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
