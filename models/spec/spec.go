package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"

	"pepa/models"
	"pepa/models/energy"
	"pepa/models/etc"
)

// Spec is a mapping specification (semantics.md section 4): applications,
// machines, the ETC matrix, nominal and perturbed workloads and
// availabilities, and one or more allocations of the applications.
//
// The file is JSON with // comments allowed (testdata/spec-example.json
// shows every field). Perturbed values are explicit lists or uniform ranges
// drawn with a seeded generator, so a generated model is the same byte for
// byte on every run.
type Spec struct {
	Applications []string    `json:"applications"`
	Machines     []string    `json:"machines"`
	ETC          [][]float64 `json:"etc"`
	ETCFile      string      `json:"etc_csv"`
	// ETCGenerate draws the matrix by a published method (etcspec.go).
	ETCGenerate  *etc.Params `json:"etc_generate"`
	Sensors      *Values     `json:"sensors"`
	Weights      [][]float64 `json:"weights"`
	Workload     *Values     `json:"workload"`
	Availability *Values     `json:"availability"`
	Seed         uint64      `json:"seed"`
	Mappings     []Mapping   `json:"mappings"`
	// Owners replaces a machine's static availability by an owner process.
	Owners map[string]*Owner `json:"owners"`
	// Work sets the distribution of an application's work.
	Work *Work `json:"work"`
	// Resources are shared networks or file servers (shared.go).
	Resources map[string]*Resource `json:"resources"`
	// Pools are owners spanning machines: users who each sit at one of
	// several desktops (ownshare.go).
	Pools map[string]*Pool `json:"pools"`
	// Power is each machine's busy and idle power (energyspec.go).
	Power *PowerSpec `json:"power"`

	file    string
	offsets map[string]int // JSON path -> byte offset, for error lines (see valueOffsets)
	src     []byte         // the file
	clean   []byte         // src as standard JSON (comments blanked), same offsets
}

// Values are nominal and perturbed values of a quantity.
type Values struct {
	Nominal   json.RawMessage `json:"nominal"`
	Perturbed json.RawMessage `json:"perturbed"`
}

// Owner is an owner as a specification gives it: the workload
// (models.Owner, the fields a model's pepa:owner pragma carries) and how the
// owner's jobs use the shared resources.
type Owner struct {
	models.Owner
	// Transfers says whether an application's request and transfer on a
	// shared resource go on while an owner job is at the processor
	// ("continue", the default) or wait for it to leave ("pause").
	Transfers string `json:"transfers,omitempty"`
	// Uses names the resources the owner's own jobs stage their input
	// through, Data each job's input (one number, or by resource).
	Uses []string        `json:"uses,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`

	usesIdx []int     // indices into Instance.Resources, name order
	data    []float64 // per entry of usesIdx
}

// Work is the distribution of an application's work: Erlang with Phases
// phases of the same mean (1, the default, is exponential).
type Work struct {
	Phases int `json:"erlang"`
}

// Mapping allocates applications to machines, each machine computing its
// applications in the order listed.
type Mapping struct {
	Name       string              `json:"name"`
	Allocation map[string][]string `json:"allocation,omitempty"`
	// A mapping by rule instead of an allocation (rules.go): one of the
	// heuristics optimize starts from, or random mappings.
	Heuristic string      `json:"heuristic,omitempty"`
	Random    *RandomRule `json:"random,omitempty"`
}

// SpecError is a problem in a specification, with its place: the line and
// column of the value at fault (or of the nearest enclosing one present)
// and its field path ("etc[1][0]", "owners.Desk1.arrival"; indices from 0).
type SpecError struct {
	File string
	Line int    // 0 only for a problem with no place (an empty file)
	Col  int    // 0 if unknown
	Path string // the field path; "" for the whole specification
	Msg  string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": error: ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// SpecErrors is every problem found in a specification.
type SpecErrors []*SpecError

func (l SpecErrors) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Instance is a validated specification with every value resolved.
type Instance struct {
	Apps      []string
	Machines  []string
	ETC       [][]float64 // [app][machine]
	Workload  []float64   // nominal lambda_i
	WorkloadP []float64   // perturbed
	Avail     []float64   // nominal eta_j
	AvailP    []float64   // perturbed
	Mappings  []Mapping
	SpecFile  string
	Owners    []*Owner // by machine; nil for a static availability
	Phases    int      // Erlang phases of every application's work
	// ETCOrigin says where a generated ETC matrix came from (etc_generate,
	// described), "" for a given one.
	ETCOrigin string

	spec *Spec // for the places of errors found after parsing

	// Resources are the shared resources, by name (shared.go).
	Resources []*Resource
	// Pools are the pools of users, by name, and poolOf each machine's
	// pool (-1: none) (ownshare.go).
	Pools  []*Pool
	PoolOf []int
	// Power is each machine's busy and idle power, nil when the
	// specification gives none (energyspec.go).
	Power *energy.Power
}

// LoadSpec reads and validates a specification file.
func LoadSpec(path string) (*Instance, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(path, src)
}

// ParseSpec validates a specification given as text: JSON with comments
// and trailing commas (JWCC). Standard JSON is decoded as it is; anything
// else goes through github.com/tailscale/hujson, which blanks comments and
// trailing commas without moving a byte, so offsets in the standard JSON
// are offsets in the file. The places of values (for errors) are found
// only when there is an error: a large specification costs one decoding.
func ParseSpec(path string, src []byte) (*Instance, error) {
	s := &Spec{file: path, src: src, clean: src}
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, SpecErrors{{File: path, Line: 1, Col: 1, Msg: "the specification is empty: expected a JSON object with at least the etc matrix"}}
	}
	err := s.decode()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		clean, herr := hujson.Standardize(append([]byte(nil), src...))
		if herr != nil {
			return nil, SpecErrors{s.hujsonError(herr)}
		}
		*s = Spec{file: path, src: src, clean: clean}
		err = s.decode()
	}
	if err != nil {
		return nil, SpecErrors{s.jsonError(err)}
	}
	return s.resolve()
}

func (s *Spec) decode() error {
	dec := json.NewDecoder(bytes.NewReader(s.clean))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &json.SyntaxError{Offset: dec.InputOffset()}
	}
	return nil
}

// valueOffsets maps field paths to the offsets of their values, computed
// on first use.
func (s *Spec) valueOffsets() map[string]int {
	if s.offsets == nil {
		s.offsets = pathOffsets(s.clean)
	}
	return s.offsets
}

// lineCol is the line and column (from 1, in bytes) of a byte offset.
func (s *Spec) lineCol(offset int) (line, col int) {
	if offset < 0 || offset > len(s.src) {
		return 0, 0
	}
	line = bytes.Count(s.src[:offset], []byte("\n")) + 1
	col = offset - bytes.LastIndexByte(s.src[:offset], '\n')
	return line, col
}

// place is the line and column of a field path's value, or of the nearest
// enclosing value present (the whole specification's opening brace at
// worst), so that every error has a line.
func (s *Spec) place(path string) (line, col int) {
	for {
		if off, ok := s.valueOffsets()[path]; ok {
			return s.lineCol(off)
		}
		if path == "" {
			return 1, 1
		}
		path = parentPath(path)
	}
}

// parentPath strips the last component of a field path.
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// errorAt makes an error at a field path.
func (s *Spec) errorAt(path, format string, args ...any) *SpecError {
	e := &SpecError{File: s.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Col = s.place(path)
	return e
}

// hujsonError places a syntax error that hujson reports as "line L,
// column C: ...".
func (s *Spec) hujsonError(err error) *SpecError {
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	e := &SpecError{File: s.file, Line: 1, Col: 1}
	var line, col int
	if n, _ := fmt.Sscanf(msg, "line %d, column %d:", &line, &col); n == 2 {
		e.Line, e.Col = line, col
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	e.Msg = "invalid JSON: " + msg
	return e
}

// jsonError turns a decoding error into the user's terms: the field path
// of the value at fault, what was expected there and what was found.
func (s *Spec) jsonError(err error) *SpecError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		e := &SpecError{File: s.file, Msg: "invalid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
		e.Line, e.Col = s.lineCol(int(se.Offset))
		return e
	case errors.As(err, &te):
		// The decoder's offset is just past the value at fault: the value
		// that starts last before it.
		path, best := "", -1
		for p, off := range s.valueOffsets() {
			if off < int(te.Offset) && (off > best || off == best && len(p) > len(path)) {
				path, best = p, off
			}
		}
		found := strings.Fields(te.Value)[0]
		if found == "number" && strings.HasPrefix(te.Value, "number ") {
			found = "the number " + strings.TrimPrefix(te.Value, "number ")
		} else {
			found = map[string]string{"string": "a string", "number": "a number", "bool": "true or false",
				"array": "a list", "object": "an object"}[found]
		}
		return s.errorAt(path, "expected %s, found %s", describeType(te.Type.String()), found)
	}
	const unknown = "json: unknown field "
	if msg := err.Error(); strings.HasPrefix(msg, unknown) {
		name, _ := strconv.Unquote(strings.TrimPrefix(msg, unknown))
		path := ""
		for p := range s.valueOffsets() {
			if (p == name || strings.HasSuffix(p, "."+name)) && (path == "" || p < path) {
				path = p
			}
		}
		e := s.errorAt(path, "unknown field %q", name)
		if fields := knownFields(parentPath(path)); fields != "" {
			e.Msg += " (the fields here are " + fields + ")"
		}
		return e
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		e := &SpecError{File: s.file, Msg: "the specification ends early: expected a complete JSON object"}
		e.Line, e.Col = s.lineCol(len(s.src))
		return e
	}
	return s.errorAt("", "%v", err)
}

// knownFields lists the fields of the object at a field path.
func knownFields(path string) string {
	var t reflect.Type
	switch {
	case path == "":
		t = reflect.TypeOf(Spec{})
	case strings.HasPrefix(path, "owners."):
		t = reflect.TypeOf(Owner{})
	case path == "work":
		t = reflect.TypeOf(Work{})
	case strings.HasPrefix(path, "resources."):
		t = reflect.TypeOf(Resource{})
	case strings.HasPrefix(path, "pools."):
		t = reflect.TypeOf(Pool{})
	case path == "power":
		t = reflect.TypeOf(PowerSpec{})
	case path == "etc_generate":
		t = reflect.TypeOf(etc.Params{})
	case strings.HasPrefix(path, "mappings[") && strings.HasSuffix(path, ".random"):
		t = reflect.TypeOf(RandomRule{})
	case strings.HasPrefix(path, "mappings["):
		t = reflect.TypeOf(Mapping{})
	case path == "workload" || path == "availability" || path == "sensors":
		t = reflect.TypeOf(Values{})
	default:
		return ""
	}
	return strings.Join(jsonFields(t), ", ")
}

// jsonFields are the JSON names of a struct's fields, those of an embedded
// struct (promoted by encoding/json) in its place.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			names = append(names, jsonFields(f.Type)...)
			continue
		}
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

// describeType says what a Go type is in the specification's terms.
func describeType(t string) string {
	switch t {
	case "[][]float64":
		return "a list of lists of numbers"
	case "[]float64":
		return "a list of numbers"
	case "[]string":
		return "a list of names (strings)"
	case "[]spec.Mapping":
		return "a list of mappings ({\"name\": ..., \"allocation\": {...}})"
	case "float64":
		return "a number"
	case "int":
		return "a whole number"
	case "uint64":
		return "a whole number from 0 up"
	case "string":
		return "a string"
	case "map[string][]string":
		return "an object of machine names to lists of application names"
	case "map[string]*spec.Owner":
		return "an object of machine names to owners"
	case "map[string]*spec.Resource":
		return "an object of resource names to resources"
	case "map[string]*spec.Pool":
		return "an object of pool names to pools"
	case "*etc.Params":
		return "an object ({\"method\": \"cvb\" or \"range\", \"applications\": N, \"machines\": M, ...})"
	}
	if strings.HasPrefix(t, "spec.") || strings.HasPrefix(t, "*spec.") || strings.HasPrefix(t, "map") {
		return "an object"
	}
	return t
}

// pathOffsets maps JSON paths ("etc[2][1]", "mappings[0].allocation.M1")
// to the byte offset of their values.
func pathOffsets(src []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(src))
	type frame struct {
		array bool
		index int
		key   string
		path  string
	}
	var stack []frame
	current := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.array {
			return fmt.Sprintf("%s[%d]", f.path, f.index)
		}
		if f.path == "" {
			return f.key
		}
		return f.path + "." + f.key
	}
	expectKey := false
	for {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		// The decoder's offset is before the whitespace ahead of a token.
		for off < len(src) && (src[off] == ' ' || src[off] == '\n' || src[off] == '\t' || src[off] == '\r' || src[off] == ',' || src[off] == ':') {
			off++
		}
		if len(stack) > 0 && !stack[len(stack)-1].array && expectKey {
			if k, ok := tok.(string); ok {
				stack[len(stack)-1].key = k
				expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			p := current()
			out[p] = off
			stack = append(stack, frame{array: tok == json.Delim('['), path: p})
			expectKey = tok == json.Delim('{')
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			out[current()] = off
		}
		if len(stack) > 0 {
			if stack[len(stack)-1].array {
				stack[len(stack)-1].index++
			} else {
				expectKey = true
			}
		}
	}
}

type resolver struct {
	s    *Spec
	errs SpecErrors
	// file is the ETC file read (etc_csv), fromFile the lists of names
	// ("applications", "machines") taken from it.
	file     *etcFile
	fromFile map[string]bool
}

func (r *resolver) errorf(path string, format string, args ...any) {
	r.errs = append(r.errs, r.s.errorAt(path, format, args...))
}

func (s *Spec) resolve() (*Instance, error) {
	r := &resolver{s: s, fromFile: map[string]bool{}}
	in := &Instance{SpecFile: s.file, spec: s}
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	nApps, nMach := r.etcMatrix(in)
	nApps, nMach = r.resolveNames(in, nApps, nMach)
	r.workloads(in, nApps, nMach, rng)
	r.checkMappings(in)
	in.Mappings = s.Mappings
	in.Phases = 1
	if s.Work != nil {
		in.Phases = s.Work.Phases
		if in.Phases < 1 || in.Phases > 64 {
			r.errorf("work.erlang", "work.erlang must be a whole number of phases from 1 to 64, found %d", in.Phases)
		}
	}
	r.resolveOwners(in)
	// Resources before the mappings by rule: the heuristics count the
	// time of staging input (expectedTimes).
	r.resolveResources(in)
	r.resolveOwnerUses(in)
	r.resolvePools(in)
	r.resolvePower(in)
	if len(r.errs) == 0 {
		r.ruleMappings(in)
	}
	if len(r.errs) > 0 {
		return nil, r.errs
	}
	return in, nil
}

// etcMatrix sets in.ETC from its one source (inline, file or generated)
// and returns its size. nApps and nMach stay unknown (-1) when the
// matrix's source failed: the checks that need them are then not run, so
// that one cause gives one error, not its consequences elsewhere.
func (r *resolver) etcMatrix(in *Instance) (nApps, nMach int) {
	s := r.s
	nApps, nMach = -1, -1
	var sources []string
	for _, src := range []struct {
		field string
		given bool
	}{{"etc", s.ETC != nil}, {"etc_csv", s.ETCFile != ""}, {"etc_generate", s.ETCGenerate != nil}} {
		if src.given {
			sources = append(sources, src.field)
		}
	}
	switch {
	case len(sources) == 0:
		r.errorf("", "missing ETC matrix: give etc (rows: applications, columns: machines), etc_csv or etc_generate")
	case len(sources) > 1:
		r.errorf(sources[1], "give the ETC matrix one way: inline (etc), as a file (etc_csv) or generated (etc_generate), not both %s and %s", sources[0], sources[1])
	case s.ETC != nil:
		in.ETC, nApps, nMach = r.inlineETC(s.ETC)
	case s.ETCFile != "":
		if file := r.readETC(s.ETCFile); file != nil {
			in.ETC, nApps, nMach = file.etc, len(file.etc), len(file.etc[0])
			r.file = file
		}
	default:
		in.ETC, nApps, nMach = r.generateETC(in)
	}
	return nApps, nMach
}

// resolveNames sets the names of the applications and machines: from the
// specification, the ETC file or numbered. A list given with an unknown
// matrix sets the size, which it returns.
func (r *resolver) resolveNames(in *Instance, nApps, nMach int) (int, int) {
	var fileApps, fileMachs []string
	if r.file != nil {
		fileApps, fileMachs = r.file.apps, r.file.machines
	}
	in.Apps = r.names("applications", r.s.Applications, nApps, "A", "application", fileApps)
	in.Machines = r.names("machines", r.s.Machines, nMach, "M", "machine", fileMachs)
	if nApps < 0 && in.Apps != nil {
		nApps = len(in.Apps)
	}
	if nMach < 0 && in.Machines != nil {
		nMach = len(in.Machines)
	}
	r.nameClashes(in)
	return nApps, nMach
}

// workloads sets the applications' workloads (given, or from sensors and
// weights) and the machines' availabilities.
func (r *resolver) workloads(in *Instance, nApps, nMach int, rng *rand.Rand) {
	s := r.s
	if s.Sensors != nil || s.Weights != nil {
		if s.Workload != nil {
			r.errorf("workload", "give the workload either directly (workload) or from sensors and weights, not both")
		}
		sens := r.values("sensors", s.Sensors, -1, rng, false)
		if nApps >= 0 && len(s.Weights) != nApps {
			r.errorf("weights", "weights has %d rows, one per application (%d) is needed", len(s.Weights), nApps)
		} else if sens[0] != nil && sens[1] != nil {
			r.weightedWorkloads(in, sens)
		}
	} else {
		v := r.values("workload", s.Workload, sizeOrUnknown(nApps), rng, false)
		in.Workload, in.WorkloadP = v[0], v[1]
	}
	v := r.values("availability", s.Availability, sizeOrUnknown(nMach), rng, true)
	in.Avail, in.AvailP = v[0], v[1]
}

// weightedWorkloads sets each application's workloads from its weights
// over the sensors' values (nominal and perturbed).
func (r *resolver) weightedWorkloads(in *Instance, sens [2][]float64) {
	weights := r.s.Weights
	in.Workload, in.WorkloadP = make([]float64, len(weights)), make([]float64, len(weights))
	for i, w := range weights {
		if len(w) != len(sens[0]) {
			r.errorf(fmt.Sprintf("weights[%d]", i), "weights row %d has %d entries, one per sensor (%d) is needed", i+1, len(w), len(sens[0]))
			continue
		}
		negative := false
		for k, x := range w {
			if x < 0 {
				r.errorf(fmt.Sprintf("weights[%d][%d]", i, k), "weight %g is negative", x)
				negative = true
			}
			in.Workload[i] += x * sens[0][k]
			in.WorkloadP[i] += x * sens[1][k]
		}
		if !negative && !(in.Workload[i] > 0) {
			r.errorf(fmt.Sprintf("weights[%d]", i), "application %d has no workload (its weights are all zero)", i+1)
		}
	}
}

// checkMappings names the mappings that have no name and checks them:
// optional here (optimize needs none; gen asks for them: RequireMappings).
// Names that are unknown (the matrix failed and no list gives them) are
// not checked: every reference would look wrong.
func (r *resolver) checkMappings(in *Instance) {
	s := r.s
	if s.Mappings != nil && len(s.Mappings) == 0 {
		r.errorf("mappings", "the list of mappings is empty: give at least one allocation of the applications to the machines, or leave mappings out")
	}
	appIndex := map[string]int{}
	for i, a := range in.Apps {
		appIndex[a] = i
	}
	machIndex := map[string]bool{}
	for _, m := range in.Machines {
		machIndex[m] = true
	}
	seenNames := map[string]bool{}
	for k, m := range s.Mappings {
		path := fmt.Sprintf("mappings[%d]", k)
		if m.Name == "" && isRule(m) {
			m.Name = ruleName(m)
			s.Mappings[k].Name = m.Name
		}
		if m.Name == "" {
			m.Name = fmt.Sprintf("mapping%d", k+1)
			s.Mappings[k].Name = m.Name
		}
		if !validFileName(m.Name) {
			r.errorf(path+".name", "mapping name %q must be letters, digits, '-' or '_' (it names the output file)", m.Name)
		}
		if seenNames[m.Name] {
			r.errorf(path+".name", "two mappings are named %q", m.Name)
		}
		seenNames[m.Name] = true
		if isRule(m) {
			apps, machines := len(in.Apps), len(in.Machines)
			if in.Apps == nil || in.Machines == nil {
				apps, machines = -1, -1
			}
			r.checkRule(path, m, apps, machines)
			continue
		}
		r.checkAllocation(in, path, m, appIndex, machIndex)
	}
}

// checkAllocation checks mapping m's allocation (at path): known machines
// and applications, each application mapped once.
func (r *resolver) checkAllocation(in *Instance, path string, m Mapping, appIndex map[string]int, machIndex map[string]bool) {
	appsKnown, machsKnown := in.Apps != nil, in.Machines != nil
	where := map[string]string{}
	machs := make([]string, 0, len(m.Allocation))
	for mach := range m.Allocation {
		machs = append(machs, mach)
	}
	sort.Strings(machs)
	for _, mach := range machs {
		mpath := path + ".allocation." + mach
		if machsKnown && !machIndex[mach] {
			r.errorf(mpath, "mapping %s: no machine %q (the machines are %s)", m.Name, mach, strings.Join(in.Machines, ", "))
		}
		for _, app := range m.Allocation[mach] {
			if _, ok := appIndex[app]; !ok && appsKnown {
				r.errorf(mpath, "mapping %s: no application %q", m.Name, app)
				continue
			}
			if prev, ok := where[app]; ok {
				r.errorf(mpath, "mapping %s: application %s is mapped twice (to %s and %s)", m.Name, app, prev, mach)
			}
			where[app] = mach
		}
	}
	for _, a := range in.Apps {
		if _, ok := where[a]; !ok {
			r.errorf(path+".allocation", "mapping %s: application %s is not mapped to any machine", m.Name, a)
		}
	}
}

// resolveOwners sets in.Owners (per machine, nil: none) from the owners
// given by machine name, in name order, with their defaults, and checks
// them.
func (r *resolver) resolveOwners(in *Instance) {
	s := r.s
	in.Owners = make([]*Owner, len(in.Machines))
	owned := make([]string, 0, len(s.Owners))
	for mach := range s.Owners {
		owned = append(owned, mach)
	}
	sort.Strings(owned)
	for _, mach := range owned {
		o := s.Owners[mach]
		path := "owners." + mach
		j := -1
		for k, m := range in.Machines {
			if m == mach {
				j = k
			}
		}
		if j < 0 && in.Machines != nil {
			r.errorf(path, "owner of %q: no such machine (the machines are %s)", mach, strings.Join(in.Machines, ", "))
			continue
		}
		if o == nil {
			r.errorf(path, "owner of %s: expected an object", mach)
			continue
		}
		if o.Discipline == "" {
			o.Discipline = "preemptive"
		}
		if o.Capacity == 0 {
			o.Capacity = 1
		}
		if o.Start == "" {
			o.Start = "idle"
		}

		r.checkOwner(in, path, mach, j, o)
		if j >= 0 {
			in.Owners[j] = o
		}
	}
}

// checkOwner checks the owner o of machine mach (index j, -1 if unknown),
// at path: its first fault.
func (r *resolver) checkOwner(in *Instance, path, mach string, j int, o *Owner) {
	switch {
	case !(o.Arrival > 0) || math.IsInf(o.Arrival, 0):
		r.errorf(path+".arrival", "owner of %s: the arrival rate must be positive, found %g", mach, o.Arrival)
	case !(o.Service > 0) || math.IsInf(o.Service, 0):
		r.errorf(path+".service", "owner of %s: the service rate must be positive, found %g", mach, o.Service)
	case o.Discipline != "preemptive" && o.Discipline != "sharing":
		r.errorf(path+".discipline", "owner of %s: discipline must be preemptive or sharing, found %q", mach, o.Discipline)
	case o.Capacity < 1 || o.Capacity > 1000:
		r.errorf(path+".capacity", "owner of %s: capacity must be from 1 to 1000 jobs, found %d", mach, o.Capacity)
	case o.Start != "idle" && o.Start != "stationary":
		r.errorf(path+".start", "owner of %s: start must be idle or stationary, found %q", mach, o.Start)
	case o.Transfers != "" && o.Transfers != "continue" && o.Transfers != "pause":
		r.errorf(path+".transfers", "owner of %s: transfers must be continue (an application's transfer goes on while the owner works) or pause, found %q", mach, o.Transfers)
	case o.Transfers == "pause" && o.Discipline == "sharing":
		r.errorf(path+".transfers", "owner of %s: transfers pause needs discipline preemptive (under sharing the applications are never stopped, so their transfers continue)", mach)
	case j >= 0 && j < len(in.Avail) && j < len(in.AvailP) && (in.Avail[j] != 1 || in.AvailP[j] != 1):
		r.errorf(path, "machine %s has an owner process, so its static availability must be 1 (it is %g, perturbed %g)", mach, in.Avail[j], in.AvailP[j])
	case !(o.Availability() > 0):
		r.errorf(path, "owner of %s: with load %g (arrival/service) and capacity %d the applications' share of the processor underflows to 0 (about %g^-%d): expected a lighter owner or a smaller capacity",
			mach, o.Rho(), o.Capacity, o.Rho(), o.Capacity)
	case o.Start == "stationary" && !finiteDistribution(o.Stationary()):
		r.errorf(path+".start", "owner of %s: its stationary start cannot be computed in floating point (load %g, capacity %d)", mach, o.Rho(), o.Capacity)
	}
}

// RequireMappings reports, in the specification's terms, that it has no
// mapping (gen needs at least one; optimize none).
func (in *Instance) RequireMappings() error {
	if len(in.Mappings) > 0 {
		return nil
	}
	s := in.spec
	if s == nil {
		return fmt.Errorf("%s: error: no mapping: give at least one allocation of the applications to the machines", in.SpecFile)
	}
	return SpecErrors{s.errorAt("mappings", "no mapping: expected a list \"mappings\" with at least one allocation of the applications to the machines, e.g. [{\"name\": \"m1\", \"allocation\": {%q: [%q]}}]",
		in.Machines[0], in.Apps[0])}
}

// nameClashes rejects names that would make gen write an invalid model:
// an application and a machine with one name (two definitions of one
// process), or a name of the form gen gives a machine's local states
// (MACHINE_r3, MACHINE_p3_o2, MACHINE_o1: see combinedName).
func (r *resolver) nameClashes(in *Instance) {
	app := map[string]int{}
	for i, a := range in.Apps {
		app[a] = i
	}
	for j, m := range in.Machines {
		if i, ok := app[m]; ok {
			r.nameErrorf("machines", j, "machine %q has the name of an application (%s): the model would define one process twice; expected distinct names", m, r.nameRef("applications", i))
		}
	}
	all := []struct {
		path  string
		names []string
	}{{"applications", in.Apps}, {"machines", in.Machines}}
	for _, mach := range in.Machines {
		for _, list := range all {
			for i, name := range list.names {
				if rest, ok := strings.CutPrefix(name, mach+"_"); ok && isStateSuffix(rest) {
					r.nameErrorf(list.path, i, "name %q is reserved for a local state of machine %s (gen names them %s_r1, %s_p2, %s_o1, %s_r1_o2, ...): expected another name",
						name, mach, mach, mach, mach, mach)
				}
			}
		}
	}
}

// isStateSuffix reports whether s is the part combinedName adds to a
// machine's name: r<d> or p<d>, then optionally _o<n>; or o<n>.
func isStateSuffix(s string) bool {
	digits := func(s string) (string, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[i:], i > 0
	}
	if rest, ok := strings.CutPrefix(s, "o"); ok {
		rest, ok = digits(rest)
		return ok && rest == ""
	}
	if len(s) == 0 || (s[0] != 'r' && s[0] != 'p') {
		return false
	}
	rest, ok := digits(s[1:])
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	rest, ok = strings.CutPrefix(rest, "_o")
	if !ok {
		return false
	}
	rest, ok = digits(rest)
	return ok && rest == ""
}

func finiteDistribution(p []float64) bool {
	sum := 0.0
	for _, x := range p {
		if !(x >= 0) || math.IsInf(x, 0) {
			return false
		}
		sum += x
	}
	return math.Abs(sum-1) < 1e-9
}

func validFileName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// names checks or invents component names: the specification's list
// (path), else the names the ETC file gives (fromFile), else A1, A2, ...
// (prefix) numbered up to n. It returns nil, names unknown, when the list
// has an unusable name, or there is none and n is unknown (-1: the matrix
// failed): the references to the names are then not checked. A list given
// both in the specification and in the ETC file must be the same in both.
func (r *resolver) names(path string, given []string, n int, prefix, what string, fromFile []string) []string {
	if given == nil {
		if fromFile != nil {
			r.fromFile[path] = true
			if errs := r.file.checkNames(what); len(errs) > 0 {
				r.errs = append(r.errs, errs...)
				return nil
			}
			return fromFile
		}
		if n < 0 {
			return nil
		}
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i+1)
		}
		return out
	}
	if len(given) == 0 {
		if n >= 0 {
			r.errorf(path, "the list of %s names is empty: expected one name per %s of the ETC matrix (%d), or leave %s out to number them", what, map[string]string{"application": "row", "machine": "column"}[what], n, path)
		} else {
			r.errorf(path, "the list of %s names is empty: expected one name per %s of the ETC matrix, or leave %s out to number them", what, map[string]string{"application": "row", "machine": "column"}[what], path)
		}
		return nil
	}
	if n >= 0 && len(given) != n {
		r.errorf(path, "%d %s names for %d %ss in the ETC matrix", len(given), what, n, what)
	}
	seen := map[string]bool{}
	valid := true
	for i, g := range given {
		if !isProcessName(g) {
			r.errorf(fmt.Sprintf("%s[%d]", path, i), "%s name %q must start with an upper-case letter and hold only letters, digits and '_'", what, g)
			valid = false
		}
		if seen[g] {
			r.errorf(fmt.Sprintf("%s[%d]", path, i), "%s name %q is used twice", what, g)
			valid = false
		}
		seen[g] = true
	}
	if fromFile != nil && len(fromFile) == len(given) {
		at := r.file.appAt
		if path == "machines" {
			at = r.file.machAt
		}
		for i := range given {
			if given[i] != fromFile[i] {
				r.errorf(fmt.Sprintf("%s[%d]", path, i), "%s %d is %q here and %q in the ETC file (%s:%d:%d): give the names in one place, or the same in both",
					what, i+1, given[i], fromFile[i], r.file.path, at[i].line, at[i].col)
				valid = false
				break
			}
		}
	}
	if !valid {
		// Unusable names: references to them are not checked.
		return nil
	}
	return given
}

// nameErrorf reports a problem with the i-th name of a list
// ("applications" or "machines") where the name is written: in the
// specification, or in the ETC file that gave it.
func (r *resolver) nameErrorf(list string, i int, format string, args ...any) {
	if at, ok := r.namePlace(list, i); ok {
		r.errs = append(r.errs, &SpecError{File: r.file.path, Line: at.line, Col: at.col, Msg: fmt.Sprintf(format, args...)})
		return
	}
	r.errorf(fmt.Sprintf("%s[%d]", list, i), format, args...)
}

// nameRef names the place of the i-th name of a list in a message:
// "applications[2]", or the ETC file's "etc.csv:4:1".
func (r *resolver) nameRef(list string, i int) string {
	if at, ok := r.namePlace(list, i); ok {
		return fmt.Sprintf("%s:%d:%d", filepath.Base(r.file.path), at.line, at.col)
	}
	return fmt.Sprintf("%s[%d]", list, i)
}

func (r *resolver) namePlace(list string, i int) (cellPos, bool) {
	if r.file == nil || !r.fromFile[list] {
		return cellPos{}, false
	}
	at := r.file.appAt
	if list == "machines" {
		at = r.file.machAt
	}
	if i < 0 || i >= len(at) {
		return cellPos{}, false
	}
	return at[i], true
}

func isProcessName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' || s == "T" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// unknownSize is the number of values of a list whose size is unknown
// because the ETC matrix failed: the values are checked, not their number.
const unknownSize = -2

// sizeOrUnknown is n, or unknownSize if n is unknown (negative).
func sizeOrUnknown(n int) int {
	if n < 0 {
		return unknownSize
	}
	return n
}

// values resolves nominal and perturbed values: numbers, lists, or
// {"uniform": [a, b]} ranges drawn from rng. n < 0 takes the length of the
// nominal list. Availabilities must lie in (0, 1].
func (r *resolver) values(path string, v *Values, n int, rng *rand.Rand, availability bool) [2][]float64 {
	var out [2][]float64
	unknown := n == unknownSize
	if unknown {
		// The values are checked, not their number.
		if v == nil {
			return out
		}
		n = -1
	}
	if v == nil {
		if n < 0 {
			r.errorf(path, "missing %s", path)
			return out
		}
		// Nominal 1 and no perturbation.
		one := make([]float64, n)
		for i := range one {
			one[i] = 1
		}
		return [2][]float64{one, one}
	}
	for k, part := range []struct {
		name string
		raw  json.RawMessage
	}{{"nominal", v.Nominal}, {"perturbed", v.Perturbed}} {
		p := path + "." + part.name
		raw := bytes.TrimSpace(part.raw)
		var vals []float64
		switch {
		case len(raw) == 0:
			if k == 1 {
				out[1] = out[0] // no perturbation (the nominal values are checked)
				return out
			}
			if unknown {
				continue // the perturbed values are still checked
			}
			if n < 0 {
				r.errorf(path, "missing %s.nominal", path)
				return out
			}
			vals = make([]float64, n)
			for i := range vals {
				vals[i] = 1
			}
		case raw[0] == '[':
			if err := json.Unmarshal(raw, &vals); err != nil {
				r.errorf(p, "%s must be a number, a list of numbers or {\"uniform\": [a, b]}", p)
				return out
			}
		case raw[0] == '{':
			m := n
			if m < 0 {
				m = len(out[0])
			}
			var ok bool
			if vals, ok = r.uniformValues(p, raw, m, rng); !ok {
				return out
			}
		default:
			var x float64
			if err := json.Unmarshal(raw, &x); err != nil {
				r.errorf(p, "%s must be a number, a list of numbers or {\"uniform\": [a, b]}", p)
				return out
			}
			m := n
			if m < 0 {
				m = 1
			}
			vals = make([]float64, m)
			for i := range vals {
				vals[i] = x
			}
		}
		want := n
		if want < 0 {
			want = len(out[0])
			if k == 0 || unknown {
				want = len(vals)
			}
		}
		if len(vals) != want {
			r.errorf(p, "%s has %d values, %d are needed", p, len(vals), want)
			return out
		}
		r.checkValues(p, vals, availability)
		out[k] = vals
	}
	return out
}

// uniformValues draws m values from rng uniformly in the range raw gives,
// {"uniform": [a, b]} (at path p), or reports it and returns false.
func (r *resolver) uniformValues(p string, raw []byte, m int, rng *rand.Rand) ([]float64, bool) {
	var u struct {
		Uniform []float64 `json:"uniform"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil || len(u.Uniform) != 2 || !(u.Uniform[0] <= u.Uniform[1]) {
		r.errorf(p, "%s: a range is written {\"uniform\": [a, b]} with a <= b", p)
		return nil, false
	}
	vals := make([]float64, m)
	for i := range vals {
		vals[i] = u.Uniform[0] + (u.Uniform[1]-u.Uniform[0])*rng.Float64()
	}
	return vals, true
}

// checkValues reports every value at p that is not finite, or not
// positive, or (availability) outside (0, 1].
func (r *resolver) checkValues(p string, vals []float64, availability bool) {
	for i, x := range vals {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			r.errorf(fmt.Sprintf("%s[%d]", p, i), "%s value %d is not a finite number", p, i+1)
		case availability && !(x > 0 && x <= 1):
			r.errorf(fmt.Sprintf("%s[%d]", p, i), "availability %g of machine %d is outside (0, 1]", x, i+1)
		case !availability && !(x > 0):
			r.errorf(fmt.Sprintf("%s[%d]", p, i), "%s value %d is %g: it must be positive", p, i+1, x)
		}
	}
}

// readETC reads the ETC file of etc_csv (relative to the specification):
// nil, with every problem reported at its place in the file, if it cannot
// be used.
func (r *resolver) readETC(name string) *etcFile {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(r.s.file), name)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		r.errorf("etc_csv", "cannot read the ETC file: %v", err)
		return nil
	}
	f, errs := parseETCFile(path, src)
	r.errs = append(r.errs, errs...)
	return f
}

// inlineETC checks the matrix given as "etc", returning its numbers of
// rows and columns (-1 where they are unknown: no row, an empty first
// row).
func (r *resolver) inlineETC(etc [][]float64) ([][]float64, int, int) {
	if len(etc) == 0 {
		r.errorf("etc", "the ETC matrix is empty: expected one row per application, each with one expected time per machine")
		return nil, -1, -1
	}
	nMach := len(etc[0])
	if nMach == 0 {
		r.errorf("etc[0]", "the ETC matrix's first row is empty: expected one expected time per machine")
		nMach = -1
	}
	for i, row := range etc {
		if nMach >= 0 && len(row) != nMach {
			r.errorf(fmt.Sprintf("etc[%d]", i), "the ETC matrix is ragged: row %d has %d entries, row 1 has %d", i+1, len(row), nMach)
		}
		for j, x := range row {
			if !(x > 0) || math.IsInf(x, 0) {
				r.errorf(fmt.Sprintf("etc[%d][%d]", i, j), "ETC[%d][%d] is %g: an expected time to compute must be positive", i+1, j+1, x)
			}
		}
	}
	return etc, len(etc), nMach
}
