package ctmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

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

	RowPtr []int64   // N+1 offsets into Col, Rate, Act
	Col    []int32   // target state of each transition
	Rate   []float64 // rate of each transition
	Act    []int32   // action id of each transition

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

// ExitRate is the total rate out of state i, self-loops excluded.
func (c *Chain) ExitRate(i int) float64 {
	q := 0.0
	for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
		if int(c.Col[k]) != i {
			q += c.Rate[k]
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
}

// ErrTooManyStates is returned (wrapped) when MaxStates is exceeded.
var ErrTooManyStates = errors.New("model too large")

// Derive explores the state space of s breadth-first from the initial state.
// It obeys ctx (checked every few thousand states).
func Derive(ctx context.Context, s *Structure, opt DeriveOptions) (*Chain, error) {
	w := s.Words
	root := s.exploreRoot()
	c := &Chain{S: s}
	set := newIndex(s, opt.MaxStates)
	direct, _ := set.(*directIndex)
	var touched int32

	// Growing the transition arrays by append copies them several times
	// over, and on this kind of machine touching fresh pages is as costly
	// as the copy (measured: half the time of a 50M-transition derivation).
	// When the product of the leaves' local state counts bounds the state
	// space tightly enough, the arrays are reserved once from that bound and
	// the transitions per state seen so far; the untouched part of a
	// reservation costs no memory.
	est := newSizeEstimate(s, opt.MaxStates)
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
	e := evalError{limit: transitionLimit(opt.MaxStates)}
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
		if e.overflow {
			names := c.StateString(i)
			if len(names) > 200 {
				names = names[:200] + "..."
			}
			return nil, fmt.Errorf("%w: state %d (%s) has more than %d transitions (raise --max-states)", ErrTooManyStates, i, names, e.limit)
		}
		if e.mixed {
			return nil, fmt.Errorf("in state %d (%s): action %s is enabled both actively and passively by one side of a cooperation, so its apparent rate is undefined%s",
				i, c.StateString(i), s.Actions[e.action], s.mixedSources(cur, e.action))
		}
		rowCol, rowRate, rowAct = rowCol[:0], rowRate[:0], rowAct[:0]
		if direct != nil {
			// Touch every target's slot first: independent loads that the
			// processor overlaps, where the dependent loop below would
			// wait for one cache miss at a time.
			for _, d := range out.rdelta {
				touched += direct.table[curRadix+d]
			}
		}
	next:
		for k := 0; k < out.len(); k++ {
			for j := 0; j < w; j++ {
				target[j] = cur[j] + out.delta[k*w+j]
			}
			if out.pas[k] {
				return nil, s.passiveError(i, c.StateString(i), cur, target, out.act[k])
			}
			targetRadix := curRadix + out.rdelta[k]
			idx := set.lookup(c.States, target, targetRadix)
			if idx < 0 {
				n := len(c.States) / w
				if opt.MaxStates > 0 && n >= opt.MaxStates {
					return nil, fmt.Errorf("%w: more than %d states (raise --max-states)", ErrTooManyStates, opt.MaxStates)
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
			c.Rate = grow(c.Rate, len(rowCol), hint)
			c.Act = grow(c.Act, len(rowCol), hint)
		}
		c.Col = append(c.Col, rowCol...)
		c.Rate = append(c.Rate, rowRate...)
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

// sizeEstimate predicts the size of a state space from the product of the
// leaves' local state counts, when that product is small enough to reserve.
type sizeEstimate struct {
	states int // 0: no usable bound
}

const (
	maxReserveStates      = 1 << 26
	maxReserveTransitions = 1 << 28
)

func newSizeEstimate(s *Structure, maxStates int) sizeEstimate {
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
	return sizeEstimate{states: int(p)}
}

// transitions predicts the final number of transitions after have
// transitions in the first done states; 0 if there is no prediction.
func (e sizeEstimate) transitions(have, done int) int {
	if e.states == 0 || done < 1024 {
		return 0
	}
	t := float64(have)/float64(done)*float64(e.states)*1.02 + 1024
	if t > maxReserveTransitions {
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
// then one memory access, no hashing, no comparison, and the table is as
// compact as the numbering allows), and an open-addressing hash set
// otherwise.
func newIndex(s *Structure, maxStates int) stateIndex {
	if s.RadixSize > 0 && s.RadixSize <= maxDirect && (maxStates <= 0 || s.RadixSize <= 8*int64(maxStates)) {
		return &directIndex{table: make([]int32, s.RadixSize)}
	}
	return newStateSet(s.Words)
}

// directIndex maps a state's mixed-radix number to its index + 1 (0: absent).
type directIndex struct {
	table []int32
}

func (d *directIndex) lookup(_, _ []uint64, radix int64) int32 { return d.table[radix] - 1 }

func (d *directIndex) insert(_ []uint64, idx int32, radix int64) { d.table[radix] = idx + 1 }

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

func (t *stateSet) grow(states []uint64) {
	old := t.table
	t.table = make([]int32, 2*len(old))
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
