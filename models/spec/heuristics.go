package spec

import (
	"math"
)

// Heuristics of Braun et al. (2001) for independent tasks on heterogeneous
// machines, on expected times ETC[i][j] / availability_j.
var Heuristics = []struct {
	Name string
	Run  func(in *Instance, etm [][]float64) [][]int
}{
	{"MET", met},
	{"MCT", mct},
	{"Min-min", func(in *Instance, etm [][]float64) [][]int { return minMinMax(in, etm, false) }},
	{"Max-min", func(in *Instance, etm [][]float64) [][]int { return minMinMax(in, etm, true) }},
	{"Sufferage", sufferage},
}

// expectedTimes is the matrix of times of application i on machine j for
// the heuristics: ETC[i][j] over the machine's availability, plus the mean
// time of staging its input there (shared.go; waiting for a slot aside).
func (in *Instance) ExpectedTimes() [][]float64 {
	avail := make([]float64, len(in.Machines))
	for j := range avail {
		avail[j] = in.Avail[j]
		if in.Owners[j] != nil {
			avail[j] = in.Owners[j].Availability()
		}
	}
	etm := make([][]float64, len(in.Apps))
	for i := range etm {
		etm[i] = make([]float64, len(avail))
		for j, a := range avail {
			etm[i][j] = in.ETC[i][j]/a + in.stagingTime(j, i)
		}
	}
	return etm
}

func AllocationOf(in *Instance, machineOf []int) [][]int {
	alloc := make([][]int, len(in.Machines))
	for a, j := range machineOf {
		alloc[j] = append(alloc[j], a)
	}
	return alloc
}

// met maps each application to the machine where it runs fastest.
func met(in *Instance, etm [][]float64) [][]int {
	m := make([]int, len(in.Apps))
	for a := range in.Apps {
		for j := range in.Machines {
			if etm[a][j] < etm[a][m[a]] {
				m[a] = j
			}
		}
	}
	return AllocationOf(in, m)
}

// mct maps applications in order, each to the machine where it would
// complete first given what that machine already has.
func mct(in *Instance, etm [][]float64) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	for a := range in.Apps {
		for j := range in.Machines {
			if ready[j]+etm[a][j] < ready[m[a]]+etm[a][m[a]] {
				m[a] = j
			}
		}
		ready[m[a]] += etm[a][m[a]]
	}
	return AllocationOf(in, m)
}

// minMinMax is Min-min (max false) or Max-min (max true): repeatedly, each
// unmapped application's earliest completion over the machines; map the
// application whose earliest completion is smallest (Min-min) or largest
// (Max-min) there.
func minMinMax(in *Instance, etm [][]float64, max bool) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	left := make([]bool, len(in.Apps))
	for a := range left {
		left[a] = true
	}
	for remaining := len(left); remaining > 0; remaining-- {
		pick, pickJ, pickT := -1, -1, 0.0
		for a := 0; a < len(in.Apps); a++ {
			if !left[a] {
				continue
			}
			bj, bt := 0, math.Inf(1)
			for j := range in.Machines {
				if t := ready[j] + etm[a][j]; t < bt {
					bj, bt = j, t
				}
			}
			if pick < 0 || (!max && bt < pickT) || (max && bt > pickT) {
				pick, pickJ, pickT = a, bj, bt
			}
		}
		m[pick] = pickJ
		ready[pickJ] = pickT
		left[pick] = false
	}
	return AllocationOf(in, m)
}

// sufferage maps, each round, the application that would suffer most from
// not getting its best machine (second-earliest minus earliest completion).
func sufferage(in *Instance, etm [][]float64) [][]int {
	ready := make([]float64, len(in.Machines))
	m := make([]int, len(in.Apps))
	left := make([]bool, len(in.Apps))
	for a := range left {
		left[a] = true
	}
	for remaining := len(left); remaining > 0; remaining-- {
		pick, pickJ, pickS := -1, -1, -1.0
		for a := 0; a < len(in.Apps); a++ {
			if !left[a] {
				continue
			}
			b1, b2, bj := math.Inf(1), math.Inf(1), 0
			for j := range in.Machines {
				t := ready[j] + etm[a][j]
				if t < b1 {
					b1, b2, bj = t, b1, j
				} else if t < b2 {
					b2 = t
				}
			}
			s := b2 - b1
			if math.IsInf(s, 1) {
				s = math.MaxFloat64 // one machine only
			}
			if s > pickS {
				pick, pickJ, pickS = a, bj, s
			}
		}
		m[pick] = pickJ
		ready[pickJ] += etm[pick][pickJ]
		left[pick] = false
	}
	return AllocationOf(in, m)
}
