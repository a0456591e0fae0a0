//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pepa/internal/testing/testmodels"
)

// TestTimeBudgetHolds runs optimize and simulate with small --budget
// values in child processes (whole processes, as a Slurm job's time limit
// sees them) and checks that each ends within its budget plus the stated
// margin (1 s, or 5% when that is more: docs/cli.md; twice that allowed
// optimize here), answering with what
// it had and naming what the budget cut. spec-lab's group chains take
// seconds each (its heuristics alone overran a 30 s budget to 58 s
// before), and the 32/8 model's replications are many and short (the
// quantiles' sort overran 5 s to 7.4 s).
func TestTimeBudgetHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole processes for several seconds")
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "m32x8.pepa")
	if err := os.WriteFile(big, []byte(testmodels.Mapping(32, 8, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		budget time.Duration
		args   []string
		want   string // on stdout
		slack  time.Duration
	}{
		{2 * time.Second, []string{"optimize", "../../testdata/spec-lab.json", "--beta", "30"}, "cut by the budget: ", 2},
		{5 * time.Second, []string{"optimize", "../../testdata/spec-lab.json", "--beta", "30"}, "stopped: budget spent after ", 2},
		{5 * time.Second, []string{"simulate", "--beta", "30", big}, "robustness min_j P(F_j <= 30):", 1},
	}
	for _, tc := range cases {
		args := append(append([]string(nil), tc.args...), "--budget", tc.budget.String())
		t0 := time.Now()
		code, stdout, stderr, _ := childRun(t, "", 0, args...)
		took := time.Since(t0)
		what := "pepa " + strings.Join(args, " ")
		t.Logf("%s: exit %d in %.2f s", what, code, took.Seconds())
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s", what, code, stderr)
		}
		if !strings.Contains(stdout, tc.want) {
			t.Errorf("%s: no %q in the output:\n%s", what, tc.want, stdout)
		}
		// The stated margin is 1 s or 5%; optimize is allowed twice that,
		// as go test runs packages side by side on CI's two cores (under a
		// load of 10 on this box its 5 s run took 8.7 s: a group's
		// derivation is cancelled between chunks, not within one).
		margin := tc.slack * max(time.Second, tc.budget/20)
		if took > tc.budget+margin {
			t.Errorf("%s: took %.2f s, past the budget %v and its margin %v", what, took.Seconds(), tc.budget, margin)
		}
	}
}
