package ctmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
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
var ErrTooManyStates = errors.New("state limit exceeded")

// Derive explores the state space of s breadth-first from the initial state.
// It obeys ctx (checked every few thousand states).
func Derive(ctx context.Context, s *Structure, opt DeriveOptions) (*Chain, error) {
	w := s.Words
	c := &Chain{S: s}
	set := newStateSet(w)
	init := make([]uint64, w) // every leaf starts in local state 0
	c.States = append(c.States, init...)
	set.insert(c.States, 0)
	c.RowPtr = append(c.RowPtr, 0)

	out := &tlist{w: w}
	cur := make([]uint64, w)
	target := make([]uint64, w)
	var e evalError
	start := time.Now()
	lastReport := start
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
		out.reset()
		s.root.eval(cur, out, &e)
		if e.mixed {
			return nil, fmt.Errorf("in state %d (%s): action %s is enabled both actively and passively by one side of a cooperation, so its apparent rate is undefined",
				i, c.StateString(i), s.Actions[e.action])
		}
		rowStart := len(c.Col)
		for k := 0; k < out.len(); k++ {
			if out.pas[k] {
				return nil, fmt.Errorf("in state %d (%s): action %s is passive and never synchronised with an active partner",
					i, c.StateString(i), s.Actions[out.act[k]])
			}
			for j := 0; j < w; j++ {
				target[j] = cur[j] + out.delta[k*w+j]
			}
			n := len(c.States) / w
			idx := set.lookup(c.States, target)
			if idx < 0 {
				if opt.MaxStates > 0 && n >= opt.MaxStates {
					return nil, fmt.Errorf("%w: more than %d states (raise --max-states, or simplify the model)", ErrTooManyStates, opt.MaxStates)
				}
				c.States = append(c.States, target...)
				idx = int32(n)
				if n >= math.MaxInt32-1 {
					return nil, fmt.Errorf("%w: more than 2^31 states", ErrTooManyStates)
				}
				set.insert(c.States, idx)
			}
			if !mergeInto(c, rowStart, idx, out.act[k], out.rate[k]) {
				c.Col = append(c.Col, idx)
				c.Rate = append(c.Rate, out.rate[k])
				c.Act = append(c.Act, out.act[k])
			}
		}
		if len(c.Col) == rowStart {
			c.Deadlocks = append(c.Deadlocks, int32(i))
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	}
	c.N = len(c.States) / w
	return c, nil
}

// mergeInto adds rate to an existing transition of the current row with the
// same target and action, if there is one (rows are short; long rows are
// not searched, and duplicates there are harmless: rates add up anyway).
func mergeInto(c *Chain, rowStart int, target, act int32, rate float64) bool {
	if len(c.Col)-rowStart > 64 {
		return false
	}
	for k := rowStart; k < len(c.Col); k++ {
		if c.Col[k] == target && c.Act[k] == act {
			c.Rate[k] += rate
			return true
		}
	}
	return false
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

func (t *stateSet) lookup(states []uint64, s []uint64) int32 {
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
func (t *stateSet) insert(states []uint64, idx int32) {
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
