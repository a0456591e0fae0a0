package lang

import (
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2/lexer"
)

// Statements of one shape parse the same way.
//
// The grammar looks only at token types and at the spelling of punctuation
// and keywords, never at the text of a name or a number. So two statements
// whose token sequences agree in that respect ("r1 = 0.256" and "r2 = 0.128";
// "A1 = (compute1, infty).A1" and "A2 = (compute2, infty).A2") have syntax
// trees of the same form, differing only in the names, numbers and positions
// at their leaves. Generated mapping models repeat a handful of shapes tens of
// thousands of times; participle's reflective parser costs about 10 µs a
// statement, so the parser runs once per shape and later statements of that
// shape get a copy of the first tree with their own tokens substituted. The
// copy is exact: every position in a tree is the position of one of the
// statement's tokens, and it is mapped to the token at the same index.

type shapeCache struct {
	mu sync.Mutex
	m  map[string]*template
}

type template struct {
	kind   stmtKind
	decl   Decl
	system Process
	index  map[int]int // template token offset -> token index
}

// shapeKey spells a statement's tokens with names and numbers replaced by
// their type.
func shapeKey(toks []lexer.Token, b *strings.Builder) string {
	b.Reset()
	for _, t := range toks {
		switch t.Type {
		case tokIdent:
			b.WriteByte('i')
		case tokName:
			b.WriteByte('N')
		case tokNumber:
			b.WriteByte('0')
		default:
			b.WriteString(t.Value)
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func (c *shapeCache) get(key string) *template {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *shapeCache) put(key string, st *stmt, r *stmtResult) {
	t := &template{kind: st.kind(), decl: r.decl, system: r.system, index: make(map[int]int, len(st.toks))}
	for i, tok := range st.toks {
		t.index[tok.Pos.Offset] = i
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*template{}
	}
	c.m[key] = t
	c.mu.Unlock()
}

// instantiate builds the result for st, which has t's shape.
func (t *template) instantiate(filename string, st *stmt) stmtResult {
	var r stmtResult
	c := &cloner{t: t, toks: st.toks, p: &parser{file: filename, diags: &r.diags}}
	switch d := t.decl.(type) {
	case *RateDecl:
		r.decl = &RateDecl{Name: c.ident(d.Name), Value: c.expr(d.Value), End: st.endPos()}
	case *ProcDecl:
		r.decl = &ProcDecl{Name: c.ident(d.Name), Body: c.proc(d.Body), End: st.endPos()}
	default:
		r.system = c.proc(t.system)
	}
	return r
}

type cloner struct {
	t    *template
	toks []lexer.Token
	p    *parser
}

func (c *cloner) tok(p Pos) lexer.Token { return c.toks[c.t.index[p.Offset]] }
func (c *cloner) pos(p Pos) Pos         { return toPos(c.tok(p).Pos) }

func (c *cloner) ident(x Ident) Ident {
	t := c.tok(x.NamePos)
	return Ident{NamePos: toPos(t.Pos), Name: t.Value}
}

func (c *cloner) idents(xs []Ident) []Ident {
	if xs == nil {
		return nil
	}
	out := make([]Ident, len(xs))
	for i, x := range xs {
		out[i] = c.ident(x)
	}
	return out
}

func (c *cloner) expr(e Expr) Expr {
	switch e := e.(type) {
	case *Number:
		t := c.tok(e.ValuePos)
		pos := toPos(t.Pos)
		v, err := strconv.ParseFloat(t.Value, 64)
		if err != nil {
			c.p.errorf(pos, "number %s is out of the range of a 64-bit float", t.Value)
		}
		return &Number{ValuePos: pos, Text: t.Value, Value: v}
	case *RateRef:
		return &RateRef{c.ident(e.Ident)}
	case *Passive:
		return &Passive{InftyPos: c.pos(e.InftyPos)}
	case *Unary:
		return &Unary{OpPos: c.pos(e.OpPos), Op: e.Op, X: c.expr(e.X)}
	case *Binary:
		return &Binary{X: c.expr(e.X), OpPos: c.pos(e.OpPos), Op: e.Op, Y: c.expr(e.Y)}
	case *ParenExpr:
		return &ParenExpr{Lparen: c.pos(e.Lparen), X: c.expr(e.X)}
	}
	panic("lang: unknown expression node")
}

func (c *cloner) proc(p Process) Process {
	switch p := p.(type) {
	case *Prefix:
		return &Prefix{Lparen: c.pos(p.Lparen), Action: c.ident(p.Action), Rate: c.expr(p.Rate), Then: c.proc(p.Then)}
	case *Choice:
		alts := make([]Process, len(p.Alts))
		for i, a := range p.Alts {
			alts[i] = c.proc(a)
		}
		return &Choice{Alts: alts}
	case *Coop:
		return &Coop{X: c.proc(p.X), SetPos: c.pos(p.SetPos), Kind: p.Kind, Actions: c.idents(p.Actions), Y: c.proc(p.Y)}
	case *Hide:
		return &Hide{X: c.proc(p.X), SlashPos: c.pos(p.SlashPos), Actions: c.idents(p.Actions)}
	case *Const:
		return &Const{c.ident(p.Ident)}
	case *Array:
		return &Array{Name: c.ident(p.Name), Size: c.expr(p.Size), Actions: c.idents(p.Actions), Coop: p.Coop}
	case *ParenProc:
		return &ParenProc{Lparen: c.pos(p.Lparen), X: c.proc(p.X)}
	}
	panic("lang: unknown process node")
}
