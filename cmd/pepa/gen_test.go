package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// etcExampleRows are the rows of numbers of testdata/etc-example.csv, read
// from it so that the forms below hold the same matrix.
func etcExampleRows(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/etc-example.csv")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(src)), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "M1") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 12 {
		t.Fatalf("%d rows in etc-example.csv", len(rows))
	}
	return rows
}

// etcForms writes testdata/spec-example.json into a directory of its own
// beside an etc-example.csv in each form: plain, pandas' to_csv() (an
// index column of names under an empty header cell) and a header
// "app,M1,...". The names in the file are the default ones, A1..A12 and
// M1..M4, which the specification lists too.
func etcForms(t *testing.T, rows []string) map[string]string {
	t.Helper()
	spec, err := os.ReadFile("../../testdata/spec-example.json")
	if err != nil {
		t.Fatal(err)
	}
	named := func(header string) string {
		var b strings.Builder
		b.WriteString(header + "\n")
		for i, r := range rows {
			b.WriteString("A" + strconv.Itoa(i+1) + "," + r + "\n")
		}
		return b.String()
	}
	forms := map[string]string{
		"plain":  strings.Join(rows, "\n") + "\n",
		"pandas": named(",M1,M2,M3,M4"),
		"app":    named("app,M1,M2,M3,M4"),
	}
	specs := map[string]string{}
	for name, csv := range forms {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc-example.csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "spec-example.json")
		if err := os.WriteFile(p, spec, 0o644); err != nil {
			t.Fatal(err)
		}
		specs[name] = p
	}
	return specs
}

// TestGenETCFileForms: gen writes the same models, byte for byte, from an
// ETC file written by pandas' to_csv() with its index, or with a header
// "app,M1,...", as from the plain matrix; and those are the bundled
// cluster models (written from testdata/etc-example.csv).
func TestGenETCFileForms(t *testing.T) {
	specs := etcForms(t, etcExampleRows(t))
	for _, m := range []string{"round-robin", "paired", "uneven"} {
		want, err := os.ReadFile("../../testdata/cluster/" + m + ".pepa")
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range []string{"plain", "pandas", "app"} {
			code, out, stderr := runPepa(t, "", "gen", specs[form], "--mapping", m)
			if code != exitOK || stderr != "" {
				t.Fatalf("%s, %s: exit %d: %s", form, m, code, stderr)
			}
			if out != string(want) {
				t.Errorf("%s, %s: gen writes another model than from the plain matrix", form, m)
			}
		}
	}
	// The bundled pandas example names its applications and machines.
	code, out, stderr := runPepa(t, "", "gen", "../../testdata/spec-pandas.json", "--mapping", "split")
	if code != exitOK || !strings.Contains(out, "Fast = (compute1, r1).(compute3, r3).Fast + (compute1, p1).(compute3, p3).Fast;\n") ||
		!strings.Contains(out, "(Fft <> Sort <> Render <> Encode) <compute1, compute2, compute3, compute4> (Fast <> Slow)\n") ||
		!strings.Contains(out, "r1 = 0.4;\n") { // Fft on Fast: 1 / 2.5
		t.Errorf("spec-pandas.json: exit %d: %s\n%s", code, stderr, out)
	}
}

// TestGenETCFileBadCell: a bad cell in an ETC file of either named form is
// one line on standard error (nothing that follows from it is reported), at the file's line and column, exit 1, run
// as a process.
func TestGenETCFileBadCell(t *testing.T) {
	rows := etcExampleRows(t)
	rows[2] = strings.Replace(rows[2], "2.64", "2.6x4", 1) // A3 on M1
	if rows[2] == etcExampleRows(t)[2] {
		t.Fatal("the third row has no 2.64")
	}
	specs := etcForms(t, rows)
	for _, form := range []string{"pandas", "app"} {
		cmd := exec.Command(os.Args[0], "gen", specs[form], "--mapping", "paired")
		cmd.Env = append(os.Environ(), runAsPepa+"=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInvalid {
			t.Fatalf("%s: %v, want exit %d", form, err, exitInvalid)
		}
		lines := strings.Split(strings.TrimRight(errb.String(), "\n"), "\n")
		// Line 1 is the header; A3's row is line 4, its cell for M1
		// after "A3,".
		want := filepath.Join(filepath.Dir(specs[form]), "etc-example.csv") + `:4:4: error: ETC[3][1] is "2.6x4": expected a number (an expected time to compute)`
		if len(lines) != 1 || lines[0] != want || out.Len() != 0 {
			t.Errorf("%s: stderr\n%s\nwant first line\n%s", form, errb.String(), want)
		}
		t.Logf("%s: %s", form, errb.String())
	}
}
