package models

import (
	"context"
	"fmt"

	"pepa/ctmc"
	"pepa/passage"
)

// Actions of a machine chain built by machineChain.
const (
	actWork = 1 // a work phase that completes no application, or an owner event
	actDone = 2 // the machine's last application completes: the cycle closes
)

var machineActions = []string{"tau", "work", "done"}

// machineChain builds, without going through PEPA text, the chain of one
// machine computing apps (application indices, in order) as gen writes it:
// the seed's two racing paths, Erlang phases and an owner process, states
// (position, owner jobs). The passage to its first "done" is its finishing
// time; alpha is its start (the owner idle, or stationary).
func (in *Instance) machineChain(j int, apps []int) (*ctmc.Chain, []float64) {
	k := in.Phases
	o := in.Owners[j]
	var stages []int // the application each phase belongs to
	for _, a := range apps {
		for h := 0; h < k; h++ {
			stages = append(stages, a)
		}
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = in.Apps[a]
	}
	paths := []int{0, 1} // ideal, perturbed
	if in.singlePath(names, j) {
		paths = paths[:1]
	}
	capacity := 0
	if o != nil {
		capacity = o.Capacity
	}
	// Positions: 0 is the start; then (path, stages done) for done >= 1.
	perPath := len(stages) - 1
	npos := 1 + len(paths)*perPath
	pos := func(path, done int) int {
		if done == 0 || done == len(stages) {
			return 0
		}
		return 1 + path*perPath + done - 1
	}
	state := func(p, n int) int32 { return int32(n*npos + p) }
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: machineActions}, N: npos * (capacity + 1), RowPtr: []int64{0}}
	add := func(to int32, rate float64, act int32) {
		c.Col = append(c.Col, to)
		c.Rate = append(c.Rate, rate)
		c.Act = append(c.Act, act)
	}
	for n := 0; n <= capacity; n++ {
		for p := 0; p < npos; p++ {
			path, done := 0, 0
			if p > 0 {
				path, done = (p-1)/perPath, (p-1)%perPath+1
			}
			if o == nil || n == 0 || o.Discipline == "sharing" {
				starts := paths
				if p > 0 {
					starts = []int{path}
				}
				for _, pa := range starts {
					r, pr := in.Rates(stages[done], j)
					rate := r
					if pa == 1 {
						rate = pr
					}
					rate *= float64(k)
					if o != nil && o.Discipline == "sharing" {
						rate /= float64(n + 1)
					}
					act := int32(actWork)
					if done+1 == len(stages) {
						act = actDone
					}
					add(state(pos(pa, done+1), n), rate, act)
				}
			}
			if o != nil && n < capacity {
				add(state(p, n+1), o.Arrival, actWork)
			}
			if o != nil && n > 0 {
				mu := o.Service
				if o.Discipline == "sharing" {
					mu *= float64(n) / float64(n+1)
				}
				add(state(p, n-1), mu, actWork)
			}
			c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
		}
	}
	alpha := make([]float64, c.N)
	if o != nil && o.Start == "stationary" {
		for n, x := range o.Stationary() {
			alpha[state(0, n)] = x
		}
	} else {
		alpha[0] = 1
	}
	return c, alpha
}

// machineFinish solves one machine's finishing time: P(F <= beta), and
// with complete set, the whole distribution, mean and largest remaining
// mean time (for E[makespan]).
func (in *Instance) machineFinish(ctx context.Context, j int, apps []int, beta, eps float64, complete bool) (MachineResult, error) {
	mr := MachineResult{Name: in.Machines[j], Applications: len(apps), PByBeta: 1}
	if len(apps) == 0 {
		return mr, nil
	}
	c, alpha := in.machineChain(j, apps)
	pr := passage.Problem{Alpha: alpha, TargetActions: []int32{actDone}}
	rs, err := passage.Solve(ctx, c, []passage.Problem{pr}, passage.Options{Epsilon: eps, Horizon: beta, Complete: complete})
	if err != nil {
		return mr, fmt.Errorf("machine %s: %w", in.Machines[j], err)
	}
	if mr.PByBeta, err = rs[0].CDF(beta); err != nil {
		return mr, err
	}
	if complete {
		mr.dist = rs[0]
		if mr.Mean, mr.maxRest, err = passage.MeanTimes(ctx, c, pr); err != nil {
			return mr, err
		}
	}
	return mr, nil
}
