package ctmc

// RadixOrder returns each state's rank when the states are sorted by their
// mixed-radix number (the leaves' local states read as the digits of a
// number, the first leaf the lowest digit), or nil when that number space
// is much larger than the state space (or overflows). In that order the
// states a transition of one leaf connects are a fixed distance apart, so
// a solver sweeping the rows in order reads its vector in a few sequential
// streams instead of all over it; the chain's own numbering (breadth-first)
// is not changed. Nil also for a chain built by hand without its packed
// states.
func (c *Chain) RadixOrder() []int32 {
	s := c.S
	if s == nil || s.RadixSize == 0 || s.RadixSize > 4*int64(c.N)+4096 || len(c.States) != c.N*s.Words {
		return nil // no number space, too sparse a one, or a chain built without its states
	}
	moving := make([]*Leaf, 0, len(s.Leaves))
	for _, l := range s.Leaves {
		if l.NumLocal > 1 {
			moving = append(moving, l)
		}
	}
	at := make([]int32, s.RadixSize) // state index + 1 at its radix number
	for i := 0; i < c.N; i++ {
		st := c.State(i)
		r := int64(0)
		for _, l := range moving {
			r += int64(l.Local(st)) * l.stride
		}
		if r < 0 || r >= s.RadixSize || at[r] != 0 {
			return nil // states that are not the structure's: keep the chain's order
		}
		at[r] = int32(i) + 1
	}
	rank := make([]int32, c.N)
	next := int32(0)
	for _, x := range at {
		if x != 0 {
			rank[x-1] = next
			next++
		}
	}
	return rank
}
