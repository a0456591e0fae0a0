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
// machine computing apps (application indices, in order) exactly as gen
// writes it (both follow machineMoves): the seed's two racing paths, Erlang
// phases and an owner process. The passage to its first "done" is its
// finishing time; alpha is its start (the owner idle, or stationary).
func (in *Instance) machineChain(j int, apps []int) (*ctmc.Chain, []float64) {
	o := in.embeddedOwner(j)
	npaths, nstages := in.machinePaths(j, apps), len(apps)*in.Phases
	capacity := 0
	if o != nil {
		capacity = o.Capacity
	}
	index := func(p machinePos) int32 { return posIndex(p, npaths, nstages) }
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: machineActions}, N: (1 + npaths*(nstages-1)) * (capacity + 1), RowPtr: []int64{0}}
	in.machineMoves(j, apps, func(from machinePos, moves []machineMove) {
		for _, mv := range moves {
			rate := in.moveRate(j, from, mv)
			act := int32(actWork)
			if mv.kind == moveWork && mv.closes {
				act = actDone
			}
			c.Col = append(c.Col, index(mv.to))
			c.Rates = append(c.Rates, rate)
			c.Act = append(c.Act, act)
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	})
	alpha := make([]float64, c.N)
	if o != nil && o.Start == "stationary" {
		for n, x := range o.Stationary() {
			alpha[index(machinePos{path: -1, n: n})] = x
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

// moveRate is the rate of a machine move out of from: a work phase at its
// path's rate times the number of phases (slowed by processor sharing with
// the owner's jobs), an owner arrival, or an owner departure (slowed by
// sharing). machineChain and machineSolver both build their chains with it,
// so the two cannot drift apart.
func (in *Instance) moveRate(j int, from machinePos, mv machineMove) float64 {
	o := in.embeddedOwner(j)
	sharing := o != nil && o.Discipline == "sharing"
	switch mv.kind {
	case moveWork:
		r, p := in.Rates(mv.app, j)
		rate := r
		if mv.path == 1 {
			rate = p
		}
		rate *= float64(in.Phases)
		if sharing {
			rate /= float64(from.n + 1)
		}
		return rate
	case moveArrive:
		return o.Arrival
	case moveLeave:
		rate := o.Service
		if sharing && !mv.alone {
			rate *= float64(from.n) / float64(from.n+1)
		}
		return rate
	case moveRequest:
		return 1 / in.Resources[mv.res].Latency
	case moveTransfer:
		return in.Resources[mv.res].Rate / in.Resources[mv.res].data[mv.app]
	}
	return 0
}
