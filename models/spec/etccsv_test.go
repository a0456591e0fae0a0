package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

	"pepa/models/etc"
)

// etc3x2 is the matrix every form of TestETCFileForms writes.
var etc3x2 = [][]float64{{4.06, 6.03}, {3.88, 5.74}, {2.64, 3.55}}

// TestETCFileForms: the forms people write an ETC matrix in, each read as
// the hand-written matrix above with the names it gives (nil: none).
func TestETCFileForms(t *testing.T) {
	abc := []string{"Fft", "Sort", "Zip"}
	a123 := []string{"A1", "A2", "A3"}
	m12 := []string{"M1", "M2"}
	for _, c := range []struct {
		name, src      string
		apps, machines []string
	}{
		{"plain", "4.06,6.03\n3.88,5.74\n2.64,3.55\n", nil, nil},
		{"header", "M1,M2\n4.06,6.03\n3.88,5.74\n2.64,3.55\n", nil, m12},
		{"pandas to_csv", ",M1,M2\nA1,4.06,6.03\nA2,3.88,5.74\nA3,2.64,3.55\n", a123, m12},
		{"labelled names column", "app,M1,M2\nA1,4.06,6.03\nA2,3.88,5.74\nA3,2.64,3.55\n", a123, m12},
		{"other names", "application,Fast,Slow\nFft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n", abc, []string{"Fast", "Slow"}},
		{"R write.table: no label", "M1,M2\nFft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n", abc, m12},
		{"names column, no header", "Fft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n", abc, nil},
		{"pandas default index and columns", ",0,1\n0,4.06,6.03\n1,3.88,5.74\n2,2.64,3.55\n", nil, nil},
		{"pandas default index, named columns", ",M1,M2\n0,4.06,6.03\n1,3.88,5.74\n2,2.64,3.55\n", nil, m12},
		{"numbered from 1", ",1,2\n1,4.06,6.03\n2,3.88,5.74\n3,2.64,3.55\n", nil, nil},
		{"names, numbered columns", ",0,1\nFft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n", abc, nil},
		{"spreadsheet: BOM, CRLF, quotes, spaces", "\ufeff\"\",\"M1\",\"M2\"\r\n\"A1\", 4.06 , 6.03\r\nA2,3.88,5.74\r\n\r\nA3,2.64,3.55\r\n", a123, m12},
		{"comments and blank lines", "# made up\n\n,M1,M2\n# the first\nA1,4.06,6.03\nA2,3.88,5.74\n\nA3,2.64,3.55", a123, m12},
		{"one machine", "M1\n4.06\n3.88\n2.64\n", nil, []string{"M1"}},
		{"one machine, names", ",M1\nA1,4.06\nA2,3.88\nA3,2.64\n", a123, []string{"M1"}},
	} {
		f, errs := parseETCFile("etc.csv", []byte(c.src))
		if len(errs) > 0 {
			t.Errorf("%s: %v", c.name, errs)
			continue
		}
		want := etc3x2
		if strings.HasPrefix(c.name, "one machine") {
			want = [][]float64{{4.06}, {3.88}, {2.64}}
		}
		if !reflect.DeepEqual(f.etc, want) {
			t.Errorf("%s: matrix %v, want %v", c.name, f.etc, want)
		}
		if !slices.Equal(f.apps, c.apps) || (f.apps == nil) != (c.apps == nil) {
			t.Errorf("%s: applications %q, want %q", c.name, f.apps, c.apps)
		}
		if !slices.Equal(f.machines, c.machines) || (f.machines == nil) != (c.machines == nil) {
			t.Errorf("%s: machines %q, want %q", c.name, f.machines, c.machines)
		}
	}
}

// etcSpec is a specification whose every check depends on the ETC matrix
// (3 applications, 2 machines): workloads, availabilities, an owner, a
// resource and mappings by name and by rule. With a bad matrix, none of
// them may add an error.
const etcSpec = `{
  "etc_csv": "etc.csv",
  "workload": {"nominal": [1, 2, 1], "perturbed": [1.5, 2, 1]},
  "availability": {"nominal": [0.5, 1]},
  "owners": {"M2": {"arrival": 1, "service": 2}},
  "resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": [1, 0, 2]}},
  "mappings": [
    {"name": "m", "allocation": {"M1": ["A1", "A2"], "M2": ["A3"]}},
    {"heuristic": "MCT"},
    {"random": {"seed": 1, "min_per_machine": 1}}
  ]
}`

// parseWithFile parses a specification beside an ETC file etc.csv and
// returns the instance, or its errors as lines with the directory taken
// out of the file names.
func parseWithFile(t *testing.T, spec, csv string) (*Instance, []string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "etc.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := ParseSpec(filepath.Join(dir, "s.json"), []byte(spec))
	if err == nil {
		return in, nil
	}
	return nil, strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
}

// TestETCFileGenSameModel: a specification reading the matrix from a file
// in any form generates the same models, byte for byte, as one giving it
// inline; where the file names the applications and machines, as one
// giving those names in "applications" and "machines".
func TestETCFileGenSameModel(t *testing.T) {
	inline := strings.Replace(etcSpec, `"etc_csv": "etc.csv"`, `"etc": [[4.06, 6.03], [3.88, 5.74], [2.64, 3.55]]`, 1)
	rename := strings.NewReplacer(`"A1"`, `"Fft"`, `"A2"`, `"Sort"`, `"A3"`, `"Zip"`, `"M1"`, `"Fast"`, `"M2"`, `"Slow"`)
	inlineNamed := strings.Replace(rename.Replace(inline), `"etc":`, `"applications": ["Fft", "Sort", "Zip"], "machines": ["Fast", "Slow"], "etc":`, 1)
	models := func(spec, csv string) []string {
		t.Helper()
		var in *Instance
		if csv == "" {
			var err error
			if in, err = ParseSpec(filepath.Join(t.TempDir(), "s.json"), []byte(spec)); err != nil {
				t.Fatal(err)
			}
		} else {
			var errs []string
			if in, errs = parseWithFile(t, spec, csv); errs != nil {
				t.Fatalf("%s:\n%s", csv, strings.Join(errs, "\n"))
			}
		}
		var out []string
		for _, m := range in.Mappings {
			var b bytes.Buffer
			if err := in.Generate(&b, m); err != nil {
				t.Fatal(err)
			}
			out = append(out, b.String())
		}
		return out
	}
	want, wantNamed := models(inline, ""), models(inlineNamed, "")
	if len(want) != 3 || !strings.Contains(want[0], "M1_ready = (compute1, r1).(compute2, r2).M1 +") ||
		!strings.Contains(wantNamed[0], "Fast_ready = (compute1, r1).(compute2, r2).Fast +") {
		t.Fatalf("unexpected models:\n%s\n%s", want[0], wantNamed[0])
	}
	for _, csv := range []string{
		"4.06,6.03\n3.88,5.74\n2.64,3.55\n",
		",M1,M2\nA1,4.06,6.03\nA2,3.88,5.74\nA3,2.64,3.55\n",
		"app,M1,M2\nA1,4.06,6.03\nA2,3.88,5.74\nA3,2.64,3.55\n",
		",0,1\n0,4.06,6.03\n1,3.88,5.74\n2,2.64,3.55\n",
	} {
		if got := models(etcSpec, csv); !slices.Equal(got, want) {
			t.Errorf("%q: the models differ from the inline matrix's:\n%s", csv, got[0])
		}
	}
	named := rename.Replace(etcSpec)
	for _, csv := range []string{
		",Fast,Slow\nFft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n",
		"app,Fast,Slow\nFft,4.06,6.03\nSort,3.88,5.74\nZip,2.64,3.55\n",
	} {
		if got := models(named, csv); !slices.Equal(got, wantNamed) {
			t.Errorf("%q: the models differ from the inline matrix's with its names:\n%s", csv, got[0])
		}
		// The file's names given in the specification too: the same.
		both := strings.Replace(named, `"etc_csv":`, `"applications": ["Fft", "Sort", "Zip"], "machines": ["Fast", "Slow"], "etc_csv":`, 1)
		if got := models(both, csv); !slices.Equal(got, wantNamed) {
			t.Errorf("%q with the names in the specification too: the models differ", csv)
		}
	}
}

// TestETCFileErrorsOnePerCause: a problem in an ETC file is one error at
// the file's line and column, and the specification's checks that depend
// on the matrix add none.
func TestETCFileErrorsOnePerCause(t *testing.T) {
	const nameRule = "must start with an upper-case letter and hold only letters, digits and '_' (it names a component of the generated models)"
	for _, c := range []struct {
		name, csv string
		want      []string
	}{
		{"pandas form, not a number", ",M1,M2\nA1,4,8\nA2,2.5x,3\nA3,5,6\n",
			[]string{`etc.csv:3:4: error: ETC[2][1] is "2.5x": expected a number (an expected time to compute)`}},
		{"labelled names column, negative", "app,M1,M2\nA1,4,8\nA2,2.5,3\nA3,5,-6\n",
			[]string{`etc.csv:4:6: error: ETC[3][2] is -6: an expected time to compute must be positive and finite`}},
		{"plain, empty cell", "4,8\n2.5,3\n5,\n",
			[]string{`etc.csv:3:3: error: ETC[3][2] is empty: expected a number (an expected time to compute)`}},
		{"plain, bad first cell", "4,8\n2.5x,3\n5,6\n",
			[]string{`etc.csv:2:1: error: ETC[2][1] is "2.5x": expected a number (an expected time to compute)`}},
		{"plain, bad first cell of the first row", "4x,8\n2.5,3\n5,6\n",
			[]string{`etc.csv:1:1: error: ETC[1][1] is "4x": expected a number (an expected time to compute)`}},
		{"plain, bad cell in the first row", "4,8x\n2.5,3\n5,6\n",
			[]string{`etc.csv:1:3: error: ETC[1][2] is "8x": expected a number (an expected time to compute)`}},
		{"named rows, bad cell in the first row", "A1,4,8x,1\nA2,2.5,3,1\nA3,5,6,1\n",
			[]string{`etc.csv:1:6: error: ETC[1][2] is "8x": expected a number (an expected time to compute)`}},
		{"comments keep the file's lines", "# c\n\n,M1,M2\nA1,4,8\n# mid\nA2,1e400,3\nA3,5,6\n",
			[]string{`etc.csv:6:4: error: ETC[2][1] is 1e400: an expected time to compute must be positive and finite`}},
		{"lower-case application name", ",M1,M2\nA1,4,8\na2,2,3\nA3,5,6\n",
			[]string{`etc.csv:3:1: error: application name "a2" (in column 1) ` + nameRule}},
		{"T", ",M1,M2\nA1,4,8\nT,2,3\nA3,5,6\n",
			[]string{`etc.csv:3:1: error: application name "T" (in column 1) is reserved in PEPA (T is the passive rate): expected another name`}},
		{"machine named twice", "app,M1,M1\nA1,4,8\nA2,2,3\nA3,5,6\n",
			[]string{`etc.csv:1:8: error: machine name "M1" is used twice (first at line 1, column 5): expected distinct names`}},
		{"application named twice", ",M1,M2\nA1,4,8\nA2,2,3\nA1,5,6\n",
			[]string{`etc.csv:4:1: error: application name "A1" is used twice (first at line 2, column 1): expected distinct names`}},
		{"lower-case header", "m1,m2\n4,8\n2,3\n5,6\n",
			[]string{`etc.csv:1:1: error: machine name "m1" (in the header) ` + nameRule, `etc.csv:1:4: error: machine name "m2" (in the header) ` + nameRule}},
		{"header too wide", ",M1,M2,M3\nA1,4,8\nA2,2,3\nA3,5,6\n",
			[]string{`etc.csv:1:1: error: the header row has 4 cells, but the rows below it have 3 (a column of application names, then a number per machine): expected one name per column`}},
		{"ragged", "M1,M2\n4,8\n2,3,9\n5,6\n",
			[]string{`etc.csv:3:5: error: ragged ETC matrix: this row has 3 cells, the first row has 2`}},
		{"invalid CSV", "M1,M2\n4,8\n2,\"3\n5,6\n",
			[]string{`etc.csv:4:5: error: invalid CSV: extraneous or missing " in quoted-field (in the row that starts on line 3)`}},
		{"no rows", "# only a comment\n",
			[]string{`etc.csv:1: error: the ETC file has no rows: expected one row of expected times to compute per application, one column per machine`}},
		{"header only", "M1,M2\n",
			[]string{`etc.csv:1:1: error: the ETC file has a header row but no rows of numbers: expected one row of expected times to compute per application`}},
		{"a machine named like an application", ",A3,M2\nA1,4,8\nA2,2,3\nA3,5,6\n",
			[]string{`etc.csv:1:2: error: machine "A3" has the name of an application (etc.csv:4:1): the model would define one process twice; expected distinct names`,
				// Real errors, not consequences: the mapping and the
				// owner name M1, which the file does not.
				`s.json:8:40: error: mappings[0].allocation.M1: mapping m: no machine "M1" (the machines are A3, M2)`,
				`s.json:6:38: error: resources.Net.machines[0]: resource Net: no machine "M1" (the machines are A3, M2)`}},
	} {
		_, errs := parseWithFile(t, etcSpec, c.csv)
		if !slices.Equal(errs, c.want) {
			t.Errorf("%s: errors\n%s\nwant\n%s", c.name, strings.Join(errs, "\n"), strings.Join(c.want, "\n"))
		}
	}

	// Many bad cells: the first 20, then a note.
	var b strings.Builder
	b.WriteString(",M1,M2\n")
	for i := 1; i <= 25; i++ {
		b.WriteString("A" + string(rune('a'+i)) + ",x,1\n")
	}
	_, errs := parseWithFile(t, etcSpec, b.String())
	if len(errs) != 21 || errs[0] != `etc.csv:2:4: error: ETC[1][1] is "x": expected a number (an expected time to compute)` ||
		errs[20] != "etc.csv:22:4: error: too many errors in this ETC file: 5 more not shown" {
		t.Errorf("25 bad cells: %d errors\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

// TestETCFileNamesAgainstSpec: names given both in the specification and
// in the file must be the same; the first that differs is one error, and
// the references to the names are then not checked.
func TestETCFileNamesAgainstSpec(t *testing.T) {
	spec := strings.Replace(etcSpec, `"etc_csv": "etc.csv",`, `"etc_csv": "etc.csv",
  "applications": ["A1", "A2", "A4"],`, 1)
	_, errs := parseWithFile(t, spec, ",M1,M2\nA1,4,8\nA2,2,3\nA3,5,6\n")
	want := []string{`s.json:3:32: error: applications[2]: application 3 is "A4" here and "A3" in the ETC file (etc.csv:4:1): give the names in one place, or the same in both`}
	if !slices.Equal(errs, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	// A missing file: one error at etc_csv.
	_, errs = parseWithFile(t, strings.Replace(etcSpec, `"etc.csv"`, `"none.csv"`, 1), "")
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "s.json:2:14: error: etc_csv: cannot read the ETC file: open none.csv:") {
		t.Errorf("missing file: %q", errs)
	}
}

// TestSourceErrorsOnePerCause: a bad etc_generate, inline matrix, resource
// or weight is one error, not also the errors that would follow from it.
func TestSourceErrorsOnePerCause(t *testing.T) {
	rest := strings.TrimPrefix(etcSpec, "{\n  \"etc_csv\": \"etc.csv\",")
	for _, c := range []struct{ name, spec, want string }{
		{"etc_generate: unknown method", `{"etc_generate": {"method": "normal", "applications": 3, "machines": 2},` + rest,
			`s.json:1:29: error: etc_generate.method: unknown method "normal": expected "cvb" or "range"`},
		{"etc_generate: no applications", `{"etc_generate": {"class": "u_c_hihi", "applications": 0, "machines": 2},` + rest,
			`s.json:1:56: error: etc_generate.applications: expected a whole number of applications from 1 up, found 0`},
		{"etc_generate: too large", `{"etc_generate": {"class": "u_c_hihi", "applications": 100000, "machines": 100000},` + rest,
			`s.json:1:18: error: etc_generate: 100000 x 100000 is more than 67108864 entries`},
		{"two sources", `{"etc": [[1, 2], [3, 4], [5, 6]], "etc_generate": {"class": "u_c_hihi", "applications": 3, "machines": 2},` + rest,
			`s.json:1:51: error: etc_generate: give the ETC matrix one way: inline (etc), as a file (etc_csv) or generated (etc_generate), not both etc and etc_generate`},
		{"empty inline matrix", `{"etc": [],` + rest,
			`s.json:1:9: error: etc: the ETC matrix is empty: expected one row per application, each with one expected time per machine`},
		{"no matrix", `{` + strings.TrimPrefix(rest, "\n"),
			`s.json:1:1: error: missing ETC matrix: give etc (rows: applications, columns: machines), etc_csv or etc_generate`},
		{"resource data of no application", `{"etc": [[1, 2], [3, 4], [5, 6]],` + strings.Replace(rest, `"data": [1, 0, 2]`, `"data": {"A7": 3}`, 1),
			`s.json:5:85: error: resources.Net.data.A7: resource Net: no application "A7"`},
		{"negative resource data", `{"etc": [[1, 2], [3, 4], [5, 6]],` + strings.Replace(rest, `"data": [1, 0, 2]`, `"data": [0, -2, 0]`, 1),
			`s.json:5:82: error: resources.Net.data[1]: resource Net: an application's data must be a finite number >= 0 (0: no transfer), found -2`},
		{"negative weight", `{"etc": [[1, 2], [3, 4], [5, 6]],` + strings.Replace(rest, `"workload": {"nominal": [1, 2, 1], "perturbed": [1.5, 2, 1]}`, `"sensors": {"nominal": [1]}, "weights": [[1], [-1], [2]]`, 1),
			`s.json:2:50: error: weights[1][0]: weight -1 is negative`},
		{"bad application name", `{"etc": [[1, 2], [3, 4], [5, 6]], "applications": ["A1", "a2", "A3"],` + rest,
			`s.json:1:58: error: applications[1]: application name "a2" must start with an upper-case letter and hold only letters, digits and '_'`},
	} {
		_, err := ParseSpec("s.json", []byte(c.spec))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: errors\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestNoPanicOnUnknownSizes: inputs that used to index past the end of a
// list: a resource with no machines and no matrix, an owner of a machine
// the matrix has no column for.
func TestNoPanicOnUnknownSizes(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{`{"etc": [], "resources": {"Net": {"machines": [], "rate": 1, "latency": 1, "data": 1}}}`,
			"s.json:1:9: error: etc: the ETC matrix is empty: expected one row per application, each with one expected time per machine\n" +
				`s.json:1:47: error: resources.Net.machines: resource Net: expected a list of the machines that stage their input through it, e.g. ["M1"]`},
		{`{"etc": [[1, 2]], "machines": ["M1", "M2", "M3"], "owners": {"M3": {"arrival": 1, "service": 2}}}`,
			"s.json:1:31: error: machines: 3 machine names for 2 machines in the ETC matrix"},
	} {
		_, err := ParseSpec("s.json", []byte(c.spec))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: errors\n%v\nwant\n%s", c.spec, err, c.want)
		}
	}
}

// FuzzETCFile: no input makes the reader panic, and what it accepts is a
// rectangular matrix of positive finite numbers with one name per row and
// column where it gives names.
func FuzzETCFile(f *testing.F) {
	for _, s := range []string{
		"4.06,6.03\n3.88,5.74\n", "M1,M2\n4,6\n", ",M1,M2\nA1,4,6\nA2,3,5\n", "app,M1,M2\nA1,4,6\n",
		",0,1\n0,4,6\n1,3,5\n", "\ufeff\"\",\"M1\"\r\nA1, 4\r\n", "# c\nM1\n4\n", "x,\"y\n", ",,\n,,\n", "1,2\n3\n",
	} {
		f.Add([]byte(s))
	}
	if src, err := os.ReadFile("../../testdata/etc-pandas.csv"); err == nil {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, errs := parseETCFile("f.csv", src)
		if len(errs) > 0 {
			if file != nil {
				t.Fatal("a matrix with errors")
			}
			if len(errs) > maxETCFileErrors+1 {
				t.Fatalf("%d errors", len(errs))
			}
			for _, e := range errs {
				if e.File != "f.csv" || e.Line < 1 {
					t.Fatalf("error without a place: %v", e)
				}
			}
			return
		}
		if len(file.etc) == 0 || len(file.etc[0]) == 0 {
			t.Fatal("an empty matrix accepted")
		}
		for _, row := range file.etc {
			if len(row) != len(file.etc[0]) {
				t.Fatal("a ragged matrix accepted")
			}
			for _, x := range row {
				if !(x > 0) || x > 1.7976931348623157e308 {
					t.Fatalf("entry %v accepted", x)
				}
			}
		}
		if file.apps != nil && (len(file.apps) != len(file.etc) || len(file.appAt) != len(file.apps)) {
			t.Fatalf("%d application names for %d rows", len(file.apps), len(file.etc))
		}
		if file.machines != nil && (len(file.machines) != len(file.etc[0]) || len(file.machAt) != len(file.machines)) {
			t.Fatalf("%d machine names for %d columns", len(file.machines), len(file.etc[0]))
		}
		file.checkNames("application")
		file.checkNames("machine")
	})
}

// FuzzParseSpec: no specification makes ParseSpec panic, and every error
// it reports has a place. The seeds are the bundled specifications; their
// etc_csv files are read beside them. Matrices drawn larger than 10,000
// entries are skipped (time, not correctness).
func FuzzParseSpec(f *testing.F) {
	names, _ := filepath.Glob("../../testdata/spec-*.json")
	for _, n := range names {
		if src, err := os.ReadFile(n); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte(etcSpec))
	f.Add([]byte(`{"etc": [], "resources": {"Net": {"machines": [], "rate": 1, "latency": 1, "data": 1}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		var sizes struct {
			ETCFile     string      `json:"etc_csv"`
			ETCGenerate *etc.Params `json:"etc_generate"`
			Mappings    []struct {
				Random *RandomRule `json:"random"`
			} `json:"mappings"`
		}
		if clean, err := hujson.Standardize(append([]byte(nil), src...)); err == nil && json.Unmarshal(clean, &sizes) == nil {
			if p := sizes.ETCGenerate; p != nil && (p.Applications > 100 || p.Machines > 100) {
				t.Skip()
			}
			// Only the bundled ETC files (not a device or a large file
			// elsewhere).
			if sizes.ETCFile != "" && (filepath.Base(sizes.ETCFile) != sizes.ETCFile || !strings.HasSuffix(sizes.ETCFile, ".csv")) {
				t.Skip()
			}
			for _, m := range sizes.Mappings {
				if m.Random != nil && m.Random.Count > 100 {
					t.Skip()
				}
			}
		}
		_, err := ParseSpec("../../testdata/fuzz.json", src)
		if err == nil {
			return
		}
		var errs SpecErrors
		if !errors.As(err, &errs) {
			t.Fatalf("not SpecErrors: %v", err)
		}
		for _, e := range errs {
			if e.Line < 1 && e.File == "../../testdata/fuzz.json" {
				t.Fatalf("error without a line: %v", e)
			}
		}
	})
}
