package spec

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// etcFile is an ETC matrix read from a CSV file (etc_csv), with the names
// the file gives, if any, and where each name is in the file.
type etcFile struct {
	path     string
	etc      [][]float64 // [application][machine]
	apps     []string    // from a column of names; nil if the file names no application
	machines []string    // from the header row; nil if the file names no machine
	appAt    []cellPos
	machAt   []cellPos
}

// cellPos is the line and column (from 1, in bytes) of a cell of a CSV
// file.
type cellPos struct{ line, col int }

// maxETCFileErrors bounds the errors reported for one ETC file: past it a
// note says how many more there are (a file that is not an ETC matrix at
// all must not flood the terminal).
const maxETCFileErrors = 20

// csvCell is one cell of a CSV record, trimmed of spaces, with its place.
type csvCell struct {
	text string
	cellPos
}

// csvRecord is one record of a CSV file.
type csvRecord []csvCell

// parseETCFile reads an ETC matrix from CSV text (semantics.md section 4,
// "ETC files"): rows of numbers, one per application, optionally under a
// header row that names the machines and after a first column that names
// the applications. Lines starting with '#' are comments. It returns every
// problem found in the file, each at the file's own line and column; a
// file with any problem gives no matrix.
func parseETCFile(path string, src []byte) (*etcFile, SpecErrors) {
	var errs SpecErrors
	bad := func(p cellPos, format string, args ...any) {
		errs = append(errs, &SpecError{File: path, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)})
	}
	// A spreadsheet's byte-order mark is not part of the first cell.
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	cr := csv.NewReader(bytes.NewReader(src))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cr.ReuseRecord = true
	var recs []csvRecord
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				where := ""
				if pe.StartLine != pe.Line {
					where = fmt.Sprintf(" (in the row that starts on line %d)", pe.StartLine)
				}
				bad(cellPos{pe.Line, pe.Column}, "invalid CSV: %v%s", pe.Err, where)
			} else {
				bad(cellPos{1, 0}, "invalid CSV: %v", err)
			}
			return nil, errs
		}
		r := make(csvRecord, len(rec))
		for i, field := range rec {
			line, col := cr.FieldPos(i)
			r[i] = csvCell{strings.TrimSpace(field), cellPos{line, col}}
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		bad(cellPos{1, 0}, "the ETC file has no rows: expected one row of expected times to compute per application, one column per machine")
		return nil, errs
	}

	var header csvRecord
	data := recs
	if isHeader(recs[0]) {
		header, data = recs[0], recs[1:]
	}
	if len(data) == 0 {
		bad(header[0].cellPos, "the ETC file has a header row but no rows of numbers: expected one row of expected times to compute per application")
		return nil, errs
	}
	w := len(data[0])
	named := hasNamesColumn(header, data)
	// The header names the machines: every cell, or every cell but the
	// first, which is then the label of the names column.
	var machCells csvRecord
	switch {
	case header == nil:
	case named && len(header) == w:
		machCells = header[1:]
	case named && len(header) == w-1 || !named && len(header) == w:
		machCells = header
	default:
		cols := "holding a number per machine"
		if named {
			cols = "a column of application names, then a number per machine"
		}
		bad(header[0].cellPos, "the header row has %s, but the rows below it have %d (%s): expected one name per column", cells(len(header)), w, cols)
	}
	f := &etcFile{path: path}
	if machCells != nil {
		f.machines, f.machAt = fileNames(machCells)
	}
	if named {
		col := make(csvRecord, len(data))
		for i, r := range data {
			col[i] = r[0]
		}
		f.apps, f.appAt = fileNames(col)
	}

	skip := 0
	if named {
		skip = 1
	}
	f.etc = make([][]float64, len(data))
	for i, r := range data {
		if len(r) != w {
			at := r[0].cellPos
			if len(r) > w {
				at = r[w].cellPos
			}
			bad(at, "ragged ETC matrix: this row has %s, the first row has %d", cells(len(r)), w)
			continue
		}
		row := make([]float64, w-skip)
		for j, c := range r[skip:] {
			x, ok := number(c.text)
			switch {
			case c.text == "":
				bad(c.cellPos, "ETC[%d][%d] is empty: expected a number (an expected time to compute)", i+1, j+1)
			case !ok:
				bad(c.cellPos, "ETC[%d][%d] is %q: expected a number (an expected time to compute)", i+1, j+1, c.text)
			case !(x > 0) || math.IsInf(x, 0):
				bad(c.cellPos, "ETC[%d][%d] is %s: an expected time to compute must be positive and finite", i+1, j+1, c.text)
			}
			row[j] = x
		}
		f.etc[i] = row
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(a, b int) bool {
			if errs[a].Line != errs[b].Line {
				return errs[a].Line < errs[b].Line
			}
			return errs[a].Col < errs[b].Col
		})
		if len(errs) > maxETCFileErrors {
			next := errs[maxETCFileErrors]
			more := len(errs) - maxETCFileErrors
			errs = append(errs[:maxETCFileErrors:maxETCFileErrors], &SpecError{File: path, Line: next.Line, Col: next.Col,
				Msg: fmt.Sprintf("too many errors in this ETC file: %d more not shown", more)})
		}
		return nil, errs
	}
	return f, nil
}

// number parses a cell as a number; a number out of float64's range (1e400)
// is a number still (±Inf), which the caller rejects as such.
func number(s string) (float64, bool) {
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil || errors.Is(err, strconv.ErrRange)
}

// isHeader decides whether the first record of an ETC file is a header row
// rather than a row of the matrix:
//   - a record whose first cell is a number is a row of the matrix;
//   - a record whose other cells are all numbers is a row of the matrix
//     after the application's name (or with a bad first number), unless its
//     first cell is empty and the others number the columns 0, 1, 2, ... or
//     1, 2, 3, ... (what pandas writes above a DataFrame without column
//     names): that is a header;
//   - otherwise it is a header row, unless most of its cells after the
//     first are numbers (a row of the matrix with bad cells, reported as
//     such).
func isHeader(r csvRecord) bool {
	if _, ok := number(r[0].text); ok {
		return false
	}
	tail := r[1:]
	nums := 0
	for _, c := range tail {
		if _, ok := number(c.text); ok {
			nums++
		}
	}
	if len(tail) > 0 && nums == len(tail) {
		return r[0].text == "" && isNumbering(tail)
	}
	return 2*nums <= len(tail)
}

// hasNamesColumn decides whether the first column of the data rows holds
// the applications' names: there are at least two columns, and either most
// of its cells are not numbers, or they number the rows (0, 1, 2, ... or 1,
// 2, 3, ...: a pandas DataFrame's default index) and the header's shape
// says it is a column of labels (its first cell is empty, or it has one
// cell fewer than the rows).
func hasNamesColumn(header csvRecord, data []csvRecord) bool {
	w := len(data[0])
	if w < 2 {
		return false
	}
	texts := 0
	col := make(csvRecord, len(data))
	for i, r := range data {
		col[i] = r[0]
		if _, ok := number(r[0].text); !ok {
			texts++
		}
	}
	if 2*texts > len(data) {
		return true
	}
	labels := header != nil && (len(header) == w-1 || len(header) == w && header[0].text == "")
	return labels && isNumbering(col)
}

// isNumbering reports whether the cells are the whole numbers 0, 1, 2, ...
// or 1, 2, 3, ..., in order.
func isNumbering(cells csvRecord) bool {
	if len(cells) == 0 {
		return false
	}
	from := -1
	for i, c := range cells {
		n, err := strconv.Atoi(c.text)
		if err != nil {
			return false
		}
		if i == 0 {
			from = n
			if from != 0 && from != 1 {
				return false
			}
		}
		if n != from+i {
			return false
		}
	}
	return true
}

// fileNames are the names in the cells that name the applications or the
// machines. A numbering (0, 1, 2, ... or 1, 2, 3, ...) names nothing: the
// result is nil, and the default names A1, A2, ... or M1, M2, ... are used.
// The names are checked where they are used (checkNames): a list the
// specification gives names them instead, and the file's must equal it.
func fileNames(cells csvRecord) ([]string, []cellPos) {
	if isNumbering(cells) {
		return nil, nil
	}
	out := make([]string, len(cells))
	at := make([]cellPos, len(cells))
	for i, c := range cells {
		out[i], at[i] = c.text, c.cellPos
	}
	return out, at
}

// checkNames reports the names of the ETC file that cannot name
// components of the generated models, and names used twice, at their
// cells. what is "application" or "machine".
func (f *etcFile) checkNames(what string) SpecErrors {
	names, at, where := f.apps, f.appAt, "in column 1"
	if what == "machine" {
		names, at, where = f.machines, f.machAt, "in the header"
	}
	var errs SpecErrors
	bad := func(p cellPos, format string, args ...any) {
		errs = append(errs, &SpecError{File: f.path, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)})
	}
	seen := map[string]cellPos{}
	for i, name := range names {
		if msg := nameProblem(name); msg != "" {
			bad(at[i], "%s name %q (%s) %s", what, name, where, msg)
			continue
		}
		if prev, ok := seen[name]; ok {
			bad(at[i], "%s name %q is used twice (first at line %d, column %d): expected distinct names", what, name, prev.line, prev.col)
			continue
		}
		seen[name] = at[i]
	}
	if len(errs) > maxETCFileErrors {
		next := errs[maxETCFileErrors]
		errs = append(errs[:maxETCFileErrors:maxETCFileErrors], &SpecError{File: f.path, Line: next.Line, Col: next.Col,
			Msg: fmt.Sprintf("too many errors in the %s names of this ETC file: %d more not shown", what, len(errs)-maxETCFileErrors)})
	}
	return errs
}

// nameProblem says why a string cannot name a component of a PEPA model,
// as the predicate of a sentence about it ("" if it can).
func nameProblem(s string) string {
	switch {
	case s == "":
		return "is empty: expected a name"
	case s == "T":
		return "is reserved in PEPA (T is the passive rate): expected another name"
	case !isProcessName(s):
		return "must start with an upper-case letter and hold only letters, digits and '_' (it names a component of the generated models)"
	}
	return ""
}

// cells is "1 cell" or "n cells".
func cells(n int) string {
	if n == 1 {
		return "1 cell"
	}
	return fmt.Sprintf("%d cells", n)
}
