package models

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomSpec makes a specification with apps applications and machines
// machines, seeded ETC and perturbations, and one (round-robin) mapping.
func randomSpec(t testing.TB, apps, machines int, seed uint64) *Instance {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	etc := make([][]float64, apps)
	for i := range etc {
		base := 1 + 4*rng.Float64()
		etc[i] = make([]float64, machines)
		for j := range etc[i] {
			etc[i][j] = math.Round(base*(0.5+rng.Float64())*100) / 100
		}
	}
	alloc := map[string][]string{}
	for i := 0; i < apps; i++ {
		m := fmt.Sprintf("M%d", i%machines+1)
		alloc[m] = append(alloc[m], fmt.Sprintf("A%d", i+1))
	}
	spec := map[string]any{
		"etc":          etc,
		"workload":     map[string]any{"nominal": 1, "perturbed": map[string]any{"uniform": []float64{1, 1.5}}},
		"availability": map[string]any{"nominal": 1, "perturbed": map[string]any{"uniform": []float64{0.6, 1}}},
		"seed":         seed,
		"mappings":     []any{map[string]any{"name": "rr", "allocation": alloc}},
	}
	b, _ := json.Marshal(spec)
	in, err := ParseSpec("s.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestHeuristicsByHand: the five heuristics on a 3 x 2 ETC matrix, worked
// out in the comments of each case.
func TestHeuristicsByHand(t *testing.T) {
	in, err := ParseSpec("s.json", []byte(`{"etc": [[1, 3], [2, 1], [3, 2]],
		"mappings": [{"name": "m", "allocation": {"M1": ["A1", "A2", "A3"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]int{
		"MET":       {{0}, {1, 2}}, // each to its fastest machine
		"MCT":       {{0}, {1, 2}}, // A1 -> M1 (1); A2 -> M2 (1 < 3); A3 -> M2 (3 < 4)
		"Min-min":   {{0}, {1, 2}}, // A1 (1), then A2 (1), then A3 on M2 (3 < 4)
		"Max-min":   {{0, 1}, {2}}, // A3 first (its best, 2, is largest), then A2 on M1 (2), A1 on M1 (3 < 5)
		"Sufferage": {{0}, {1, 2}}, // A1 suffers 2, then A2 (2, first of a tie), then A3
	}
	for _, h := range heuristics {
		if got := h.run(in); !reflect.DeepEqual(got, want[h.name]) {
			t.Errorf("%s: %v, want %v", h.name, got, want[h.name])
		}
	}
}

// TestOptimizeFindsOptimum: on 8 applications and 3 machines optimize
// returns the best of all 3^8 mappings, found here by a separate
// enumeration, for both objectives.
func TestOptimizeFindsOptimum(t *testing.T) {
	in := randomSpec(t, 8, 3, 11)
	for _, objective := range []string{"min", "joint"} {
		res, err := Optimize(context.Background(), in, OptimizeOptions{Beta: 12, Objective: objective, MakespanSlack: -1})
		if err != nil {
			t.Fatal(err)
		}
		bestScore := math.Inf(-1)
		for code := 0; code < 6561; code++ {
			alloc := make([][]int, 3)
			for a, c := 0, code; a < 8; a, c = a+1, c/3 {
				alloc[c%3] = append(alloc[c%3], a)
			}
			minP, joint := 1.0, 1.0
			for j, apps := range alloc {
				mr, err := in.machineFinish(context.Background(), j, apps, 12, 1e-10, false)
				if err != nil {
					t.Fatal(err)
				}
				minP, joint = math.Min(minP, mr.PByBeta), joint*mr.PByBeta
			}
			s := minP
			if objective == "joint" {
				s = joint
			}
			bestScore = math.Max(bestScore, s)
		}
		if math.Abs(res.Best.Score-bestScore) > 1e-12 || res.Stopped != "exhaustive search" {
			t.Errorf("%s: optimize %.12g (%s), enumeration %.12g", objective, res.Best.Score, res.Stopped, bestScore)
		}
	}
}

// TestOptimizeNeverWorse: local search never returns a mapping worse than
// the best heuristic, and is deterministic for a seed when it reaches a
// local optimum.
func TestOptimizeNeverWorse(t *testing.T) {
	for _, size := range [][2]int{{20, 5}, {60, 10}, {200, 50}} {
		in := randomSpec(t, size[0], size[1], uint64(size[0]))
		opt := OptimizeOptions{Beta: 4 * float64(size[0]) / float64(size[1]), Budget: 400 * time.Millisecond, Seed: 3, MakespanSlack: -1}
		res, err := Optimize(context.Background(), in, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Heuristics {
			if res.Best.Score < h.Score-1e-12 {
				t.Errorf("%v: optimize %.12g worse than %s %.12g", size, res.Best.Score, h.Name, h.Score)
			}
		}
		if res.Stopped == "local optimum" {
			// The rerun gets ample time: on a loaded machine 400 ms may
			// not take it to the optimum the first run reached, and a
			// search cut short by its budget differs for that reason
			// alone (go test -cpu 1 -count=8 failed so on the loaded machine).
			rerun := opt
			rerun.Budget = 5 * time.Minute
			again, err := Optimize(context.Background(), in, rerun)
			if err != nil {
				t.Fatal(err)
			}
			if again.Stopped != "local optimum" || !reflect.DeepEqual(again.Best.Allocation, res.Best.Allocation) {
				t.Errorf("%v: two runs with one seed differ (second stopped: %s)", size, again.Stopped)
			}
		}
	}
}

// TestMakespanSlack: with a slack of 0 the result is no slower than the
// fastest heuristic.
func TestMakespanSlack(t *testing.T) {
	in := randomSpec(t, 20, 4, 5)
	res, err := Optimize(context.Background(), in, OptimizeOptions{Beta: 20, Budget: time.Second, MakespanSlack: 0})
	if err != nil {
		t.Fatal(err)
	}
	fastest := math.Inf(1)
	for _, h := range res.Heuristics {
		fastest = math.Min(fastest, h.Makespan)
	}
	if res.Best.Makespan > fastest*(1+1e-9) {
		t.Errorf("makespan %g exceeds the fastest heuristic's %g", res.Best.Makespan, fastest)
	}
}
