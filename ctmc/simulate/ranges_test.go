package simulate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/ctmc/simulate"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/models"
	"pepa/passage"
)

// split is how the tests cut a run: uneven ranges, one empty, given out of
// order.
func split(total int) [][2]int {
	a, b := total/5, total/5+total/3
	return [][2]int{{b, total - b}, {0, a}, {a, 0}, {a, b - a}}
}

// roundTrip sends a record through JSON, as a shard file does.
func roundTrip[T any](t *testing.T, rec *T) *T {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// sameRun compares two results but for the figures of timing: their %+v
// text, in which every float64 is written in its shortest exact form (and
// NaN equals NaN, unlike reflect.DeepEqual).
func sameRun(t *testing.T, what string, got, want any, gotStats, wantStats *simulate.Stats) {
	t.Helper()
	for _, st := range []*simulate.Stats{gotStats, wantStats} {
		st.Elapsed, st.EventsPerSecond, st.Workers = 0, 0, 0
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("%s: combined ranges\n%+v\nwhole run\n%+v", what, got, want)
	}
}

// TestRangesCombineExactly: a run split into ranges of replications (or
// streams), each record sent through JSON, combines into the whole run's
// result, every figure bit for bit; with a deadlock-free model cut short
// by MaxEvents (censored replications) too, and a steady state whose
// warm-up is detected.
func TestRangesCombineExactly(t *testing.T) {
	ctx := context.Background()
	c := testchain.Chain(t, testmodels.Mapping(8, 3, 1))
	machines, err := models.FindMachines(c.S, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := simulate.RobustnessSpec{Beta: 30}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	for _, maxEvents := range []int64{0, 2} { // MaxEvents bounds each group (here each machine) of a replication
		opt := simulate.Options{Seed: 3, Replications: 1300, MaxEvents: maxEvents}
		whole, err := simulate.Robustness(ctx, c.S, spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		if maxEvents > 0 && whole.Censored == 0 {
			t.Fatal("no replication was censored")
		}
		var recs []*simulate.RobustnessRecord
		for _, r := range split(1300) {
			rec, err := simulate.RobustnessRange(ctx, c.S, spec, simulate.Options{Seed: 3, MaxEvents: maxEvents, Workers: 1 + r[0]%3}, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, roundTrip(t, rec))
		}
		got, err := simulate.CombineRobustness(recs)
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, "robustness", got, whole, &got.Stats, &whole.Stats)
	}

	target, _ := passage.ActionIDs(c.S, []string{"compute3"})
	pspec := simulate.PassageSpec{TargetActions: target, Times: []float64{0, 10, 20, 40}, Quantiles: []float64{0.5, 0.99}}
	whole, err := simulate.Passage(ctx, c.S, pspec, simulate.Options{Seed: 8, Replications: 1100})
	if err != nil {
		t.Fatal(err)
	}
	var precs []*simulate.PassageRecord
	for _, r := range split(1100) {
		rec, err := simulate.PassageRange(ctx, c.S, pspec, simulate.Options{Seed: 8}, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		precs = append(precs, roundTrip(t, rec))
	}
	pgot, err := simulate.CombinePassage(precs)
	if err != nil {
		t.Fatal(err)
	}
	sameRun(t, "passage", pgot, whole, &pgot.Stats, &whole.Stats)

	for _, m := range []struct {
		s    *ctmc.Structure
		spec simulate.SteadySpec
	}{
		{c.S, simulate.SteadySpec{BatchEvents: 500, MaxBatches: 6}},
		{testchain.Structure(t, "P = (go, 0.001).Q; Q = (back, 0.001).P; P[200]"), simulate.SteadySpec{BatchEvents: 20, MaxBatches: 60}},
	} {
		whole, err := simulate.Steady(ctx, m.s, m.spec, simulate.Options{Seed: 5, Replications: 7})
		if err != nil {
			t.Fatal(err)
		}
		var srecs []*simulate.SteadyRecord
		for _, r := range split(7) {
			rec, err := simulate.SteadyRange(ctx, m.s, m.spec, simulate.Options{Seed: 5, Replications: 7}, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			srecs = append(srecs, roundTrip(t, rec))
		}
		got, err := simulate.CombineSteady(srecs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("steady: %d streams x %d batches, %d warm-up rounds detected", got.Streams, got.Batches, got.WarmupBatches)
		sameRun(t, "steady", got, whole, &got.Stats, &whole.Stats)
	}
}

// TestRangesRefused: ranges that do not make up one run are refused, and so
// are the whole run's stopping rules in a range.
func TestRangesRefused(t *testing.T) {
	ctx := context.Background()
	c := testchain.Chain(t, testmodels.Mapping(4, 2, 1))
	machines, _ := models.FindMachines(c.S, nil)
	spec := simulate.RobustnessSpec{Beta: 30}
	for _, m := range machines {
		spec.Machines = append(spec.Machines, simulate.MachineSpec{Name: m.Name, Last: m.Last})
	}
	rec := func(first, count int, beta float64) *simulate.RobustnessRecord {
		s := spec
		s.Beta = beta
		r, err := simulate.RobustnessRange(ctx, c.S, s, simulate.Options{Seed: 1}, first, count)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		recs []*simulate.RobustnessRecord
		want string
	}{
		{[]*simulate.RobustnessRecord{rec(0, 10, 30), rec(20, 10, 30)}, "replications 10 to 19 are missing"},
		{[]*simulate.RobustnessRecord{rec(10, 10, 30)}, "replications 0 to 9 are missing"},
		{[]*simulate.RobustnessRecord{rec(0, 10, 30), rec(5, 10, 30)}, "replications from 5 are given twice"},
		{[]*simulate.RobustnessRecord{rec(0, 10, 30), rec(10, 10, 31)}, "estimate different things"},
	} {
		if _, err := simulate.CombineRobustness(c.recs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if _, err := simulate.RobustnessRange(ctx, c.S, spec, simulate.Options{Precision: 0.01}, 0, 10); err == nil {
		t.Error("a range with --precision was run")
	}
}
