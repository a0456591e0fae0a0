package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// fakeBudget makes detection find one hard limit allowing allows bytes.
func fakeBudget(t *testing.T, allows int64) {
	t.Helper()
	saved := detectBudget
	t.Cleanup(func() { detectBudget = saved })
	detectBudget = func() *membudget.Budget {
		s := membudget.Source{Name: "a test limit", Limit: allows, Allows: allows, Hard: true}
		return &membudget.Budget{Limit: allows, Source: s, Sources: []membudget.Source{s}}
	}
}

func TestMemoryFlag(t *testing.T) {
	fakeBudget(t, 3<<30)
	code, _, stderr := runPepa(t, "", "states", "--memory", "4X", "../../testdata/pc-lan.pepa")
	if code != exitUsage || !strings.Contains(stderr, "--memory: size \"4X\"") {
		t.Errorf("bad --memory: exit %d, %q", code, stderr)
	}
	code, _, stderr = runPepa(t, "", "states", "--verbose", "--memory", "512M", "../../testdata/pc-lan.pepa")
	if code != exitOK || !strings.Contains(stderr, "pepa states: memory budget 512 MiB, from --memory; a test limit allows 3.00 GiB; --max-states 3355443 by default (160 bytes a state)") {
		t.Errorf("--verbose: exit %d, %q", code, stderr)
	}
	if !regexp.MustCompile(`pepa states: \.\./\.\./testdata/pc-lan\.pepa: stages: load [0-9.]+ s, compile [0-9.]+ s, derive [0-9.]+ s \(128 states, 384 transitions, [0-9]+ states/s\); total [0-9.]+ s\n`).MatchString(stderr) {
		t.Errorf("--verbose: no stage times: %q", stderr)
	}
	code, _, stderr = runPepa(t, "", "steady", "--verbose", "../../testdata/pc-lan.pepa")
	if code != exitOK || !strings.Contains(stderr, "pepa steady: memory budget 3.00 GiB, from a test limit; --max-states 20132659 by default") {
		t.Errorf("detected: exit %d, %q", code, stderr)
	}
	// A hard limit caps --memory, with a warning.
	code, _, stderr = runPepa(t, "", "states", "--verbose", "--memory", "8G", "../../testdata/pc-lan.pepa")
	if code != exitOK || !strings.Contains(stderr, "pepa states: warning: --memory 8.00 GiB is more than a test limit allows; using 3.00 GiB") ||
		!strings.Contains(stderr, "memory budget 3.00 GiB, from a test limit") {
		t.Errorf("--memory past a hard limit: exit %d, %q", code, stderr)
	}
	// A budget smaller than what the process holds already refuses the
	// first array (in one line).
	code, _, stderr = runPepa(t, "", "states", "--memory", "16000", "../../testdata/pc-lan.pepa")
	if code != exitInvalid || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "model too large: memory budget exceeded: derive: ") || !strings.Contains(stderr, " left of the 15.6 KiB budget (--memory)") {
		t.Errorf("a 16,000-byte budget: exit %d, %q", code, stderr)
	}
}

func TestExplainLimit(t *testing.T) {
	m := memoryFlag{defaulted: true, budget: &membudget.Budget{Limit: 1 << 30, Source: membudget.Source{Name: "RLIMIT_AS (ulimit -v)"}}}
	bound := fmt.Errorf("%w: more than 6710886 states (raise --max-states)", ctmc.ErrTooManyStates)
	got := m.explainLimit(bound).Error()
	want := "model too large: more than 6710886 states (raise --max-states): the default --max-states is the 1.00 GiB memory budget (RLIMIT_AS (ulimit -v)) at 160 bytes a state; --memory sets the budget, and 'pepa simulate' estimates without the chain"
	if got != want || !errors.Is(m.explainLimit(bound), ctmc.ErrTooManyStates) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A budget error says all itself; a bound given is the user's.
	over := fmt.Errorf("%w: %w", ctmc.ErrTooManyStates, &membudget.Error{Stage: "derive: x", Need: 2, Have: 1, Limit: 3, Source: "y"})
	if m.explainLimit(over) != over {
		t.Error("a budget error was explained again")
	}
	m.defaulted = false
	if m.explainLimit(bound) != bound {
		t.Error("a --max-states given was explained as the budget's")
	}
}

// TestSweepSharesItsBudget: a sweep's points run under the sweep's
// budget, and a grid whose results cannot fit is refused at once.
func TestSweepSharesItsBudget(t *testing.T) {
	fakeBudget(t, 3<<30)
	code, _, stderr := runPepa(t, "", "sweep", "--memory", "512M", "--vary", "r1=0.1,0.2", "states", "--verbose", "../../testdata/cluster/paired.pepa")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, _, stderr = runPepa(t, "", "sweep", "--memory", "512M", "--vary", "r1=0.1:1:0.00001", "--vary", "r2=0.1:1:0.00001", "states", "../../testdata/cluster/paired.pepa")
	if code != exitInvalid || !strings.Contains(stderr, "pepa sweep: memory budget exceeded: sweep: the grid and results of 8100180001 points: need 30.2 TiB") {
		t.Errorf("a huge grid: exit %d, %q", code, stderr)
	}
}
