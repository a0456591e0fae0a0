package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Column is one named measure of a point: its name is the path of the
// number in the verb's JSON output, which the caller gives (cmd/pepa
// flattens each verb's typed result).
type Column struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Result is what a sweep measured: every point's measures (Rows, in grid
// order from point First: the whole grid, or a shard's range of it) and
// the crossings of the Series (the models whose robustness is compared,
// none for other verbs) whose brackets start in that range.
type Result struct {
	Verb      string     `json:"verb"`
	Params    []Param    `json:"params"`
	Series    []string   `json:"series"`
	First     int        `json:"first"`
	Rows      [][]Column `json:"rows"`
	Crossings []Crossing `json:"crossings"`
}

// Points lists the grid (Grid of the parameters).
func (r *Result) Points() [][]float64 { return Grid(r.Params) }

// Names are the parameters' names.
func (r *Result) Names() []string {
	names := make([]string, len(r.Params))
	for i, p := range r.Params {
		names[i] = p.Name
	}
	return names
}

// Table lays the rows out as columns, in order of first appearance, and
// a value per point and column (NaN where a point lacks the measure).
func (r *Result) Table() (cols []string, table [][]float64) {
	colIndex := map[string]int{}
	for _, row := range r.Rows {
		for _, c := range row {
			if _, ok := colIndex[c.Name]; !ok {
				colIndex[c.Name] = len(cols)
				cols = append(cols, c.Name)
			}
		}
	}
	table = make([][]float64, len(r.Rows))
	for i, row := range r.Rows {
		table[i] = make([]float64, len(cols))
		for j := range table[i] {
			table[i][j] = math.NaN()
		}
		for _, c := range row {
			table[i][colIndex[c.Name]] = c.Value
		}
	}
	return cols, table
}

// Merge joins the results of ranges that cover one sweep's grid (given in
// any order) into the whole sweep's: the rows in grid order, the crossings
// in the order the whole sweep finds them (SortCrossings).
func Merge(parts []*Result) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("no result to merge")
	}
	ps := slices.Clone(parts)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].First < ps[j].First })
	p0 := ps[0]
	// The grid's size, from the parameters (without listing it).
	size := 1
	if len(p0.Params) < 1 || len(p0.Params) > 2 {
		return nil, fmt.Errorf("a sweep has one or two parameters, not %d", len(p0.Params))
	}
	for _, p := range p0.Params {
		if len(p.Values) == 0 || len(p.Values) > MaxPoints {
			return nil, fmt.Errorf("parameter %s has %d values", p.Name, len(p.Values))
		}
		size *= len(p.Values)
	}
	out := &Result{Verb: p0.Verb, Params: p0.Params, Series: p0.Series, Rows: [][]Column{}, Crossings: []Crossing{}}
	for _, p := range ps {
		switch {
		case p.Verb != p0.Verb || !slices.Equal(p.Series, p0.Series) || !sameParams(p.Params, p0.Params):
			return nil, fmt.Errorf("the results from points %d and %d are of different sweeps", p0.First, p.First)
		case p.First < len(out.Rows):
			return nil, fmt.Errorf("points from %d are given twice", p.First)
		case p.First > len(out.Rows):
			return nil, fmt.Errorf("points %d to %d are missing", len(out.Rows), p.First-1)
		}
		out.Rows = append(out.Rows, p.Rows...)
		out.Crossings = append(out.Crossings, p.Crossings...)
	}
	if len(out.Rows) != size {
		return nil, fmt.Errorf("the results hold %d of the grid's %d points", len(out.Rows), size)
	}
	if len(out.Crossings) > 0 && (len(out.Params) != 1 || len(out.Series) < 2) {
		return nil, errors.New("crossings of a sweep that compares no series")
	}
	SortCrossings(out.Crossings)
	return out, nil
}

func sameParams(a, b []Param) bool {
	return slices.EqualFunc(a, b, func(x, y Param) bool { return x.Name == y.Name && slices.Equal(x.Values, y.Values) })
}
