package reference

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"pepa/lang"
)

// ErrTooManyStates is wrapped when exploration passes Options.MaxStates.
var ErrTooManyStates = errors.New("too many states for the reference")

// Transition is one labelled transition of the chain.
type Transition struct {
	To     int
	Action string
	Rate   float64
}

// Chain is the labelled CTMC of a model as the reference derives it.
type Chain struct {
	// Leaves names the sequential components, left to right.
	Leaves []string
	// States holds, per state, the derivative key of each leaf.
	States [][]string
	// Trans lists every transition of each state, self-loops and
	// duplicates included (a choice of two identical prefixes gives two).
	Trans [][]Transition
	// Deadlocks are the states without any transition.
	Deadlocks []int
	// TermIdentified counts the reachable local derivatives whose identity
	// rests on the term rule of semantics.md section 1 rather than on
	// syntax: aliases (P = Q; P is a state of its own) and anonymous terms
	// written more than once. A solver that identifies derivatives
	// otherwise may number states differently there.
	TermIdentified int
}

// N is the number of states.
func (c *Chain) N() int { return len(c.States) }

// ExitRate is the total rate out of state i, self-loops excluded.
func (c *Chain) ExitRate(i int) float64 {
	q := 0.0
	for _, t := range c.Trans[i] {
		if t.To != i {
			q += t.Rate
		}
	}
	return q
}

// DistinctTransitions counts the distinct (source, target, action) triples.
func (c *Chain) DistinctTransitions() int {
	n := 0
	for _, ts := range c.Trans {
		seen := map[string]bool{}
		for _, t := range ts {
			k := strconv.Itoa(t.To) + " " + t.Action
			if !seen[k] {
				seen[k] = true
				n++
			}
		}
	}
	return n
}

// StateString names state i by its leaves' derivatives.
func (c *Chain) StateString(i int) string {
	return "(" + strings.Join(c.States[i], ", ") + ")"
}

// Options bounds the exploration.
type Options struct {
	MaxStates int // 0: 100000
	// Stop names components (sequential leaves, by their initial term,
	// as Chain.Leaves lists them) and actions: a transition of such a
	// leaf labelled by one of them leads it to the terminal local state
	// Finished, which has no activity (semantics.md section 3, "A
	// finished machine stops").
	Stop map[string][]string
}

// Finished is the key of the terminal local state of a stopped leaf.
const Finished = "finished"

// FinishedStates marks the states where every named leaf is Finished
// (Options.Stop): where every machine named has finished, the set whose
// passage from the start is the makespan.
func (c *Chain) FinishedStates(names []string) []bool {
	leafOf := map[string]int{}
	for i, l := range c.Leaves {
		leafOf[l] = i
	}
	out := make([]bool, len(c.States))
	for i, st := range c.States {
		out[i] = true
		for _, name := range names {
			if k, ok := leafOf[name]; !ok || st[k] != Finished {
				out[i] = false
				break
			}
		}
	}
	return out
}

// Derive explores the model's state space breadth-first from the initial
// state.
func Derive(ctx context.Context, m *lang.Model, opt Options) (*Chain, error) {
	if opt.MaxStates <= 0 {
		opt.MaxStates = 100000
	}
	in, err := newInterp(m)
	if err != nil {
		return nil, err
	}
	in.setStop(opt.Stop)
	c := &Chain{}
	for _, l := range in.leaves {
		c.Leaves = append(c.Leaves, l.leafName)
	}
	init := make([]int, len(in.leaves))
	for i, l := range in.leaves {
		init[i] = l.initialDer
	}
	index := map[string]int{}
	var states [][]int
	stateKey := func(st []int) string {
		var b strings.Builder
		for _, d := range st {
			b.WriteString(strconv.Itoa(d))
			b.WriteByte(',')
		}
		return b.String()
	}
	add := func(st []int) (int, error) {
		k := stateKey(st)
		if i, ok := index[k]; ok {
			return i, nil
		}
		if len(states) >= opt.MaxStates {
			return 0, fmt.Errorf("%w: more than %d", ErrTooManyStates, opt.MaxStates)
		}
		index[k] = len(states)
		states = append(states, st)
		return len(states) - 1, nil
	}
	if _, err := add(init); err != nil {
		return nil, err
	}
	for i := 0; i < len(states); i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		st := states[i]
		ts, err := in.transitions(in.root, st)
		if err != nil {
			return nil, fmt.Errorf("state %d %s: %w", i, in.stateString(st), err)
		}
		var out []Transition
		for _, t := range ts {
			if t.rate.passive {
				return nil, fmt.Errorf("%w: state %d %s enables action %s passively at the top level", ErrInvalid, i, in.stateString(st), t.action)
			}
			next := append([]int{}, st...)
			for _, ch := range t.changes {
				next[ch.leaf] = ch.der
			}
			j, err := add(next)
			if err != nil {
				return nil, err
			}
			out = append(out, Transition{To: j, Action: t.action, Rate: t.rate.value})
		}
		c.Trans = append(c.Trans, out)
		if len(out) == 0 {
			c.Deadlocks = append(c.Deadlocks, i)
		}
	}
	seen := map[int]bool{}
	for _, st := range states {
		for _, d := range st {
			if in.merged[d] && !seen[d] {
				seen[d] = true
				c.TermIdentified++
			}
		}
	}
	for _, st := range states {
		names := make([]string, len(st))
		for l, d := range st {
			names[l] = in.derivs[d].key
		}
		c.States = append(c.States, names)
	}
	return c, nil
}

func (in *interp) stateString(st []int) string {
	names := make([]string, len(st))
	for l, d := range st {
		names[l] = in.derivs[d].key
	}
	return "(" + strings.Join(names, ", ") + ")"
}
