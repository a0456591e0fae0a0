package lang

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a source file. Line and Col are 1-based; Col counts
// bytes, as go/scanner does. The zero Pos means "no position".
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Severity says whether a diagnostic stops the model from being used.
type Severity int

const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one message about a source position.
type Diagnostic struct {
	File     string
	Pos      Pos
	Severity Severity
	Msg      string
}

// String formats d as FILE:LINE:COL: SEVERITY: MESSAGE.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", d.File, d.Pos.Line, d.Pos.Col, d.Severity, d.Msg)
}

// Diagnostics is a list of diagnostics collected during one run.
type Diagnostics []Diagnostic

func (l *Diagnostics) add(d Diagnostic) { *l = append(*l, d) }

// Sort orders the list by file and position (stable, so messages at the same
// position keep the order in which they were found), and drops exact
// duplicates.
func (l *Diagnostics) Sort() {
	sort.SliceStable(*l, func(i, j int) bool {
		a, b := (*l)[i], (*l)[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Pos.Offset < b.Pos.Offset
	})
	out := (*l)[:0]
	for i, d := range *l {
		if i > 0 && d == (*l)[i-1] {
			continue
		}
		out = append(out, d)
	}
	*l = out
}

// MaxDiagnostics bounds the diagnostics kept for one file: past it the list
// ends with a note, as compilers do, so a hostile input cannot flood the
// terminal.
const MaxDiagnostics = 1000

// truncate keeps the first MaxDiagnostics entries of a sorted list.
func (l *Diagnostics) truncate() {
	if len(*l) <= MaxDiagnostics {
		return
	}
	last := (*l)[MaxDiagnostics-1]
	*l = append((*l)[:MaxDiagnostics:MaxDiagnostics], Diagnostic{File: last.File, Pos: last.Pos, Severity: Error,
		Msg: fmt.Sprintf("too many errors: %d more not shown", len(*l)-MaxDiagnostics)})
}

// HasErrors reports whether any diagnostic is an error.
func (l Diagnostics) HasErrors() bool {
	for _, d := range l {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errors returns only the errors.
func (l Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range l {
		if d.Severity == Error {
			out = append(out, d)
		}
	}
	return out
}

// Err returns l as an error if it holds at least one error, else nil.
func (l Diagnostics) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return &DiagnosticsError{List: l.Errors()}
}

// DiagnosticsError is the error returned when a model has errors; errors.As
// recovers the list.
type DiagnosticsError struct{ List Diagnostics }

func (e *DiagnosticsError) Error() string {
	var b strings.Builder
	for i, d := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}
