package models

import (
	"context"
	"errors"
	"fmt"

	"pepa/ctmc"
)

// maxFlagStates bounds the chain with completion flags.
const maxFlagStates = 1 << 25

// ErrJointTooLarge is returned by flagChain when the chain with completion
// flags would exceed its state limit; the joint figures are then reported
// as unavailable, and the machines' own figures stand.
var ErrJointTooLarge = errors.New("the chain with completion flags is too large")

// flagChain builds the product of c with one "has finished" flag per
// machine: a transition labelled by a machine's cycle-closing action sets
// its flag. It returns the chain (reachable part, from the states alpha
// covers with no flag set, in breadth-first order), its states with every
// flag set, and alpha carried over to it:
// the first passage into them is max_j F_j under initial semantics, however
// the machines interact. maxStates bounds its states (0: maxFlagStates);
// past it the error wraps ErrJointTooLarge.
//
// A state of it is a state of c and a set of flags. States are numbered
// through one index array of c.N entries per set of flags that occurs
// (allocated when the first state with that set is found): 4 bytes per
// state of c and set, where a map of pairs would take ten times that.
// Rates stay 2-byte indices into c's table when c has one.
func flagChain(ctx context.Context, c *ctmc.Chain, machines []*Machine, alpha []float64, maxStates int) (*ctmc.Chain, []bool, []float64, error) {
	if maxStates <= 0 || maxStates > maxFlagStates {
		maxStates = maxFlagStates
	}
	if len(machines) > 30 {
		return nil, nil, nil, fmt.Errorf("%w: %d coupled machines", ErrJointTooLarge, len(machines))
	}
	setBits := make([]uint32, len(c.S.Actions))
	for j, m := range machines {
		for _, a := range m.Last {
			setBits[a] |= 1 << uint(j)
		}
	}
	all := uint32(1)<<uint(len(machines)) - 1
	// The chain has at most c.N states per set of flags, and on coupled
	// mappings most of that bound is reached. More than twice the limit
	// is refused at once: building it up to the limit would cost the time
	// and memory of a chain that size for nothing (28 applications on 7
	// coupled machines: 75 s and 7 GB before the limit was met).
	if bound := float64(c.N) * float64(all+1); bound > 2*float64(maxStates) {
		return nil, nil, nil, fmt.Errorf("%w: up to %.3g states (the model's %d states times %d sets of finished machines), more than %d", ErrJointTooLarge, bound, c.N, all+1, maxStates)
	}
	type key struct {
		s     int32
		flags uint32
	}
	index := map[uint32][]int32{} // flags -> state of c -> number, -1 if none yet
	lookup := func(k key) (int32, bool) {
		ix, ok := index[k.flags]
		if !ok {
			return -1, false
		}
		j := ix[k.s]
		return j, j >= 0
	}
	var states []key
	add := func(k key) (int32, error) {
		if len(states) >= maxStates {
			return 0, fmt.Errorf("%w: more than %d states (the model's %d states times the sets of finished machines)", ErrJointTooLarge, maxStates, c.N)
		}
		ix, ok := index[k.flags]
		if !ok {
			ix = make([]int32, c.N)
			for i := range ix {
				ix[i] = -1
			}
			index[k.flags] = ix
		}
		j := int32(len(states))
		ix[k.s] = j
		states = append(states, k)
		return j, nil
	}
	// Every state the start distribution covers, with no flag set, first.
	var fcAlpha []float64
	for i, x := range alpha {
		if x > 0 {
			if _, err := add(key{int32(i), 0}); err != nil {
				return nil, nil, nil, err
			}
			fcAlpha = append(fcAlpha, x)
		}
	}
	fc := &ctmc.Chain{S: c.S, RowPtr: []int64{0}, RateTable: c.RateTable}
	for i := 0; i < len(states); i++ {
		if i&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, nil, err
			}
		}
		st := states[i]
		for e := c.RowPtr[st.s]; e < c.RowPtr[st.s+1]; e++ {
			nk := key{c.Col[e], st.flags | setBits[c.Act[e]]}
			j, ok := lookup(nk)
			if !ok {
				var err error
				if j, err = add(nk); err != nil {
					return nil, nil, nil, err
				}
			}
			fc.Col = append(fc.Col, j)
			if c.RateIndex != nil {
				fc.RateIndex = append(fc.RateIndex, c.RateIndex[e])
			} else {
				fc.Rates = append(fc.Rates, c.RateAt(e))
			}
			fc.Act = append(fc.Act, c.Act[e])
		}
		fc.RowPtr = append(fc.RowPtr, int64(len(fc.Col)))
	}
	if c.RateIndex == nil {
		fc.RateTable = nil
	}
	fc.N = len(states)
	target := make([]bool, fc.N)
	for i, st := range states {
		target[i] = st.flags == all
	}
	fcAlpha = append(fcAlpha, make([]float64, fc.N-len(fcAlpha))...)
	return fc, target, fcAlpha, nil
}
