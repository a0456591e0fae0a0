package lang

import "strings"

// Equal reports whether two files define the same model: the same
// definitions in the same order and the same system equation, with the same
// tree shapes (parentheses included) and the same number spellings.
// Positions, comments and spelling variants (T and infty, || and <>) are
// ignored.
func Equal(a, b *File) bool { return TreeString(a) == TreeString(b) }

// TreeString prints the tree of a file as nested S-expressions, without
// positions; tests use it to state the expected structure of a parse.
func TreeString(f *File) string {
	var b strings.Builder
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *RateDecl:
			b.WriteString("(rate " + d.Name.Name + " ")
			treeExpr(&b, d.Value)
		case *ProcDecl:
			b.WriteString("(proc " + d.Name.Name + " ")
			treeProc(&b, d.Body)
		}
		b.WriteString(")\n")
	}
	if f.System != nil {
		b.WriteString("(system ")
		treeProc(&b, f.System)
		b.WriteString(")\n")
	}
	return b.String()
}

func treeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Number:
		b.WriteString(e.Text)
	case *RateRef:
		b.WriteString(e.Name)
	case *Passive:
		b.WriteString("infty")
	case *Unary:
		b.WriteString("(" + string(e.Op) + " ")
		treeExpr(b, e.X)
		b.WriteString(")")
	case *Binary:
		b.WriteString("(" + string(e.Op) + " ")
		treeExpr(b, e.X)
		b.WriteString(" ")
		treeExpr(b, e.Y)
		b.WriteString(")")
	case *ParenExpr:
		b.WriteString("(paren ")
		treeExpr(b, e.X)
		b.WriteString(")")
	}
}

func treeIdents(b *strings.Builder, ids []Ident) {
	b.WriteString("{")
	for i, id := range ids {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(id.Name)
	}
	b.WriteString("}")
}

func treeProc(b *strings.Builder, p Process) {
	switch p := p.(type) {
	case *Prefix:
		b.WriteString("(. " + p.Action.Name + " ")
		treeExpr(b, p.Rate)
		b.WriteString(" ")
		treeProc(b, p.Then)
		b.WriteString(")")
	case *Choice:
		b.WriteString("(+")
		for _, a := range p.Alts {
			b.WriteString(" ")
			treeProc(b, a)
		}
		b.WriteString(")")
	case *Coop:
		b.WriteString("(coop ")
		if p.Kind == CoopWildcard {
			b.WriteString("*")
		} else {
			treeIdents(b, p.Actions)
		}
		b.WriteString(" ")
		treeProc(b, p.X)
		b.WriteString(" ")
		treeProc(b, p.Y)
		b.WriteString(")")
	case *Hide:
		b.WriteString("(hide ")
		treeIdents(b, p.Actions)
		b.WriteString(" ")
		treeProc(b, p.X)
		b.WriteString(")")
	case *Const:
		b.WriteString(p.Name)
	case *Array:
		b.WriteString("(array " + p.Name.Name + " ")
		treeExpr(b, p.Size)
		if p.Coop {
			b.WriteString(" ")
			treeIdents(b, p.Actions)
		}
		b.WriteString(")")
	case *ParenProc:
		b.WriteString("(paren ")
		treeProc(b, p.X)
		b.WriteString(")")
	}
}
