package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runShards runs a verb in n shards (written in dir) and returns the
// shard files' names.
func runShards(t *testing.T, dir, verb string, n int, args ...string) []string {
	t.Helper()
	var files []string
	for k := 1; k <= n; k++ {
		f := filepath.Join(dir, fmt.Sprintf("%s-%d.shard", verb, k))
		a := append([]string{verb, "--shard", fmt.Sprintf("%d/%d", k, n), "-o", f}, args...)
		if code, _, stderr := runPepa(t, "", a...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", a, code, stderr)
		}
		files = append(files, f)
	}
	return files
}

// TestShardsMergeToTheWholeRun: simulate split in 4 shards (robustness,
// passage and steady state) and sweep in 3 (one of its crossings brackets
// the boundary of two shards; a two-parameter grid too), merged in any
// order, print what the unsharded run prints, byte for byte, in every
// format.
func TestShardsMergeToTheWholeRun(t *testing.T) {
	const cluster = "../../testdata/cluster/"
	paired, uneven, rr := cluster+"paired.pepa", cluster+"uneven.pepa", cluster+"round-robin.pepa"
	for _, c := range []struct {
		verb   string
		shards int
		args   []string
	}{
		{"simulate", 4, []string{"--beta", "30", "--replications", "3000", "--seed", "7", paired}},
		{"simulate", 4, []string{"--target-action", "compute3", "--times", "0:40:10", "--quantile", "0.5,0.99", "--replications", "2000", uneven}},
		{"simulate", 4, []string{"--max-batches", "6", "--batch-events", "2000", "--replications", "7", "../../testdata/pc-lan.pepa"}},
		// Crossings at r3 in (0.1, 0.15) and (0.2, 0.25): the second's
		// bracket starts in shard 1 (points 0-2) and ends in shard 2.
		{"sweep", 3, []string{"--vary", "r3=0.1:0.5:0.05", "robustness", "--flat", "--beta", "30", paired, uneven, rr}},
		{"sweep", 3, []string{"--vary", "r1=0.2,0.3", "--vary", "r2=0.1:0.3:0.1", "steady", paired}},
	} {
		dir := t.TempDir()
		files := runShards(t, dir, c.verb, c.shards, c.args...)
		// Out of order: the last first.
		files = append(files[len(files)-1:], files[:len(files)-1]...)
		for _, format := range []string{"text", "json", "csv"} {
			code, whole, stderr := runPepa(t, "", append([]string{c.verb, "--format", format}, c.args...)...)
			if code != exitOK {
				t.Fatalf("%s %v: exit %d: %s", c.verb, c.args, code, stderr)
			}
			code, merged, stderr := runPepa(t, "", append([]string{"merge", "--format", format}, files...)...)
			if code != exitOK {
				t.Fatalf("merge %v: exit %d: %s", files, code, stderr)
			}
			if merged != whole {
				t.Fatalf("%s %v, %s: merged shards print\n%s\nthe whole run\n%s", c.verb, c.args, format, merged, whole)
			}
			if c.verb == "sweep" && format == "text" && len(c.args) > 8 && strings.Count(whole, "crossing:") != 2 {
				t.Fatalf("the sweep has not the two crossings the test needs:\n%s", whole)
			}
		}
	}
}

// TestMergeRefuses: shard files that are not all the shards of one run are
// refused with what is wrong, and so are the flags a shard cannot honour.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.pepa")
	src, err := os.ReadFile("../../testdata/cluster/paired.pepa")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	shardOf := func(name, k string, args ...string) string {
		f := filepath.Join(dir, name)
		a := append([]string{"simulate", "--shard", k, "-o", f, "--replications", "600"}, args...)
		if code, _, stderr := runPepa(t, "", append(a, model)...); code != exitOK {
			t.Fatalf("%v: %s", a, stderr)
		}
		return f
	}
	s1 := shardOf("a1", "1/3", "--beta", "30")
	s2 := shardOf("a2", "2/3", "--beta", "30")
	s3 := shardOf("a3", "3/3", "--beta", "30")
	other := shardOf("b2", "2/3", "--beta", "31")
	four := shardOf("c3", "3/4", "--beta", "30")
	if err := os.WriteFile(model, append(src, []byte("\n// edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := shardOf("d3", "3/3", "--beta", "30")
	notShard := writeTemp(t, "x.json", `{"verb": "simulate"}`)
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{s1, s2}, "shards 3 of 3 are missing"},
		{[]string{s1, s2, s2, s3}, "shard 2/3 is given twice"},
		{[]string{s1, other, s3}, "the commands differ (--beta=30 --replications=600"},
		{[]string{s1, s2, four}, "the shard counts differ (3, 4)"},
		{[]string{s1, s2, edited}, "the models differ"},
		{[]string{s1, notShard}, "not a shard file"},
	} {
		code, out, stderr := runPepa(t, "", append([]string{"merge"}, c.files...)...)
		if code != exitInvalid || out != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("merge %v: exit %d, stderr %q; want exit 1 and %q", c.files, code, stderr, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--shard", "1/2", "--precision", "0.01", "--beta", "30", model}, "--precision and --budget look at the whole run"},
		{[]string{"simulate", "--shard", "3/2", "--beta", "30", model}, "--shard wants K/N with 1 <= K <= N"},
		{[]string{"sweep", "--shard", "1/2", "--plot", "x.png", "--vary", "r1=0.1,0.2", "steady", model}, "give it to pepa merge"},
		{[]string{"sweep", "--vary", "r1=0:0.2:0.1", "steady", model}, "the value 0 is not positive"},
		{[]string{"sweep", "--vary", "r1=0.1,-0.2", "steady", model}, "the value -0.2 is not positive"},
		{[]string{"merge"}, "no shard file"},
	} {
		code, _, stderr := runPepa(t, "", c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestSweepDerivesOnce: a flat sweep derives each model's chain once and
// rerates it at the other points, and still gives at every point exactly
// what robustness --flat gives on the model edited by hand (a regular
// expression here), every figure equal; at r3 = p3 the ideal and perturbed
// paths' last steps become one local derivative (fewer states), a change
// of structure, and that point's chain is derived anew.
func TestSweepDerivesOnce(t *testing.T) {
	file := "../../testdata/cluster/paired.pepa"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p3 := regexp.MustCompile(`(?m)^p3 = ([0-9.e-]+);`).FindSubmatch(src)[1]
	values := []string{"0.25", string(p3), "0.35"}
	code, out, stderr := runPepa(t, "", "sweep", "--workers", "1", "--vary", "r3="+strings.Join(values, ","), "--format", "json", "robustness", "--flat", "--beta", "30", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "chains: 2 derived") || !strings.Contains(stderr, "1 rerated from them") || !strings.Contains(stderr, "1 of the derived at points whose values change the chain's structure") {
		t.Errorf("stderr: %s", stderr)
	}
	var got sweepJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	states := map[string]float64{}
	for i, v := range values {
		edited := regexp.MustCompile(`(?m)^r3 = [0-9.e-]+;`).ReplaceAll(src, []byte("r3 = "+v+";"))
		p := writeTemp(t, "paired.pepa", string(edited))
		code, hand, stderr := runPepa(t, "", "robustness", "--flat", "--format", "json", "--beta", "30", p)
		if code != exitOK {
			t.Fatalf("r3 = %s: %s", v, stderr)
		}
		cols, err := flattenJSON([]byte(strings.ReplaceAll(hand, p, file)))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			m := got.Points[i].Measures[c.Name]
			if m == nil || *m != c.Value {
				t.Fatalf("r3 = %s, %s: sweep %v, by hand %v", v, c.Name, m, c.Value)
			}
			if c.Name == "states" {
				states[v] = c.Value
			}
		}
	}
	if !(states[string(p3)] < states["0.25"]) {
		t.Errorf("states %v: r3 = p3 should merge two derivatives", states)
	}
}
