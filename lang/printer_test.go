package lang

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestFormatGolden")

// TestFormatGolden compares Format with hand-checked golden files.
func TestFormatGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/fmt/*.pepa")
	if len(inputs) == 0 {
		t.Fatal("no inputs")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			f, diags := Parse(in, readFile(t, in))
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			got := Format(f)
			golden := strings.TrimSuffix(in, ".pepa") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, golden); !bytes.Equal(got, want) {
				t.Errorf("Format(%s) differs from %s:\n%s", in, golden, got)
			}
		})
	}
}

// TestFormatRoundTrip: on every model we have, Format is idempotent and
// parses back to an equal tree with the same comments.
func TestFormatRoundTrip(t *testing.T) {
	names := testModels(t)
	more, _ := filepath.Glob("testdata/fmt/*.pepa")
	for _, name := range append(names, more...) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			checkRoundTrip(t, name, readFile(t, name))
		})
	}
}

func checkRoundTrip(t *testing.T, name string, src []byte) {
	t.Helper()
	f, diags := Parse(name, src)
	if diags.HasErrors() {
		return
	}
	out := Format(f)
	g, diags := Parse(name, out)
	if diags.HasErrors() {
		t.Fatalf("formatted output does not parse: %v\n%s", diags.Err(), out)
	}
	if a, b := TreeString(f), TreeString(g); a != b {
		t.Fatalf("formatting changed the model:\nbefore:\n%s\nafter:\n%s\noutput:\n%s", a, b, out)
	}
	if len(f.Comments) != len(g.Comments) {
		t.Fatalf("formatting changed the number of comments from %d to %d:\n%s", len(f.Comments), len(g.Comments), out)
	}
	if again := Format(g); !bytes.Equal(out, again) {
		t.Fatalf("Format is not idempotent:\nfirst:\n%s\nsecond:\n%s", out, again)
	}
}

func TestFormatNormalises(t *testing.T) {
	src := "%r := 1; #P = (a, T).P + (b, r).P; P || P[2]{a} <*> P/<b>;"
	f, _ := Parse("t.pepa", []byte(src))
	want := "r = 1;\nP = (a, infty).P + (b, r).P;\n\nP <> P[2][a] <*> P/{b}\n"
	if got := string(Format(f)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzParse: no input panics; a parsed input prints to a text that parses to
// the same model and prints the same again.
func FuzzParse(f *testing.F) {
	for _, pat := range []string{"../testdata/*.pepa", "testdata/fmt/*.pepa"} {
		names, _ := filepath.Glob(pat)
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err == nil {
				f.Add(b)
			}
		}
	}
	for _, s := range []string{"", "P = (a, 1).P; P", "r = -(1e3)/2; P = (a, r).P + (b, 2*T).P; P[2][a] / {a}", "(((", "/*", "P = (a, infty).P;\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		Load("fuzz.pepa", src)
		checkRoundTrip(t, "fuzz.pepa", src)
	})
}
