package models

import (
	"math"
	"sort"
)

// Ranked is a mapping's place in a ranking.
type Ranked struct {
	*Result
	Rank  int // 1 is the best
	Group int // equal-makespan group, 1 = the fastest group
	// Best is the rank of the most robust mapping of the same group, and
	// GainOverGroup how much more robust this one is than the least robust
	// of its group (0 for a group of one).
	BestInGroup   bool
	GainOverGroup float64
	// MissRatio is the least robust group member's probability of missing
	// the goal divided by this one's: "2.43 times less likely to miss".
	MissRatio float64
}

// Rank orders mappings by robustness (higher first), then by expected
// makespan (lower first), then by name. Mappings whose expected makespans
// are within a relative tie of the fastest of their group form one
// equal-makespan group (groups are formed from the fastest mapping up).
func Rank(results []*Result, tie float64) []*Ranked {
	out := make([]*Ranked, len(results))
	for i, r := range results {
		out[i] = &Ranked{Result: r}
	}
	// Groups by makespan.
	byMakespan := append([]*Ranked(nil), out...)
	sort.SliceStable(byMakespan, func(i, j int) bool {
		a, b := byMakespan[i], byMakespan[j]
		if a.ExpectedMakespan != b.ExpectedMakespan {
			return a.ExpectedMakespan < b.ExpectedMakespan
		}
		return a.Model < b.Model
	})
	group, start := 0, math.NaN()
	for _, r := range byMakespan {
		if group == 0 || !(r.ExpectedMakespan <= start*(1+tie)) {
			group++
			start = r.ExpectedMakespan
		}
		r.Group = group
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Robustness != b.Robustness {
			return a.Robustness > b.Robustness
		}
		if a.ExpectedMakespan != b.ExpectedMakespan {
			return a.ExpectedMakespan < b.ExpectedMakespan
		}
		return a.Model < b.Model
	})
	for i, r := range out {
		r.Rank = i + 1
	}
	// Within each group: the best, and gains over the group's worst.
	worst := map[int]*Ranked{}
	best := map[int]*Ranked{}
	size := map[int]int{}
	for _, r := range out {
		size[r.Group]++
		if best[r.Group] == nil {
			best[r.Group] = r
		}
		worst[r.Group] = r
	}
	for _, r := range out {
		r.BestInGroup = best[r.Group] == r
		if size[r.Group] > 1 {
			w := worst[r.Group]
			r.GainOverGroup = r.Robustness - w.Robustness
			if miss := 1 - r.Robustness; miss > 0 {
				r.MissRatio = (1 - w.Robustness) / miss
			}
		}
	}
	return out
}

// RankByJoint orders mappings by the probability of meeting both the
// makespan goal and the energy budget (higher first), then by expected
// energy (lower first), then by name; the equal-makespan groups are Rank's.
// Mappings without energy figures come last.
func RankByJoint(results []*Result, tie float64) []*Ranked {
	out := Rank(results, tie)
	joint := func(r *Ranked) float64 {
		if r.Energy == nil || math.IsNaN(r.Energy.PAllWithinBudget) {
			return -1
		}
		return r.Energy.PAllWithinBudget
	}
	energyOf := func(r *Ranked) float64 {
		if r.Energy == nil || math.IsNaN(r.Energy.Expected) {
			return math.Inf(1)
		}
		return r.Energy.Expected
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ja, jb := joint(a), joint(b); ja != jb {
			return ja > jb
		}
		if ea, eb := energyOf(a), energyOf(b); ea != eb {
			return ea < eb
		}
		return a.Model < b.Model
	})
	for i, r := range out {
		r.Rank = i + 1
		// The gains over a group are robustness's: not shown in this order.
		r.BestInGroup, r.GainOverGroup, r.MissRatio = false, 0, 0
	}
	return out
}
