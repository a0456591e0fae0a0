package models

import (
	"context"
	"fmt"

	"pepa/ctmc"
)

// maxFlagStates bounds the chain with completion flags.
const maxFlagStates = 1 << 25

// flagChain builds the product of c with one "has finished" flag per
// machine: a transition labelled by a machine's cycle-closing action sets
// its flag. It returns the chain (reachable part, from the states alpha
// covers with no flag set, in breadth-first order), its states with every
// flag set, and alpha carried over to it:
// the first passage into them is max_j F_j under initial semantics, however
// the machines interact.
func flagChain(ctx context.Context, c *ctmc.Chain, machines []*Machine, alpha []float64) (*ctmc.Chain, []bool, []float64, error) {
	if len(machines) > 30 {
		return nil, nil, nil, fmt.Errorf("%d coupled machines: the chain with completion flags would be too large", len(machines))
	}
	setBits := make([]uint32, len(c.S.Actions))
	for j, m := range machines {
		for _, a := range m.Last {
			setBits[a] |= 1 << uint(j)
		}
	}
	all := uint32(1)<<uint(len(machines)) - 1
	type key struct {
		s     int32
		flags uint32
	}
	// Every state the start distribution covers, with no flag set, first.
	index := map[key]int32{}
	var states []key
	var fcAlpha []float64
	for i, x := range alpha {
		if x > 0 {
			index[key{int32(i), 0}] = int32(len(states))
			states = append(states, key{int32(i), 0})
			fcAlpha = append(fcAlpha, x)
		}
	}
	fc := &ctmc.Chain{S: c.S, RowPtr: []int64{0}}
	for i := 0; i < len(states); i++ {
		if i&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, nil, err
			}
		}
		st := states[i]
		for e := c.RowPtr[st.s]; e < c.RowPtr[st.s+1]; e++ {
			nk := key{c.Col[e], st.flags | setBits[c.Act[e]]}
			j, ok := index[nk]
			if !ok {
				if len(states) >= maxFlagStates {
					return nil, nil, nil, fmt.Errorf("the chain with completion flags has more than %d states", maxFlagStates)
				}
				j = int32(len(states))
				index[nk] = j
				states = append(states, nk)
			}
			fc.Col = append(fc.Col, j)
			fc.Rates = append(fc.Rates, c.RateAt(e))
			fc.Act = append(fc.Act, c.Act[e])
		}
		fc.RowPtr = append(fc.RowPtr, int64(len(fc.Col)))
	}
	fc.N = len(states)
	target := make([]bool, fc.N)
	for i, st := range states {
		target[i] = st.flags == all
	}
	fcAlpha = append(fcAlpha, make([]float64, fc.N-len(fcAlpha))...)
	return fc, target, fcAlpha, nil
}
