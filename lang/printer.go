package lang

import (
	"bytes"
	"strings"
)

// Format prints a parsed file in canonical layout: one definition per line,
// operators spaced, the spelling variants normalised (infty, <>, /{...},
// [..] for array sets, '=' without markers, no ';' after the system
// equation: the form the PEPA Eclipse Plug-in reads), comments kept in their
// order, at most one blank line where the source had blank lines. Long
// choices and cooperations are broken over lines.
//
// Format(f) parses back to a file equal to f (Equal), and formatting is
// idempotent.
func Format(f *File) []byte {
	p := &printer{f: f, comments: f.Comments}
	for i, d := range f.Decls {
		next := -1
		if i+1 < len(f.Decls) {
			next = f.Decls[i+1].Pos().Offset
		} else if f.System != nil {
			next = f.System.Pos().Offset
		}
		p.item(d.Pos(), d.EndPos(), next, func() {
			switch d := d.(type) {
			case *RateDecl:
				p.buf.WriteString(d.Name.Name)
				p.buf.WriteString(" = ")
				p.buf.WriteString(ExprString(d.Value))
				p.buf.WriteString(";")
			case *ProcDecl:
				p.buf.WriteString(d.Name.Name)
				p.buf.WriteString(" = ")
				p.process(d.Body, len(d.Name.Name)+3)
				p.buf.WriteString(";")
			}
		})
	}
	if f.System != nil {
		if p.lastLine > 0 {
			p.blank = true // the system equation always stands apart
		}
		p.item(f.System.Pos(), f.SystemEnd, -1, func() { p.process(f.System, 0) })
	}
	p.flushComments(-1)
	return p.buf.Bytes()
}

// MaxLine is the width beyond which the printer breaks choices and
// cooperations over several lines.
const MaxLine = 100

type printer struct {
	f        *File
	buf      bytes.Buffer
	comments []Comment // not yet printed
	lastLine int       // source line where the last printed item ended
	blank    bool      // a blank line is due before the next item
}

// item prints one definition (or the system equation) with the comments
// before and inside it, and a comment that follows it on its last line
// before the next item starts (next, -1 for none).
func (p *printer) item(start, end Pos, next int, body func()) {
	p.flushComments(end.Offset)
	p.separate(start.Line)
	body()
	p.lastLine = end.Line
	if len(p.comments) > 0 && p.comments[0].Pos.Line == end.Line && !strings.Contains(p.comments[0].Text, "\n") &&
		(next < 0 || p.comments[0].Pos.Offset < next) {
		p.buf.WriteString("  ")
		p.buf.WriteString(commentText(p.comments[0]))
		p.comments = p.comments[1:]
	}
	p.buf.WriteByte('\n')
}

// flushComments prints the comments that start before offset (all if -1).
func (p *printer) flushComments(offset int) {
	for len(p.comments) > 0 && (offset < 0 || p.comments[0].Pos.Offset < offset) {
		c := p.comments[0]
		p.comments = p.comments[1:]
		p.separate(c.Pos.Line)
		p.buf.WriteString(commentText(c))
		p.buf.WriteByte('\n')
		p.lastLine = c.Pos.Line + strings.Count(c.Text, "\n")
	}
}

// commentText is a comment as printed: line comments lose trailing blanks.
func commentText(c Comment) string {
	if strings.HasPrefix(c.Text, "/*") {
		return c.Text
	}
	return strings.TrimRight(c.Text, " \t")
}

// separate writes a blank line if the source had one before line.
func (p *printer) separate(line int) {
	if p.buf.Len() > 0 && (p.blank || line > p.lastLine+1) {
		p.buf.WriteByte('\n')
	}
	p.blank = false
}

// process prints a term; indent is the column where it starts, for breaking
// long lines.
func (p *printer) process(x Process, indent int) {
	one := ProcessString(x)
	if indent+len(one) <= MaxLine {
		p.buf.WriteString(one)
		return
	}
	pad := "\n" + strings.Repeat(" ", 4)
	switch x := x.(type) {
	case *Choice:
		for i, a := range x.Alts {
			if i > 0 {
				p.buf.WriteString(pad + "+ ")
			}
			p.buf.WriteString(procString(a, precCoop))
		}
		return
	case *Coop:
		// Break before each set of the top-level, left-nested chain.
		var chain []*Coop
		var first Process = x
		for {
			c, ok := first.(*Coop)
			if !ok {
				break
			}
			chain = append(chain, c)
			first = c.X
		}
		p.buf.WriteString(procString(first, precCoop))
		for i := len(chain) - 1; i >= 0; i-- {
			p.buf.WriteString(pad)
			p.buf.WriteString(coopSet(chain[i]))
			p.buf.WriteString(pad)
			p.buf.WriteString(procString(chain[i].Y, precHide))
		}
		return
	}
	p.buf.WriteString(one)
}

// Precedence levels, loosest first.
const (
	precChoice = iota + 1
	precCoop
	precHide
	precPrefix
	precAtom
)

func procPrec(x Process) int {
	switch x.(type) {
	case *Choice:
		return precChoice
	case *Coop:
		return precCoop
	case *Hide:
		return precHide
	case *Prefix:
		return precPrefix
	}
	return precAtom
}

// ProcessString prints a process term on one line.
func ProcessString(x Process) string { return procString(x, precChoice) }

// procString prints x in a context that needs precedence at least min,
// adding parentheses if x binds more loosely (they are already in the tree
// for parsed input; this keeps hand-built trees printable).
func procString(x Process, min int) string {
	var b strings.Builder
	writeProc(&b, x, min)
	return b.String()
}

func writeProc(b *strings.Builder, x Process, min int) {
	if procPrec(x) < min {
		b.WriteByte('(')
		writeProc(b, x, precChoice)
		b.WriteByte(')')
		return
	}
	switch x := x.(type) {
	case *Prefix:
		b.WriteByte('(')
		b.WriteString(x.Action.Name)
		b.WriteString(", ")
		b.WriteString(ExprString(x.Rate))
		b.WriteString(").")
		writeProc(b, x.Then, precPrefix)
	case *Choice:
		for i, a := range x.Alts {
			if i > 0 {
				b.WriteString(" + ")
			}
			writeProc(b, a, precCoop)
		}
	case *Coop:
		writeProc(b, x.X, precCoop)
		b.WriteByte(' ')
		b.WriteString(coopSet(x))
		b.WriteByte(' ')
		writeProc(b, x.Y, precHide)
	case *Hide:
		writeProc(b, x.X, precHide)
		b.WriteString("/{")
		writeIdents(b, x.Actions)
		b.WriteByte('}')
	case *Const:
		b.WriteString(x.Name)
	case *Array:
		b.WriteString(x.Name.Name)
		b.WriteByte('[')
		b.WriteString(ExprString(x.Size))
		b.WriteByte(']')
		if x.Coop {
			b.WriteByte('[')
			writeIdents(b, x.Actions)
			b.WriteByte(']')
		}
	case *ParenProc:
		b.WriteByte('(')
		writeProc(b, x.X, precChoice)
		b.WriteByte(')')
	}
}

func coopSet(c *Coop) string {
	if c.Kind == CoopWildcard {
		return "<*>"
	}
	var b strings.Builder
	b.WriteByte('<')
	writeIdents(&b, c.Actions)
	b.WriteByte('>')
	return b.String()
}

func writeIdents(b *strings.Builder, ids []Ident) {
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(id.Name)
	}
}

// Expression precedence levels.
const (
	precAdd = iota + 1
	precMul
	precUnary
	precPrimary
)

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		if e.Op == '+' || e.Op == '-' {
			return precAdd
		}
		return precMul
	case *Unary:
		return precUnary
	}
	return precPrimary
}

// ExprString prints a rate expression.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e, precAdd)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr, min int) {
	if exprPrec(e) < min {
		b.WriteByte('(')
		writeExpr(b, e, precAdd)
		b.WriteByte(')')
		return
	}
	switch e := e.(type) {
	case *Number:
		b.WriteString(e.Text)
	case *RateRef:
		b.WriteString(e.Name)
	case *Passive:
		b.WriteString("infty")
	case *Unary:
		b.WriteByte(e.Op)
		writeExpr(b, e.X, precUnary)
	case *Binary:
		p := exprPrec(e)
		writeExpr(b, e.X, p)
		b.WriteByte(' ')
		b.WriteByte(e.Op)
		b.WriteByte(' ')
		writeExpr(b, e.Y, p+1)
	case *ParenExpr:
		b.WriteByte('(')
		writeExpr(b, e.X, precAdd)
		b.WriteByte(')')
	}
}
