package mappingtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/lang"
	"pepa/models"
)

// RandomSpecJSON writes a specification with apps applications and
// machines machines, seeded ETC and perturbations, and one (round-robin)
// mapping named rr.
func RandomSpecJSON(apps, machines int, seed uint64) []byte {
	etc := RandomETC(rand.New(rand.NewPCG(seed, 1)), apps, machines)
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
	b, _ := json.Marshal(doc) // maps, slices and numbers: never fails
	return b
}

// RandomETC draws an ETC matrix of apps rows and machines columns: each
// application a base time in [1, 5), each machine's entry the base times
// a factor in [0.5, 1.5), to two decimals.
func RandomETC(rng *rand.Rand, apps, machines int) [][]float64 {
	etc := make([][]float64, apps)
	for i := range etc {
		base := 1 + 4*rng.Float64()
		etc[i] = make([]float64, machines)
		for j := range etc[i] {
			etc[i][j] = math.Round(base*(0.5+rng.Float64())*100) / 100
		}
	}
	return etc
}

// Generated runs write (a mapping's Generate) and reads the model back:
// its text and its pragmas.
func Generated(t testing.TB, write func(io.Writer) error) (string, *models.Pragmas) {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
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

// AnalyzeDecomposed analyses a model by groups of coupled machines.
func AnalyzeDecomposed(t testing.TB, src string, opt models.Options) *models.Result {
	t.Helper()
	s := testchain.Structure(t, src)
	res, err := models.AnalyzeGroups(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
