package ctmc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"pepa/internal/option"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"pepa/internal/membudget"
	"pepa/lang"
)

// Chain is the labelled CTMC of a model: states numbered in breadth-first
// discovery order from the initial state 0, and every transition, with its
// action, in CSR form (row = source state). Self-loops are kept (they count
// for throughput and for action-triggered passages) but are not part of the
// generator: ExitRate leaves them out.
type Chain struct {
	S *Structure
	N int // number of states

	States []uint64 // packed states, S.Words per state

	RowPtr []int64 // N+1 offsets into Col, Act and the rates
	Col    []int32 // target state of each transition
	Act    []int32 // action id of each transition
	// The rate of transition e is RateAt(e). Derive stores it as an index
	// into RateTable, the chain's distinct rates (a quarter of the memory
	// of the rates themselves), when there are at most 65,536 of them;
	// chains built by hand, or with more distinct rates, list the rates in
	// Rates and leave RateIndex nil.
	Rates     []float64
	RateIndex []uint16
	RateTable []float64

	// Deadlocks are the states with no outgoing transition, in order.
	Deadlocks []int32
}

// NumTransitions is the number of labelled transitions (self-loops included).
func (c *Chain) NumTransitions() int { return len(c.Col) }

// State returns the packed state i.
func (c *Chain) State(i int) []uint64 { return c.States[i*c.S.Words : (i+1)*c.S.Words] }

// StateString names state i by its components' local states.
func (c *Chain) StateString(i int) string {
	return strings.Join(c.S.StateNames(c.State(i)), ", ")
}

// RateAt is the rate of transition e.
func (c *Chain) RateAt(e int64) float64 {
	if c.RateIndex != nil {
		return c.RateTable[c.RateIndex[e]]
	}
	return c.Rates[e]
}

// ExitRate is the total rate out of state i, self-loops excluded.
func (c *Chain) ExitRate(i int) float64 {
	q := 0.0
	for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
		if int(c.Col[k]) != i {
			q += c.RateAt(k)
		}
	}
	return q
}

// DeriveOptions controls state-space exploration.
type DeriveOptions struct {
	// MaxStates stops the exploration with ErrTooManyStates (0: no limit).
	MaxStates int
	// Progress, if not nil, is called about every half second with the
	// number of states found so far.
	Progress func(states int, elapsed time.Duration)
	// ChunkStates and PieceStates, when positive, replace the number of
	// states expanded in parallel before they are numbered (8,192) and
	// the run of states a worker takes at a time (1,024). The chain is
	// the same whatever they are; small values send small models through
	// the pipelined exploration (tests). PieceStates is at most
	// ChunkStates.
	ChunkStates, PieceStates int
}

// chunking returns the chunk and piece sizes to use.
func (o *DeriveOptions) chunking() (chunk, piece int) {
	chunk, piece = deriveChunk, pieceStates
	if o.ChunkStates > 0 {
		chunk = o.ChunkStates
	}
	if o.PieceStates > 0 {
		piece = o.PieceStates
	}
	return chunk, min(piece, chunk)
}

// ErrTooManyStates is returned (wrapped) when MaxStates is exceeded.
var ErrTooManyStates = errors.New("model too large")

// DeriveFunc derives a compiled structure's chain: what a caller passes
// to a one-call analysis to show progress or time the stage.
type DeriveFunc func(ctx context.Context, s *Structure) (*Chain, error)

// DeriveWith derives s's chain by derive, or, when it is nil, by Derive
// within maxStates.
func DeriveWith(ctx context.Context, s *Structure, derive DeriveFunc, maxStates int) (*Chain, error) {
	if derive == nil {
		return Derive(ctx, s, DeriveOptions{MaxStates: maxStates})
	}
	return derive(ctx, s)
}

// Derive explores the state space of s breadth-first from the initial state.
// It obeys ctx (checked every chunk of states), and the memory budget ctx
// carries (membudget): every array is checked before it is made or grown,
// reservations are sized from what the budget leaves, and a chain that does
// not fit fails with an error wrapping both ErrTooManyStates and
// membudget.ErrOverBudget.
//
// States are taken in chunks of consecutive indices. The transitions of a
// chunk's states are computed on all cores (each worker with its own copy of
// the evaluation tree): targets already numbered are looked up, rows merged,
// new targets kept as packed states. Then one goroutine walks the chunk in
// state order, numbers the new targets and appends the rows, while the
// other cores expand the next chunk (as far as its states are numbered)
// against the index as it is being written: a target found there is final,
// one not found is looked up again when its chunk is numbered. Numbering is
// therefore exactly the single-threaded breadth-first one, whatever the
// number of cores.
//
// The loop that schedules the chunks stays here, in one piece: its state
// (the chunk being numbered, the one expanded ahead, the wait group that
// joins them) is shared by every step, and split into methods it became a
// struct whose fields each step half-owned, harder to check for the one
// invariant that matters (a chunk is numbered only after its expansion is
// joined). What owns none of that state is apart: the reservations
// (reserveChain), laying a chunk out (layChunk), numbering it
// (numbering.number) and copying its rows (copyRowsParallel).
func Derive(ctx context.Context, s *Structure, opt DeriveOptions) (*Chain, error) {
	if err := s.checkSizeBound(opt.MaxStates); err != nil {
		return nil, err
	}
	w := s.Words
	c := &Chain{S: s}
	budget := membudget.FromContext(ctx)
	set := newIndex(s, opt.MaxStates, budget)
	direct, _ := set.(*directIndex)

	est, rowPtr := reserveChain(c, opt.MaxStates, budget)
	set.insert(c.States, 0, 0)
	rates := newRateInterner()
	rates.budget = budget
	numberer := numbering{c: c, set: set, rates: rates, rowPtr: &rowPtr, budget: budget, est: est, maxStates: opt.MaxStates}

	workers := s.explorers(runtime.GOMAXPROCS(0), transitionLimit(opt.MaxStates))
	chunkSize, pieceSize := opt.chunking()
	// Two sets of pieces: one chunk is numbered and copied from one while
	// the next chunk is expanded into the other.
	var sets [2][]*piece
	for k := range sets {
		sets[k] = newPieces((chunkSize+pieceSize-1)/pieceSize, w)
	}
	offsets, counts := make([]int, len(sets[0])), make([]int, len(sets[0]))
	start := time.Now()
	lastReport := start
	var wg sync.WaitGroup
	// chunkAt lays out the chunk of states from next (at most up to
	// known) on the pieces of set k; the rows of the first done states
	// are in c.Col.
	chunkAt := func(k, next, known, done int) (hi, npieces int) {
		return layChunk(sets[k], len(c.Col), w, chunkSize, pieceSize, next, known, done)
	}
	// expansion hands out the pieces of one chunk to the explorers that
	// take part (run).
	type expansion struct {
		pieces  []*piece
		states  []uint64
		view    *rateView
		taken   atomic.Int64
		npieces int
	}
	run := func(x *explorer, ex *expansion) {
		for {
			i := int(ex.taken.Add(1)) - 1
			if i >= ex.npieces {
				return
			}
			x.expand(ex.states, set, direct, ex.view, ex.pieces[i])
		}
	}
	// expandAll expands a chunk on every explorer, the caller's included.
	expandAll := func(ex *expansion) {
		for k := 1; k < min(len(workers), ex.npieces); k++ {
			wg.Add(1)
			go func(x *explorer) {
				defer wg.Done()
				run(x, ex)
			}(workers[k])
		}
		run(workers[0], ex)
		wg.Wait()
	}

	cur, next := 0, 0 // the set holding the chunk being numbered, its first state
	hi, npieces := chunkAt(cur, next, len(c.States)/w, next)
	expandAll(&expansion{pieces: sets[cur], states: c.States, view: rates.view.Load(), npieces: npieces})
	for next < hi {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if opt.Progress != nil {
			if now := time.Now(); now.Sub(lastReport) > 500*time.Millisecond {
				opt.Progress(len(c.States)/w, now.Sub(start))
				lastReport = now
			}
		}
		// The next chunk, as far as its states are numbered already, is
		// expanded while this one is numbered (by the other explorers;
		// this goroutine joins them once it has numbered and copied).
		// Explorers read the direct index while it is written, each entry
		// atomically: an entry is either absent, and numbered later as a
		// new target, or final. The hash set is rebuilt as it grows, so
		// with it the chunks take turns.
		var ahead *expansion
		nextHi, nextPieces := hi, 0
		if direct != nil && len(workers) > 1 && hi < len(c.States)/w {
			nextHi, nextPieces = chunkAt(1-cur, hi, len(c.States)/w, next)
			ahead = &expansion{pieces: sets[1-cur], states: c.States, view: rates.view.Load(), npieces: nextPieces}
			chunksAhead.Add(1)
			for k := 1; k < min(len(workers), nextPieces+1); k++ {
				wg.Add(1)
				go func(x *explorer) {
					defer wg.Done()
					run(x, ahead)
				}(workers[k])
			}
		}
		// Numbering is sequential; the rows are then copied into place.
		pieces := sets[cur][:npieces]
		if err := numberer.number(pieces, hi, offsets, counts); err != nil {
			wg.Wait()
			return nil, err
		}
		full := rates.full
		if ahead != nil {
			for i := range pieces {
				pieces[i].copyRows(c, full, offsets[i], counts[i])
			}
			run(workers[0], ahead)
			wg.Wait()
		} else {
			copyRowsParallel(c, pieces, full, offsets, counts, len(workers))
		}
		next = hi
		cur = 1 - cur
		if ahead != nil {
			hi, npieces = nextHi, nextPieces
			continue
		}
		hi, npieces = chunkAt(cur, next, len(c.States)/w, next)
		expandAll(&expansion{pieces: sets[cur], states: c.States, view: rates.view.Load(), npieces: npieces})
	}
	c.N = len(c.States) / w
	c.RowPtr = rowPtr
	trimChain(budget, c)
	return c, nil
}

// reserveChain reserves the chain's state and row arrays and puts the
// initial state (every leaf in local state 0) in. Growing the transition
// arrays by append copies them several times over, and on this kind of
// machine touching fresh pages is as costly as the copy (measured: half
// the time of a 50M-transition derivation). When the product of the
// leaves' local state counts bounds the state space tightly enough, the
// arrays are reserved once from that bound and the transitions per state
// seen so far; the untouched part of a reservation costs no resident
// memory, but it is address space, and the Go runtime counts it as in
// use: reservations take at most a quarter of what the budget leaves
// (newSizeEstimate). It returns the estimate (states 0: no reservation)
// and the row offsets holding the first row's start.
func reserveChain(c *Chain, maxStates int, budget *membudget.Budget) (sizeEstimate, []int64) {
	w := c.S.Words
	est := newSizeEstimate(c.S, maxStates, budget.Left())
	if est.states > 0 {
		if err := budget.Check("derive: reserving the state array", membudget.Bytes(int64(est.states), int64(w*8+8)), ""); err != nil {
			est.states = 0 // no reservation: the arrays grow as needed, each growth checked
		}
	}
	var rowPtr []int64
	if est.states > 0 {
		c.States = make([]uint64, 0, est.states*w)
		adviseHuge(c.States)
		rowPtr = make([]int64, 0, est.states+1)
		adviseHuge(rowPtr)
	}
	rowPtr = append(rowPtr, 0)
	c.States = append(c.States, make([]uint64, w)...)
	return est, rowPtr
}

// layChunk lays out the chunk of states from next (at most up to known)
// on pieces, and returns its end and its number of pieces; transitions
// is the count of the transitions of the first done states (those
// numbered so far), w the words per state. A chunk's rows are buffered, with every new target's packed
// state, until it is numbered: on wide states (thousands of components,
// thousands of transitions each) a full chunk would buffer gigabytes
// before the state limit is even checked, so the chunk is sized from the
// transitions per state seen so far. The chunk is cut into pieces that
// the workers take in turn (a worker the system pauses holds up one
// piece, not half the chunk).
func layChunk(pieces []*piece, transitions, w, chunkSize, pieceSize, next, known, done int) (hi, npieces int) {
	chunk := chunkSize
	if done > 0 {
		perState := float64(transitions)/float64(done) + 1
		chunk = max(1, min(chunkSize, int(chunkBufferBytes/(perState*float64(8*w+24)))))
	}
	hi = min(known, next+chunk)
	npieces = (hi - next + pieceSize - 1) / pieceSize
	for i := 0; i < npieces; i++ {
		pieces[i].lo, pieces[i].hi = next+i*pieceSize, min(hi, next+(i+1)*pieceSize)
	}
	return hi, npieces
}

// newPieces makes n pieces for states of w words.
func newPieces(n, w int) []*piece {
	pieces := make([]*piece, n)
	for i := range pieces {
		pieces[i] = &piece{w: w}
	}
	return pieces
}

// numbering is what numbering one chunk reads and appends to.
type numbering struct {
	c         *Chain
	set       stateIndex
	rates     *rateInterner
	rowPtr    *[]int64
	budget    *membudget.Budget
	est       sizeEstimate
	maxStates int
}

// number numbers a chunk's new targets, in state order, and appends its
// rows' offsets; the transitions arrays are then grown to hold the rows
// (copyRows puts them in). Numbering is sequential. The arrays it appends
// to are grown first, within the budget: room for every target not
// numbered yet (an upper bound on the new states) and a row per state. hi
// is the chunk's end; offsets[i] and counts[i] receive where piece i's
// transitions go and how many there are.
func (nc numbering) number(pieces []*piece, hi int, offsets, counts []int) error {
	c := nc.c
	if err := reserveChunk(nc.budget, c, nc.rowPtr, nc.set, pieces, nc.maxStates); err != nil {
		return err
	}
	base := len(c.Col)
	total := 0
	for i, p := range pieces {
		n, err := p.number(c, nc.set, nc.rates, nc.rowPtr, base+total, nc.maxStates)
		if err != nil {
			return err
		}
		offsets[i], counts[i] = base+total, n
		total += n
	}
	nc.rates.publish()
	hint := 0
	if cap(c.Col)-len(c.Col) < total {
		// At most half of what the budget leaves goes to the
		// reservation: 10 bytes a transition (target, action, rate
		// index), more once the rates are listed themselves.
		hint = min(nc.est.transitions(base+total, hi), int(min(nc.budget.Left()/20, math.MaxInt32)))
	}
	return extendTransitions(nc.budget, c, total, hint, nc.rates.full)
}

// copyRowsParallel copies the pieces' rows into place on up to workers
// goroutines, the caller's included, and returns when all are copied.
func copyRowsParallel(c *Chain, pieces []*piece, full bool, offsets, counts []int, workers int) {
	var taken atomic.Int64
	copyRun := func() {
		for {
			i := int(taken.Add(1)) - 1
			if i >= len(pieces) {
				return
			}
			pieces[i].copyRows(c, full, offsets[i], counts[i])
		}
	}
	var wg sync.WaitGroup
	for k := 1; k < min(workers, len(pieces)); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyRun()
		}()
	}
	copyRun()
	wg.Wait()
}

// trimChain copies the chain's arrays into arrays of their length where a
// reservation left much more capacity: the untouched part costs no
// resident memory, but the runtime, and so the memory budget, counts it
// (up to half the transition arrays: reservations are twice the
// extrapolation, from a bound on the states that can be loose). The copy
// costs time and, while it is made, resident memory beside the original
// (measured: 'pepa states' on 823,543 states peaked at 192 MB with it,
// 115 MB without; on 1,369,728 states of 39.7M packed ones, whose
// reservations were 3.3 GB for a chain of 187 MB, it took a third of the
// derivation's time and peaked at 544 MB instead of 364), so it is made
// only where the budget is tight: only with a budget that resident memory
// binds (under an address-space limit the old arrays' space stays taken),
// only when what the budget leaves is less than trimRoom times the chain
// (a later stage, which takes a few times the chain, might then be
// refused for the reservations' sake), only when the spare capacity is an
// eighth of what the budget leaves or more, and only where the copy fits.
func trimChain(b *membudget.Budget, c *Chain) {
	if b == nil || b.AddressSpace {
		return
	}
	spare := int64(cap(c.States)-len(c.States))*8 + int64(cap(c.RowPtr)-len(c.RowPtr))*8 + int64(cap(c.Col)-len(c.Col))*4 +
		int64(cap(c.Act)-len(c.Act))*4 + int64(cap(c.RateIndex)-len(c.RateIndex))*2 + int64(cap(c.Rates)-len(c.Rates))*8
	used := int64(len(c.States))*8 + int64(len(c.RowPtr))*8 + int64(len(c.Col))*4 +
		int64(len(c.Act))*4 + int64(len(c.RateIndex))*2 + int64(len(c.Rates))*8
	left := b.Left()
	if left >= trimRoom*used || spare < left/8 {
		return
	}
	c.States = trim(b, c.States)
	c.RowPtr = trim(b, c.RowPtr)
	c.Col = trim(b, c.Col)
	c.Act = trim(b, c.Act)
	c.RateIndex = trim(b, c.RateIndex)
	c.Rates = trim(b, c.Rates)
}

// trimRoom is how many times a chain's arrays the budget must leave after
// its derivation for the reservations' spare capacity to stay: the
// stages that solve a chain take a few times it (steady's generator with
// BiCGSTAB's ILU(0) factors and vectors about 6 times a chain of 12
// transitions a state, a block of 8 passages' generator and vectors 2 to
// 3 times).
const trimRoom = 8

// trim returns s in an array of its length when more than an eighth of
// its capacity (and at least a megabyte) is unused and the copy fits.
func trim[T any](b *membudget.Budget, s []T) []T {
	var zero T
	size := int64(unsafe.Sizeof(zero))
	if spare := int64(cap(s) - len(s)); spare*8 <= int64(len(s)) || spare*size < 1<<20 {
		return s
	}
	if b.Check("derive: trimming the arrays", int64(len(s))*size, "") != nil {
		return s
	}
	out := make([]T, len(s))
	adviseHuge(out)
	copy(out, s)
	return out
}

// deriveChunk is the number of states expanded in parallel before they are
// numbered, in pieces of pieceStates (DeriveOptions can make them
// small). Two chunks are buffered at once (one numbered, the next
// expanded), so each is half of what one chunk at a time could take: the
// buffers then take what they took before (measured: peak RSS of the
// 5.8M-state mapping model 664 MB, and 688 MB with full-size chunks).
var (
	deriveChunk = 1 << 13
	pieceStates = 1 << 10
)

// chunkBufferBytes bounds what a chunk's buffered rows may take (a
// target's packed state and about 24 bytes of row data each), per chunk.
const chunkBufferBytes = 2 << 20

// chunksAhead counts the chunks expanded while the one before them was
// numbered (for tests).
var chunksAhead atomic.Int64

// piece is a run of consecutive states and, once expanded, their rows.
type piece struct {
	w      int // words per packed state
	lo, hi int
	rows   rowBuffer
}

// explorer expands runs of states for Derive: its own evaluation tree and
// buffers, and the rows of its last run.
type explorer struct {
	s      *Structure
	root   node
	out    tlist
	target []uint64
	touch  int32 // sink of the prefetching loads

	keep       []int32 // dedup's result
	dedupTable []int32 // dedup's hash table for long lists

	moving []*Leaf // the leaves with more than one local state: the others add 0 to a radix
	limit  int     // transitions one state may have (evalError.limit)

	// A direct-mapped cache of the rate table, read-only during expand.
	rateKey [rateCacheSize]uint64
	rateIdx [rateCacheSize]int32 // index + 1; 0: empty
}

// rowBuffer holds the merged transitions of a run of states: per state
// their number; per transition its target's index, or -1 with the target's
// packed state and mixed-radix number when it was not numbered yet.
type rowBuffer struct {
	count []int32
	idx   []int32
	act   []int32
	rate  []float64
	ridx  []int32 // index of the rate in the chain's table, or -1: not there yet
	// The transitions whose target was not numbered yet (idx -1): their
	// position, and the target's mixed-radix number and packed state.
	unkPos []int32
	radix  []int64
	tgt    []uint64 // Words per such transition
	// The first error of the run: its state, how many of its transitions
	// come before it, and the message (the state's name is added by commit).
	errState int
	errAfter int
	errMsg   func(c *Chain) error
}

// grow makes room for the transitions of a state with n of them (each
// possibly to a target not numbered yet, of w words), doubling the
// buffers (see doubled).
func (b *rowBuffer) grow(n, w int) {
	b.idx, b.act, b.rate, b.ridx = doubled(b.idx, n), doubled(b.act, n), doubled(b.rate, n), doubled(b.ridx, n)
	b.unkPos, b.radix, b.tgt = doubled(b.unkPos, n), doubled(b.radix, n), doubled(b.tgt, n*w)
}

// explorers returns n explorers, the first on the structure's own tree.
func (s *Structure) explorers(n, limit int) []*explorer {
	root := s.exploreRoot()
	out := make([]*explorer, max(n, 1))
	for k := range out {
		r := memoize(cloneTree(root), s)
		out[k] = &explorer{s: s, root: r, limit: limit, out: tlist{w: s.Words}, target: make([]uint64, s.Words)}
		for _, l := range s.Leaves {
			if l.NumLocal > 1 {
				out[k].moving = append(out[k].moving, l)
			}
		}
	}
	return out
}

// radix is the mixed-radix number of a packed state (Structure.radix).
func (x *explorer) radix(state []uint64) int64 {
	r := int64(0)
	for _, l := range x.moving {
		r += int64(l.Local(state)) * l.stride
	}
	return r
}

// expand computes the merged transitions of states lo..hi-1. It only reads
// states and the index, so several explorers can run at once.
func (x *explorer) expand(states []uint64, set stateIndex, direct *directIndex, rates *rateView, p *piece) {
	s, w := x.s, x.s.Words
	lo, hi := p.lo, p.hi
	b := &p.rows
	b.count, b.idx, b.act, b.rate, b.ridx = b.count[:0], b.idx[:0], b.act[:0], b.rate[:0], b.ridx[:0]
	b.unkPos, b.radix, b.tgt = b.unkPos[:0], b.radix[:0], b.tgt[:0]
	b.errState, b.errMsg = -1, nil
	out, target := &x.out, x.target
	e := evalError{limit: x.limit}
	for i := lo; i < hi; i++ {
		cur := states[i*w : (i+1)*w]
		curRadix := int64(0)
		if direct != nil {
			curRadix = x.radix(cur)
		}
		out.reset()
		x.root.eval(cur, out, &e)
		rowStart := len(b.idx)
		if e.overflow || e.mixed {
			overflow, a, limit := e.overflow, e.action, e.limit
			b.errState, b.errAfter = i, 0
			b.errMsg = func(c *Chain) error {
				if overflow {
					names := c.StateString(i)
					if len(names) > 200 {
						names = names[:200] + "..."
					}
					return option.Errorf("%w: state %d (%s) has more than %d transitions (raise {MaxStates})", ErrTooManyStates, i, names, limit)
				}
				return fmt.Errorf("in state %d (%s): action %s is enabled both actively and passively by one side of a cooperation, so its apparent rate is undefined%s",
					i, c.StateString(i), s.Actions[a], s.mixedSources(c.State(i), a))
			}
			b.count = append(b.count, 0)
			return
		}
		// A passive activity at the top level is an error; the row is
		// still listed up to it, as the sequential exploration numbers
		// those targets before it meets the error.
		n, passive := out.len(), -1
		for k, p := range out.pas {
			if p {
				n, passive = k, k
				break
			}
		}
		keep := x.dedup(out, n)
		if m := len(keep); cap(b.idx)-len(b.idx) < m || cap(b.unkPos)-len(b.unkPos) < m {
			b.grow(m, w)
		}
		if direct != nil {
			// Touch every target's slot first: independent loads that the
			// processor overlaps, where the dependent loop below would
			// wait for one cache miss at a time.
			t := int32(0)
			for _, k := range keep {
				t += direct.load(curRadix + out.rdelta[k])
			}
			x.touch += t
		}
		for _, k := range keep {
			targetRadix := curRadix + out.rdelta[k]
			var idx int32
			if direct != nil {
				idx = direct.load(targetRadix) - 1
			} else {
				x.targetOf(cur, int(k))
				idx = set.lookup(states, target, targetRadix)
			}
			if idx < 0 {
				if direct != nil {
					x.targetOf(cur, int(k))
				}
				b.unkPos = append(b.unkPos, int32(len(b.idx)))
				b.radix = append(b.radix, targetRadix)
				b.tgt = append(b.tgt, target...)
			}
			b.idx = append(b.idx, idx)
			b.act = append(b.act, out.act[k])
			b.rate = append(b.rate, out.rate[k])
			b.ridx = append(b.ridx, x.rateIndex(rates, out.rate[k]))
		}
		if passive >= 0 {
			x.targetOf(cur, passive)
			a, tgt := out.act[passive], append([]uint64(nil), target...)
			b.errState, b.errAfter = i, len(b.idx)-rowStart
			b.errMsg = func(c *Chain) error {
				return s.passiveError(i, c.StateString(i), c.State(i), tgt, a)
			}
			b.count = append(b.count, int32(len(b.idx)-rowStart))
			return
		}
		b.count = append(b.count, int32(len(b.idx)-rowStart))
	}
}

// targetOf sets x.target to the target of transition k of x.out from cur.
func (x *explorer) targetOf(cur []uint64, k int) {
	w := len(cur)
	d := x.out.delta[k*w : (k+1)*w]
	for j := range cur {
		x.target[j] = cur[j] + d[j]
	}
}

// dedupScanMax is the longest list dedup scans pairwise; longer ones (a
// cooperation of many copies) are merged through a hash table.
const dedupScanMax = 32

// dedup merges the transitions 0..n-1 of x.out with one action and one
// target (one delta) into the first of them, adding the later ones' rates
// to its rate in order: they are one transition of the chain. It returns
// the first ones' positions, in order.
func (x *explorer) dedup(out *tlist, n int) []int32 {
	keep := x.keep[:0]
	w := out.w
	if n <= dedupScanMax {
		// Most lists have no duplicate: a 64-bit filter of the (action,
		// first delta word) pairs seen spares most of the scans.
		var seen uint64
	next:
		for k := 0; k < n; k++ {
			a := out.act[k]
			d := out.delta[k*w : (k+1)*w]
			bit := uint64(1) << ((uint64(a)*0x9E3779B97F4A7C15 ^ d[0]*0xBF58476D1CE4E5B9) >> 58)
			if seen&bit != 0 {
				for _, r := range keep {
					if out.act[r] == a && equalWords(out.delta[int(r)*w:int(r+1)*w], d) {
						out.rate[r] += out.rate[k]
						continue next
					}
				}
			}
			seen |= bit
			keep = append(keep, int32(k))
		}
		x.keep = keep
		return keep
	}
	size := 1 << bits.Len(uint(2*n))
	if cap(x.dedupTable) < size {
		x.dedupTable = make([]int32, size)
	}
	table := x.dedupTable[:size]
	clear(table)
	mask := uint64(size - 1)
	for k := 0; k < n; k++ {
		a := out.act[k]
		d := out.delta[k*w : (k+1)*w]
		h := uint64(a)*0x9E3779B97F4A7C15 ^ hashState(d)
		for slot := h & mask; ; slot = (slot + 1) & mask {
			r := table[slot] - 1
			if r < 0 {
				table[slot] = int32(k) + 1
				keep = append(keep, int32(k))
				break
			}
			if out.act[r] == a && equalWords(out.delta[int(r)*w:int(r+1)*w], d) {
				out.rate[r] += out.rate[k]
				break
			}
		}
	}
	x.keep = keep
	return keep
}

// number gives the new targets of the expanded piece their indices, in
// order, and the rates new to the table theirs; it appends the piece's row
// offsets (its rows will start at transition base) and deadlocks, and
// returns its number of transitions. The rows themselves are copied in
// afterwards (copyRows), on all cores.
func (x *piece) number(c *Chain, set stateIndex, rates *rateInterner, rowPtr *[]int64, base int, maxStates int) (int, error) {
	w := x.w
	b := &x.rows
	e, u := 0, 0
	for k, cnt := range b.count {
		i := x.lo + k
		n := int(cnt)
		for r := e; r < e+n; r++ {
			if b.ridx[r] < 0 && !rates.full {
				if idx, ok := rates.intern(c, b.rate[r]); ok {
					b.ridx[r] = int32(idx)
				}
			}
		}
		if rates.err != nil {
			return 0, rates.err
		}
		for ; u < len(b.unkPos) && int(b.unkPos[u]) < e+n; u++ {
			target := b.tgt[u*w : (u+1)*w]
			idx := set.lookup(c.States, target, b.radix[u])
			if idx < 0 {
				n := len(c.States) / w
				if maxStates > 0 && n >= maxStates {
					return 0, option.Errorf("%w: more than %d states (raise {MaxStates})", ErrTooManyStates, maxStates)
				}
				if n >= math.MaxInt32-1 {
					return 0, fmt.Errorf("%w: more than 2^31 states", ErrTooManyStates)
				}
				c.States = append(c.States, target...)
				idx = int32(n)
				set.insert(c.States, idx, b.radix[u])
			}
			b.idx[b.unkPos[u]] = idx
		}
		if i == b.errState {
			return 0, b.errMsg(c)
		}
		if n == 0 {
			c.Deadlocks = append(c.Deadlocks, int32(i))
		}
		e += n
		*rowPtr = append(*rowPtr, int64(base+e))
	}
	return e, nil
}

// copyRows copies the piece's e transitions to c's arrays from offset
// base (the arrays are long enough): targets, actions, and rate indices,
// or the rates themselves once the table is full.
func (x *piece) copyRows(c *Chain, full bool, base, e int) {
	b := &x.rows
	copy(c.Col[base:base+e], b.idx[:e])
	copy(c.Act[base:base+e], b.act[:e])
	if full {
		copy(c.Rates[base:base+e], b.rate[:e])
		return
	}
	ri := c.RateIndex[base : base+e]
	for k, i := range b.ridx[:e] {
		ri[k] = uint16(i)
	}
}

// deriveHint is what the error of a chain that does not fit the memory
// budget suggests.
const deriveHint = "the chain does not fit: give more memory with {Memory} if the machine has it, or estimate by simulation ({SimulateVerb}, or {Simulate})"

// overBudget wraps a budget error of the derivation as a model too large.
func overBudget(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrTooManyStates, err)
}

// extendTransitions lengthens the chain's transition arrays by extra
// entries (targets, actions, and rate indices or, once the table is full,
// rates), reserving hint entries when that is enough. The arrays grow
// together, after one check of what they need together.
func extendTransitions(b *membudget.Budget, c *Chain, extra, hint int, full bool) error {
	rate := int64(2)
	if full {
		rate = 8
	}
	short := func(n, capacity int) bool { return capacity-n < extra }
	ratesLen, ratesCap := len(c.RateIndex), cap(c.RateIndex)
	if full {
		ratesLen, ratesCap = len(c.Rates), cap(c.Rates)
	}
	if short(len(c.Col), cap(c.Col)) || short(len(c.Act), cap(c.Act)) || short(ratesLen, ratesCap) {
		need := len(c.Col) + extra
		n := max(2*cap(c.Col), need, 4096)
		if hint >= need {
			n = hint
		}
		per := 8 + rate
		if left := b.Left(); int64(n)*per > left {
			n = need + need/8
			if int64(n)*per > left {
				n = need
			}
		}
		if err := b.Check("derive: the transition arrays", membudget.Bytes(int64(n), per), option.Text(deriveHint)); err != nil {
			return overBudget(err)
		}
		// No collection starts between these allocations: one that
		// runs while they are made can leave a reservation placed over
		// freed pages, which the runtime then zeroes whole, untouched
		// part included (measured: 'pepa states' on 5.8M states peaked at
		// 1.04 GB instead of 0.67 GB in 5 runs of 10, 0 of 12 with this).
		// The soft memory limit still applies meanwhile.
		defer pauseGC()()
		if short(len(c.Col), cap(c.Col)) {
			c.Col = grow(c.Col, n-len(c.Col), n)
		}
		if short(len(c.Act), cap(c.Act)) {
			c.Act = grow(c.Act, n-len(c.Act), n)
		}
		if short(ratesLen, ratesCap) && full {
			c.Rates = grow(c.Rates, n-len(c.Rates), n)
		} else if short(ratesLen, ratesCap) {
			c.RateIndex = grow(c.RateIndex, n-len(c.RateIndex), n)
		}
	}
	c.Col, c.Act = c.Col[:len(c.Col)+extra], c.Act[:len(c.Act)+extra]
	if full {
		c.Rates = c.Rates[:len(c.Rates)+extra]
	} else {
		c.RateIndex = c.RateIndex[:len(c.RateIndex)+extra]
	}
	return nil
}

// gcPause is the collector held off by derivations making their
// transition arrays (pauseGC). Derivations run at once (a model's groups):
// the first to pause saves the setting, the last to resume restores it.
// (Each saving and restoring the setting it found left the collector off
// for good once two pauses overlapped: A off, B off, A on, B off.)
var gcPause struct {
	sync.Mutex
	holders int
	saved   int
}

// pauseGC holds the collector off until the function it returns is
// called.
func pauseGC() (resume func()) {
	gcPause.Lock()
	if gcPause.holders == 0 {
		gcPause.saved = debug.SetGCPercent(-1)
	}
	gcPause.holders++
	gcPause.Unlock()
	return func() {
		gcPause.Lock()
		gcPause.holders--
		if gcPause.holders == 0 {
			debug.SetGCPercent(gcPause.saved)
		}
		gcPause.Unlock()
	}
}

// room returns s, or a copy of it in a larger array, with room for extra
// more elements: grow's size (hint, or double), or less when the budget
// does not leave that much (an eighth more than needed, or just what is
// needed), each size checked against the budget before it is made.
func room[T any](b *membudget.Budget, s []T, extra, hint int, stage string) ([]T, error) {
	if cap(s)-len(s) >= extra {
		return s, nil
	}
	var zero T
	size := int64(unsafe.Sizeof(zero))
	need := len(s) + extra
	n := max(2*cap(s), need, 4096)
	if hint >= need {
		n = hint
	}
	if left := b.Left(); int64(n)*size > left {
		n = need + need/8
		if int64(n)*size > left {
			n = need
		}
	}
	if err := b.Check(stage, membudget.Bytes(int64(n), size), option.Text(deriveHint)); err != nil {
		return nil, overBudget(err)
	}
	return grow(s, n-len(s), n), nil
}

// reserveChunk makes room, before a chunk is numbered, for every state it
// may add (each target not numbered when it was expanded, as far as the
// state limit allows) in the state array, the state index and the row
// offsets, within the budget: numbering then appends without growing.
func reserveChunk(b *membudget.Budget, c *Chain, rowPtr *[]int64, set stateIndex, pieces []*piece, maxStates int) error {
	w := c.S.Words
	fresh, rows := 0, 0
	for _, p := range pieces {
		fresh += len(p.rows.unkPos)
		rows += len(p.rows.count)
	}
	// Targets repeat: the new states are at most those not yet numbered
	// that the state limit and the product of the local state counts
	// allow (an exact reservation from that product is then never grown).
	n := len(c.States) / w
	if maxStates > 0 {
		fresh = min(fresh, max(0, maxStates-n))
	}
	if c.S.RadixSize > 0 {
		fresh = int(min(int64(fresh), max(0, c.S.RadixSize-int64(n))))
	}
	var err error
	stage := "derive: the state array"
	if cap(c.States)-len(c.States) < fresh*w {
		stage = fmt.Sprintf("derive: the state array, at %d states", n) // only when it grows
	}
	if c.States, err = room(b, c.States, fresh*w, 0, stage); err != nil {
		return err
	}
	if *rowPtr, err = room(b, *rowPtr, rows, 0, "derive: the row offsets"); err != nil {
		return err
	}
	if h, ok := set.(*stateSet); ok {
		return overBudget(h.reserve(b, c.States, fresh))
	}
	return nil
}

const rateCacheSize = 1 << 12

// rateTableLimit is the most distinct rates a chain's table holds (what a
// 2-byte index reaches; a variable so that tests can make it small).
var rateTableLimit = 1 << 16

// rateInterner numbers the distinct rates of a derivation for the chain's
// RateTable. Past 65,536 distinct rates it gives up: the chain's rates so
// far are written out into Rates, and the rest follow there.
type rateInterner struct {
	index map[uint64]uint16
	full  bool
	// budget bounds the rates written out when the table fills; err is
	// the budget's refusal, returned by the numbering.
	budget *membudget.Budget
	err    error
	// view is what explorers read while the table grows: a copy of the
	// table made by publish, which copies again only once it has grown by
	// an eighth (or 16 chunks later), so that copying stays linear in the
	// table; a rate missing from the view is interned by number.
	view        atomic.Pointer[rateView]
	published   int // len(index) at the last publish
	sincePublic int // publish calls since then
}

// rateView is a read-only copy of a rateInterner's table.
type rateView struct {
	index map[uint64]uint16
	full  bool
}

func newRateInterner() *rateInterner {
	r := &rateInterner{index: map[uint64]uint16{}}
	r.view.Store(&rateView{index: map[uint64]uint16{}})
	return r
}

// publish updates the view after a chunk was numbered.
func (r *rateInterner) publish() {
	r.sincePublic++
	grown := len(r.index) - r.published
	if grown == 0 && r.full == r.view.Load().full {
		return
	}
	if r.full || 8*grown >= r.published || r.sincePublic >= 16 {
		r.view.Store(&rateView{index: maps.Clone(r.index), full: r.full})
		r.published, r.sincePublic = len(r.index), 0
	}
}

// intern returns rate's index in c's table, adding it if new; false once
// the table is full, when c's rates so far have been written out into
// Rates (and the caller lists the rest there).
func (r *rateInterner) intern(c *Chain, rate float64) (uint16, bool) {
	if r.full || r.err != nil {
		return 0, false
	}
	bits := math.Float64bits(rate)
	if i, ok := r.index[bits]; ok {
		return i, true
	}
	if len(c.RateTable) == rateTableLimit {
		if err := r.budget.Check("derive: writing out the rates (more than 65,536 distinct ones)", membudget.Bytes(int64(cap(c.RateIndex)), 8), option.Text(deriveHint)); err != nil {
			r.err = overBudget(err)
			return 0, false
		}
		r.full = true
		c.Rates = make([]float64, len(c.RateIndex), cap(c.RateIndex))
		for e, i := range c.RateIndex {
			c.Rates[e] = c.RateTable[i]
		}
		c.RateIndex, c.RateTable = nil, nil
		return 0, false
	}
	i := uint16(len(c.RateTable))
	r.index[bits] = i
	c.RateTable = append(c.RateTable, rate)
	return i, true
}

// rateIndex looks rate up in the table without changing it (explorers run
// at once): its index, or -1.
func (x *explorer) rateIndex(r *rateView, rate float64) int32 {
	if r.full {
		return -1
	}
	bits := math.Float64bits(rate)
	slot := (bits * 0x9E3779B97F4A7C15) >> (64 - 12)
	if x.rateIdx[slot] != 0 && x.rateKey[slot] == bits {
		return x.rateIdx[slot] - 1
	}
	i, ok := r.index[bits]
	if !ok {
		return -1
	}
	x.rateKey[slot], x.rateIdx[slot] = bits, int32(i)+1
	return int32(i)
}

// sizeEstimate predicts the size of a state space from the product of the
// leaves' local state counts, when that product is small enough to reserve.
type sizeEstimate struct {
	states int // 0: no usable bound
}

const (
	maxReserveStates      = 1 << 26
	maxReserveTransitions = 1 << 28
)

// The bound is also cut to what a quarter of left (the budget's
// remainder) holds, at a state's packed words and row offset.
func newSizeEstimate(s *Structure, maxStates int, left int64) sizeEstimate {
	p := float64(s.RadixSize)
	if s.RadixSize == 0 {
		p = math.Inf(1)
	}
	if maxStates > 0 {
		p = math.Min(p, float64(maxStates))
	}
	if p > maxReserveStates {
		return sizeEstimate{}
	}
	p = math.Min(p, float64(left/4)/float64(8*s.Words+8))
	return sizeEstimate{states: int(p)}
}

// transitions is the capacity to reserve for the transitions after have
// transitions in the first done states (0: no prediction). It is twice the
// extrapolation: a reservation is address space, and only the part written
// becomes resident, whereas a prediction that falls short costs a copy of
// every transition so far (and early breadth-first states can have fewer
// transitions than later ones).
func (e sizeEstimate) transitions(have, done int) int {
	if e.states == 0 || done < 1024 {
		return 0
	}
	t := 2*float64(have)/float64(done)*float64(e.states) + 4096
	if t > maxReserveTransitions {
		t = maxReserveTransitions
	}
	if int(t) < have {
		return 0
	}
	return int(t)
}

// grow makes room for extra more elements: to hint if that is enough, else
// by doubling.
func grow[T any](s []T, extra, hint int) []T {
	n := max(2*cap(s), len(s)+extra, 4096)
	if hint >= len(s)+extra {
		n = hint
	}
	out := make([]T, len(s), n)
	adviseHuge(out)
	copy(out, s)
	return out
}

// stateIndex finds the index of a packed state, given also its
// mixed-radix number.
type stateIndex interface {
	lookup(states, s []uint64, radix int64) int32 // -1 if absent
	insert(states []uint64, idx int32, radix int64)
}

// maxDirect bounds the direct-address index: a table of that many int32.
const maxDirect = 1 << 27

// newIndex picks a direct-address table indexed by the mixed-radix number
// when the product of the local state counts is small enough (a lookup is
// then two memory accesses, the first mostly in cache, no hashing, no
// comparison), and an open-addressing hash set otherwise.
//
// The direct table is taken only when it needs at most a quarter of what
// the budget leaves: it is a cheaper lookup, not a necessity.
func newIndex(s *Structure, maxStates int, b *membudget.Budget) stateIndex {
	if s.RadixSize > 0 && s.RadixSize <= maxDirect && (maxStates <= 0 || s.RadixSize <= 8*int64(maxStates)) && 4*s.RadixSize <= b.Left()/4 {
		blocks := (s.RadixSize + directBlock - 1) / directBlock
		if err := b.Check("derive: direct state index", 4*(blocks+blocks*directBlock), ""); err == nil {
			d := &directIndex{top: make([]int32, blocks), slots: make([]int32, blocks*directBlock)}
			adviseHuge(d.slots)
			return d
		}
	}
	return newStateSet(s.Words)
}

// directIndex maps a state's mixed-radix number to its index + 1 (0:
// absent), in two levels: the numbers are cut into blocks of directBlock,
// and a block's entries are placed in slots when a state in it is first
// inserted, the blocks one after the other in the order met. Reachable
// states are a small part of the product and gather in few blocks (on the
// plug-in's ws-6-5-4-4, 1,369,728 states of 39.7M numbers lie in 7,218 of
// its 38,751 blocks): the entries written take 30 MB instead of the 159 MB
// of a flat table, whose every 2 MB page was touched (a flat table
// without huge pages touches 30 MB too, but misses the TLB on most
// lookups). The blocks' places (top, 155 KB there) stay in cache.
type directIndex struct {
	top   []int32 // per block: its place in slots + 1; 0: none yet
	slots []int32 // blocks of directBlock entries, in the order met
	used  int32   // blocks placed (the numbering goroutine's)
}

// directBlock is the number of mixed-radix numbers in a block of the
// direct index (a 4 KB page of entries).
const (
	directShift = 10
	directBlock = 1 << directShift
)

// load returns the entry of radix: the index + 1 of its state, or 0.
// Explorers read the index while it is written: both levels are read
// atomically, and a block is placed (zero) before it is published in
// top.
func (d *directIndex) load(radix int64) int32 {
	b := atomic.LoadInt32(&d.top[radix>>directShift])
	if b == 0 {
		return 0
	}
	return atomic.LoadInt32(&d.slots[int64(b-1)<<directShift|radix&(directBlock-1)])
}

func (d *directIndex) lookup(_, _ []uint64, radix int64) int32 { return d.load(radix) - 1 }

// insert stores atomically: explorers read the index meanwhile.
func (d *directIndex) insert(_ []uint64, idx int32, radix int64) {
	t := &d.top[radix>>directShift]
	b := *t
	if b == 0 {
		d.used++
		b = d.used
		atomic.StoreInt32(t, b)
	}
	atomic.StoreInt32(&d.slots[int64(b-1)<<directShift|radix&(directBlock-1)], idx+1)
}

// stateSet is an open-addressing hash set of state indices, keyed by the
// packed states they index.
type stateSet struct {
	w     int
	table []int32 // state index + 1; 0 is empty
	mask  uint64
	count int
}

func newStateSet(w int) *stateSet {
	const initial = 1 << 12
	return &stateSet{w: w, table: make([]int32, initial), mask: initial - 1}
}

func hashState(s []uint64) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, x := range s {
		h ^= x
		h *= 0xBF58476D1CE4E5B9
		h ^= h >> 31
	}
	return h
}

func (t *stateSet) lookup(states []uint64, s []uint64, _ int64) int32 {
	w := t.w
	for i := hashState(s) & t.mask; ; i = (i + 1) & t.mask {
		v := t.table[i]
		if v == 0 {
			return -1
		}
		idx := int(v - 1)
		if w == 1 {
			if states[idx] == s[0] {
				return v - 1
			}
			continue
		}
		if equalWords(states[idx*w:(idx+1)*w], s) {
			return v - 1
		}
	}
}

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// insert adds state idx (already appended to states).
func (t *stateSet) insert(states []uint64, idx int32, _ int64) {
	if 2*(t.count+1) > len(t.table) {
		t.grow(states)
	}
	t.place(states, idx)
	t.count++
}

func (t *stateSet) place(states []uint64, idx int32) {
	w := int(t.w)
	s := states[int(idx)*w : (int(idx)+1)*w]
	for i := hashState(s) & t.mask; ; i = (i + 1) & t.mask {
		if t.table[i] == 0 {
			t.table[i] = idx + 1
			return
		}
	}
}

// reserve grows the table, within the budget, so that extra more states
// can be inserted without growing it.
func (t *stateSet) reserve(b *membudget.Budget, states []uint64, extra int) error {
	size := len(t.table)
	for 2*(t.count+extra) > size {
		size *= 2
	}
	if size == len(t.table) {
		return nil
	}
	if err := b.Check("derive: the state index", membudget.Bytes(int64(size), 4), option.Text(deriveHint)); err != nil {
		return err
	}
	t.resize(states, size)
	return nil
}

func (t *stateSet) grow(states []uint64) { t.resize(states, 2*len(t.table)) }

// resize rehashes the table into size slots.
func (t *stateSet) resize(states []uint64, size int) {
	old := t.table
	t.table = make([]int32, size)
	t.mask = uint64(len(t.table) - 1)
	for _, v := range old {
		if v != 0 {
			t.place(states, v-1)
		}
	}
}

// passiveError reports a passive activity enabled at the top level in state
// i (cur), leading to target, with the prefix it comes from.
func (s *Structure) passiveError(i int, names string, cur, target []uint64, act int32) error {
	what := "action " + s.Actions[act] + " is passive and never synchronised with an active partner"
	if act == TauAction {
		what = "a passive action is hidden, so it can never be synchronised with an active partner"
	}
	// The leaf that moves to its target by a passive activity of the
	// action (any passive one if the action was hidden) is the source; a
	// self-loop moves no leaf, so fall back on any leaf enabling one.
	var best *lang.Prefix
	bestMoved := false
	s.localActivities(cur, func(l *Leaf, t localTrans, prov []*lang.Prefix, d int) {
		if !t.passive || (act != TauAction && t.action != act) || len(prov) == 0 {
			return
		}
		moved := l.Local(target) != l.Local(cur) && (l.Counts != nil || int(t.target) == l.Local(target))
		if best == nil || (moved && !bestMoved) {
			best, bestMoved = prov[0], moved
		}
	})
	return fmt.Errorf("in state %d (%s): %s%s", i, names, what, s.at(" (the activity at ", best, ")"))
}

// mixedSources names an active and a passive prefix of the action enabled
// in state cur, for the error on an undefined apparent rate.
func (s *Structure) mixedSources(cur []uint64, act int32) string {
	var active, passive *lang.Prefix
	s.localActivities(cur, func(_ *Leaf, t localTrans, prov []*lang.Prefix, _ int) {
		if t.action != act || len(prov) == 0 {
			return
		}
		if t.passive && passive == nil {
			passive = prov[0]
		}
		if !t.passive && active == nil {
			active = prov[0]
		}
	})
	if active == nil || passive == nil {
		return ""
	}
	return s.at(" (active at ", active, "") + s.at(", passive at ", passive, ")")
}

func (s *Structure) at(before string, p *lang.Prefix, after string) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%s%s:%s%s", before, s.file, p.Pos(), after)
}

// localActivities calls f with every activity of every leaf's derivatives
// enabled in state (for an aggregated leaf, of every derivative some copy
// is in), with the prefixes it comes from. For error messages only.
func (s *Structure) localActivities(state []uint64, f func(l *Leaf, t localTrans, prov []*lang.Prefix, d int)) {
	for _, l := range s.Leaves {
		loc := l.Local(state)
		for d := range l.Comp.States {
			if l.Population(loc, d) == 0 {
				continue
			}
			for k, t := range l.Comp.trans[d] {
				f(l, t, l.Comp.prov[d][k], d)
			}
		}
	}
}
