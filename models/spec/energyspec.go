package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"pepa/models/energy"
)

// PowerSpec is a specification's "power" (semantics.md section 5): each
// machine's busy and idle power in watts, a list in machine order, an
// object by machine name, or one number for every machine. Idle left out
// is 0 (machines switched off when done).
type PowerSpec struct {
	Busy json.RawMessage `json:"busy"`
	Idle json.RawMessage `json:"idle,omitempty"`
}

// resolvePower sets in.Power from the specification's "power" (nil when
// it has none).
func (r *resolver) resolvePower(in *Instance) {
	ps := r.s.Power
	if ps == nil {
		return
	}
	if len(bytes.TrimSpace(ps.Busy)) == 0 {
		r.errorf("power.busy", "power: missing busy: expected each machine's power while it computes (watts): a list in machine order, an object by machine name, or one number")
		return
	}
	busy := r.machineValues("power.busy", ps.Busy, in.Machines, "busy power")
	idle := make([]float64, len(in.Machines))
	if len(bytes.TrimSpace(ps.Idle)) > 0 {
		idle = r.machineValues("power.idle", ps.Idle, in.Machines, "idle power")
	}
	in.Power = &energy.Power{Busy: busy, Idle: idle}
}

// machineValues resolves one number per machine: a list in machine order,
// an object by machine name (every machine given), or one number for all;
// each finite and >= 0.
func (r *resolver) machineValues(path string, raw json.RawMessage, machines []string, what string) []float64 {
	raw = bytes.TrimSpace(raw)
	out := make([]float64, len(machines))
	check := func(p, mach string, x float64) {
		if !(x >= 0) || math.IsInf(x, 0) {
			r.errorf(p, "the %s of %s must be a finite number of watts >= 0, found %g", what, mach, x)
		}
	}
	const forms = "a list of watts in machine order, an object of machine names to watts, or one number"
	switch {
	case raw[0] == '[' || raw[0] == '{':
		form := perNameForm{subject: what, owner: what, number: "a number of watts", noun: "machine", forms: forms, every: true}
		r.perName(path, raw, machines, form, func(p string, j int, name string, x float64) {
			if name == "" {
				name = fmt.Sprintf("machine %d", j+1)
			}
			check(p, name, x)
			if j >= 0 && j < len(out) {
				out[j] = x
			}
		})
	default:
		x, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			r.errorf(path, "%s must be %s", what, forms)
			return out
		}
		check(path, "every machine", x)
		for j := range out {
			out[j] = x
		}
	}
	return out
}

// powerSpec is the power as WriteSpec writes it: lists in machine order.
func (in *Instance) powerSpec() map[string]any {
	return map[string]any{"busy": in.Power.Busy, "idle": in.Power.Idle}
}

// writePower writes the //pepa:power comments of the machines that compute
// something (their order in the model's machine list), which robustness
// reads (ReadPragmas).
func (in *Instance) writePower(b interface{ WriteString(string) (int, error) }, machines []int, onMachine [][]int) {
	if in.Power == nil {
		return
	}
	for _, j := range machines {
		if len(onMachine[j]) == 0 && in.Power.Idle[j] == 0 {
			continue
		}
		b.WriteString(fmt.Sprintf("//pepa:power %s busy=%s idle=%s\n", in.Machines[j], num(in.Power.Busy[j]), num(in.Power.Idle[j])))
	}
}
