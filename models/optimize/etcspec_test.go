package optimize

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pepa/models/etc"
	"pepa/models/spec"
)

// TestETCGenerate: a specification's etc_generate gives the matrix of
// package etc, named by its sizes; written with WriteETC and read back
// through etc_csv, the matrix is the same bit for bit.
func TestETCGenerate(t *testing.T) {
	dir := t.TempDir()
	doc := `{
  // drawn, not given
  "etc_generate": {"class": "u_s_lohi", "applications": 6, "machines": 3, "seed": 4},
  "mappings": [{"heuristic": "min-min"}]
}`
	in, err := spec.ParseSpec(filepath.Join(dir, "gen.json"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want, err := etc.Generate(etc.Params{Method: "range", TaskRange: 100, MachineRange: 1000, Consistency: "partially-consistent", Applications: 6, Machines: 3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.ETC, want) {
		t.Fatalf("ETC %v, want %v", in.ETC, want)
	}
	if !slices.Equal(in.Apps, []string{"A1", "A2", "A3", "A4", "A5", "A6"}) || !slices.Equal(in.Machines, []string{"M1", "M2", "M3"}) {
		t.Fatalf("names %v %v", in.Apps, in.Machines)
	}
	if in.Mappings[0].Name != "Min-min" {
		t.Errorf("the heuristic mapping is named %q", in.Mappings[0].Name)
	}
	var b bytes.Buffer
	if err := in.WriteETC(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# ETC matrix of gen.json (rows: applications A1..A6; etc_generate: range method, 6 applications x 3 machines, class u_s_lohi") {
		t.Errorf("header:\n%s", b.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "etc.csv"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := spec.ParseSpec(filepath.Join(dir, "back.json"), []byte(`{"etc_csv": "etc.csv"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.ETC, in.ETC) {
		t.Fatalf("read back %v, written %v", back.ETC, in.ETC)
	}
}

// TestETCGenerateErrors: problems with etc_generate are placed at their
// field.
func TestETCGenerateErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"etc_generate": {"method": "cvb", "applications": 2, "machines": 2,
  "mean": 10, "task_cv": -1, "machine_cv": 0.5}}`, "s.json:2:26: error: etc_generate.task_cv: expected a positive number, found -1"},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 2, "machines": 2, "tasks": 3}}`, `unknown field "tasks" (the fields here are method, class, applications, machines, mean, task_cv, machine_cv, task_range, machine_range, consistency, seed)`},
		{`{"etc": [[1]], "etc_generate": {"class": "u_c_hihi", "applications": 2, "machines": 2}}`, "etc_generate: give the ETC matrix one way"},
		{`{"etc_generate": {"class": "u_q_hihi", "applications": 2, "machines": 2}}`, `etc_generate.class: unknown class "u_q_hihi"`},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 2, "machines": 3},
  "applications": ["X", "Y", "Z"]}`, "3 application names for 2 applications"},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 4, "machines": 2},
  "mappings": [{"heuristic": "HEFT"}]}`, `mappings[0].heuristic: mapping mapping1: unknown heuristic "HEFT" (the heuristics are MET, MCT, Min-min, Max-min, Sufferage)`},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 4, "machines": 2},
  "mappings": [{"random": {"seed": 1, "min_per_machine": 3}}]}`, "mappings[0].random.min_per_machine: mapping random: 4 applications cannot give each of 2 machines 3 of them"},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 4, "machines": 2},
  "mappings": [{"random": {"seed": 1, "count": 2}}, {"name": "random-2", "heuristic": "MCT"}]}`, `two mappings are named "random-2"`},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 4, "machines": 2},
  "mappings": [{"name": "x", "heuristic": "MCT", "allocation": {"M1": ["A1"]}}]}`, "give an allocation, a heuristic or a random rule, one of them"},
		{`{"etc_generate": {"class": "u_c_hihi", "applications": 4, "machines": 2},
  "mappings": [{"random": {"seed": 1, "per_machine": 1}}]}`, `unknown field "per_machine" (the fields here are seed, min_per_machine, count)`},
	} {
		_, err := spec.ParseSpec("s.json", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %s", c.doc, err, c.want)
		}
	}
}

// TestHeuristicMappings: MET, checked by hand (every application on the
// machine where ETC / availability is least), and every heuristic as
// optimize runs it.
func TestHeuristicMappings(t *testing.T) {
	doc := `{"etc_generate": {"method": "cvb", "applications": 9, "machines": 3, "mean": 10, "task_cv": 0.5, "machine_cv": 0.5, "seed": 2},
  "availability": {"nominal": [1, 0.5, 0.8]},
  "mappings": [{"heuristic": "MET"}, {"heuristic": "MCT"}, {"heuristic": "Min-min"}, {"heuristic": "Max-min"}, {"heuristic": "Sufferage"}]}`
	in, err := spec.ParseSpec("s.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	avail := []float64{1, 0.5, 0.8}
	met := map[string][]string{}
	for i, row := range in.ETC {
		best := 0
		for j := range row {
			if row[j]/avail[j] < row[best]/avail[best] {
				best = j
			}
		}
		met[in.Machines[best]] = append(met[in.Machines[best]], in.Apps[i])
	}
	got := map[string][]string{}
	for m, apps := range in.Mappings[0].Allocation {
		if len(apps) > 0 {
			got[m] = apps
		}
	}
	if !reflect.DeepEqual(got, met) {
		t.Errorf("MET: %v, by hand %v", got, met)
	}
	etm := in.ExpectedTimes()
	for k, h := range spec.Heuristics {
		if want := in.MappingOf(h.Name, h.Run(in, etm)); !reflect.DeepEqual(in.Mappings[k], want) {
			t.Errorf("%s: %v, optimize's %v", h.Name, in.Mappings[k], want)
		}
	}
}

// TestRandomMappings: at least k applications per machine, reproducible,
// named by count, and uniform over the allowed mappings: 3 applications on
// 2 machines, each machine at least 1, have 6 mappings, each drawn about
// 1/6 of the time (chi-square).
func TestRandomMappings(t *testing.T) {
	doc := func(seed, k, count int) string {
		return fmt.Sprintf(`{"etc_generate": {"method": "range", "task_range": 10, "machine_range": 10, "applications": %d, "machines": %d},
  "mappings": [{"name": "r", "random": {"seed": %d, "min_per_machine": %d, "count": %d}}]}`, 12, 4, seed, k, count)
	}
	in, err := spec.ParseSpec("s.json", []byte(doc(5, 2, 50)))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := spec.ParseSpec("s.json", []byte(doc(5, 2, 60)))
	other, _ := spec.ParseSpec("s.json", []byte(doc(6, 2, 50)))
	if len(in.Mappings) != 50 || in.Mappings[0].Name != "r-1" || in.Mappings[49].Name != "r-50" {
		t.Fatalf("%d mappings, first %s", len(in.Mappings), in.Mappings[0].Name)
	}
	same := 0
	for k, m := range in.Mappings {
		n := 0
		for _, mach := range in.Machines {
			apps := m.Allocation[mach]
			if len(apps) < 2 {
				t.Fatalf("%s: %s has %v", m.Name, mach, apps)
			}
			if !slices.IsSortedFunc(apps, func(a, b string) int { return spec.IndexOfName(in.Apps, a) - spec.IndexOfName(in.Apps, b) }) {
				t.Fatalf("%s: %s's applications %v are not in specification order", m.Name, mach, apps)
			}
			n += len(apps)
		}
		if n != 12 {
			t.Fatalf("%s maps %d applications", m.Name, n)
		}
		if !reflect.DeepEqual(m, again.Mappings[k]) {
			t.Fatalf("%s differs with a larger count", m.Name)
		}
		if reflect.DeepEqual(m.Allocation, other.Mappings[k].Allocation) {
			same++
		}
	}
	if same > 1 {
		t.Errorf("seeds 5 and 6 agree on %d of 50 mappings", same)
	}

	const draws = 6000
	tiny := fmt.Sprintf(`{"etc": [[1, 1], [1, 1], [1, 1]], "mappings": [{"random": {"seed": 9, "min_per_machine": 1, "count": %d}}]}`, draws)
	in, err = spec.ParseSpec("s.json", []byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	freq := map[string]int{}
	for _, m := range in.Mappings {
		freq[strings.Join(m.Allocation["M1"], " ")]++
	}
	chi := 0.0
	for _, f := range freq {
		chi += float64((f-draws/6)*(f-draws/6)) / (draws / 6)
	}
	// 6 outcomes (M1 gets a proper non-empty subset); the 0.999 quantile of
	// chi-square with 5 degrees of freedom is 20.5.
	if len(freq) != 6 || chi > 20.5 {
		t.Errorf("frequencies %v, chi-square %.1f", freq, chi)
	}
}
