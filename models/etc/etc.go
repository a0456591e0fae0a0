package etc

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Params are the parameters of a generated ETC matrix, as the "etc_generate"
// field of a mapping specification gives them (JSON names in the tags).
type Params struct {
	// Method is "cvb" or "range"; a Class sets it.
	Method string `json:"method,omitempty"`
	// Class is one of Braun et al.'s twelve range-based classes, u_C_TTMM
	// (u_c_hihi, u_i_lolo, u_s_hilo, ...): it sets Method, TaskRange,
	// MachineRange and Consistency, which are then not given (or given
	// the class's values).
	Class        string `json:"class,omitempty"`
	Applications int    `json:"applications"`
	Machines     int    `json:"machines"`
	// CVB: the mean of every entry, the coefficient of variation of the
	// applications' means, and that of an application's times over the
	// machines.
	Mean      float64 `json:"mean,omitempty"`
	TaskCV    float64 `json:"task_cv,omitempty"`
	MachineCV float64 `json:"machine_cv,omitempty"`
	// Range: an application's baseline is uniform on [1, TaskRange), its
	// time on a machine the baseline times a uniform on [1, MachineRange).
	TaskRange    float64 `json:"task_range,omitempty"`
	MachineRange float64 `json:"machine_range,omitempty"`
	// Consistency is "consistent", "inconsistent" (the default) or
	// "partially-consistent".
	Consistency string `json:"consistency,omitempty"`
	Seed        uint64 `json:"seed"`
}

// The methods and consistencies.
const (
	CVB                 = "cvb"
	Range               = "range"
	Consistent          = "consistent"
	Inconsistent        = "inconsistent"
	PartiallyConsistent = "partially-consistent"
)

// Braun et al.'s (2001) heterogeneities: the ranges of the range-based
// method's task and machine factors.
const (
	TaskHigh    = 3000
	TaskLow     = 100
	MachineHigh = 1000
	MachineLow  = 10
)

// MaxEntries bounds the size of a generated matrix.
const MaxEntries = 1 << 26

// FieldError is a problem with one parameter, named by its JSON field
// ("" for the parameters as a whole).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Classes lists Braun et al.'s twelve class names.
func Classes() []string {
	var out []string
	for _, c := range "cis" {
		for _, t := range []string{"hi", "lo"} {
			for _, m := range []string{"hi", "lo"} {
				out = append(out, fmt.Sprintf("u_%c_%s%s", c, t, m))
			}
		}
	}
	return out
}

// Resolve expands a class name and checks the parameters, returning every
// problem found.
func (p Params) Resolve() (Params, []*FieldError) {
	var errs []*FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{field, fmt.Sprintf(format, args...)})
	}
	if p.Class != "" {
		c, ok := parseClass(p.Class)
		switch {
		case !ok:
			bad("class", "unknown class %q: expected one of Braun et al.'s u_C_TTMM, C in c, i, s (consistent, inconsistent, semi-consistent), TT and MM hi or lo (%s)",
				p.Class, strings.Join(Classes(), ", "))
		case p.Method != "" && p.Method != Range || p.TaskRange != 0 && p.TaskRange != c.TaskRange ||
			p.MachineRange != 0 && p.MachineRange != c.MachineRange || p.Consistency != "" && p.Consistency != c.Consistency:
			bad("class", "class %s sets method (range), task_range (%g), machine_range (%g) and consistency (%s): give either the class or those fields",
				p.Class, c.TaskRange, c.MachineRange, c.Consistency)
		default:
			p.Method, p.TaskRange, p.MachineRange, p.Consistency = Range, c.TaskRange, c.MachineRange, c.Consistency
		}
	}
	if p.Consistency == "" {
		p.Consistency = Inconsistent
	}
	switch p.Consistency {
	case Consistent, Inconsistent, PartiallyConsistent:
	default:
		bad("consistency", "expected consistent, inconsistent or partially-consistent, found %q", p.Consistency)
	}
	if p.Applications < 1 {
		bad("applications", "expected a whole number of applications from 1 up, found %d", p.Applications)
	}
	if p.Machines < 1 {
		bad("machines", "expected a whole number of machines from 1 up, found %d", p.Machines)
	}
	if p.Applications >= 1 && p.Machines >= 1 && p.Applications > MaxEntries/p.Machines {
		bad("", "%d x %d is more than %d entries", p.Applications, p.Machines, MaxEntries)
	}
	positive := func(field string, x float64) {
		if !(x > 0) || math.IsInf(x, 0) {
			bad(field, "expected a positive number, found %g", x)
		}
	}
	unused := func(method string, fields map[string]float64) {
		for _, f := range []string{"mean", "task_cv", "machine_cv", "task_range", "machine_range"} {
			if x, ok := fields[f]; ok && x != 0 {
				bad(f, "%s is not a parameter of the %s method", f, method)
			}
		}
	}
	switch p.Method {
	case CVB:
		positive("mean", p.Mean)
		positive("task_cv", p.TaskCV)
		positive("machine_cv", p.MachineCV)
		unused("cvb", map[string]float64{"task_range": p.TaskRange, "machine_range": p.MachineRange})
	case Range:
		if !(p.TaskRange >= 1) || math.IsInf(p.TaskRange, 0) {
			bad("task_range", "expected a number from 1 up (Braun et al.: 3000 high, 100 low), found %g", p.TaskRange)
		}
		if !(p.MachineRange >= 1) || math.IsInf(p.MachineRange, 0) {
			bad("machine_range", "expected a number from 1 up (Braun et al.: 1000 high, 10 low), found %g", p.MachineRange)
		}
		unused("range", map[string]float64{"mean": p.Mean, "task_cv": p.TaskCV, "machine_cv": p.MachineCV})
	case "":
		bad("method", "missing method: expected \"cvb\" or \"range\", or a class such as \"u_c_hihi\"")
	default:
		bad("method", "unknown method %q: expected \"cvb\" or \"range\"", p.Method)
	}
	return p, errs
}

type class struct {
	TaskRange, MachineRange float64
	Consistency             string
}

// parseClass reads u_C_TTMM.
func parseClass(name string) (class, bool) {
	var c class
	if len(name) != 8 || !strings.HasPrefix(name, "u_") || name[3] != '_' {
		return c, false
	}
	switch name[2] {
	case 'c':
		c.Consistency = Consistent
	case 'i':
		c.Consistency = Inconsistent
	case 's':
		c.Consistency = PartiallyConsistent
	default:
		return c, false
	}
	level := map[string]bool{"hi": true, "lo": false}
	t, ok1 := level[name[4:6]]
	m, ok2 := level[name[6:8]]
	if !ok1 || !ok2 {
		return c, false
	}
	c.TaskRange, c.MachineRange = TaskLow, MachineLow
	if t {
		c.TaskRange = TaskHigh
	}
	if m {
		c.MachineRange = MachineHigh
	}
	return c, true
}

// Generate draws the matrix (rows: applications, columns: machines).
func Generate(p Params) ([][]float64, error) {
	p, errs := p.Resolve()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	s := newStream(p.Seed)
	n, m := p.Applications, p.Machines
	flat := make([]float64, n*m)
	etc := make([][]float64, n)
	for i := range etc {
		etc[i] = flat[i*m : (i+1)*m : (i+1)*m]
	}
	switch p.Method {
	case CVB:
		aTask := 1 / float64(p.TaskCV*p.TaskCV)
		aMach := 1 / float64(p.MachineCV*p.MachineCV)
		for i := range etc {
			q := s.gamma(aTask, p.Mean/aTask)
			for j := range etc[i] {
				etc[i][j] = s.gamma(aMach, q/aMach)
			}
		}
	case Range:
		for i := range etc {
			tau := s.between(1, p.TaskRange)
			for j := range etc[i] {
				etc[i][j] = float64(tau * s.between(1, p.MachineRange))
			}
		}
	}
	// Gamma draws of a tiny shape can underflow to 0; an ETC must be
	// positive.
	for i, row := range etc {
		for j, x := range row {
			if !(x > 0) || math.IsInf(x, 0) {
				return nil, &FieldError{"", fmt.Sprintf("entry [%d][%d] came out as %g: the parameters give times outside the floating-point range (a smaller coefficient of variation keeps them in it)", i, j, x)}
			}
		}
	}
	applyConsistency(etc, p.Consistency)
	return etc, nil
}

// applyConsistency sorts every row (consistent), or the entries of its even
// columns among themselves (partially consistent).
func applyConsistency(etc [][]float64, consistency string) {
	var even []float64
	for _, row := range etc {
		switch consistency {
		case Consistent:
			sort.Float64s(row)
		case PartiallyConsistent:
			even = even[:0]
			for j := 0; j < len(row); j += 2 {
				even = append(even, row[j])
			}
			sort.Float64s(even)
			for k, x := range even {
				row[2*k] = x
			}
		}
	}
}

// Describe is a one-line account of the parameters, for the header of a
// written matrix.
func (p Params) Describe() string {
	p, _ = p.Resolve()
	var b strings.Builder
	fmt.Fprintf(&b, "%s method, %d applications x %d machines, ", p.Method, p.Applications, p.Machines)
	if p.Class != "" {
		fmt.Fprintf(&b, "class %s (", p.Class)
	}
	switch p.Method {
	case CVB:
		fmt.Fprintf(&b, "mean %g, task_cv %g, machine_cv %g", p.Mean, p.TaskCV, p.MachineCV)
	case Range:
		fmt.Fprintf(&b, "task_range %g, machine_range %g", p.TaskRange, p.MachineRange)
	}
	fmt.Fprintf(&b, ", %s", p.Consistency)
	if p.Class != "" {
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", seed %d", p.Seed)
	return b.String()
}
