package spec

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/lang"
	"pepa/models"
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
	for _, want := range []string{"r1 = 0.2;\np1 = 0.08333333333333333;\n", "r2 = 0.2;\np2 = 0.05;\n",
		"M1 = (compute1, r1).M1 + (compute1, p1).M1;", "M2 = (compute2, r2).M2 + (compute2, p2).M2;",
		"(A1 <> A2) <compute1, compute2> (M1 <> M2)\n"} {
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
	c := testchain.Chain(t, b.String())
	r, err := models.Analyze(context.Background(), c, models.Options{Question: models.Question{Beta: 3}})
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
		{"negative time", base("[[1, 2],\n [-3, 4]]", okAvail, okMap), "s.json:3:3: error: etc[1][0]: ETC[2][1] is -3"},
		{"ragged", base("[[1, 2],\n [3]]", okAvail, okMap), "s.json:3:2: error: etc[1]: the ETC matrix is ragged"},
		{"availability", base(okEtc, "{\"nominal\": [1,\n 1.5]}", okMap), "s.json:4:2: error: availability.nominal[1]: availability 1.5 of machine 2 is outside (0, 1]"},
		{"mapped twice", base(okEtc, okAvail, "[{\"name\": \"m\", \"allocation\": {\"M1\": [\"A1\"],\n \"M2\": [\"A1\", \"A2\"]}}]"), "s.json:5:8: error: mappings[0].allocation.M2: mapping m: application A1 is mapped twice"},
		{"not mapped", base(okEtc, okAvail, `[{"name": "m", "allocation": {"M1": ["A1"]}}]`), "s.json:4:44: error: mappings[0].allocation: mapping m: application A2 is not mapped"},
		{"unknown machine", base(okEtc, okAvail, `[{"name": "m", "allocation": {"M9": ["A1", "A2"]}}]`), "s.json:4:51: error: mappings[0].allocation.M9: mapping m: no machine \"M9\""},
		{"syntax", "{\n  \"etc\": [[1, 2]\n}", "s.json:3:1: error: invalid JSON"},
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
	if err == nil || !strings.Contains(err.Error(), "etc.csv:3:1: error: ragged ETC matrix: this row has 1 cell, the first row has 2") {
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
	in, err := LoadSpec("../../testdata/spec-example.json")
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
		if ms, err := models.FindMachines(s, nil); err != nil || len(ms) != 4 {
			t.Errorf("%s: machines %v, %v", m.Name, ms, err)
		}
	}
}

// TestWriteSpecRoundTrip: a written specification generates the same model.
func TestWriteSpecRoundTrip(t *testing.T) {
	for _, f := range []string{"../../testdata/spec-example.json", "../../testdata/spec-owners.json", "../../testdata/spec-shared.json", "../../testdata/spec-pandas.json"} {
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

// TestBadSpecsRejected: specifications that used to give invalid models
// (or NaN) are rejected with the field path, line and column of the value
// at fault.
func TestBadSpecsRejected(t *testing.T) {
	const okMap = `"mappings": [{"name": "m", "allocation": {"M1": ["A1"], "M2": ["A2"]}}]`
	tests := []struct{ name, spec, want string }{
		{"application and machine share a name",
			"{\"applications\": [\"X\", \"Y\"],\n \"machines\": [\"Z\", \"X\"],\n \"etc\": [[1, 2], [3, 4]]}",
			`s.json:2:20: error: machines[1]: machine "X" has the name of an application (applications[0])`},
		{"application named like an owner state",
			"{\"applications\": [\"A1\", \"M1_r1\"],\n \"etc\": [[1, 2], [3, 4]],\n \"owners\": {\"M1\": {\"arrival\": 1, \"service\": 2}}}",
			`s.json:1:25: error: applications[1]: name "M1_r1" is reserved for a local state of machine M1`},
		{"machine named like another machine's state",
			"{\"machines\": [\"M\",\n \"M_p2_o1\"],\n \"etc\": [[1, 2]]}",
			`s.json:2:2: error: machines[1]: name "M_p2_o1" is reserved for a local state of machine M`},
		{"empty etc", "{\n \"etc\": []\n}", "s.json:2:9: error: etc: the ETC matrix is empty"},
		{"empty etc row", "{\n \"etc\": [[]]\n}", "s.json:2:10: error: etc[0]: the ETC matrix's first row is empty"},
		{"empty applications", "{\"etc\": [[1]],\n \"applications\": []}", "s.json:2:18: error: applications: the list of application names is empty"},
		{"empty machines", "{\"etc\": [[1]],\n \"machines\": []}", "s.json:2:14: error: machines: the list of machine names is empty"},
		{"empty mappings", "{\"etc\": [[1]],\n \"mappings\": []}", "s.json:2:14: error: mappings: the list of mappings is empty"},
		{"stationary start overflows",
			"{\"etc\": [[1]],\n \"owners\": {\"M1\":\n  {\"arrival\": 1000, \"service\": 0.001, \"capacity\": 1000, \"start\": \"stationary\"}}}",
			"s.json:3:3: error: owners.M1: owner of M1: with load 1e+06 (arrival/service) and capacity 1000 the applications' share of the processor underflows to 0"},
		{"a number where names go", "{\"etc\": [[1]],\n \"applications\": [\"A\", 7]}", "s.json:2:24: error: applications[1]: expected a string, found a number"},
		{"a string where a number goes", "{\"etc\": [[1,\n \"x\"]]}", `s.json:2:2: error: etc[0][1]: expected a number, found a string`},
		{"a fraction where a whole number goes", "{\"etc\": [[1]],\n \"work\": {\"erlang\": 1.5}}", "s.json:2:21: error: work.erlang: expected a whole number, found the number 1.5"},
		{"unknown owner field", "{\"etc\": [[1]],\n \"owners\": {\"M1\": {\"arival\": 1}}}", `s.json:2:30: error: owners.M1.arival: unknown field "arival" (the fields here are arrival, service, discipline, capacity, start, transfers, uses, data)`},
		{"trailing text", "{\"etc\": [[1]]}\n}", "s.json:2:1: error: invalid JSON: invalid character '}' after top-level value"},
		{"unterminated", "{\"etc\": [[1]]", "s.json:1:14: error: the specification ends early"},
		{"empty file", " \n", "s.json:1:1: error: the specification is empty"},
	}
	for _, tt := range tests {
		_, err := ParseSpec("s.json", []byte(tt.spec))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v\nwant %q", tt.name, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "unmarshal")) {
			t.Errorf("%s: error in Go's terms: %v", tt.name, err)
		}
	}
	// A spec with no mappings is valid (optimize needs none); gen asks.
	in, err := ParseSpec("s.json", []byte("{\n  \"etc\": [[1, 2]]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.RequireMappings(); err == nil || !strings.Contains(err.Error(), "s.json:1:1: error: mappings: no mapping") {
		t.Errorf("RequireMappings: %v", err)
	}
	// JWCC: block comments and trailing commas are accepted.
	if _, err := ParseSpec("s.json", []byte("{/* c */ \"etc\": [[1, 2],], // x\n}")); err != nil {
		t.Errorf("JWCC: %v", err)
	}
}

// TestStationaryHeavyOwner: a heavy owner whose rho^N overflows float64
// still gets its stationary distribution, pi_n proportional to rho^n: the
// top state holds (1 - 1/rho) / (1 - rho^-(N+1)) of it.
func TestStationaryHeavyOwner(t *testing.T) {
	o := &models.Owner{Arrival: 10, Service: 1, Capacity: 400}
	pi := o.Stationary()
	want := (1 - 0.1) / (1 - math.Pow(0.1, 401))
	if math.Abs(pi[400]-want) > 1e-14 || math.Abs(pi[399]-want/10) > 1e-14 || !finiteDistribution(pi) {
		t.Errorf("pi_N = %.17g, pi_N-1 = %.17g, want %.17g, %.17g", pi[400], pi[399], want, want/10)
	}
	// Sharing: pi_n proportional to (n+1) rho^n; the share E[1/(n+1)] is
	// sum rho^n / sum (n+1) rho^n, by hand for rho = 1/2, N = 2: (1 + 1/2 +
	// 1/4) / (1 + 1 + 3/4) = 7/11.
	o = &models.Owner{Arrival: 1, Service: 2, Capacity: 2, Discipline: "sharing"}
	if got := o.Availability(); math.Abs(got-7.0/11) > 1e-15 {
		t.Errorf("sharing availability %.17g, want 7/11", got)
	}
}

// TestGenCanonicalLayout: what gen writes is what pepa fmt would write
// (lang.Format of the parsed model), for plain, Erlang and owner machines,
// for lines that fit and lines that must be broken.
func TestGenCanonicalLayout(t *testing.T) {
	check := func(name string, in *Instance, m Mapping) {
		var b bytes.Buffer
		if err := in.Generate(&b, m); err != nil {
			t.Fatal(err)
		}
		f, diags := lang.Parse(name, b.Bytes())
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags.Err())
		}
		if got := lang.Format(f); !bytes.Equal(got, b.Bytes()) {
			a, c := strings.Split(b.String(), "\n"), strings.Split(string(got), "\n")
			for i := range a {
				if i >= len(c) || a[i] != c[i] {
					t.Errorf("%s: line %d is not canonical:\n gen: %q\n fmt: %q", name, i+1, a[i], c[min(i, len(c)-1)])
					break
				}
			}
		}
	}
	for _, f := range []string{"../../testdata/spec-example.json", "../../testdata/spec-owners.json", "../../testdata/spec-shared.json", "../../testdata/spec-pandas.json"} {
		in, err := LoadSpec(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in.Mappings {
			check(f+":"+m.Name, in, m)
		}
	}
	// Long definitions and a long system equation: 40 applications, all
	// but one on M1.
	in := randomSpec(t, 40, 3, 4)
	m := Mapping{Name: "long", Allocation: map[string][]string{"M2": {"A40"}}}
	for i := 1; i < 40; i++ {
		m.Allocation["M1"] = append(m.Allocation["M1"], fmt.Sprintf("A%d", i))
	}
	check("long", in, m)
}
