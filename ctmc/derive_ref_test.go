package ctmc

import (
	"context"
	"fmt"
	"math"
	"pepa/internal/option"
	"runtime"
	"time"
)

// deriveSequential is the single-threaded exploration Derive replaced, kept
// as the reference the parallel one must match entry for entry.
// It explores the state space of s breadth-first from the initial state.
// It obeys ctx (checked every few thousand states).
func deriveSequential(ctx context.Context, s *Structure, opt DeriveOptions) (*Chain, error) {
	w := s.Words
	root := s.exploreRoot()
	c := &Chain{S: s}
	set := newIndex(s, opt.MaxStates, nil)
	direct, _ := set.(*directIndex)
	var touched int32

	// Growing the transition arrays by append copies them several times
	// over, and on this kind of machine touching fresh pages is as costly
	// as the copy (measured: half the time of a 50M-transition derivation).
	// When the product of the leaves' local state counts bounds the state
	// space tightly enough, the arrays are reserved once from that bound and
	// the transitions per state seen so far; the untouched part of a
	// reservation costs no memory.
	est := newSizeEstimate(s, opt.MaxStates, math.MaxInt64)
	if est.states > 0 {
		c.States = make([]uint64, 0, est.states*w)
	}
	var rowPtr []int64
	if est.states > 0 {
		rowPtr = make([]int64, 0, est.states+1)
	}
	rowPtr = append(rowPtr, 0)
	init := make([]uint64, w) // every leaf starts in local state 0
	c.States = append(c.States, init...)
	set.insert(c.States, 0, 0)
	var rowCol, rowAct []int32
	var rowRate []float64

	out := &tlist{w: w}
	cur := make([]uint64, w)
	target := make([]uint64, w)
	var e evalError
	start := time.Now()
	lastReport := start
	total := int64(0)
	for i := 0; i < len(c.States)/w; i++ {
		if i&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if opt.Progress != nil {
				if now := time.Now(); now.Sub(lastReport) > 500*time.Millisecond {
					opt.Progress(len(c.States)/w, now.Sub(start))
					lastReport = now
				}
			}
		}
		copy(cur, c.States[i*w:(i+1)*w])
		curRadix := s.radix(cur)
		out.reset()
		root.eval(cur, out, &e)
		if e.mixed {
			return nil, fmt.Errorf("in state %d (%s): action %s is enabled both actively and passively by one side of a cooperation, so its apparent rate is undefined",
				i, c.StateString(i), s.Actions[e.action])
		}
		rowCol, rowRate, rowAct = rowCol[:0], rowRate[:0], rowAct[:0]
		if direct != nil {
			// Touch every target's slot first: independent loads that the
			// processor overlaps, where the dependent loop below would
			// wait for one cache miss at a time.
			for _, d := range out.rdelta {
				touched += direct.load(curRadix + d)
			}
		}
	next:
		for k := 0; k < out.len(); k++ {
			if out.pas[k] {
				return nil, fmt.Errorf("in state %d (%s): action %s is passive and never synchronised with an active partner",
					i, c.StateString(i), s.Actions[out.act[k]])
			}
			for j := 0; j < w; j++ {
				target[j] = cur[j] + out.delta[k*w+j]
			}
			targetRadix := curRadix + out.rdelta[k]
			idx := set.lookup(c.States, target, targetRadix)
			if idx < 0 {
				n := len(c.States) / w
				if opt.MaxStates > 0 && n >= opt.MaxStates {
					return nil, option.Errorf("%w: more than %d states (raise {MaxStates})", ErrTooManyStates, opt.MaxStates)
				}
				if n >= math.MaxInt32-1 {
					return nil, fmt.Errorf("%w: more than 2^31 states", ErrTooManyStates)
				}
				c.States = append(c.States, target...)
				idx = int32(n)
				set.insert(c.States, idx, targetRadix)
			}
			// Two activities with the same action and target are one
			// transition of the chain (rows are short: a linear scan).
			for r := range rowCol {
				if rowCol[r] == idx && rowAct[r] == out.act[k] {
					rowRate[r] += out.rate[k]
					continue next
				}
			}
			rowCol = append(rowCol, idx)
			rowRate = append(rowRate, out.rate[k])
			rowAct = append(rowAct, out.act[k])
		}
		if len(rowCol) == 0 {
			c.Deadlocks = append(c.Deadlocks, int32(i))
		}
		if cap(c.Col)-len(c.Col) < len(rowCol) {
			hint := est.transitions(len(c.Col), i)
			c.Col = grow(c.Col, len(rowCol), hint)
			c.Rates = grow(c.Rates, len(rowCol), hint)
			c.Act = grow(c.Act, len(rowCol), hint)
		}
		c.Col = append(c.Col, rowCol...)
		c.Rates = append(c.Rates, rowRate...)
		c.Act = append(c.Act, rowAct...)
		total += int64(len(rowCol))
		rowPtr = append(rowPtr, total)
	}
	c.N = len(c.States) / w
	c.RowPtr = rowPtr
	if touched == math.MinInt32 {
		runtime.KeepAlive(touched) // keeps the prefetch loop from being optimised away
	}
	return c, nil
}
