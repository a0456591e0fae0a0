package models

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
)

// TestRatesByHand: the rates written for a small specification, against
// the formulas of semantics.md section 4 worked by hand.
func TestRatesByHand(t *testing.T) {
	spec := `{
  "etc": [[4, 8], [10, 5]],
  "workload": {"nominal": [2, 1], "perturbed": [3, 1]},
  "availability": {"nominal": [0.8, 1], "perturbed": [0.5, 0.25]},
  "mappings": [{"name": "x", "allocation": {"M1": ["A1"], "M2": ["A2"]}}]
}`
	in, err := ParseSpec("s.json", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	// A1 on M1: r = 0.8 / 4 = 0.2; T~ = 4 * (3/2) / 0.5 = 12, p = 1/12.
	// A2 on M2: r = 1 / 5 = 0.2; T~ = 5 * (1/1) / 0.25 = 20, p = 0.05.
	var b bytes.Buffer
	if err := in.Generate(&b, in.Mappings[0]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"r1 = 0.2; p1 = 0.08333333333333333;", "r2 = 0.2; p2 = 0.05;",
		"M1 = (compute1, r1).M1 + (compute1, p1).M1;", "M2 = (compute2, r2).M2 + (compute2, p2).M2;",
		"(A1 <> A2)\n<compute1, compute2>\n(M1 <> M2)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("generated model lacks %q:\n%s", want, b.String())
		}
	}
}

// TestGenRobustnessRoundTrip: a generated model parses, and a machine with
// one application (ideal rate r and perturbed rate p racing to the same
// end) finishes as Exp(r + p): P(F <= beta) = 1 - exp(-(r+p) beta).
func TestGenRobustnessRoundTrip(t *testing.T) {
	spec := `{
  "applications": ["Fft", "Sort"],
  "machines": ["Fast", "Slow"],
  "etc": [[2, 4], [3, 6]],
  "workload": {"nominal": 1, "perturbed": [1.5, 2]},
  "availability": {"nominal": 1, "perturbed": 0.5},
  "mappings": [{"name": "one", "allocation": {"Fast": ["Fft"], "Slow": ["Sort"]}},
               {"name": "two", "allocation": {"Fast": ["Fft", "Sort"], "Slow": []}}]
}`
	in, err := ParseSpec("s.json", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := in.Generate(&b, in.Mappings[0]); err != nil {
		t.Fatal(err)
	}
	c := chainOf(t, b.String())
	r, err := Analyze(context.Background(), c, Options{Beta: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Fft on Fast: r = 1/2, p = 0.5 * 1 / (2 * 1.5) = 1/6.
	// Sort on Slow: r = 1/6, p = 0.5 * 1 / (6 * 2) = 1/24.
	want := map[string]float64{"Fast": 1 - math.Exp(-(0.5+1.0/6)*3), "Slow": 1 - math.Exp(-(1.0/6+1.0/24)*3)}
	for _, m := range r.Machines {
		if math.Abs(m.PByBeta-want[m.Name]) > 1e-10 {
			t.Errorf("%s: P(F <= 3) = %.12g, want %.12g", m.Name, m.PByBeta, want[m.Name])
		}
	}
	b.Reset()
	if err := in.Generate(&b, in.Mappings[1]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "// Slow computes no application") {
		t.Errorf("idle machine not noted:\n%s", b.String())
	}
	if _, diags := lang.Load("two.pepa", b.Bytes()); diags.HasErrors() {
		t.Errorf("generated model does not check: %v", diags.Err())
	}
}

// TestSpecErrors: every kind of bad specification is rejected with its line.
func TestSpecErrors(t *testing.T) {
	base := func(etc, avail, mappings string) string {
		return "{\n  \"etc\": " + etc + ",\n  \"availability\": " + avail + ",\n  \"mappings\": " + mappings + "\n}"
	}
	okEtc, okAvail := "[[1, 2], [3, 4]]", `{"nominal": 1}`
	okMap := `[{"name": "m", "allocation": {"M1": ["A1"], "M2": ["A2"]}}]`
	tests := []struct {
		name, spec, want string
	}{
		{"negative time", base("[[1, 2],\n [-3, 4]]", okAvail, okMap), "s.json:3: error: ETC[2][1] is -3"},
		{"ragged", base("[[1, 2],\n [3]]", okAvail, okMap), "s.json:3: error: the ETC matrix is ragged"},
		{"availability", base(okEtc, "{\"nominal\": [1,\n 1.5]}", okMap), "s.json:4: error: availability 1.5 of machine 2 is outside (0, 1]"},
		{"mapped twice", base(okEtc, okAvail, "[{\"name\": \"m\", \"allocation\": {\"M1\": [\"A1\"],\n \"M2\": [\"A1\", \"A2\"]}}]"), "s.json:5: error: mapping m: application A1 is mapped twice"},
		{"not mapped", base(okEtc, okAvail, `[{"name": "m", "allocation": {"M1": ["A1"]}}]`), "error: mapping m: application A2 is not mapped"},
		{"unknown machine", base(okEtc, okAvail, `[{"name": "m", "allocation": {"M9": ["A1", "A2"]}}]`), "error: mapping m: no machine \"M9\""},
		{"syntax", "{\n  \"etc\": [[1, 2]\n}", "s.json:3: error: invalid JSON"},
		{"unknown field", "{\"etcs\": 1}", "unknown field"},
		{"bad range", base(okEtc, `{"nominal": 1, "perturbed": {"uniform": [0.9, 0.5]}}`, okMap), "a range is written"},
	}
	for _, tt := range tests {
		_, err := ParseSpec("s.json", []byte(tt.spec))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestETCFileErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "etc.csv"), []byte("M1,M2\n1,2\n3\n"), 0o644)
	spec := `{"etc_csv": "etc.csv", "mappings": [{"name": "m", "allocation": {"M1": ["A1", "A2"]}}]}`
	_, err := ParseSpec(filepath.Join(dir, "s.json"), []byte(spec))
	if err == nil || !strings.Contains(err.Error(), "etc.csv:3: error: ragged ETC matrix") {
		t.Fatalf("error %v", err)
	}
}

// TestSeededRangesReproducible: uniform ranges give the same model every
// time for a seed, and another model for another seed.
func TestSeededRangesReproducible(t *testing.T) {
	gen := func(seed string) string {
		spec := `{"etc": [[1, 2], [3, 4]], "availability": {"nominal": 1, "perturbed": {"uniform": [0.5, 0.9]}}, "seed": ` + seed +
			`, "mappings": [{"name": "m", "allocation": {"M1": ["A1"], "M2": ["A2"]}}]}`
		in, err := ParseSpec("s.json", []byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		in.Generate(&b, in.Mappings[0])
		return b.String()
	}
	if gen("1") != gen("1") || gen("1") == gen("2") {
		t.Errorf("seeded generation is not reproducible, or ignores the seed")
	}
}

// TestExampleSpec: the documented example generates models that check.
func TestExampleSpec(t *testing.T) {
	in, err := LoadSpec("../testdata/spec-example.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range in.Mappings {
		var b bytes.Buffer
		if err := in.Generate(&b, m); err != nil {
			t.Fatal(err)
		}
		mod, diags := lang.Load(m.Name, b.Bytes())
		if diags.HasErrors() {
			t.Fatalf("%s: %v", m.Name, diags.Err())
		}
		s, _ := ctmc.Compile(mod, ctmc.DefaultOptions)
		if ms, err := FindMachines(s, nil); err != nil || len(ms) != 4 {
			t.Errorf("%s: machines %v, %v", m.Name, ms, err)
		}
	}
}

// TestWriteSpecRoundTrip: a written specification generates the same model.
func TestWriteSpecRoundTrip(t *testing.T) {
	for _, f := range []string{"../testdata/spec-example.json", "../testdata/spec-owners.json"} {
		in, err := LoadSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		var spec, a, b bytes.Buffer
		if err := in.WriteSpec(&spec, in.Mappings[0]); err != nil {
			t.Fatal(err)
		}
		back, err := ParseSpec(f, spec.Bytes())
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, spec.String())
		}
		in.Generate(&a, in.Mappings[0])
		back.Generate(&b, back.Mappings[0])
		if a.String() != b.String() {
			t.Errorf("%s: the written specification generates another model", f)
		}
	}
}
