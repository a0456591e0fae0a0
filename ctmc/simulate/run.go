package simulate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"pepa/ctmc"
)

// Options controls a simulation run. A run stops at the first of: every
// reported interval narrower than Precision, Replications replications,
// Budget of wall-clock time; at least one must be set.
type Options struct {
	Seed         uint64
	Confidence   float64       // level of every interval (default 0.95)
	Precision    float64       // target half-width (0: none); what it is relative to depends on the measure
	Replications int           // most replications (steady state: streams); 0: no limit
	Budget       time.Duration // wall-clock limit (0: none); a run it stops is not reproducible by seed alone
	Workers      int           // goroutines (default GOMAXPROCS); never changes the results
	// MaxEvents bounds the jumps of one replication (default 1e9); a
	// replication that reaches it is reported as censored.
	MaxEvents int64
	// Initial start distributions of some leaves (others start in local
	// state 0, as in Derive).
	Initial []LeafDistribution
	// Progress, if set, is called after each block of replications.
	Progress func(p Progress)
	// general forces the general evaluation even where leaf tables apply
	// (tests compare the two).
	general bool
}

// Progress is the state of a run, for a progress line.
type Progress struct {
	Replications int
	Events       int64
	Elapsed      time.Duration
	HalfWidth    float64 // the widest interval that the precision rule watches
}

// Stats are the figures of a run itself.
type Stats struct {
	Replications int
	Events       int64
	Elapsed      time.Duration
	// EventsPerSecond is Events over Elapsed (wall clock, all workers).
	EventsPerSecond float64
	Stopped         string // "precision", "replications", "budget"
	Workers         int
}

func (o *Options) defaults() error {
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return fmt.Errorf("confidence %g is not in (0, 1)", o.Confidence)
	}
	if o.Precision < 0 || o.Replications < 0 || o.Budget < 0 {
		return errors.New("precision, replications and budget must not be negative")
	}
	if o.Precision == 0 && o.Replications == 0 && o.Budget == 0 {
		return errors.New("no stopping rule: give a precision, a number of replications or a budget")
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = 1e9
	}
	return nil
}

// onePath is the worker of a simulation on one structure: a path.
func onePath(s *ctmc.Structure, opt *Options) (func() *path, func(*path) int64) {
	tb := findTables(s, opt.general)
	return func() *path { return newPath(s, tb) }, func(p *path) int64 { return p.events }
}

// blockSize is the number of replications between two checks of the
// stopping rules. It is fixed, not derived from the number of workers, so
// that where a run stops does not depend on the machine.
const blockSize = 512

// replicate runs replications first, first+1, ... in blocks on all
// workers, each with a worker state of its own from newWorker (its paths).
// one simulates replication i on a worker and returns its result; add
// receives the results in index order; halfWidth returns the widest
// interval the precision rule watches (NaN: not yet known) after each
// block; events counts a worker's jumps so far. The stopping rules count
// replications from first.
func replicate[W, R any](ctx context.Context, opt *Options, first int, newWorker func() W, events func(W) int64, one func(w W, i int) (R, error), add func(R), halfWidth func() float64) (Stats, error) {
	start := time.Now()
	paths := make([]W, opt.Workers)
	for w := range paths {
		paths[w] = newWorker()
	}
	results := make([]R, blockSize)
	var st Stats
	st.Workers = opt.Workers
	// Under a budget a block runs in parts, each small enough (a fiftieth
	// of the budget, measured as it goes) that the budget is checked often
	// however long a replication takes; the other rules still look only at
	// whole blocks, so a run that precision or replications stop is the
	// same with or without a budget.
	part := blockSize
	if opt.Budget > 0 {
		part = max(1, min(blockSize, opt.Workers))
	}
	for n := 0; ; {
		size := blockSize
		if opt.Replications > 0 {
			size = min(size, opt.Replications-n)
		}
		done := 0
		for done < size {
			m := min(part, size-done)
			t0 := time.Now()
			if err := runPart(ctx, paths, n+done, m, first, one, results[done:done+m]); err != nil {
				return st, err
			}
			done += m
			if opt.Budget > 0 {
				if took := time.Since(t0); took < opt.Budget/100 && part < blockSize {
					part = min(blockSize, 2*part)
				} else if took > opt.Budget/50 && part > 1 {
					part = max(1, part/2)
				}
				if time.Since(start) >= opt.Budget {
					break
				}
			}
		}
		for k := 0; k < done; k++ {
			add(results[k])
		}
		n += done
		st.Replications = n
		st.Events = 0
		for _, p := range paths {
			st.Events += events(p)
		}
		st.Elapsed = time.Since(start)
		hw := halfWidth()
		if opt.Progress != nil {
			opt.Progress(Progress{Replications: n, Events: st.Events, Elapsed: st.Elapsed, HalfWidth: hw})
		}
		switch {
		case done == size && opt.Precision > 0 && hw <= opt.Precision:
			st.Stopped = "precision"
		case opt.Replications > 0 && n >= opt.Replications:
			st.Stopped = "replications"
		case opt.Budget > 0 && st.Elapsed >= opt.Budget:
			st.Stopped = "budget"
		}
		if st.Stopped != "" {
			st.EventsPerSecond = float64(st.Events) / st.Elapsed.Seconds()
			return st, nil
		}
	}
}

// runPart runs replications first+n, ..., first+n+m-1 on all workers into
// results (index order), and the first error.
func runPart[W, R any](ctx context.Context, paths []W, n, m, first int, one func(w W, i int) (R, error), results []R) error {
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= m || ctx.Err() != nil {
					return
				}
				r, err := one(p, first+n+k)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("replication %d: %w", first+n+k, err) })
					next.Store(int64(m))
					return
				}
				results[k] = r
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return firstErr
}
