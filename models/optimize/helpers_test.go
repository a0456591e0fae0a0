package optimize

import (
	"bytes"
	"context"
	"testing"

	"pepa/internal/testing/testchain"
	"pepa/lang"
	"pepa/models"
	"pepa/models/spec"
)

// generate writes the model of a mapping and reads back its pragmas.
func generate(t *testing.T, in *spec.Instance, m spec.Mapping) (string, *models.Pragmas) {
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
