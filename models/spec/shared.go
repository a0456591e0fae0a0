package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"pepa/models"
)

// Shared resources (semantics.md section 4, "Shared resources"): a network
// or a file server that several machines stage their applications' input
// through. A specification declares them under "resources"; gen writes each
// as a component the machines cooperate with, so the machines that share one
// form a group of coupled machines (semantics.md section 3).
//
// The model of a transfer. An application with data d on resource R, mapped
// to a machine that uses R, needs its input staged before it computes: the
// machine requests one of R's Capacity slots (the request takes Latency on
// average, exponential, and can only complete while a slot is free: a
// machine that finds every slot taken waits), holds the slot while the data
// moves (exponential with mean d / Rate: the slot's own rate, not shared
// with the other transfers), frees it, and computes the application. A
// transfer comes before each application that needs one, not once per
// machine: an application needs its own input when it starts, so the
// resource is held only while that input moves, other machines' transfers
// interleave between a machine's applications, and an application with no
// data takes no transfer. The seed's race of the ideal and perturbed paths
// stays on the first application's compute action; a transfer before it is
// common to both paths (it does not depend on the machine's speed).
//
// In PEPA: R's states count the slots taken (R, R_1, ..., R_c, c the
// capacity or the number of machines that use R in the mapping, if fewer);
// it performs passively req<i>_R (application i's request takes a slot) and
// xfer<i>_R (its transfer ends and frees it); the machine performs
// (req<i>_R, q_R).(xfer<i>_R, x<i>_R) before application i's work, with
// q_R = 1 / Latency and x<i>_R = Rate / d_i. Actions are named per
// application so that a passage can ask for one transfer, and so that the
// action leaving a machine's initial state (its first request) occurs once
// in its cycle, as a machine's first action must for the plug-in semantics.
// A machine whose first application stages input starts with that transfer
// and then reaches M_ready, where the race is.
type Resource struct {
	Rate     float64         `json:"rate"`
	Latency  float64         `json:"latency"`
	Capacity int             `json:"capacity"`
	Machines []string        `json:"machines"`
	Data     json.RawMessage `json:"data"`

	name    string
	Users   []bool    // per machine index: it stages input through this resource
	AppData []float64 // per application index: its input's data here (0: none)
}

// Name is the resource's name (its key in the specification).
func (r *Resource) Name() string { return r.name }

// maxCapacity bounds a resource's slots (its component has one state per
// slot taken).
const maxCapacity = 1000

// resolveResources checks the "resources" of a specification and fills
// in.Resources (sorted by name). It runs after the owners are resolved.
func (r *resolver) resolveResources(in *Instance) {
	spec := r.s.Resources
	names := sectionNames(r, "resources", spec, "resources is empty: declare at least one shared resource, or leave resources out")
	if names == nil {
		return
	}
	taken := r.takenNames(in)
	// Unknown names (the matrix failed) are not checked: every reference
	// would look wrong.
	machsKnown := in.Machines != nil
	machIndex := machineIndex(in)
	for _, name := range names {
		res := spec[name]
		path := "resources." + name
		if res == nil {
			r.errorf(path, "resource %s: expected an object with rate, latency, machines and data", name)
			continue
		}
		res.name = name
		r.componentName(path, "resource", name, taken)
		if !(res.Rate > 0) || math.IsInf(res.Rate, 0) {
			r.errorf(path+".rate", "resource %s: the rate (data moved per second by one transfer) must be positive, found %g", name, res.Rate)
		}
		if !(res.Latency > 0) || math.IsInf(res.Latency, 0) {
			r.errorf(path+".latency", "resource %s: the latency (mean time in seconds of a request for a slot) must be positive, found %g", name, res.Latency)
		}
		if res.Capacity == 0 {
			res.Capacity = 1
		}
		if res.Capacity < 1 || res.Capacity > maxCapacity {
			r.errorf(path+".capacity", "resource %s: capacity (transfers under way at once) must be from 1 to %d, found %d", name, maxCapacity, res.Capacity)
		}
		res.Users = make([]bool, len(in.Machines))
		if len(res.Machines) == 0 {
			example := "M1"
			if len(in.Machines) > 0 {
				example = in.Machines[0]
			}
			r.errorf(path+".machines", "resource %s: expected a list of the machines that stage their input through it, e.g. [%q]", name, example)
		}
		listed := map[string]bool{}
		for k, m := range res.Machines {
			mpath := fmt.Sprintf("%s.machines[%d]", path, k)
			j, ok := machIndex[m]
			switch {
			case listed[m]:
				r.errorf(mpath, "resource %s: machine %s is listed twice", name, m)
				continue
			case !ok:
				if machsKnown {
					r.errorf(mpath, "resource %s: no machine %q (the machines are %s)", name, m, strings.Join(models.Limit(in.Machines, 12), ", "))
				}
				listed[m] = true
				continue
			}
			listed[m] = true
			res.Users[j] = true
		}
		res.AppData = r.resourceData(path+".data", name, res.Data, in.Apps)
		r.checkTransferRates(path, res, in.Apps)
		in.Resources = append(in.Resources, res)
	}
	r.resourceNameClashes(in)
}

// checkTransferRates rejects rates gen could not write as numbers: a
// request rate 1 / latency or a transfer rate rate / data that overflows to
// Inf or underflows to 0 (the fields themselves being in range).
func (r *resolver) checkTransferRates(path string, res *Resource, apps []string) {
	if q := 1 / res.Latency; res.Latency > 0 && math.IsInf(q, 0) {
		r.errorf(path+".latency", "resource %s: latency %g is too small: its request rate 1 / latency overflows", res.name, res.Latency)
	}
	if !(res.Rate > 0) || math.IsInf(res.Rate, 0) {
		return
	}
	for i, d := range res.AppData {
		if x := res.Rate / d; d > 0 && (x == 0 || math.IsInf(x, 0)) {
			r.errorf(path+".data", "resource %s: the transfer rate of %s (rate / data = %g / %g) is out of the range of float64", res.name, apps[i], res.Rate, d)
			return
		}
	}
}

// resourceData resolves a resource's "data": one number for every
// application, a list with one per application, or an object of
// application names to numbers (the others: 0, no transfer). With apps
// unknown (nil: the matrix failed) the numbers are checked, not how many
// there are or which applications they name.
func (r *resolver) resourceData(path, name string, raw json.RawMessage, apps []string) []float64 {
	raw = bytes.TrimSpace(raw)
	out := make([]float64, len(apps))
	const forms = "a number (every application the same), a list of one number per application, or an object of application names to numbers"
	failed := false
	check := func(p string, x float64) {
		if !(x >= 0) || math.IsInf(x, 0) {
			r.errorf(p, "resource %s: an application's data must be a finite number >= 0 (0: no transfer), found %g", name, x)
			failed = true
		}
	}
	positive := false
	switch {
	case len(raw) == 0 || string(raw) == "null":
		r.errorf(path, "resource %s: missing data: expected %s, the data each application's input needs (in the unit of rate)", name, forms)
		return out
	case raw[0] == '[' || raw[0] == '{':
		form := perNameForm{subject: "resource " + name + ": data", owner: "resource " + name, number: "a number (0: no transfer)", noun: "application", forms: forms}
		if r.perName(path, raw, apps, form, func(p string, i int, _ string, x float64) {
			check(p, x)
			positive = positive || x > 0
			if i >= 0 && i < len(out) {
				out[i] = x
			}
		}) {
			failed = true
		}
	default:
		x, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			r.errorf(path, "resource %s: data must be %s", name, forms)
			return out
		}
		check(path, x)
		positive = x > 0
		for i := range out {
			out[i] = x
		}
	}
	// A problem above is the cause; an unused resource would be its
	// consequence.
	if !positive && !failed {
		r.errorf(path, "resource %s: no application has data on it, so it would never be used: give the applications that stage input through it a positive amount", name)
	}
	return out
}

// resourceNameClashes rejects names that would collide with what gen
// writes for resources: a resource's states R_1, R_2, ..., a staging
// machine's state M_ready, and a resource named like a machine's state.
func (r *resolver) resourceNameClashes(in *Instance) {
	all := specNames(in)
	for _, x := range all {
		for _, res := range in.Resources {
			if rest, ok := strings.CutPrefix(x.name, res.name+"_"); ok && isDigits(rest) {
				r.nameClash(x, "name %q is reserved for a state of resource %s (gen names them %s_1, %s_2, ...): expected another name", x.name, res.name, res.name, res.name)
			}
		}
		for j, m := range in.Machines {
			staging := false
			for _, res := range in.Resources {
				staging = staging || res.Users[j]
			}
			if staging && x.name == m+"_ready" {
				r.nameClash(x, "name %q is reserved for a state of machine %s (its first input staged): expected another name", x.name, m)
			}
			if rest, ok := strings.CutPrefix(x.name, m+"_"); ok && x.list == "resources" && isStateSuffix(rest) {
				r.nameClash(x, "name %q is reserved for a local state of machine %s: expected another name", x.name, m)
			}
		}
	}
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// takenNames says what each name the specification has given so far
// names: its applications, machines and (once resolved) resources.
func (r *resolver) takenNames(in *Instance) map[string]string {
	taken := map[string]string{}
	for i, a := range in.Apps {
		taken[a] = fmt.Sprintf("an application (%s)", r.nameRef("applications", i))
	}
	for j, m := range in.Machines {
		taken[m] = fmt.Sprintf("a machine (%s)", r.nameRef("machines", j))
	}
	for _, res := range in.Resources {
		taken[res.name] = "a resource"
	}
	return taken
}

// componentName checks the name of a component a specification declares
// (kind: "resource", "pool"): a process name that nothing else has.
func (r *resolver) componentName(path, kind, name string, taken map[string]string) {
	switch {
	case !isProcessName(name):
		r.errorf(path, "%s name %q must start with an upper-case letter and hold only letters, digits and '_' (it names a component)", kind, name)
	case taken[name] != "":
		r.errorf(path, "%s %q has the name of %s: the model would define one process twice; expected distinct names", kind, name, taken[name])
	}
}

// specName is a name the specification gives: an application's or a
// machine's (list and index i), a resource's or a pool's (i = -1).
type specName struct {
	list string // "applications", "machines", "resources" or "pools"
	i    int
	name string
}

// specNames lists every name the specification gives, which gen's own
// names must not take.
func specNames(in *Instance) []specName {
	var all []specName
	for i, a := range in.Apps {
		all = append(all, specName{"applications", i, a})
	}
	for j, m := range in.Machines {
		all = append(all, specName{"machines", j, m})
	}
	for _, res := range in.Resources {
		all = append(all, specName{"resources", -1, res.name})
	}
	for _, p := range in.Pools {
		all = append(all, specName{"pools", -1, p.name})
	}
	return all
}

// nameClash reports an error at the place a specification gives name x.
func (r *resolver) nameClash(x specName, format string, args ...any) {
	if x.i < 0 {
		r.errorf(x.list+"."+x.name, format, args...)
		return
	}
	r.nameErrorf(x.list, x.i, format, args...)
}

// transfersOf lists the resources (indices into in.Resources, in name
// order) through which machine j stages application a's input.
func (in *Instance) transfersOf(j, a int) []int {
	var out []int
	for k, res := range in.Resources {
		if res.Users[j] && res.AppData[a] > 0 {
			out = append(out, k)
		}
	}
	return out
}

// stagingTime is the mean time machine j takes to stage application a's
// input when no other machine holds the resources: a request and a
// transfer on each resource that holds data of it.
func (in *Instance) stagingTime(j, a int) float64 {
	t := 0.0
	for _, k := range in.transfersOf(j, a) {
		res := in.Resources[k]
		t += res.Latency + res.AppData[a]/res.Rate
	}
	return t
}

// stages reports whether machine j, computing apps, stages any input.
func (in *Instance) Stages(j int, apps []int) bool {
	for _, res := range in.Resources {
		if !res.Users[j] {
			continue
		}
		for _, a := range apps {
			if res.AppData[a] > 0 {
				return true
			}
		}
	}
	return false
}

// resourceUse lists the resources (indices) that some of the listed
// machines stage input through when computing onMachine, or their external
// owners use, with how many components (machines and owners) do.
func (in *Instance) resourceUse(onMachine [][]int, machines []int) (used, count []int) {
	for k, res := range in.Resources {
		n := 0
		for _, j := range machines {
			if in.External(j) && in.OwnerUses(j, k) {
				n++
			}
			if !res.Users[j] {
				continue
			}
			for _, a := range onMachine[j] {
				if res.AppData[a] > 0 {
					n++
					break
				}
			}
		}
		if n > 0 {
			used, count = append(used, k), append(count, n)
		}
	}
	return used, count
}

// ownerActions lists the actions of the external owners among machines
// on resource k: oreq_M_R (a slot taken) and oxfer_M_R (freed), in
// machine order.
func (in *Instance) ownerActions(k int, machines []int) (reqs, xfers []string) {
	R := in.Resources[k].name
	for _, j := range machines {
		if in.External(j) && in.OwnerUses(j, k) {
			reqs = append(reqs, fmt.Sprintf("oreq_%s_%s", in.Machines[j], R))
			xfers = append(xfers, fmt.Sprintf("oxfer_%s_%s", in.Machines[j], R))
		}
	}
	return reqs, xfers
}

// writeTransferRates writes the rates of the resources the listed machines
// use: q_R, the inverse of a request's mean time, and x<i>_R, the rate of
// application i's transfer (R's rate over its data).
func (in *Instance) writeTransferRates(b *strings.Builder, onMachine [][]int, machines []int) {
	used, _ := in.resourceUse(onMachine, machines)
	for _, k := range used {
		res := in.Resources[k]
		R := res.name
		fmt.Fprintf(b, "// %s (%s at a time): a request takes 1 / q_%s on average, the transfer of\n", R, models.Plural(res.Capacity, "transfer", "transfers"), R)
		fmt.Fprintf(b, "// application i's input 1 / x<i>_%s (its data over %s's rate).\n", R, R)
		fmt.Fprintf(b, "q_%s = %s;\n", R, num(1/res.Latency))
		for _, a := range in.stagedApps(k, onMachine, machines) {
			fmt.Fprintf(b, "x%d_%s = %s;\n", a+1, R, num(res.Rate/res.AppData[a]))
		}
	}
}

// stagedApps lists, in application order, the applications whose input
// the listed machines stage through resource k.
func (in *Instance) stagedApps(k int, onMachine [][]int, machines []int) []int {
	res := in.Resources[k]
	var out []int
	for _, j := range machines {
		if !res.Users[j] {
			continue
		}
		for _, a := range onMachine[j] {
			if res.AppData[a] > 0 {
				out = append(out, a)
			}
		}
	}
	sort.Ints(out)
	return out
}

// writeStaged writes a machine that stages its applications' input: before
// each application, a request and a transfer on every resource that holds
// data of it (in name order); its work as in the seed (Erlang phases
// written out, phase_M then the compute action, when work has phases),
// the ideal and perturbed paths racing on the first application's first
// phase, after that application's transfers.
func (in *Instance) writeStaged(b *strings.Builder, j int, idx []int) {
	mach := in.Machines[j]
	stage := func(a int) string {
		var s strings.Builder
		for _, k := range in.transfersOf(j, a) {
			R := in.Resources[k].name
			fmt.Fprintf(&s, "(req%d_%s, q_%s).(xfer%d_%s, x%d_%s).", a+1, R, R, a+1, R, a+1, R)
		}
		return s.String()
	}
	work := func(s *strings.Builder, a, path int) {
		rate := fmt.Sprintf("%s%d", "rp"[path:path+1], a+1)
		if in.Phases == 1 {
			fmt.Fprintf(s, "(compute%d, %s).", a+1, rate)
			return
		}
		for h := 1; h < in.Phases; h++ {
			fmt.Fprintf(s, "(phase_%s, %d * %s).", mach, in.Phases, rate)
		}
		fmt.Fprintf(s, "(compute%d, %d * %s).", a+1, in.Phases, rate)
	}
	alts := make([]string, in.MachinePaths(j, idx))
	for path := range alts {
		var s strings.Builder
		for n, a := range idx {
			if n > 0 {
				s.WriteString(stage(a))
			}
			work(&s, a, path)
		}
		s.WriteString(mach)
		alts[path] = s.String()
	}
	if first := stage(idx[0]); first != "" {
		writeDefinition(b, mach, []string{first + mach + "_ready"})
		writeDefinition(b, mach+"_ready", alts)
		return
	}
	writeDefinition(b, mach, alts)
}

// writeResources writes the components of the resources the listed
// machines use: R with no slot taken, R_k with k taken, up to the capacity
// or the number of machines that use R here, if fewer (no more can be
// taken at once).
func (in *Instance) writeResources(b *strings.Builder, onMachine [][]int, machines []int) {
	used, count := in.resourceUse(onMachine, machines)
	for n, k := range used {
		res := in.Resources[k]
		R := res.name
		apps := in.stagedApps(k, onMachine, machines)
		slots := min(res.Capacity, count[n])
		state := func(taken int) string {
			if taken == 0 {
				return R
			}
			return fmt.Sprintf("%s_%d", R, taken)
		}
		oreqs, oxfers := in.ownerActions(k, machines)
		for taken := 0; taken <= slots; taken++ {
			var alts []string
			if taken < slots {
				for _, a := range apps {
					alts = append(alts, fmt.Sprintf("(req%d_%s, infty).%s", a+1, R, state(taken+1)))
				}
				for _, act := range oreqs {
					alts = append(alts, fmt.Sprintf("(%s, infty).%s", act, state(taken+1)))
				}
			}
			if taken > 0 {
				for _, a := range apps {
					alts = append(alts, fmt.Sprintf("(xfer%d_%s, infty).%s", a+1, R, state(taken-1)))
				}
				for _, act := range oxfers {
					alts = append(alts, fmt.Sprintf("(%s, infty).%s", act, state(taken-1)))
				}
			}
			writeDefinition(b, state(taken), alts)
		}
	}
}

// machinesTerm is the system equation's part with the listed machines
// (names, in order: those computing something), the external owners and
// pools of machines, and the resources they use: (M1 <> M2) alone, with
// owners ((M1 <> M2) <compute1, ...> (M1_owner <> ...)), and with resources
// (... <req1_R, xfer1_R, ...> R) (several resources in parallel).
func (in *Instance) machinesTerm(names []string, onMachine [][]int, machines []int) string {
	term := "(" + strings.Join(names, " <> ") + ")"
	if owners, shared := in.ownersTerm(onMachine, machines); owners != "" {
		switch {
		case len(names) == 0:
			term = owners
		default:
			term = "(" + term + " <" + strings.Join(shared, ", ") + "> " + owners + ")"
		}
	}
	used, _ := in.resourceUse(onMachine, machines)
	if len(used) == 0 {
		return term
	}
	var acts, comps []string
	for _, k := range used {
		R := in.Resources[k].name
		for _, a := range in.stagedApps(k, onMachine, machines) {
			acts = append(acts, fmt.Sprintf("req%d_%s", a+1, R), fmt.Sprintf("xfer%d_%s", a+1, R))
		}
		oreqs, oxfers := in.ownerActions(k, machines)
		for i := range oreqs {
			acts = append(acts, oreqs[i], oxfers[i])
		}
		comps = append(comps, R)
	}
	res := comps[0]
	if len(comps) > 1 {
		res = "(" + strings.Join(comps, " <> ") + ")"
	}
	return "(" + term + " <" + strings.Join(acts, ", ") + "> " + res + ")"
}

// resourceSpecs is the resources as a specification writes them, data
// resolved to one number per application.
func (in *Instance) resourceSpecs() map[string]any {
	out := map[string]any{}
	for _, res := range in.Resources {
		var machines []string
		for j, u := range res.Users {
			if u {
				machines = append(machines, in.Machines[j])
			}
		}
		out[res.name] = map[string]any{"rate": res.Rate, "latency": res.Latency, "capacity": res.Capacity,
			"machines": machines, "data": res.AppData}
	}
	return out
}
