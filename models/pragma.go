package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pepa/lang"
)

// Pragmas are the facts a PEPA model cannot state but a generated mapping
// model needs, written by pepa gen as comments (which other tools ignore):
//
//	//pepa:initial COMPONENT STATE=P STATE=P ...
//	    the component starts in a local state drawn from this
//	    distribution rather than in its first one (an owner's steady state)
//	//pepa:owner MACHINE arrival=X service=Y capacity=N discipline=D start=S
//	    the machine's owner process, for its availability and slowdown
//	//pepa:power MACHINE busy=W idle=W
//	    the machine's power in watts while it computes and once it has
//	    finished (semantics.md section 5); a machine named here that the
//	    model does not compute with (none of its applications) finishes
//	    at t = 0 and draws its idle power until the makespan
type Pragmas struct {
	Initial map[string]map[string]float64
	Owners  map[string]*Owner
	// Power is each named machine's busy and idle power, in the order
	// the pragmas name them (PowerOrder).
	Power      map[string][2]float64
	PowerOrder []string
}

// PragmaError is a malformed pragma, at its position in the model's file.
type PragmaError struct {
	File      string
	Line, Col int
	Msg       string
}

// Error is a diagnostic line, FILE:LINE:COL: error: MESSAGE.
func (e *PragmaError) Error() string {
	return fmt.Sprintf("%s:%d:%d: error: %s", e.File, e.Line, e.Col, e.Msg)
}

// ReadPragmas collects the pragmas of a parsed model.
func ReadPragmas(f *lang.File) (*Pragmas, error) {
	p := &Pragmas{Initial: map[string]map[string]float64{}, Owners: map[string]*Owner{}, Power: map[string][2]float64{}}
	for _, c := range f.Comments {
		text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
		if !strings.HasPrefix(text, "pepa:") {
			continue
		}
		fields := strings.Fields(text)
		fail := func(format string, args ...any) error {
			return &PragmaError{File: f.Name, Line: c.Pos.Line, Col: c.Pos.Col, Msg: fmt.Sprintf(format, args...)}
		}
		if len(fields) < 3 {
			return nil, fail("pragma %s needs a component and values", fields[0])
		}
		comp := fields[1]
		kv := map[string]string{}
		var order []string
		for _, f := range fields[2:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return nil, fail("pragma %s: expected NAME=VALUE, found %q", fields[0], f)
			}
			kv[k] = v
			order = append(order, k)
		}
		switch fields[0] {
		case "pepa:initial":
			dist := map[string]float64{}
			sum := 0.0
			for _, k := range order {
				x, err := strconv.ParseFloat(kv[k], 64)
				if err != nil || !(x >= 0) || math.IsInf(x, 0) {
					return nil, fail("pepa:initial %s: probability of %s is %q", comp, k, kv[k])
				}
				dist[k] = x
				sum += x
			}
			if math.Abs(sum-1) > 1e-9 {
				return nil, fail("pepa:initial %s: probabilities sum to %g, not 1", comp, sum)
			}
			p.Initial[comp] = dist
		case "pepa:owner":
			o := &Owner{Discipline: kv["discipline"], Start: kv["start"]}
			var err error
			if o.Arrival, err = strconv.ParseFloat(kv["arrival"], 64); err != nil {
				return nil, fail("pepa:owner %s: arrival=%q", comp, kv["arrival"])
			}
			if o.Service, err = strconv.ParseFloat(kv["service"], 64); err != nil {
				return nil, fail("pepa:owner %s: service=%q", comp, kv["service"])
			}
			if o.Capacity, err = strconv.Atoi(kv["capacity"]); err != nil || o.Capacity < 1 {
				return nil, fail("pepa:owner %s: capacity=%q", comp, kv["capacity"])
			}
			if !(o.Arrival > 0 && o.Service > 0) || (o.Discipline != "preemptive" && o.Discipline != "sharing") {
				return nil, fail("pepa:owner %s: needs positive arrival and service rates and discipline=preemptive or sharing", comp)
			}
			p.Owners[comp] = o
		case "pepa:power":
			var w [2]float64
			for i, k := range []string{"busy", "idle"} {
				v, ok := kv[k]
				if !ok && k == "idle" {
					continue // 0: switched off when done
				}
				x, err := strconv.ParseFloat(v, 64)
				if !ok || err != nil || !(x >= 0) || math.IsInf(x, 0) {
					return nil, fail("pepa:power %s: %s=%q: expected watts, a finite number >= 0", comp, k, v)
				}
				w[i] = x
			}
			for _, k := range order {
				if k != "busy" && k != "idle" {
					return nil, fail("pepa:power %s: unknown field %q (known: busy, idle)", comp, k)
				}
			}
			if _, dup := p.Power[comp]; dup {
				return nil, fail("pepa:power %s: the machine's power is given twice", comp)
			}
			p.Power[comp] = w
			p.PowerOrder = append(p.PowerOrder, comp)
		default:
			return nil, fail("unknown pragma %s (known: pepa:initial, pepa:owner, pepa:power)", fields[0])
		}
	}
	return p, nil
}

func (p *Pragmas) InitialOf(comp string) (map[string]float64, bool) {
	if p == nil {
		return nil, false
	}
	d, ok := p.Initial[comp]
	return d, ok
}
