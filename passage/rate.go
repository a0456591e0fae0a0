package passage

import (
	"math"

	"pepa/ctmc"
)

// DefaultQFactor is the margin of the uniformization rate over the largest
// rate at which a state is left (semantics.md section 2: 1.02x keeps every
// diagonal entry of P at least 0.0196, so the uniformized chain is
// aperiodic and no entry is a difference of nearly equal numbers).
const DefaultQFactor = 1.02

// MaxLeaveRate is the largest total rate at which the chain leaves a state
// once the targets of the problems are made absorbing: for every state
// outside a problem's target states, the sum of the rates of its
// transitions to other states plus those of its self-loops labelled by
// one of the problem's target actions (such a self-loop ends the passage,
// so once redirected to the absorbing target it leaves the state;
// Chain.ExitRate leaves it out). States inside a problem's target set
// absorb its mass and do not count for it. A uniformization rate q of at
// least this makes every diagonal entry 1 - leave/q of P = I + Q/q
// non-negative, which the kernel checks.
func MaxLeaveRate(c *ctmc.Chain, probs []Problem) float64 {
	worst := 0.0
	for len(probs) > 64 { // one bit per problem in the action mask
		worst = math.Max(worst, MaxLeaveRate(c, probs[:64]))
		probs = probs[64:]
	}
	mask := targetMask(probs)
	leave := make([]float64, len(probs))
	for i := 0; i < c.N; i++ {
		clear(leave)
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			j, r := c.Col[e], c.Rate[e]
			if int(j) != i {
				for p := range leave {
					leave[p] += r
				}
				continue
			}
			m := mask.of(c.Act[e])
			for p := range leave {
				if m&(1<<uint(p)) != 0 {
					leave[p] += r
				}
			}
		}
		for p, pr := range probs {
			if pr.TargetStates != nil && pr.TargetStates[i] {
				continue
			}
			worst = math.Max(worst, leave[p])
		}
	}
	return worst
}

// UniformizationRate is the rate q that Solve uses for the problems on
// chain c: DefaultQFactor times MaxLeaveRate, or 1 when nothing moves.
// Passages on different chains that are to share Poisson weights
// (Options.Q) take the largest of their chains' UniformizationRate.
func UniformizationRate(c *ctmc.Chain, probs []Problem) float64 {
	return scaleRate(MaxLeaveRate(c, probs), DefaultQFactor)
}

func scaleRate(leave, factor float64) float64 {
	q := leave * factor
	if q == 0 {
		q = 1
	}
	return q
}

// actionMask maps an action id to the bit set of the problems (at most 64)
// that the action ends: a flat slice indexed by action id, so the hot
// loops do no map lookup.
type actionMask []uint64

func targetMask(probs []Problem) actionMask {
	top := int32(-1)
	for _, pr := range probs {
		for _, a := range pr.TargetActions {
			top = max(top, a)
		}
	}
	m := make(actionMask, top+1)
	for p, pr := range probs {
		for _, a := range pr.TargetActions {
			if a >= 0 {
				m[a] |= 1 << uint(p)
			}
		}
	}
	return m
}

func (m actionMask) of(a int32) uint64 {
	if a >= 0 && int(a) < len(m) {
		return m[a]
	}
	return 0
}
