package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMaxStatesHoldsEverywhere: with --max-states 1000, every verb fails
// early ("model too large ... (raise --max-states)") on arrays of 40 to
// 1,000 copies of multi-state components, aggregated and not, alone and
// cooperating, whichever structure outgrows the limit first (components,
// count vectors, states, one state's transitions); robustness on a model
// without machines says that first, before any state is derived. Each run must take at
// most 0.5 s and allocate at most 100 MB in total (TotalAlloc, an upper
// bound on the peak heap).
func TestMaxStatesHoldsEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every verb on 28 models")
	}
	models := map[string]string{
		"alone": "P = (a, 1.0).(b, 2.0).(c, 3.0).(d, 4.0).P;\nP[%d]\n",
		"with a partner": "P = (use, 1.0).(b, 2.0).(c, 3.0).(d, 4.0).P;\nR = (use, infty).(reset, 5.0).R;\n" +
			"P[%d] <use> R[2]\n",
		"two arrays": "P = (a, 1.0).(b, 2.0).(c, 3.0).(d, 4.0).P;\nQ = (x, 1.0).(y, 2.0).(z, 3.0).(w, 4.0).Q;\n" +
			"P[%[1]d] || Q[%[1]d]\n",
		"cooperating copies":       "P = (a, 1.0).(b, 2.0).(a, 3.0).(d, 4.0).P;\nQ = (a, 2.0).(e, 1.0).Q;\nP[%d][a] <a> Q\n",
		"copies choosing partners": "P = (a, 1.0).(b, 2.0).P + (a, 2.0).(c, 1.0).P;\nQ = (a, infty).Q;\nP[%d][a] <a> Q\n",
		"static elements":          "P = (a, 1.0).(b, 2.0).P;\nR = (b, infty).(c, 3.0).R;\nS = P <b> R;\nS[%d]\n",
		"machines":                 "A = (compute, infty).A;\nM = (compute, 1.0).(b, 2.0).(y, 3.0).(z, 4.0).M;\nA <compute> M[%d]\n",
	}
	verbs := [][]string{
		{"states"},
		{"steady"},
		{"passage", "--target-action", "b", "--at", "1"},
		{"robustness", "--beta", "10"},
	}
	var worstTime time.Duration
	var worstAlloc uint64
	runs := 0
	for name, tmpl := range models {
		for _, n := range []int{40, 999, 1000} {
			path := writeTemp(t, "m.pepa", fmt.Sprintf(tmpl, n))
			for _, verb := range verbs {
				for _, agg := range []string{"true", "false"} {
					args := append(append([]string{}, verb...), "--max-states", "1000", "--aggregate="+agg, path)
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					start := time.Now()
					code, _, stderr := runPepa(t, "", args...)
					elapsed := time.Since(start)
					runtime.ReadMemStats(&after)
					alloc := after.TotalAlloc - before.TotalAlloc
					runs++
					worstTime, worstAlloc = max(worstTime, elapsed), max(worstAlloc, alloc)
					what := fmt.Sprintf("%s, n = %d: pepa %s", name, n, strings.Join(args[:len(args)-1], " "))
					refused := strings.Contains(stderr, "model too large") && strings.Contains(stderr, "(raise --max-states)")
					if verb[0] == "robustness" && !strings.Contains(tmpl, "compute") {
						refused = strings.Contains(stderr, "no machine found") || refused
					}
					if code != exitInvalid || !refused {
						t.Errorf("%s: exit %d, stderr %q", what, code, stderr)
					}
					if elapsed > 500*time.Millisecond || alloc > 100<<20 {
						t.Errorf("%s: %v, %.1f MB allocated", what, elapsed, float64(alloc)/(1<<20))
					}
				}
			}
		}
	}
	t.Logf("%d runs: slowest %v, most allocated %.1f MB", runs, worstTime, float64(worstAlloc)/(1<<20))
}
