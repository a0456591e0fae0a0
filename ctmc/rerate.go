package ctmc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
)

// ErrStructureChanged is returned (wrapped) by Rerate when the structure's
// transitions differ from the chain's otherwise than by their rates.
var ErrStructureChanged = errors.New("the chain's structure changed")

// rerateChunk is the number of states a worker takes at a time.
const rerateChunk = 4096

// Rerate returns the chain of s, a structure compiled from the model of
// c.S with other values of its rate constants (a point of a sweep), built
// from c: its states, rows, targets and actions are c's arrays, shared and
// not copied, and only the rates are s's. It first checks that s is c.S
// but for the rates: the same actions, the same leaves packed alike with
// the same local states and, in each, the same activities (action,
// passivity, target) in the same order, and the same cooperation and
// hiding tree. Evaluation's control flow depends on nothing else (rates
// are positive, so only which activities exist matters), so every state
// lists the transitions it lists in c, with s's rates; each state is
// evaluated on s's tree and merged as Derive does (the same code), and its
// count and actions are checked against c's row. The result is what
// Derive(s) returns, transition for transition and rate for rate
// (RateAt), at the cost of the evaluations alone: no state is looked up or
// numbered, no target read. The rates keep c's rate indices, with a table
// of s's values, when every transition that shared a rate in c shares one
// in s (rates that stay equal); else they are indexed afresh.
//
// Rerate fails with ErrStructureChanged when s differs otherwise: the
// values made two local derivatives one or one two (a term's identity
// includes its rate's value), or s is another model. Derive(s) is then the
// way. It obeys ctx.
func Rerate(ctx context.Context, c *Chain, s *Structure) (*Chain, error) {
	if len(c.RowPtr) != c.N+1 || int64(len(c.Col)) != c.RowPtr[c.N] || len(c.Act) != len(c.Col) ||
		(c.RateIndex == nil && len(c.Rates) != len(c.Col)) || (c.RateIndex != nil && len(c.RateIndex) != len(c.Col)) {
		return nil, errors.New("the chain's transitions were released, or are incomplete")
	}
	if err := sameStructure(c.S, s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStructureChanged, err)
	}
	out := &Chain{S: s, N: c.N, States: c.States, RowPtr: c.RowPtr, Col: c.Col, Act: c.Act, Deadlocks: c.Deadlocks}
	// One pass on every core gives each transition its new rate twice
	// over: (1) by c's rate index, in a table of new values per old index,
	// kept when no old index gets two new values (the arrays stay shared);
	// (2) by an index of its own, interned as Derive interns (a
	// direct-mapped cache per worker before the shared table), kept when
	// (1) is not; past 65,536 distinct rates, (3) the rates themselves, in
	// a second pass.
	r := &rerater{ctx: ctx, c: c, workers: s.explorers(runtime.GOMAXPROCS(0), transitionLimit(s.maxStates)),
		shared: c.RateIndex != nil, fresh: freshRates{index: map[uint64]uint16{}}, freshIdx: make([]uint16, len(c.Col))}
	r.locals = make([]rerateLocal, len(r.workers))
	if r.shared {
		for k := range r.locals {
			r.locals[k] = rerateLocal{table: make([]float64, len(c.RateTable)), set: make([]bool, len(c.RateTable))}
		}
	}
	if err := r.pass(); err != nil {
		return nil, err
	}
	if r.shared {
		if table, ok := r.sharedTable(); ok {
			out.RateIndex, out.RateTable = c.RateIndex, table
			return out, nil
		}
	}
	if !r.fresh.full {
		out.RateIndex, out.RateTable = r.freshIdx, r.fresh.table
		return out, nil
	}
	r.rates, r.shared, r.freshIdx = make([]float64, len(c.Col)), false, nil
	if err := r.pass(); err != nil {
		return nil, err
	}
	out.Rates = r.rates
	return out, nil
}

// rerater is Rerate's state: the workers, the new rates in the three
// forms (by c's indices per worker, by fresh indices, or as values) and
// the states handed out.
type rerater struct {
	ctx     context.Context
	c       *Chain
	workers []*explorer
	// (1) per worker: new values by c's rate index, if shared.
	shared bool
	locals []rerateLocal
	// (2) fresh indices per transition, into fresh.
	fresh    freshRates
	freshIdx []uint16
	// (3) the rates themselves, in the second pass (nil in the first).
	rates []float64

	mu       sync.Mutex
	firstErr error
	next     int64
}

// rerateLocal is one worker's table of new values by c's rate index; clash
// is set when an index gets two values.
type rerateLocal struct {
	table []float64
	set   []bool
	clash bool
}

// freshRates is the fresh rate table, indexed by rate, under mu.
type freshRates struct {
	mu    sync.Mutex
	index map[uint64]uint16
	table []float64
	full  bool // past rateTableLimit rates
}

// intern is r's index in the table, or false when the table is full.
func (f *freshRates) intern(r float64) (uint16, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	bits := math.Float64bits(r)
	if idx, ok := f.index[bits]; ok {
		return idx, true
	}
	if f.full || len(f.table) == rateTableLimit {
		f.full = true
		return 0, false
	}
	idx := uint16(len(f.table))
	f.index[bits] = idx
	f.table = append(f.table, r)
	return idx, true
}

// pass rerates every state on every worker, rerateChunk states at a time.
func (r *rerater) pass() error {
	r.next = 0
	var wg sync.WaitGroup
	for k, x := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clear(x.rateIdx[:])
			for {
				lo, hi, ok := r.take()
				if !ok {
					return
				}
				if err := r.rerateRows(x, &r.locals[k], lo, hi); err != nil {
					r.mu.Lock()
					if r.firstErr == nil {
						r.firstErr = err
					}
					r.mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return r.firstErr
}

// take hands out the next chunk of states, or false when there is none
// left or the pass must stop.
func (r *rerater) take() (int, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr != nil || r.next >= int64(r.c.N) || r.ctx.Err() != nil {
		return 0, 0, false
	}
	lo := int(r.next)
	r.next = min(r.next+rerateChunk, int64(r.c.N))
	return lo, int(r.next), true
}

// rerateRows evaluates states lo to hi-1 on explorer x and records each
// transition's new rate: as a value in the second pass, else by c's index
// (in loc) and by a fresh index (a direct-mapped cache of the explorer's
// before the shared table).
func (r *rerater) rerateRows(x *explorer, loc *rerateLocal, lo, hi int) error {
	c := r.c
	for i := lo; i < hi; i++ {
		keep, err := x.rerow(c, i)
		if err != nil {
			return err
		}
		for n, kk := range keep {
			e, rate := c.RowPtr[i]+int64(n), x.out.rate[kk]
			if r.rates != nil {
				r.rates[e] = rate
				continue
			}
			if r.shared {
				idx := c.RateIndex[e]
				if !loc.set[idx] {
					loc.table[idx], loc.set[idx] = rate, true
				} else if loc.table[idx] != rate {
					loc.clash = true
				}
			}
			bits := math.Float64bits(rate)
			slot := (bits * 0x9E3779B97F4A7C15) >> (64 - 12)
			if x.rateIdx[slot] == 0 || x.rateKey[slot] != bits {
				idx, ok := r.fresh.intern(rate)
				if !ok {
					continue // full: the rates are listed in a second pass
				}
				x.rateKey[slot], x.rateIdx[slot] = bits, int32(idx)+1
			}
			r.freshIdx[e] = uint16(x.rateIdx[slot] - 1)
		}
	}
	return nil
}

// sharedTable merges the workers' tables by c's rate index: the new rate
// table for c's indices, or false when an index got two values.
func (r *rerater) sharedTable() ([]float64, bool) {
	c := r.c
	table := make([]float64, len(c.RateTable))
	set := make([]bool, len(c.RateTable))
	for _, loc := range r.locals {
		if loc.clash {
			return nil, false
		}
		for idx, ok := range loc.set {
			switch {
			case !ok:
			case !set[idx]:
				table[idx], set[idx] = loc.table[idx], true
			case table[idx] != loc.table[idx]:
				return nil, false
			}
		}
	}
	// An index no transition uses keeps its old value (there is none in
	// a derived chain; a chain built by hand may have one).
	for idx, ok := range set {
		if !ok {
			table[idx] = c.RateTable[idx]
		}
	}
	return table, true
}

// rerow evaluates state i of c on the explorer's tree, merges its
// transitions as Derive does and checks their number and actions against
// c's row i (the targets follow from the structure, which Rerate checked).
// It returns the positions in x.out of the row's transitions, in order.
func (x *explorer) rerow(c *Chain, i int) ([]int32, error) {
	w := x.s.Words
	cur := c.States[i*w : (i+1)*w]
	out := &x.out
	out.reset()
	e := evalError{limit: x.limit}
	x.root.eval(cur, out, &e)
	if e.overflow || e.mixed {
		return nil, fmt.Errorf("%w: state %d (%s) fails to evaluate with the new rates", ErrStructureChanged, i, c.StateString(i))
	}
	if slices.Contains(out.pas, true) {
		return nil, fmt.Errorf("%w: state %d (%s) has a passive activity at the top level", ErrStructureChanged, i, c.StateString(i))
	}
	keep := x.dedup(out, out.len())
	lo, hi := c.RowPtr[i], c.RowPtr[i+1]
	if int64(len(keep)) != hi-lo {
		return nil, fmt.Errorf("%w: state %d (%s) has %d transitions, %d before", ErrStructureChanged, i, c.StateString(i), len(keep), hi-lo)
	}
	for n, k := range keep {
		if out.act[k] != c.Act[lo+int64(n)] {
			return nil, fmt.Errorf("%w: state %d's transition %d is %s, %s before", ErrStructureChanged, i, n, x.s.Actions[out.act[k]], c.S.Actions[c.Act[lo+int64(n)]])
		}
	}
	return keep, nil
}

// sameStructure checks that b is a but for the rates: the same actions,
// leaves packed alike with the same local states and, in every local
// state, the same activities (action, passivity, target) in order, and the
// same tree over them.
func sameStructure(a, b *Structure) error {
	if a.Words != b.Words || !slices.Equal(a.Actions, b.Actions) || len(a.Leaves) != len(b.Leaves) {
		return errors.New("other actions or components")
	}
	index := map[*Leaf]int{}
	for k, la := range a.Leaves {
		lb := b.Leaves[k]
		index[la], index[lb] = k, k
		if la.Name != lb.Name || la.NumLocal != lb.NumLocal || la.Copies != lb.Copies || la.word != lb.word || la.shift != lb.shift ||
			la.mask != lb.mask || la.stride != lb.stride || !slices.Equal(la.Comp.States, lb.Comp.States) ||
			!slices.EqualFunc(la.Counts, lb.Counts, slices.Equal) || len(la.trans) != len(lb.trans) {
			return fmt.Errorf("component %s has other local states", la.Name)
		}
		for st := range la.trans {
			if !slices.EqualFunc(la.trans[st], lb.trans[st], func(x, y localTrans) bool {
				return x.action == y.action && x.passive == y.passive && x.target == y.target
			}) {
				return fmt.Errorf("component %s has other activities in %s", la.Name, la.LocalName(st))
			}
		}
	}
	if !sameTree(a.root, b.root, index) {
		return errors.New("the components cooperate otherwise")
	}
	return nil
}

// sameTree compares two compiled trees but for rates: node kinds,
// cooperation and hiding sets, and leaves by their index. Freezing replaces
// constant subtrees in place (Derive froze c.S's tree): they are compared
// as they were.
func sameTree(x, y node, index map[*Leaf]int) bool {
	if c, ok := x.(*constNode); ok {
		x = c.orig
	}
	if c, ok := y.(*constNode); ok {
		y = c.orig
	}
	switch a := x.(type) {
	case *leafNode:
		b, ok := y.(*leafNode)
		return ok && index[a.leaf] == index[b.leaf]
	case *parNode:
		b, ok := y.(*parNode)
		return ok && slices.EqualFunc(a.kids, b.kids, func(p, q node) bool { return sameTree(p, q, index) })
	case *hideNode:
		b, ok := y.(*hideNode)
		return ok && maps.Equal(a.hidden, b.hidden) && sameTree(a.child, b.child, index)
	case *coopNode:
		b, ok := y.(*coopNode)
		return ok && maps.Equal(a.set, b.set) && sameTree(a.x, b.x, index) && sameTree(a.y, b.y, index)
	case *multiCoopNode:
		b, ok := y.(*multiCoopNode)
		return ok && maps.Equal(a.set, b.set) && slices.EqualFunc(a.kids, b.kids, func(p, q node) bool { return sameTree(p, q, index) })
	}
	return false
}
