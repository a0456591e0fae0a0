package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// runGuarded runs the command in-process and turns a panic into a test
// failure with its stack, so that every case is tried.
func runGuarded(t *testing.T, args ...string) (code int, stderr string, panicked bool) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != nil {
				panicked = true
				t.Errorf("pepa %s: panic: %v\n%s", strings.Join(args, " "), p, debug.Stack())
			}
		}()
		code = run(ctx, e, args)
	}()
	return code, errb.String(), panicked
}

// TestExtremeNumbers feeds tiny, huge and NaN/Inf-producing numbers to
// every verb, in rates, times, goals, epsilons and ETC entries: no panic,
// an exit code of 0, 1 or 2, and a message on stderr whenever it is not 0.
func TestExtremeNumbers(t *testing.T) {
	dir := t.TempDir()
	model := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var models []string
	for _, r := range []string{"1e-300", "1e300", "1e19", "1e20", "1e300 * 1e300", "1e-300 * 1e-300", "1e300 / 1e-300", "0.0", "1e308 + 1e308"} {
		name := fmt.Sprintf("r%d.pepa", len(models))
		models = append(models, model(name, fmt.Sprintf("r = %s;\nA1 = (compute1, infty).A1;\nM1 = (compute1, r).M1 + (idle, 1.0).M1;\nP = (a, r).Q; Q = (b, 1.0).P;\n(A1 <compute1> M1) <> P\n", r)))
	}
	numbers := []string{"1e-300", "1e300", "1e20", "0", "-1", "NaN", "Inf", "-Inf", "1e-20", "5e-324"}
	specs := 0
	specOf := func(etc string) string {
		specs++
		return model(fmt.Sprintf("spec%d.json", specs), fmt.Sprintf(`{"etc": [[%s, 2], [3, %s]], "mappings": [{"name": "m", "allocation": {"M1": ["A1"], "M2": ["A2"]}}]}`, etc, etc))
	}
	var cases [][]string
	for _, m := range models {
		cases = append(cases,
			[]string{"check", m}, []string{"fmt", m}, []string{"states", m}, []string{"steady", m},
			[]string{"passage", "--target-action", "b", "--at", "1", m},
			[]string{"passage", "--target-action", "compute1", "--quantile", "0.5", m},
			[]string{"passage", "--target-action", "b", "--flat", m},
			[]string{"robustness", "--beta", "1", m},
			[]string{"robustness", "--beta", "1", "--flat", m},
		)
	}
	m := models[0]
	good := model("good.pepa", "A1 = (compute1, infty).A1;\nM1 = (compute1, 2.0).M1;\nP = (a, 2.0).Q; Q = (b, 1.0).P;\n(A1 <compute1> M1) <> P\n")
	for _, x := range numbers {
		cases = append(cases,
			[]string{"passage", "--target-action", "b", "--at", x, good},
			[]string{"passage", "--target-action", "b", "--times", "0:" + x + ":1", good},
			[]string{"passage", "--target-action", "b", "--times", "0:1:" + x, good},
			[]string{"passage", "--target-action", "b", "--epsilon", x, good},
			[]string{"passage", "--target-action", "b", "--quantile", x, good},
			[]string{"robustness", "--beta", x, good},
			[]string{"robustness", "--beta", "1", "--epsilon", x, good},
			[]string{"steady", "--tolerance", x, good},
			[]string{"gen", specOf(x)},
			[]string{"optimize", "--beta", "5", "--budget", "1s", specOf(x)},
			[]string{"optimize", "--beta", x, "--budget", "1s", specOf("2")},
		)
	}
	cases = append(cases, []string{"passage", "--target-action", "b", "--at", "1e20", m})
	for _, args := range cases {
		code, stderr, panicked := runGuarded(t, args...)
		if panicked {
			continue
		}
		if code != exitOK && code != exitInvalid && code != exitUsage {
			t.Errorf("pepa %s: exit %d", strings.Join(args, " "), code)
		}
		if code != exitOK && strings.TrimSpace(stderr) == "" {
			t.Errorf("pepa %s: exit %d with nothing on stderr", strings.Join(args, " "), code)
		}
	}
}
