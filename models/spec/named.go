// What the resolvers share about things given by name: a section of
// named objects (pools, resources), the index of the machines, and a value
// given per machine or per application as a list or an object.

package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// sectionNames lists the names of a section of named objects (pools,
// resources) in order; nil when the section is absent, or empty (then
// reported at section with the message empty).
func sectionNames[T any](r *resolver, section string, spec map[string]T, empty string) []string {
	if spec == nil {
		return nil
	}
	if len(spec) == 0 {
		r.errorf(section, "%s", empty)
		return nil
	}
	return slices.Sorted(maps.Keys(spec))
}

// machineIndex maps each machine's name to its index.
func machineIndex(in *Instance) map[string]int {
	index := make(map[string]int, len(in.Machines))
	for j, m := range in.Machines {
		index[m] = j
	}
	return index
}

// perNameForm is how perName words its errors about a value given per
// machine or per application.
type perNameForm struct {
	subject string // what must be one of the forms and has N values: "busy power", "resource R: data"
	owner   string // what a message about one value starts with: "busy power", "resource R"
	number  string // what one value is: "a number of watts", "a number (0: no transfer)"
	noun    string // what the names name: "machine", "application"
	forms   string // the forms accepted, for a value in none of them
	// every: an object must give every name a value.
	every bool
}

// perName resolves a value given per name as a list in the order of names
// or an object by name (raw, trimmed, starts with '[' or '{'). It calls
// each, in order, with every value given: its path, its index in names
// (a list's position, whether names are known or not; -1 for an object's
// key that is not a name), and its name (the object's key, or names[j];
// "" for a list when names are nil, unknown because an earlier part of
// the specification failed: then neither the count nor the keys are
// checked). A null, a key that names nothing and a malformed value are
// reported; bad says whether any was.
func (r *resolver) perName(path string, raw json.RawMessage, names []string, f perNameForm, each func(p string, j int, name string, x float64)) (bad bool) {
	known := names != nil
	if raw[0] == '[' {
		var vals []*float64 // nil: a null, which is no number
		if err := json.Unmarshal(raw, &vals); err != nil {
			r.errorf(path, "%s must be %s", f.subject, f.forms)
			return true
		}
		if known && len(vals) != len(names) {
			r.errorf(path, "%s has %d values, one per %s (%d) is needed", f.subject, len(vals), f.noun, len(names))
			return true
		}
		for j, x := range vals {
			p := fmt.Sprintf("%s[%d]", path, j)
			if x == nil {
				r.errorf(p, "%s: expected %s, found null", f.owner, f.number)
				bad = true
				continue
			}
			name := ""
			if known {
				name = names[j]
			}
			each(p, j, name, *x)
		}
		return bad
	}
	var vals map[string]*float64
	if err := json.Unmarshal(raw, &vals); err != nil {
		r.errorf(path, "%s must be %s", f.subject, f.forms)
		return true
	}
	index := map[string]int{}
	for j, n := range names {
		index[n] = j
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		j, ok := index[k]
		switch {
		case !ok && known:
			r.errorf(path+"."+k, "%s: no %s %q", f.owner, f.noun, k)
			bad = true
			continue
		case vals[k] == nil:
			r.errorf(path+"."+k, "%s: expected %s, found null", f.owner, f.number)
			bad = true
			continue
		}
		if !ok {
			j = -1
		}
		each(path+"."+k, j, k, *vals[k])
	}
	if f.every {
		for _, n := range names {
			if _, ok := vals[n]; !ok {
				r.errorf(path, "%s: no value for %s %s: give every %s's", f.owner, f.noun, n, f.noun)
				break
			}
		}
	}
	return bad
}
