package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"pepa/internal/option"
	"pepa/lang"
)

// Param is a rate constant and the values it takes.
type Param struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// MaxPoints bounds the values of one parameter.
const MaxPoints = 100000

// ParseVary reads NAME=START:STOP:STEP (STOP included when the steps reach
// it to within 1e-9 of a step) or NAME=V1,V2,....
func ParseVary(spec string) (Param, error) {
	name, rng, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(rng) == "" {
		return Param{}, option.Errorf("{Vary} wants NAME=START:STOP:STEP or NAME=V1,V2,..., got %q", spec)
	}
	p := Param{Name: name}
	num := func(s string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, option.Errorf("{Vary} %s: %q is not a number", name, strings.TrimSpace(s))
		}
		return x, nil
	}
	if strings.Contains(rng, ":") {
		parts := strings.Split(rng, ":")
		if len(parts) != 3 {
			return Param{}, option.Errorf("{Vary} %s: want START:STOP:STEP, got %q", name, rng)
		}
		var v [3]float64
		for i, s := range parts {
			x, err := num(s)
			if err != nil {
				return Param{}, err
			}
			v[i] = x
		}
		start, stop, step := v[0], v[1], v[2]
		if !(step > 0) || stop < start {
			return Param{}, option.Errorf("{Vary} %s: want START <= STOP and STEP > 0, got %q", name, rng)
		}
		n := int(math.Floor((stop-start)/step+1e-9)) + 1
		if n > MaxPoints {
			return Param{}, option.Errorf("{Vary} %s: %d values, more than %d", name, n, MaxPoints)
		}
		for i := 0; i < n; i++ {
			// start + i*step, rounded to the step's decimals when it has
			// few, so that 0.5:1:0.05 gives 0.55, not 0.5500000000000002.
			p.Values = append(p.Values, roundLike(start+float64(i)*step, step, start))
		}
		return p, positive(p)
	}
	for _, s := range strings.Split(rng, ",") {
		x, err := num(s)
		if err != nil {
			return Param{}, err
		}
		p.Values = append(p.Values, x)
	}
	return p, positive(p)
}

// positive refuses a value of zero or less: a rate is positive, and a
// sweep keeps the chain's structure from point to point (ChainCache),
// which a rate that vanishes would change.
func positive(p Param) error {
	for _, v := range p.Values {
		if !(v > 0) {
			return option.Errorf("{Vary} %s: the value %s is not positive: a rate constant must be", p.Name, FormatValue(v))
		}
	}
	return nil
}

// roundLike rounds x to the number of decimals of the step and start when
// those are short decimal numbers (at most 12 decimals), else returns x.
func roundLike(x, step, start float64) float64 {
	d := max(decimals(step), decimals(start))
	if d < 0 {
		return x
	}
	s := strconv.FormatFloat(x, 'f', d, 64)
	y, _ := strconv.ParseFloat(s, 64)
	return y
}

func decimals(x float64) int {
	s := strconv.FormatFloat(math.Abs(x), 'f', -1, 64)
	_, frac, _ := strings.Cut(s, ".")
	if len(frac) > 12 {
		return -1
	}
	return len(frac)
}

// Grid lists every combination of the parameters' values, the first
// parameter varying slowest.
func Grid(params []Param) [][]float64 {
	out := [][]float64{{}}
	for _, p := range params {
		var next [][]float64
		for _, prefix := range out {
			for _, v := range p.Values {
				next = append(next, append(append([]float64(nil), prefix...), v))
			}
		}
		out = next
	}
	return out
}

// FormatValue writes a value as the edited model holds it.
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// SetRates parses a model, sets the named rate constants to the values
// (each definition's right-hand side becomes the number), and checks it.
// The diagnostics of a point that does not check (a rate that becomes
// negative, say) are returned as the error.
func SetRates(filename string, src []byte, names []string, values []float64) (*lang.Model, error) {
	f, diags := lang.Parse(filename, src)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	for i, name := range names {
		found := false
		for _, d := range f.Decls {
			rd, ok := d.(*lang.RateDecl)
			if !ok || rd.Name.Name != name {
				continue
			}
			rd.Value = &lang.Number{ValuePos: rd.Value.Pos(), Text: FormatValue(values[i]), Value: values[i]}
			found = true
		}
		if !found {
			var rates []string
			for _, d := range f.Decls {
				if rd, ok := d.(*lang.RateDecl); ok {
					rates = append(rates, rd.Name.Name)
				}
			}
			sort.Strings(rates)
			if len(rates) > 12 {
				rates = append(rates[:12], "...")
			}
			return nil, fmt.Errorf("%s: no rate constant %s to vary (the rate constants are %s)", filename, name, strings.Join(rates, ", "))
		}
	}
	m, diags := lang.Check(f)
	if diags.HasErrors() {
		return nil, fmt.Errorf("with %s: %w", assignment(names, values), diags.Err())
	}
	return m, nil
}

func assignment(names []string, values []float64) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " = " + FormatValue(values[i])
	}
	return strings.Join(parts, ", ")
}

// EditSource returns the source with the named rate definitions' right-hand
// sides replaced by the values, as text: the model a user would write by
// hand for that point.
func EditSource(filename string, src []byte, names []string, values []float64) ([]byte, error) {
	f, diags := lang.Parse(filename, src)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	for i, name := range names {
		found := false
		for _, d := range f.Decls {
			rd, ok := d.(*lang.RateDecl)
			if !ok || rd.Name.Name != name {
				continue
			}
			// The value runs from after '=' to the ';' that ends at End.
			from := rd.Value.Pos().Offset
			to := rd.End.Offset - 1
			for to > from && src[to] != ';' {
				to--
			}
			edits = append(edits, edit{from, to, FormatValue(values[i])})
			found = true
		}
		if !found {
			return nil, fmt.Errorf("%s: no rate constant %s to vary", filename, name)
		}
	}
	sort.Slice(edits, func(a, b int) bool { return edits[a].from > edits[b].from })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.from], append([]byte(e.text), out[e.to:]...)...)
	}
	return out, nil
}

// RunPoints evaluates every point on workers goroutines (0: every core)
// and returns the results in point order. The first error stops the run.
func RunPoints[R any](ctx context.Context, points int, workers int, eval func(ctx context.Context, i int) (R, error)) ([]R, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]R, points)
	errs := make([]error, points)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, points); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				var err error
				if out[i], err = eval(ctx, i); err != nil {
					errs[i] = err
					cancel()
				}
			}
		}()
	}
	for i := 0; i < points; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Crossing is a parameter value where series A overtakes series B (A - B
// changes sign from negative to positive as the parameter grows), or the
// reverse.
type Crossing struct {
	A     string  `json:"a"`
	B     string  `json:"b"`
	Lo    float64 `json:"lo"` // the bracketing grid values
	Hi    float64 `json:"hi"`
	X     float64 `json:"x"`     // the crossing, refined by bisection
	Value float64 `json:"value"` // the series' common value there (their mean at X)
	// AOvertakes is true when A is below B at Lo and above at Hi.
	AOvertakes bool `json:"a_overtakes"`
	// Order is (A's index, B's index, Lo's grid index): where the crossing
	// comes in a scan of the whole grid, for SortCrossings.
	Order [3]int `json:"order"`
}

// ErrNoRefine is returned by a refine function that cannot evaluate.
var ErrNoRefine = errors.New("cannot refine")

// Crossings finds, for every pair of series over the grid xs (increasing),
// the intervals where their difference changes sign (a zero at a grid
// point counts as a change between its neighbours with opposite signs), and
// refines each by bisection with eval(x) returning every series' value at
// x, to a relative width tol of the bracketing interval (or leaves X at the
// linear interpolation when eval is nil). ys[k][i] is series k at xs[i].
func Crossings(ctx context.Context, xs []float64, names []string, ys [][]float64, eval func(ctx context.Context, x float64) ([]float64, error), tol float64) ([]Crossing, error) {
	at := func(_ context.Context, i int) ([]float64, error) {
		v := make([]float64, len(ys))
		for k := range ys {
			v[k] = ys[k][i]
		}
		return v, nil
	}
	out, err := CrossingsFrom(ctx, xs, names, at, 0, len(xs), eval, tol)
	if err != nil {
		return nil, err
	}
	SortCrossings(out)
	return out, nil
}

// CrossingsFrom finds the crossings whose bracket starts at a grid point
// in [lo, hi), as Crossings does over the whole grid: at(i) gives every
// series' value at grid point i, asked for points from lo on and past hi
// only as far as a bracket that starts before hi reaches (the next point
// where the difference is neither zero nor NaN). So the crossings of a
// grid cut into ranges are the union of the ranges', each found once; in
// SortCrossings order they are the whole grid's, in its order.
func CrossingsFrom(ctx context.Context, xs []float64, names []string, at func(ctx context.Context, i int) ([]float64, error), lo, hi int, eval func(ctx context.Context, x float64) ([]float64, error), tol float64) ([]Crossing, error) {
	var out []Crossing
	for a := 0; a < len(names); a++ {
		for b := a + 1; b < len(names); b++ {
			last, dLast := -1, 0.0 // the last grid index with a non-zero difference, and it
			for k := lo; k < len(xs); k++ {
				if k >= hi && last < 0 {
					break
				}
				v, err := at(ctx, k)
				if err != nil {
					return nil, err
				}
				d := v[a] - v[b]
				if d == 0 || math.IsNaN(d) {
					continue
				}
				if last >= 0 && (dLast < 0) != (d < 0) {
					lv, err := at(ctx, last)
					if err != nil {
						return nil, err
					}
					c := Crossing{A: names[a], B: names[b], Lo: xs[last], Hi: xs[k], AOvertakes: dLast < 0, Order: [3]int{a, b, last}}
					c.X = c.Lo + (c.Hi-c.Lo)*dLast/(dLast-d)
					c.Value = lv[a] + (v[a]-lv[a])*(c.X-c.Lo)/(c.Hi-c.Lo)
					if eval != nil {
						if err := refine(ctx, &c, a, b, dLast, eval, tol); err != nil {
							return nil, err
						}
					}
					out = append(out, c)
				}
				if k >= hi {
					break
				}
				last, dLast = k, d
			}
		}
	}
	return out, nil
}

// SortCrossings orders crossings by their parameter value, and those at one
// value as a scan of the grid meets them (pair by pair, then along the
// grid).
func SortCrossings(cs []Crossing) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].Order, cs[j].Order
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].X < cs[j].X })
}

func refine(ctx context.Context, c *Crossing, a, b int, dLo float64, eval func(ctx context.Context, x float64) ([]float64, error), tol float64) error {
	lo, hi := c.Lo, c.Hi
	width := hi - lo
	for i := 0; i < 200 && hi-lo > tol*width; i++ {
		mid := lo + (hi-lo)/2
		v, err := eval(ctx, mid)
		if err != nil {
			return err
		}
		d := v[a] - v[b]
		c.X, c.Value = mid, (v[a]+v[b])/2
		if d == 0 {
			return nil
		}
		if (d < 0) == (dLo < 0) {
			lo = mid
		} else {
			hi = mid
		}
	}
	c.X = lo + (hi-lo)/2
	return nil
}
