package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pepa/internal/option"
	"pepa/models/energy"
)

// PowerFlags are --busy-power and --idle-power as given on the command
// line: watts in the order of the machines ("250,180,200"), or by name
// ("M1=250,M3=200"; the others keep the specification's or the model's
// value). Empty: not given.
type PowerFlags struct {
	Busy, Idle string
}

// Given reports whether either flag is set.
func (f PowerFlags) Given() bool { return f.Busy != "" || f.Idle != "" }

// Resolve applies the flags to base (the specification's or the model's
// power, nil for none) for the named machines, in their order. Without
// base, --busy-power must give every machine's busy power; idle powers
// not given are 0.
func (f PowerFlags) Resolve(machines []string, base *energy.Power) (*energy.Power, error) {
	if !f.Given() {
		return base, nil
	}
	p := &energy.Power{Busy: make([]float64, len(machines)), Idle: make([]float64, len(machines))}
	if base != nil {
		copy(p.Busy, base.Busy)
		copy(p.Idle, base.Idle)
	}
	if base == nil && f.Busy == "" {
		return nil, option.Errorf("{IdlePower} needs the machines' busy power too: give {BusyPower} (the model and the specification give none)")
	}
	for _, fl := range []struct {
		name, val string
		into      []float64
	}{{option.Name("BusyPower"), f.Busy, p.Busy}, {option.Name("IdlePower"), f.Idle, p.Idle}} {
		if fl.val == "" {
			continue
		}
		given, err := parsePowerList(fl.name, fl.val, machines)
		if err != nil {
			return nil, err
		}
		if base == nil && fl.name == option.Name("BusyPower") {
			for j, ok := range given.set {
				if !ok {
					return nil, option.Errorf("{BusyPower}: no value for machine %s: give every machine's busy power (%s), in their order or as NAME=WATTS", machines[j], strings.Join(machines, ", "))
				}
			}
		}
		for j, ok := range given.set {
			if ok {
				fl.into[j] = given.vals[j]
			}
		}
	}
	return p, nil
}

type powerList struct {
	vals []float64
	set  []bool
}

// parsePowerList reads "250,180,200" (one per machine, in order) or
// "M1=250,M2=180".
func parsePowerList(flag, s string, machines []string) (powerList, error) {
	out := powerList{vals: make([]float64, len(machines)), set: make([]bool, len(machines))}
	parts := strings.Split(s, ",")
	named := strings.Contains(s, "=")
	if !named && len(parts) != len(machines) {
		return out, fmt.Errorf("%s %q: %d values for %d machines (%s): give one per machine in their order, or NAME=WATTS pairs", flag, s, len(parts), len(machines), strings.Join(machines, ", "))
	}
	index := map[string]int{}
	for j, m := range machines {
		index[m] = j
	}
	for k, part := range parts {
		j, val := k, strings.TrimSpace(part)
		if named {
			name, v, ok := strings.Cut(val, "=")
			if !ok {
				return out, fmt.Errorf("%s %q: %q is not NAME=WATTS (use one form throughout)", flag, s, part)
			}
			var found bool
			if j, found = index[strings.TrimSpace(name)]; !found {
				return out, fmt.Errorf("%s: no machine %q (the machines are %s)", flag, strings.TrimSpace(name), strings.Join(machines, ", "))
			}
			if out.set[j] {
				return out, fmt.Errorf("%s: machine %s is given twice", flag, machines[j])
			}
			val = strings.TrimSpace(v)
		}
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return out, fmt.Errorf("%s: %q is not a number of watts >= 0", flag, val)
		}
		out.vals[j], out.set[j] = x, true
	}
	return out, nil
}
