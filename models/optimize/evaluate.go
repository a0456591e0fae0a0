package optimize

import (
	"context"
	"fmt"

	"pepa/ctmc"
	"pepa/models"
	"pepa/models/spec"
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
func machineChain(in *spec.Instance, j int, apps []int) (*ctmc.Chain, []float64) {
	o := in.EmbeddedOwner(j)
	npaths, nstages := in.MachinePaths(j, apps), len(apps)*in.Phases
	capacity := 0
	if o != nil {
		capacity = o.Capacity
	}
	index := func(p spec.MachinePos) int32 { return spec.PosIndex(p, npaths, nstages) }
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: machineActions}, N: (1 + npaths*(nstages-1)) * (capacity + 1), RowPtr: []int64{0}}
	in.MachineMoves(j, apps, func(from spec.MachinePos, moves []spec.MachineMove) {
		for _, mv := range moves {
			rate := moveRate(in, j, from, mv)
			act := int32(actWork)
			if mv.Kind == spec.MoveWork && mv.Closes {
				act = actDone
			}
			c.Col = append(c.Col, index(mv.To))
			c.Rates = append(c.Rates, rate)
			c.Act = append(c.Act, act)
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	})
	alpha := make([]float64, c.N)
	if o != nil && o.Start == "stationary" {
		for n, x := range o.Stationary() {
			alpha[index(spec.MachinePos{Path: -1, N: n})] = x
		}
	} else {
		alpha[0] = 1
	}
	return c, alpha
}

// machineFinish solves one machine's finishing time: P(F <= beta), and
// with complete set, the whole distribution, mean and largest remaining
// mean time (for E[makespan]).
func machineFinish(ctx context.Context, in *spec.Instance, j int, apps []int, beta, eps float64, complete bool) (models.MachineResult, error) {
	mr := models.MachineResult{Name: in.Machines[j], Applications: len(apps), PByBeta: 1}
	if len(apps) == 0 {
		return mr, nil
	}
	c, alpha := machineChain(in, j, apps)
	pr := passage.Problem{Alpha: alpha, TargetActions: []int32{actDone}}
	rs, err := passage.Solve(ctx, c, []passage.Problem{pr}, passage.Options{Epsilon: eps, Horizon: beta, Complete: complete})
	if err != nil {
		return mr, fmt.Errorf("machine %s: %w", in.Machines[j], err)
	}
	if mr.PByBeta, err = rs[0].CDF(beta); err != nil {
		return mr, err
	}
	if complete {
		mr.Dist = rs[0]
		if mr.Mean, mr.MaxRest, err = passage.MeanTimes(ctx, c, pr); err != nil {
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
func moveRate(in *spec.Instance, j int, from spec.MachinePos, mv spec.MachineMove) float64 {
	o := in.EmbeddedOwner(j)
	sharing := o != nil && o.Discipline == "sharing"
	switch mv.Kind {
	case spec.MoveWork:
		r, p := in.Rates(mv.App, j)
		rate := r
		if mv.Path == 1 {
			rate = p
		}
		rate *= float64(in.Phases)
		if sharing {
			rate /= float64(from.N + 1)
		}
		return rate
	case spec.MoveArrive:
		return o.Arrival
	case spec.MoveLeave:
		rate := o.Service
		if sharing && !mv.Alone {
			rate *= float64(from.N) / float64(from.N+1)
		}
		return rate
	case spec.MoveRequest:
		return 1 / in.Resources[mv.Res].Latency
	case spec.MoveTransfer:
		return in.Resources[mv.Res].Rate / in.Resources[mv.Res].AppData[mv.App]
	}
	return 0
}
