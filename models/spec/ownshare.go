package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"pepa/ctmc"
	"pepa/ctmc/steady"
	"pepa/models"
)

// Owners and shared resources together (semantics.md section 4, "Owners
// and shared resources together").
//
// A machine's own owner that uses no resource is written into the machine
// (machineMoves: its states are (position, owner jobs)), staging steps
// included: it affects no other machine, so the stop of a finished machine,
// which stops its owner too, changes no figure. An owner whose jobs use a
// resource, and a pool of users spanning desktops, do affect other
// machines, and keep doing so after their machine has finished: they are
// components of their own (external owners), which the stop rule leaves
// running. Such a component lets its machine's work through passively (a
// self-loop on each work action, and on the machine's transfers for
// "pause") only while no owner job is at the processor: the preemptive
// discipline, the only one a separate component can express in PEPA.

// Pool is a population of users who each sit at one of several machines
// (the desktops of a lab): a user away arrives at rate Arrival and takes a
// free desktop chosen uniformly, stays an exponential time of rate
// Service, and preempts that desktop's applications while there.
type Pool struct {
	Machines   []string `json:"machines"`
	Users      int      `json:"users"`
	Arrival    float64  `json:"arrival"`
	Service    float64  `json:"service"`
	Discipline string   `json:"discipline,omitempty"`
	Start      string   `json:"start,omitempty"`
	Transfers  string   `json:"transfers,omitempty"`

	name   string
	Member []bool // per machine index
}

// Name is the pool's name (its key in the specification).
func (p *Pool) Name() string { return p.name }

// maxPoolUsers bounds a pool's population (its component has a state per
// user present, at most one per desktop).
const maxPoolUsers = 1000

// pauses reports whether transfers wait for the owner ("pause").
func pauses(transfers string) bool { return transfers == "pause" }

// external reports whether machine j's owner is a component of its own:
// an owner whose jobs use a resource, or a pool.
func (in *Instance) External(j int) bool {
	if in.PoolOf != nil && in.PoolOf[j] >= 0 {
		return true
	}
	return in.Owners[j] != nil && len(in.Owners[j].Uses) > 0
}

// embeddedOwner is machine j's owner when it is written into the machine
// (machineMoves), else nil.
func (in *Instance) EmbeddedOwner(j int) *Owner {
	if in.External(j) {
		return nil
	}
	return in.Owners[j]
}

// transfersPause reports whether machine j's transfers wait while an
// owner job (its own owner's or a pool user's) is at its processor.
func (in *Instance) transfersPause(j int) bool {
	if in.PoolOf != nil && in.PoolOf[j] >= 0 {
		return pauses(in.Pools[in.PoolOf[j]].Transfers)
	}
	return in.Owners[j] != nil && pauses(in.Owners[j].Transfers)
}

// ownerUses reports whether machine j's owner stages its jobs' input
// through resource k.
func (in *Instance) OwnerUses(j, k int) bool {
	o := in.Owners[j]
	if o == nil {
		return false
	}
	for _, u := range o.usesIdx {
		if u == k {
			return true
		}
	}
	return false
}

// ownerData is the input one job of machine j's owner moves through
// resource k (0: none).
func (in *Instance) ownerData(j, k int) float64 {
	o := in.Owners[j]
	if o == nil {
		return 0
	}
	for i, u := range o.usesIdx {
		if u == k {
			return o.data[i]
		}
	}
	return 0
}

// resolveOwnerUses checks the owners' "uses" and "data" (after the
// resources are resolved) and the "transfers" of owners whose machines
// stage nothing.
func (r *resolver) resolveOwnerUses(in *Instance) {
	byName := map[string]int{}
	for k, res := range in.Resources {
		byName[res.name] = k
	}
	for j, o := range in.Owners {
		if o == nil {
			continue
		}
		mach := in.Machines[j]
		path := "owners." + mach
		if len(o.Uses) == 0 {
			if len(bytes.TrimSpace(o.Data)) > 0 {
				r.errorf(path+".data", "owner of %s: data is given but uses names no resource: expected \"uses\": [\"Net\"] with the resources its jobs stage input through", mach)
			}
			continue
		}
		if o.Discipline == "sharing" {
			r.errorf(path+".uses", "owner of %s: an owner whose jobs use a resource must be preemptive (not supported with sharing: it is a component of its own, which cannot slow its machine's work in PEPA)", mach)
		}
		seen := map[string]bool{}
		for i, name := range o.Uses {
			upath := fmt.Sprintf("%s.uses[%d]", path, i)
			k, ok := byName[name]
			switch {
			case seen[name]:
				r.errorf(upath, "owner of %s: resource %s is listed twice", mach, name)
			case !ok && in.Resources == nil && r.s.Resources == nil:
				r.errorf(upath, "owner of %s: no resource %q: the specification declares no resources", mach, name)
			case !ok:
				if r.s.Resources[name] == nil {
					var names []string
					for _, res := range in.Resources {
						names = append(names, res.name)
					}
					r.errorf(upath, "owner of %s: no resource %q (the resources are %s)", mach, name, strings.Join(names, ", "))
				}
			default:
				o.usesIdx = append(o.usesIdx, k)
			}
			seen[name] = true
		}
		sort.Ints(o.usesIdx)
		o.data = r.ownerData(path+".data", mach, o, in)
	}
}

// ownerData resolves an owner's "data": one number for every resource it
// uses, or an object of resource names to numbers, each positive.
func (r *resolver) ownerData(path, mach string, o *Owner, in *Instance) []float64 {
	raw := bytes.TrimSpace(o.Data)
	out := make([]float64, len(o.usesIdx))
	check := func(p, res string, x float64) bool {
		if !(x > 0) || math.IsInf(x, 0) {
			r.errorf(p, "owner of %s: the data of a job's input on %s must be a positive number, found %g", mach, res, x)
			return false
		}
		return true
	}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		r.errorf(path, "owner of %s: missing data: expected the data each owner job stages through the resources it uses (one number, or an object of resource names to numbers)", mach)
	case raw[0] == '{':
		var vals map[string]*float64
		if err := json.Unmarshal(raw, &vals); err != nil {
			r.errorf(path, "owner of %s: data must be a number or an object of resource names to numbers", mach)
			return out
		}
		for i, k := range o.usesIdx {
			name := in.Resources[k].name
			v, ok := vals[name]
			if !ok || v == nil {
				r.errorf(path, "owner of %s: data gives no number for resource %s, which it uses", mach, name)
				continue
			}
			if check(path+"."+name, name, *v) {
				out[i] = *v
			}
		}
		keys := make([]string, 0, len(vals))
		for name := range vals {
			keys = append(keys, name)
		}
		sort.Strings(keys)
		for _, name := range keys {
			if !slicesContains(o.Uses, name) {
				r.errorf(path+"."+name, "owner of %s: data for %s, which uses does not name", mach, name)
			}
		}
	default:
		x, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			r.errorf(path, "owner of %s: data must be a number or an object of resource names to numbers", mach)
			return out
		}
		if check(path, strings.Join(o.Uses, ", "), x) {
			for i := range out {
				out[i] = x
			}
		}
	}
	for i, k := range o.usesIdx {
		res := in.Resources[k]
		if x := res.Rate / out[i]; out[i] > 0 && (x == 0 || math.IsInf(x, 0)) {
			r.errorf(path, "owner of %s: the transfer rate on %s (rate / data = %g / %g) is out of the range of float64", mach, res.name, res.Rate, out[i])
		}
	}
	return out
}

func slicesContains(list []string, x string) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// resolvePools checks the specification's "pools" and fills in.Pools
// (by name) and in.poolOf.
func (r *resolver) resolvePools(in *Instance) {
	in.PoolOf = make([]int, len(in.Machines))
	for j := range in.PoolOf {
		in.PoolOf[j] = -1
	}
	spec := r.s.Pools
	names := sectionNames(r, "pools", spec, "pools is empty: declare at least one pool of users, or leave pools out")
	if names == nil {
		return
	}
	taken := r.takenNames(in)
	machIndex := machineIndex(in)
	for _, name := range names {
		p := spec[name]
		path := "pools." + name
		if p == nil {
			r.errorf(path, "pool %s: expected an object with machines, users, arrival and service", name)
			continue
		}
		p.name = name
		r.componentName(path, "pool", name, taken)
		if p.Users < 1 || p.Users > maxPoolUsers {
			r.errorf(path+".users", "pool %s: users (the number of people who may come) must be from 1 to %d, found %d", name, maxPoolUsers, p.Users)
		}
		if !(p.Arrival > 0) || math.IsInf(p.Arrival, 0) {
			r.errorf(path+".arrival", "pool %s: the arrival rate (of each user who is away) must be positive, found %g", name, p.Arrival)
		}
		if !(p.Service > 0) || math.IsInf(p.Service, 0) {
			r.errorf(path+".service", "pool %s: the service rate (1 / a user's mean stay) must be positive, found %g", name, p.Service)
		}
		switch p.Discipline {
		case "", "preemptive":
		case "sharing":
			r.errorf(path+".discipline", "pool %s: discipline sharing is not supported for a pool (its users are a component of their own, which cannot slow a desktop's work in PEPA): expected preemptive", name)
		default:
			r.errorf(path+".discipline", "pool %s: discipline must be preemptive, found %q", name, p.Discipline)
		}
		switch p.Start {
		case "", "idle":
		case "stationary":
			r.errorf(path+".start", "pool %s: start stationary is not supported for a pool: the desktops' steady occupancies are not independent, so no per-component start expresses them; expected idle (every user away)", name)
		default:
			r.errorf(path+".start", "pool %s: start must be idle, found %q", name, p.Start)
		}
		if p.Transfers != "" && p.Transfers != "continue" && p.Transfers != "pause" {
			r.errorf(path+".transfers", "pool %s: transfers must be continue or pause, found %q", name, p.Transfers)
		}
		p.Member = make([]bool, len(in.Machines))
		if len(p.Machines) == 0 {
			r.errorf(path+".machines", "pool %s: expected a list of the desktops its users sit at", name)
		}
		k := len(in.Pools)
		for i, m := range p.Machines {
			mpath := fmt.Sprintf("%s.machines[%d]", path, i)
			j, ok := machIndex[m]
			switch {
			case !ok:
				if in.Machines != nil {
					r.errorf(mpath, "pool %s: no machine %q (the machines are %s)", name, m, strings.Join(models.Limit(in.Machines, 12), ", "))
				}
				continue
			case p.Member[j]:
				r.errorf(mpath, "pool %s: machine %s is listed twice", name, m)
				continue
			case in.PoolOf[j] >= 0:
				r.errorf(mpath, "pool %s: machine %s is already a desktop of pool %s (a machine is in at most one pool)", name, m, in.Pools[in.PoolOf[j]].name)
				continue
			case in.Owners[j] != nil:
				r.errorf(mpath, "pool %s: machine %s has an owner of its own (owners.%s): a machine has one owner, its own or a pool", name, m, m)
				continue
			case j < len(in.Avail) && j < len(in.AvailP) && (in.Avail[j] != 1 || in.AvailP[j] != 1):
				r.errorf(mpath, "pool %s: machine %s is a desktop of a pool, so its static availability must be 1 (it is %g, perturbed %g)", name, m, in.Avail[j], in.AvailP[j])
			}
			p.Member[j] = true
			in.PoolOf[j] = k
		}
		in.Pools = append(in.Pools, p)
	}
	r.ownShareNameClashes(in)
}

// ownShareNameClashes rejects names that would collide with the
// components gen writes for external owners and pools: M_owner... for a
// machine whose owner uses a resource, and P_<n>, P_<M>, P_<M>_o1 for a
// pool P and its desktops M.
func (r *resolver) ownShareNameClashes(in *Instance) {
	all := specNames(in)
	for _, x := range all {
		for j, m := range in.Machines {
			if in.Owners[j] != nil && len(in.Owners[j].Uses) > 0 && (x.name == m+"_owner" || strings.HasPrefix(x.name, m+"_owner_")) {
				r.nameClash(x, "name %q is reserved for a state of machine %s's owner (gen names them %s_owner, %s_owner_o1, ...): expected another name", x.name, m, m, m)
			}
		}
		for _, p := range in.Pools {
			rest, ok := strings.CutPrefix(x.name, p.name+"_")
			if !ok {
				continue
			}
			seat := strings.TrimSuffix(rest, "_o1")
			if isDigits(rest) || slicesContains(p.Machines, seat) {
				r.nameClash(x, "name %q is reserved for a state of pool %s (gen names them %s_1, %s_2, ... and a seat per desktop, %s_M and %s_M_o1): expected another name", x.name, p.name, p.name, p.name, p.name, p.name)
			}
		}
	}
}

// ownerState is a state of an external owner of one machine: n jobs at
// the processor, and the staging of one more (stage 0: none; 2k+1: its
// request on the k-th resource it uses; 2k+2: its transfer there).
type ownerState struct{ n, stage int }

// ownerName names an owner component's state: M_owner, M_owner_o2,
// M_owner_q1 (requesting on its first resource), M_owner_o1_x2.
func ownerName(mach string, s ownerState) string {
	name := mach + "_owner"
	if s.n > 0 {
		name += fmt.Sprintf("_o%d", s.n)
	}
	if s.stage > 0 {
		name += fmt.Sprintf("_%s%d", "xq"[s.stage%2:s.stage%2+1], (s.stage+1)/2)
	}
	return name
}

// ownerMove is one activity of an external owner.
type ownerMove struct {
	kind moveKind // moveArrive, moveRequest, moveTransfer or moveLeave
	res  int      // for a request or transfer: the resource (index)
	to   ownerState
}

// ownerMoves enumerates the states of machine j's external owner (its
// jobs using resources), jobs at the processor outer, with their
// activities: an arrival starts a job's staging (only with none staging
// and fewer than capacity jobs present, the staging one included), the
// job requests a slot on each resource it uses in turn and holds it for
// its transfer, then joins the jobs at the processor, served one at a
// time.
func (in *Instance) ownerMoves(j int, visit func(from ownerState, moves []ownerMove)) {
	o := in.Owners[j]
	stages := 2 * len(o.usesIdx)
	var moves []ownerMove
	for n := 0; n <= o.Capacity; n++ {
		for st := 0; st <= stages; st++ {
			if st > 0 && n >= o.Capacity {
				continue // a staging job counts towards the capacity
			}
			moves = moves[:0]
			switch {
			case st == 0 && n < o.Capacity:
				moves = append(moves, ownerMove{kind: MoveArrive, to: ownerState{n, 1}})
			case st%2 == 1:
				moves = append(moves, ownerMove{kind: MoveRequest, res: o.usesIdx[st/2], to: ownerState{n, st + 1}})
			case st > 0:
				to := ownerState{n, st + 1}
				if st == stages {
					to = ownerState{n + 1, 0}
				}
				moves = append(moves, ownerMove{kind: MoveTransfer, res: o.usesIdx[st/2-1], to: to})
			}
			if n > 0 {
				moves = append(moves, ownerMove{kind: MoveLeave, to: ownerState{n - 1, st}})
			}
			visit(ownerState{n, st}, moves)
		}
	}
}

// ownerStationary is the "stationary" start of machine j's external owner:
// the steady state of its own chain (ownerMoves with every request served
// at once when asked: every slot free) conditioned on no job staging, by
// owner state with stage 0 (index n).
func (in *Instance) ownerStationary(j int) ([]float64, error) {
	o := in.Owners[j]
	index := map[ownerState]int32{}
	var states []ownerState
	in.ownerMoves(j, func(from ownerState, _ []ownerMove) {
		index[from] = int32(len(states))
		states = append(states, from)
	})
	c := &ctmc.Chain{S: &ctmc.Structure{Actions: []string{"tau", "move"}}, N: len(states), RowPtr: []int64{0}}
	in.ownerMoves(j, func(from ownerState, moves []ownerMove) {
		for _, mv := range moves {
			c.Col = append(c.Col, index[mv.to])
			c.Rates = append(c.Rates, in.ownerRate(j, mv))
			c.Act = append(c.Act, 1)
		}
		c.RowPtr = append(c.RowPtr, int64(len(c.Col)))
	})
	res, err := steady.Solve(context.Background(), c, steady.Options{Method: steady.MethodDirect})
	if err != nil {
		return nil, fmt.Errorf("owner of %s: its stationary start: %w", in.Machines[j], err)
	}
	out := make([]float64, o.Capacity+1)
	sum := 0.0
	for i, s := range states {
		if s.stage == 0 {
			out[s.n] = res.Pi[i]
			sum += res.Pi[i]
		}
	}
	for n := range out {
		out[n] /= sum
	}
	return out, nil
}

// ownerRate is the rate of an external owner's move.
func (in *Instance) ownerRate(j int, mv ownerMove) float64 {
	o := in.Owners[j]
	switch mv.kind {
	case MoveArrive:
		return o.Arrival
	case MoveRequest:
		return 1 / in.Resources[mv.res].Latency
	case MoveTransfer:
		return in.Resources[mv.res].Rate / in.ownerData(j, mv.res)
	}
	return o.Service
}

// workActions are the actions of machine j (computing apps) that its
// external owner lets through only while no owner job is at the
// processor: its work (compute<i>, and phase_M with Erlang phases), and
// with "pause" its requests and transfers.
func (in *Instance) workActions(j int, apps []int) []string {
	var out []string
	if in.Phases > 1 && len(apps) > 0 {
		out = append(out, "phase_"+in.Machines[j])
	}
	for _, a := range apps {
		out = append(out, fmt.Sprintf("compute%d", a+1))
	}
	if in.transfersPause(j) {
		for _, a := range apps {
			for _, k := range in.transfersOf(j, a) {
				R := in.Resources[k].name
				out = append(out, fmt.Sprintf("req%d_%s", a+1, R), fmt.Sprintf("xfer%d_%s", a+1, R))
			}
		}
	}
	return out
}

// writeExternalOwner writes machine j's external owner (its jobs use
// resources): its rates, a //pepa:initial comment for a stationary start,
// and its component. While no owner job is at the processor it lets the
// machine's work actions through (passive self-loops). An owner whose
// machine computes nothing has no such loop, so it starts in a state of
// its own that nothing re-enters: a component that returns to its first
// state performing an action others take passively (its requests) would
// be detected as a machine.
func (in *Instance) writeExternalOwner(b *strings.Builder, j int, apps []int) error {
	mach, o := in.Machines[j], in.Owners[j]
	fmt.Fprintf(b, "lo_%s = %s;\nmo_%s = %s;\n", mach, num(o.Arrival), mach, num(o.Service))
	for i, k := range o.usesIdx {
		R := in.Resources[k].name
		fmt.Fprintf(b, "xo_%s_%s = %s;\n", mach, R, num(in.Resources[k].Rate/o.data[i]))
	}
	work := in.workActions(j, apps)
	start := ""
	if len(work) == 0 {
		start = in.ownerComponent(j, apps)
	}
	if o.Start == "stationary" {
		pi, err := in.ownerStationary(j)
		if err != nil {
			return err
		}
		var parts []string
		for n, p := range pi {
			name := ownerName(mach, ownerState{n: n})
			if n == 0 && start != "" {
				name = start
			}
			parts = append(parts, fmt.Sprintf("%s=%s", name, num(p)))
		}
		fmt.Fprintf(b, "//pepa:initial %s %s\n", in.ownerComponent(j, apps), strings.Join(parts, " "))
	}
	in.ownerMoves(j, func(from ownerState, moves []ownerMove) {
		alts := make([]string, 0, len(moves)+len(work))
		for _, mv := range moves {
			var act, rate string
			switch mv.kind {
			case MoveArrive:
				act, rate = "arrive_"+mach, "lo_"+mach
			case MoveRequest:
				R := in.Resources[mv.res].name
				act, rate = fmt.Sprintf("oreq_%s_%s", mach, R), "q_"+R
			case MoveTransfer:
				R := in.Resources[mv.res].name
				act, rate = fmt.Sprintf("oxfer_%s_%s", mach, R), fmt.Sprintf("xo_%s_%s", mach, R)
			case MoveLeave:
				act, rate = "leave_"+mach, "mo_"+mach
			}
			alts = append(alts, fmt.Sprintf("(%s, %s).%s", act, rate, ownerName(mach, mv.to)))
		}
		if from.n == 0 {
			for _, a := range work {
				alts = append(alts, fmt.Sprintf("(%s, infty).%s", a, ownerName(mach, from)))
			}
		}
		if from == (ownerState{}) && start != "" {
			writeDefinition(b, start, alts)
		}
		writeDefinition(b, ownerName(mach, from), alts)
	})
	return nil
}

// ownerComponent is the name of machine j's external owner in the system
// equation: its first state, M_owner, or M_owner_start when the machine
// computes nothing (writeExternalOwner).
func (in *Instance) ownerComponent(j int, apps []int) string {
	if len(in.workActions(j, apps)) == 0 {
		return in.Machines[j] + "_owner_start"
	}
	return in.Machines[j] + "_owner"
}

// poolDesks lists the desktops (indices) of pool p among machines.
func (in *Instance) poolDesks(p int, machines []int) []int {
	var out []int
	for _, j := range machines {
		if in.PoolOf[j] == p {
			out = append(out, j)
		}
	}
	return out
}

// writePool writes pool p with its desktops among machines: its rates,
// the component counting the users present (P, P_1, ...: sit_P at (N - u)
// l_P, leave_P passively) and a seat per desktop (P_M free: sit_P
// passively, so the pool's rate is split equally among the free seats,
// and the desktop's work let through; P_M_o1 taken: leave_P at mo_P).
func (in *Instance) writePool(b *strings.Builder, p int, onMachine [][]int, machines []int) {
	pool := in.Pools[p]
	P := pool.name
	desks := in.poolDesks(p, machines)
	fmt.Fprintf(b, "// %s: %s, each away arriving at rate l_%s, staying 1 / mo_%s on average.\n", P, models.Plural(pool.Users, "user", "users"), P, P)
	fmt.Fprintf(b, "l_%s = %s;\nmo_%s = %s;\n", P, num(pool.Arrival), P, num(pool.Service))
	most := min(pool.Users, len(desks))
	state := func(u int) string {
		if u == 0 {
			return P
		}
		return fmt.Sprintf("%s_%d", P, u)
	}
	for u := 0; u <= most; u++ {
		var alts []string
		if u < most {
			rate := "l_" + P
			if pool.Users-u != 1 {
				rate = fmt.Sprintf("%d * l_%s", pool.Users-u, P)
			}
			alts = append(alts, fmt.Sprintf("(sit_%s, %s).%s", P, rate, state(u+1)))
		}
		if u > 0 {
			alts = append(alts, fmt.Sprintf("(leave_%s, infty).%s", P, state(u-1)))
		}
		writeDefinition(b, state(u), alts)
	}
	for _, j := range desks {
		seat := P + "_" + in.Machines[j]
		alts := []string{fmt.Sprintf("(sit_%s, infty).%s_o1", P, seat)}
		for _, a := range in.workActions(j, onMachine[j]) {
			alts = append(alts, fmt.Sprintf("(%s, infty).%s", a, seat))
		}
		writeDefinition(b, seat, alts)
		writeDefinition(b, seat+"_o1", []string{fmt.Sprintf("(leave_%s, mo_%s).%s", P, P, seat)})
	}
}

// ownersTerm is the system equation's part with the external owners and
// pools of the listed machines, and the actions it shares with the
// machines ("" when there is none).
func (in *Instance) ownersTerm(onMachine [][]int, machines []int) (term string, shared []string) {
	var parts []string
	for _, j := range machines {
		if in.Owners[j] != nil && in.External(j) {
			parts = append(parts, in.ownerComponent(j, onMachine[j]))
			shared = append(shared, in.workActions(j, onMachine[j])...)
		}
	}
	for p, pool := range in.Pools {
		desks := in.poolDesks(p, machines)
		if len(desks) == 0 {
			continue
		}
		seats := make([]string, len(desks))
		for i, j := range desks {
			seats[i] = pool.name + "_" + in.Machines[j]
			shared = append(shared, in.workActions(j, onMachine[j])...)
		}
		seatTerm := seats[0]
		if len(seats) > 1 {
			seatTerm = "(" + strings.Join(seats, " <> ") + ")"
		}
		parts = append(parts, fmt.Sprintf("(%s <sit_%s, leave_%s> %s)", seatTerm, pool.name, pool.name, pool.name))
	}
	switch len(parts) {
	case 0:
		return "", nil
	case 1:
		return parts[0], shared
	}
	return "(" + strings.Join(parts, " <> ") + ")", shared
}
