package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

type sweepJSON struct {
	Points []struct {
		Values   map[string]float64  `json:"values"`
		Measures map[string]*float64 `json:"measures"`
	} `json:"points"`
	Crossings []struct {
		At         float64   `json:"at"`
		Between    []float64 `json:"between"`
		Overtaking string    `json:"overtaking"`
		Overtaken  string    `json:"overtaken"`
	} `json:"crossings"`
}

// TestSweepMatchesHandEdits: at every point of a sweep of a machine's
// rate on the README mappings, the measures are those robustness gives on
// the model with the constant's definition edited by hand (a regular
// expression on the text here, not the sweep's own editing), to 1e-12.
func TestSweepMatchesHandEdits(t *testing.T) {
	for _, name := range []string{"paired", "round-robin", "uneven"} {
		file := "../../testdata/cluster/" + name + ".pepa"
		src, err := os.ReadFile(file)
		if err != nil {
			t.Skip(err)
		}
		code, out, stderr := runPepa(t, "", "sweep", "--vary", "r2=0.1:0.4:0.15", "--format", "json", "robustness", "--beta", "30", file)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var sw sweepJSON
		if err := json.Unmarshal([]byte(out), &sw); err != nil {
			t.Fatal(err)
		}
		if len(sw.Points) != 3 {
			t.Fatalf("%d points", len(sw.Points))
		}
		re := regexp.MustCompile(`(?m)^r2 = [^;]*;`)
		for _, p := range sw.Points {
			v := p.Values["r2"]
			edited := re.ReplaceAllString(string(src), fmt.Sprintf("r2 = %v;", v))
			if edited == string(src) {
				t.Fatal("the hand edit changed nothing")
			}
			f := writeTemp(t, name+".pepa", edited)
			code, out, stderr := runPepa(t, "", "robustness", "--beta", "30", "--format", "json", f)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var r struct {
				Robustness float64 `json:"robustness"`
				PAll       float64 `json:"p_all_by_beta"`
				Makespan   float64 `json:"expected_makespan"`
				Machines   []struct {
					Name    string  `json:"name"`
					PByBeta float64 `json:"p_by_beta"`
					Mean    float64 `json:"mean"`
				} `json:"machines"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			check := func(col string, want float64) {
				got := p.Measures[col]
				if got == nil || math.Abs(*got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Fatalf("%s r2 = %v: %s = %v, by hand %v", name, v, col, got, want)
				}
			}
			check("robustness", r.Robustness)
			check("p_all_by_beta", r.PAll)
			check("expected_makespan", r.Makespan)
			for _, m := range r.Machines {
				check("machines["+m.Name+"].p_by_beta", m.PByBeta)
				check("machines["+m.Name+"].mean", m.Mean)
			}
		}
	}
}

// TestSweepFindsCrossing: mapping A's single machine runs two
// applications at rate avail each (finishing time Erlang(2, avail)),
// mapping B's one application at rate 0.6; with beta = 2 their robustness
// 1 - e^{-2a}(1 + 2a) and 1 - e^{-1.2} cross where (1 + x) e^{-x} =
// e^{-1.2}, x = 2a, solved here by bisection on the closed form.
func TestSweepFindsCrossing(t *testing.T) {
	a := writeTemp(t, "a.pepa", "avail = 1;\nA1 = (c1, infty).A1; A2 = (c2, infty).A2;\nM = (c1, avail).(c2, avail).M;\n(A1 <> A2) <c1, c2> M\n")
	b := writeTemp(t, "b.pepa", "avail = 1; other = avail;\nB1 = (d1, infty).B1;\nN = (d1, 0.6).N;\nB1 <d1> N\n")
	code, out, stderr := runPepa(t, "", "sweep", "--vary", "avail=0.5:2:0.25", "--format", "json", "robustness", "--beta", "2", a, b)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sw sweepJSON
	if err := json.Unmarshal([]byte(out), &sw); err != nil {
		t.Fatal(err)
	}
	lo, hi := 0.0, 10.0
	for i := 0; i < 200; i++ {
		x := (lo + hi) / 2
		if (1+x)*math.Exp(-x) > math.Exp(-1.2) {
			lo = x
		} else {
			hi = x
		}
	}
	want := lo / 2
	if len(sw.Crossings) != 1 {
		t.Fatalf("%d crossings: %s", len(sw.Crossings), out)
	}
	c := sw.Crossings[0]
	if c.Overtaking != a || c.Overtaken != b || c.Between[0] != 1 || c.Between[1] != 1.25 || math.Abs(c.At-want) > 1e-6 {
		t.Fatalf("crossing %+v, want %s overtaking %s at %.8f", c, a, b, want)
	}
	code, text, _ := runPepa(t, "", "sweep", "--vary", "avail=0.5:2:0.25", "robustness", "--beta", "2", a, b)
	if code != exitOK || !strings.Contains(text, "crossing: "+a+" overtakes "+b+" at avail = 1.21") {
		t.Fatalf("text output:\n%s", text)
	}
}

func TestSweepUsage(t *testing.T) {
	m := "../../testdata/cluster/paired.pepa"
	for _, args := range [][]string{
		{"sweep", "robustness", "--beta", "30", m},
		{"sweep", "--vary", "r1=1,2", "fmt", m},
		{"sweep", "--vary", "r1=1,2", "robustness", "--beta", "30", "-o", "x.json", m},
		{"sweep", "--vary", "r1=1,2", "--vary", "r1=3", "robustness", m},
		{"sweep", "--vary", "r1=2:1:1", "robustness", m},
		{"sweep", "--vary", "r1=1,2", "robustness", "--beta", "30"},
	} {
		if code, _, _ := runPepa(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	code, _, stderr := runPepa(t, "", "sweep", "--vary", "nosuch=1,2", "robustness", "--beta", "30", m)
	if code != exitInvalid || !strings.Contains(stderr, "no rate constant nosuch") {
		t.Errorf("unknown constant: exit %d, %s", code, stderr)
	}
	// A rate constant is positive: refused before any point is solved.
	code, _, stderr = runPepa(t, "", "sweep", "--vary", "r1=-1,1", "robustness", "--beta", "30", m)
	if code != exitUsage || !strings.Contains(stderr, "the value -1 is not positive") {
		t.Errorf("negative rate: exit %d, %s", code, stderr)
	}
}
