package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"pepa/ctmc"
	"pepa/internal/option"
)

// Runs split into ranges. Replication (or stream) i depends only on the
// seed and i, and the estimates combine replications in index order, so a
// run of R replications can be split into ranges [first, first+count) run
// anywhere (separate processes, hosts, batch-system tasks), each yielding
// a record of its replications' raw results; Combine* feeds the records'
// results, in index order, through the same code a whole run uses, and so
// gives its figures bit for bit. A range runs a fixed number of
// replications: the precision and budget rules, which look at the whole
// run, are refused.

// RobustnessRecord is a range of replications of a robustness estimate.
type RobustnessRecord struct {
	Beta       float64  `json:"beta"`
	Quantile   float64  `json:"quantile"`
	Machines   []string `json:"machines"`
	Confidence float64  `json:"confidence"`
	First      int      `json:"first"`
	Count      int      `json:"count"`
	// Finish holds every replication's finishing times, replication by
	// replication, one per machine: a time, or -1 (the path deadlocked
	// first) or -2 (stopped at Options.MaxEvents).
	Finish []float64 `json:"finish"`
	Events int64     `json:"events"`
}

// PassageRecord is a range of replications of a passage-time estimate.
type PassageRecord struct {
	Times      []float64 `json:"times"`
	Quantiles  []float64 `json:"quantiles"`
	Confidence float64   `json:"confidence"`
	First      int       `json:"first"`
	Count      int       `json:"count"`
	// T holds every replication's passage time, or -1 (never) or -2
	// (stopped at Options.MaxEvents).
	T      []float64 `json:"t"`
	Events int64     `json:"events"`
}

// SteadyRecord is a range of streams of a steady-state estimate: each
// stream's warm-up, events and every batch's duration and measures.
type SteadyRecord struct {
	Actions     []string       `json:"actions"`     // every action, by id
	Populations [][2]string    `json:"populations"` // component and state of every population measured
	UserWarmup  bool           `json:"user_warmup"`
	MaxBatches  int            `json:"max_batches"`
	Confidence  float64        `json:"confidence"`
	First       int            `json:"first"`
	Count       int            `json:"count"`
	Streams     []StreamRecord `json:"streams"`
}

// StreamRecord is one steady-state stream: its MaxBatches batches.
type StreamRecord struct {
	Warmup    float64   `json:"warmup"`
	Events    int64     `json:"events"`
	Durations []float64 `json:"durations"`
	// Measures holds every batch's measures, batch by batch: the firings
	// of every action, then the time-integral of every population.
	Measures []float64 `json:"measures"`
}

// errRangeRules is the refusal of a whole run's stopping rules in a range.
var errRangeRules = errors.New("a range of replications runs a fixed number of them")

// rangeRules is errRangeRules said in full.
func rangeRules() error {
	return option.Errorf("%w: {Precision} and {Budget} look at the whole run and cannot be split", errRangeRules)
}

// rangeOptions checks a range and sets opt to run exactly its count.
func rangeOptions(opt *Options, first, count int) error {
	if opt.Precision != 0 || opt.Budget != 0 {
		return rangeRules()
	}
	if first < 0 || count < 0 {
		return fmt.Errorf("replications from %d, %d of them: expected numbers from 0 up", first, count)
	}
	opt.Replications = max(count, 1) // count 0 runs nothing (see callers)
	return nil
}

// RobustnessRange runs replications first, ..., first+count-1 of a
// robustness estimate.
func RobustnessRange(ctx context.Context, s *ctmc.Structure, spec RobustnessSpec, opt Options, first, count int) (*RobustnessRecord, error) {
	if err := rangeOptions(&opt, first, count); err != nil {
		return nil, err
	}
	r, err := robustnessReplication(ctx, s, &spec, &opt)
	if err != nil {
		return nil, err
	}
	rec := &RobustnessRecord{Beta: spec.Beta, Quantile: spec.Quantile, Confidence: opt.Confidence, First: first, Count: count, Finish: []float64{}}
	for _, m := range spec.Machines {
		rec.Machines = append(rec.Machines, m.Name)
	}
	if count == 0 {
		return rec, nil
	}
	st, err := replicate(ctx, &opt, first, r.newWorker, r.events, r.one, func(f []float64) { rec.Finish = append(rec.Finish, f...) }, func() float64 { return math.NaN() })
	if err != nil {
		return nil, err
	}
	rec.Events = st.Events
	return rec, nil
}

// CombineRobustness gives the estimate of the whole run the records make
// up: they must be ranges of one estimate covering replications 0 to R-1
// (in any order).
func CombineRobustness(records []*RobustnessRecord) (*RobustnessResult, error) {
	if len(records) == 0 {
		return nil, errors.New("no record to combine")
	}
	recs := slices.Clone(records)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].First < recs[j].First })
	r0 := recs[0]
	spec := RobustnessSpec{Beta: r0.Beta, Quantile: r0.Quantile}
	for _, name := range r0.Machines {
		spec.Machines = append(spec.Machines, MachineSpec{Name: name})
	}
	k := len(spec.Machines)
	if k == 0 {
		return nil, errors.New("the records name no machine")
	}
	acc := newRobustnessAcc(spec, r0.Confidence)
	st := Stats{Stopped: "replications"}
	for _, r := range recs {
		switch {
		case r.Beta != r0.Beta || r.Quantile != r0.Quantile || r.Confidence != r0.Confidence || !slices.Equal(r.Machines, r0.Machines):
			return nil, fmt.Errorf("the records of replications from %d and from %d estimate different things (beta, quantile, confidence or machines differ)", r0.First, r.First)
		case r.First != st.Replications:
			return nil, rangeGap(st.Replications, r.First)
		case len(r.Finish) != r.Count*k:
			return nil, fmt.Errorf("the record of replications from %d holds %d finishing times, not %d x %d", r.First, len(r.Finish), r.Count, k)
		}
		for i := 0; i < r.Count; i++ {
			acc.add(r.Finish[i*k : (i+1)*k])
		}
		st.Replications += r.Count
		st.Events += r.Events
	}
	if st.Replications == 0 {
		return nil, errors.New("the records hold no replication")
	}
	return acc.result(st), nil
}

// PassageRange runs replications first, ..., first+count-1 of a passage
// estimate.
func PassageRange(ctx context.Context, s *ctmc.Structure, spec PassageSpec, opt Options, first, count int) (*PassageRecord, error) {
	if err := rangeOptions(&opt, first, count); err != nil {
		return nil, err
	}
	one, err := passageReplication(ctx, s, spec, &opt)
	if err != nil {
		return nil, err
	}
	rec := &PassageRecord{Times: nonNil(spec.Times), Quantiles: nonNil(spec.Quantiles), Confidence: opt.Confidence, First: first, Count: count, T: []float64{}}
	if count == 0 {
		return rec, nil
	}
	newWorker, events := onePath(s, &opt)
	st, err := replicate(ctx, &opt, first, newWorker, events, one, func(t float64) { rec.T = append(rec.T, t) }, func() float64 { return math.NaN() })
	if err != nil {
		return nil, err
	}
	rec.Events = st.Events
	return rec, nil
}

// CombinePassage gives the estimate of the whole run the records make up.
func CombinePassage(records []*PassageRecord) (*PassageResult, error) {
	if len(records) == 0 {
		return nil, errors.New("no record to combine")
	}
	recs := slices.Clone(records)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].First < recs[j].First })
	r0 := recs[0]
	acc := newPassageAcc(PassageSpec{Times: r0.Times, Quantiles: r0.Quantiles}, r0.Confidence)
	st := Stats{Stopped: "replications"}
	for _, r := range recs {
		switch {
		case r.Confidence != r0.Confidence || !slices.Equal(r.Times, r0.Times) || !slices.Equal(r.Quantiles, r0.Quantiles):
			return nil, fmt.Errorf("the records of replications from %d and from %d estimate different things (times, quantiles or confidence differ)", r0.First, r.First)
		case r.First != st.Replications:
			return nil, rangeGap(st.Replications, r.First)
		case len(r.T) != r.Count:
			return nil, fmt.Errorf("the record of replications from %d holds %d passage times, not %d", r.First, len(r.T), r.Count)
		}
		for _, t := range r.T {
			acc.add(t)
		}
		st.Replications += r.Count
		st.Events += r.Events
	}
	if st.Replications == 0 {
		return nil, errors.New("the records hold no replication")
	}
	return acc.result(st), nil
}

// SteadyRange runs streams first, ..., first+count-1 of a steady-state
// estimate of opt.Replications streams (default 16), each to
// spec.MaxBatches batches.
func SteadyRange(ctx context.Context, s *ctmc.Structure, spec SteadySpec, opt Options, first, count int) (*SteadyRecord, error) {
	if opt.Precision != 0 || opt.Budget != 0 {
		return nil, rangeRules()
	}
	r, err := newSteadyRunner(ctx, s, &spec, &opt)
	if err != nil {
		return nil, err
	}
	if first < 0 || count < 0 || first+count > opt.Replications {
		return nil, fmt.Errorf("streams %d to %d of %d: out of range", first, first+count-1, opt.Replications)
	}
	rec := &SteadyRecord{Actions: s.Actions, UserWarmup: spec.Warmup > 0, MaxBatches: spec.MaxBatches,
		Confidence: opt.Confidence, First: first, Count: count, Streams: make([]StreamRecord, count)}
	for _, p := range r.pops {
		rec.Populations = append(rec.Populations, [2]string{p.Component, p.State})
	}
	err = onWorkers(count, opt.Workers, func(k int) error {
		st := r.newStream(first + k)
		if err := r.warm(st); err != nil {
			return err
		}
		sr := StreamRecord{Warmup: st.warmup, Durations: make([]float64, 0, spec.MaxBatches),
			Measures: make([]float64, 0, spec.MaxBatches*r.nMeasures)}
		b := batch{y: make([]float64, r.nMeasures)}
		for round := 0; round < spec.MaxBatches; round++ {
			clear(b.y)
			if err := r.run(st, spec.BatchEvents, 0, &b); err != nil {
				return err
			}
			sr.Durations = append(sr.Durations, b.dur)
			sr.Measures = append(sr.Measures, b.y...)
		}
		sr.Events = st.p.events
		rec.Streams[k] = sr
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// CombineSteady gives the estimate of the whole run the records make up:
// rounds of one batch of every stream, in stream order, as Steady forms
// them.
func CombineSteady(records []*SteadyRecord) (*SteadyResult, error) {
	if len(records) == 0 {
		return nil, errors.New("no record to combine")
	}
	recs := slices.Clone(records)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].First < recs[j].First })
	r0 := recs[0]
	var streams []StreamRecord
	for _, r := range recs {
		switch {
		case !slices.Equal(r.Actions, r0.Actions) || !slices.Equal(r.Populations, r0.Populations) || r.UserWarmup != r0.UserWarmup ||
			r.MaxBatches != r0.MaxBatches || r.Confidence != r0.Confidence:
			return nil, fmt.Errorf("the records of streams from %d and from %d estimate different things", r0.First, r.First)
		case r.First != len(streams):
			return nil, rangeGap(len(streams), r.First)
		case len(r.Streams) != r.Count:
			return nil, fmt.Errorf("the record of streams from %d holds %d streams, not %d", r.First, len(r.Streams), r.Count)
		}
		streams = append(streams, r.Streams...)
	}
	if len(streams) < 2 {
		return nil, errors.New("steady state needs at least 2 streams")
	}
	pops := make([]PopulationEstimate, len(r0.Populations))
	for k, p := range r0.Populations {
		pops[k] = PopulationEstimate{Component: p[0], State: p[1]}
	}
	nMeasures := len(r0.Actions) + len(pops)
	res := &SteadyResult{Streams: len(streams), Batches: r0.MaxBatches}
	res.Stats = Stats{Replications: len(streams), Stopped: "batches", Elapsed: time.Duration(0)}
	for i, st := range streams {
		if len(st.Durations) != r0.MaxBatches || len(st.Measures) != r0.MaxBatches*nMeasures {
			return nil, fmt.Errorf("stream %d holds %d batches and %d measures, not %d and %d", i, len(st.Durations), len(st.Measures), r0.MaxBatches, r0.MaxBatches*nMeasures)
		}
		res.Warmup = math.Max(res.Warmup, st.Warmup)
		res.Events += st.Events
	}
	acc := newSteadyAcc(r0.Actions, pops, len(streams), r0.UserWarmup, r0.MaxBatches, r0.Confidence)
	batches := make([]batch, len(streams))
	for round := 0; round < r0.MaxBatches; round++ {
		for i, st := range streams {
			batches[i] = batch{dur: st.Durations[round], y: st.Measures[round*nMeasures : (round+1)*nMeasures]}
		}
		acc.addRound(batches)
	}
	res.WarmupBatches = acc.detect()
	acc.total(res.WarmupBatches)
	acc.result(res)
	return res, nil
}

func rangeGap(want, got int) error {
	if got < want {
		return fmt.Errorf("replications from %d are given twice", got)
	}
	return fmt.Errorf("replications %d to %d are missing", want, got-1)
}

func nonNil(x []float64) []float64 {
	if x == nil {
		return []float64{}
	}
	return x
}
