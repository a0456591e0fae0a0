package lang

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// MaxNesting bounds the depth of nested brackets in one statement. Real models
// nest a handful of levels; the bound keeps hostile input (a megabyte of
// parentheses) from exhausting the stack.
const MaxNesting = 256

// Parse parses one model file. It always returns a File (possibly with parts
// missing where there were errors) and every syntax error it found: each
// statement (text up to a ';') is parsed on its own, so an error in one
// statement does not hide errors in the others.
func Parse(filename string, src []byte) (*File, Diagnostics) {
	f, diags := parse(filename, src)
	diags.truncate()
	return f, diags
}

func parse(filename string, src []byte) (*File, Diagnostics) {
	var diags Diagnostics
	s := scan(filename, string(src), &diags)
	p := &parser{file: filename, diags: &diags}
	f := &File{Name: filename, Comments: s.comments, Broken: map[string]bool{}}
	stmts := p.split(s.toks)
	results := parseAll(filename, stmts)
	p.diagnose(stmts, results, f)

	var sysPos Pos
	maySystem := false // a statement that did not parse may have been the system equation
	for i := range stmts {
		r := &results[i]
		diags = append(diags, r.diags...)
		if r.broken != "" {
			f.Broken[r.broken] = true
		}
		switch {
		case r.decl != nil:
			f.Decls = append(f.Decls, r.decl)
			if sysPos.IsValid() {
				p.errorf(r.decl.Pos(), "definition after the system equation (at %s): the system equation must come last", sysPos)
			}
		case r.system != nil:
			if sysPos.IsValid() {
				p.errorf(r.system.Pos(), "a model has one system equation; this is a second one (the first is at %s)", sysPos)
				continue
			}
			f.System, f.SystemEnd, sysPos = r.system, stmts[i].endPos(), r.system.Pos()
		case r.failedSystem || i == len(stmts)-1:
			// Its error is reported; a statement that did not parse is
			// not taken as the system equation (a definition missing its
			// '=' reads as one), so it neither makes the definitions
			// after it misplaced nor the system equation after it a
			// second one, and the file is not said to lack one.
			maySystem = true
		}
	}
	if !sysPos.IsValid() && !maySystem {
		pos := toPos(s.toks[len(s.toks)-1].Pos)
		p.errorf(pos, "missing system equation: expected a process expression after the definitions, found end of file")
	}
	diags.Sort()
	return f, diags
}

// stmtResult is what parsing one statement gives.
type stmtResult struct {
	decl         Decl
	system       Process
	failedSystem bool   // a system equation with a syntax error
	broken       string // name of a definition with a syntax error
	// synErr is the statement's syntax error, turned into a message by
	// diagnose once every statement is parsed (what the other
	// statements define decides what the error is said to be).
	synErr error
	diags  Diagnostics
}

// parseAll parses the statements, in parallel when there are many: each
// statement is independent, and participle's reflective parsing is the
// largest cost of loading a big model. Results are in statement order, so the
// outcome does not depend on scheduling.
func parseAll(filename string, stmts []*stmt) []stmtResult {
	results := make([]stmtResult, len(stmts))
	cache := &shapeCache{}
	workers := runtime.GOMAXPROCS(0)
	if len(stmts) < 256 || workers == 1 {
		var key strings.Builder
		for i, st := range stmts {
			results[i] = parseStmt(filename, st, cache, &key)
		}
		return results
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	const chunk = 64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var key strings.Builder
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(stmts) {
					return
				}
				for i := lo; i < min(lo+chunk, len(stmts)); i++ {
					results[i] = parseStmt(filename, stmts[i], cache, &key)
				}
			}
		}()
	}
	wg.Wait()
	return results
}

// maxShapeTokens bounds the statements whose shape is cached: long ones (a
// system equation) rarely repeat.
const maxShapeTokens = 4096

func parseStmt(filename string, st *stmt, cache *shapeCache, key *strings.Builder) stmtResult {
	if st.bad {
		r := stmtResult{broken: st.defName()}
		r.failedSystem = r.broken == "" && st.kind() == stmtSystem && !st.looksLikeDef()
		return r
	}
	if len(st.toks) > maxShapeTokens {
		return parseStmtSlow(filename, st)
	}
	k := shapeKey(st.toks, key)
	if t := cache.get(k); t != nil {
		return t.instantiate(filename, st)
	}
	r := parseStmtSlow(filename, st)
	if len(r.diags) == 0 && r.synErr == nil && r.broken == "" && !r.failedSystem {
		cache.put(k, st, &r)
	}
	return r
}

// parseStmtSlow runs participle on one statement.
func parseStmtSlow(filename string, st *stmt) (r stmtResult) {
	p := &parser{file: filename, diags: &r.diags}
	end := st.endPos()
	switch st.kind() {
	case stmtRate:
		g, err := rateParser.ParseFromLexer(st.lexer())
		if err != nil {
			r.synErr, r.broken = err, st.defName()
			return r
		}
		r.decl = &RateDecl{Name: Ident{NamePos: toPos(g.Name.Pos), Name: g.Name.Name}, Value: p.expr(g.Value), End: end}
	case stmtProc:
		g, err := procParser.ParseFromLexer(st.lexer())
		if err != nil {
			r.synErr, r.broken = err, st.defName()
			return r
		}
		r.decl = &ProcDecl{Name: Ident{NamePos: toPos(g.Name.Pos), Name: g.Name.Name}, Body: p.choice(g.Body), End: end}
	default:
		g, err := sysParser.ParseFromLexer(st.lexer())
		if err != nil {
			r.synErr, r.failedSystem = err, true
			return r
		}
		r.system = p.choice(g.Body)
	}
	return r
}

type parser struct {
	file  string
	diags *Diagnostics
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	p.diags.add(Diagnostic{File: p.file, Pos: pos, Severity: Error, Msg: fmt.Sprintf(format, args...)})
}

func toPos(p lexer.Position) Pos { return Pos{Offset: p.Offset, Line: p.Line, Col: p.Column} }

// ---- statements ----

type stmtKind int

const (
	stmtRate stmtKind = iota
	stmtProc
	stmtSystem
)

// stmt is the tokens of one statement, without its terminating ';'.
type stmt struct {
	toks []lexer.Token
	term lexer.Token // the ';' or the end of file
	bad  bool        // an error was already reported (bad character, nesting)
}

func (st *stmt) kind() stmtKind {
	t0 := st.toks[0]
	var t1 lexer.Token
	if len(st.toks) > 1 {
		t1 = st.toks[1]
	}
	isAssign := func(t lexer.Token) bool { return t.Type == tokPunct && (t.Value == "=" || t.Value == ":=") }
	switch {
	case t0.Type == tokPunct && t0.Value == "%":
		return stmtRate
	case t0.Type == tokPunct && t0.Value == "#":
		return stmtProc
	case t0.Type == tokIdent:
		return stmtRate
	case t0.Type == tokName && isAssign(t1):
		return stmtProc
	}
	return stmtSystem
}

// defName is the name a definition statement defines, or "".
func (st *stmt) defName() string {
	toks := st.toks
	if len(toks) > 0 && toks[0].Type == tokPunct && (toks[0].Value == "%" || toks[0].Value == "#") {
		toks = toks[1:]
	}
	if len(toks) > 1 && (toks[0].Type == tokIdent || toks[0].Type == tokName) && toks[1].Type == tokPunct && (toks[1].Value == "=" || toks[1].Value == ":=") {
		return toks[0].Value
	}
	return ""
}

// looksLikeDef reports whether a statement reads "X = ..." even if X is not a
// valid name.
func (st *stmt) looksLikeDef() bool {
	for _, t := range st.toks[1:min(3, len(st.toks))] {
		if t.Type == tokPunct && (t.Value == "=" || t.Value == ":=") {
			return true
		}
	}
	return false
}

// endPos is the position just after the statement's ';' (or of the end of file).
// Without a ';' it is the end of the statement's last token.
func (st *stmt) endPos() Pos {
	t := st.term
	if t.Type == tokEOF {
		t = st.toks[len(st.toks)-1]
	}
	p := toPos(t.Pos)
	p.Offset += len(t.Value)
	p.Col += len(t.Value)
	return p
}

// lexer feeds the statement to participle; the statement's end is its EOF.
func (st *stmt) lexer() *lexer.PeekingLexer {
	eof := lexer.Token{Type: tokEOF, Value: st.term.Value, Pos: st.term.Pos}
	pl, _ := lexer.Upgrade(&sliceLexer{toks: st.toks, eof: eof})
	return pl
}

type sliceLexer struct {
	toks []lexer.Token
	eof  lexer.Token
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	if len(l.toks) == 0 {
		return l.eof, nil
	}
	t := l.toks[0]
	l.toks = l.toks[1:]
	return t, nil
}

// split cuts the token stream at ';' and checks bracket depth.
func (p *parser) split(toks []lexer.Token) []*stmt {
	var out []*stmt
	cur := &stmt{}
	depth, start := 0, 0
	prevEmpty := false
	for i, t := range toks {
		if t.Type == tokEOF || t.Type == tokPunct && t.Value == ";" {
			cur.term = t
			cur.toks = toks[start:i:i]
			if len(cur.toks) > 0 {
				out = append(out, cur)
			} else if t.Type != tokEOF && !prevEmpty {
				// One report for a run of ';'.
				p.errorf(toPos(t.Pos), "empty statement: expected a definition or the system equation before ';'")
			}
			prevEmpty = len(cur.toks) == 0
			cur, depth, start = &stmt{}, 0, i+1
			continue
		}
		switch {
		case t.Type == tokInvalid:
			cur.bad = true
		case t.Type == tokPunct && (t.Value == "(" || t.Value == "[" || t.Value == "{"):
			depth++
			if depth == MaxNesting+1 && !cur.bad {
				p.errorf(toPos(t.Pos), "brackets nested more than %d deep", MaxNesting)
				cur.bad = true
			}
		case t.Type == tokPunct && (t.Value == ")" || t.Value == "]" || t.Value == "}"):
			depth--
		}
	}
	return out
}

// syntaxError reports err, if any, as "expected X, found Y".
func (p *parser) syntaxError(err error, st *stmt) bool {
	if err == nil {
		return false
	}
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		if op, next, ok := danglingOperator(st, ute.Unexpected); ok {
			p.errorf(toPos(next.Pos), "syntax error: expected an operand after '%s', found %s", op.Value, describe(next))
			return true
		}
		found := describe(ute.Unexpected)
		want := expectation(ute, st)
		hint := ""
		if want == "the end of the statement" {
			if prev, ok := st.before(ute.Unexpected); ok && prev.Pos.Line < ute.Unexpected.Pos.Line {
				hint = fmt.Sprintf(" (is the ';' at the end of line %d missing?)", prev.Pos.Line)
			} else if ute.Unexpected.Type == tokPunct && ute.Unexpected.Value == ":" {
				hint = " (a ';' written as ':'?)"
			}
		}
		p.errorf(toPos(ute.Unexpected.Pos), "syntax error: expected %s, found %s%s", want, found, hint)
		return true
	}
	var perr participle.Error
	if errors.As(err, &perr) {
		p.errorf(toPos(perr.Position()), "syntax error: %s", perr.Message())
		return true
	}
	p.errorf(toPos(st.toks[0].Pos), "syntax error: %v", err)
	return true
}

// before returns the token before t in the statement.
func (st *stmt) before(t lexer.Token) (lexer.Token, bool) {
	for i := 1; i < len(st.toks); i++ {
		if st.toks[i].Pos.Offset == t.Pos.Offset {
			return st.toks[i-1], true
		}
	}
	return lexer.Token{}, false
}

// danglingOperator recognises an operator with nothing after it ("1 + ;",
// "(a, r).)"), where participle, having backtracked over the operator,
// would blame the operator instead of what follows it.
func danglingOperator(st *stmt, at lexer.Token) (op, next lexer.Token, ok bool) {
	i := 0
	for i < len(st.toks) && st.toks[i].Pos.Offset != at.Pos.Offset {
		i++
	}
	if i == len(st.toks) || st.toks[i].Type != tokPunct {
		return op, next, false
	}
	switch st.toks[i].Value {
	case "+", "-", "*", "/", ".", ",", "=", ":=":
	default:
		return op, next, false
	}
	if st.toks[i].Value == "*" && i > 0 && st.toks[i-1].Value == "<" {
		return op, next, false // <*>
	}
	next = lexer.Token{Type: tokEOF, Value: st.term.Value, Pos: st.term.Pos}
	if i+1 < len(st.toks) {
		next = st.toks[i+1]
	}
	if next.Type == tokEOF || next.Type == tokPunct && strings.Contains(")]}>,;", next.Value) {
		return st.toks[i], next, true
	}
	return op, next, false
}

func describe(t lexer.Token) string {
	switch t.Type {
	case tokEOF:
		if t.Value == ";" {
			return "';' (end of statement)"
		}
		return "end of file"
	case tokIdent:
		return "name " + t.Value
	case tokName:
		return "process name " + t.Value
	case tokNumber:
		return "number " + t.Value
	}
	return "'" + t.Value + "'"
}

// expectation turns participle's description of what it wanted into words.
func expectation(ute *participle.UnexpectedTokenError, st *stmt) string {
	msg := ute.Message()
	i := strings.Index(msg, "(expected ")
	if i < 0 {
		return "the end of the statement"
	}
	e := firstItem(strings.TrimSuffix(msg[i+len("(expected "):], ")"))
	repl := strings.NewReplacer(
		"<ident>", "a rate or action name",
		"<name>", "a process name",
		"<number>", "a number",
		"<keyword>", "infty",
		"\"", "'",
		" | ", " or ",
		"GAtom", "a process (a name, a prefix '(action, rate).' or '(')",
		"GPrimary", "a rate (a number, a rate name, infty or '(')",
		"GIdent", "an action name",
		"GAction", "an action name",
		"GName", "a process name",
		"GExpr", "a rate expression",
		"GChoice", "a process",
	)
	e = strings.TrimSuffix(strings.TrimPrefix(repl.Replace(e), "("), ")")
	if len(e) > 80 {
		e = e[:77] + "..."
	}
	return e
}

// firstItem returns the first element of participle's expected sequence,
// `"," GExpr ")"` gives `","`: what must come next, not the whole rest.
func firstItem(e string) string {
	depth := 0
	quoted := false
	for i := 0; i < len(e); i++ {
		switch c := e[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ' ' && depth == 0:
			return e[:i]
		}
	}
	return e
}

// ---- conversion to the AST ----

func (p *parser) rateDecl(g *gRateDef, end Pos) *RateDecl {
	return &RateDecl{Name: Ident{NamePos: toPos(g.Name.Pos), Name: g.Name.Name}, Value: p.expr(g.Value), End: end}
}

func (p *parser) expr(g *gExpr) Expr {
	x := p.term(g.Left)
	for _, r := range g.Rest {
		x = &Binary{X: x, OpPos: toPos(r.Pos), Op: r.Op[0], Y: p.term(r.Term)}
	}
	return x
}

func (p *parser) term(g *gTerm) Expr {
	x := p.unary(g.Left)
	for _, r := range g.Rest {
		x = &Binary{X: x, OpPos: toPos(r.Pos), Op: r.Op[0], Y: p.unary(r.X)}
	}
	return x
}

func (p *parser) unary(g *gUnary) Expr {
	x := p.primary(g.X)
	for i := len(g.Signs) - 1; i >= 0; i-- {
		x = &Unary{OpPos: toPos(g.Signs[i].Pos), Op: g.Signs[i].Op[0], X: x}
	}
	return x
}

func (p *parser) primary(g *gPrimary) Expr {
	pos := toPos(g.Pos)
	switch {
	case g.Number != nil:
		v, err := strconv.ParseFloat(*g.Number, 64)
		if err != nil {
			p.errorf(pos, "number %s is out of the range of a 64-bit float", *g.Number)
		}
		return &Number{ValuePos: pos, Text: *g.Number, Value: v}
	case g.Name != nil:
		return &RateRef{Ident{NamePos: pos, Name: *g.Name}}
	case g.Passive:
		return &Passive{InftyPos: pos}
	default:
		return &ParenExpr{Lparen: pos, X: p.expr(g.Paren)}
	}
}

func (p *parser) actions(gs []*gAction) []Ident {
	out := make([]Ident, len(gs))
	for i, g := range gs {
		out[i] = Ident{NamePos: toPos(g.Pos), Name: g.Name}
	}
	return out
}

func (p *parser) choice(g *gChoice) Process {
	if len(g.Alts) == 1 {
		return p.coop(g.Alts[0])
	}
	c := &Choice{Alts: make([]Process, len(g.Alts))}
	for i, a := range g.Alts {
		c.Alts[i] = p.coop(a)
	}
	return c
}

func (p *parser) coop(g *gCoop) Process {
	x := p.hide(g.Left)
	for _, r := range g.Rest {
		c := &Coop{X: x, SetPos: toPos(r.Set.Pos), Y: p.hide(r.Right)}
		switch {
		case r.Set.Wildcard:
			c.Kind = CoopWildcard
		default:
			c.Actions = p.actions(r.Set.Actions)
		}
		x = c
	}
	return x
}

func (p *parser) hide(g *gHide) Process {
	x := p.prefix(g.X)
	for _, h := range g.Sets {
		x = &Hide{X: x, SlashPos: toPos(h.Pos), Actions: p.actions(h.Actions)}
	}
	return x
}

func (p *parser) prefix(g *gPrefix) Process {
	x := p.atom(g.Atom)
	for i := len(g.Acts) - 1; i >= 0; i-- {
		a := g.Acts[i]
		x = &Prefix{
			Lparen: toPos(a.Pos),
			Action: Ident{NamePos: toPos(a.Action.Pos), Name: a.Action.Name},
			Rate:   p.expr(a.Rate),
			Then:   x,
		}
	}
	return x
}

func (p *parser) atom(g *gAtom) Process {
	pos := toPos(g.Pos)
	if g.Paren != nil {
		return &ParenProc{Lparen: pos, X: p.choice(g.Paren)}
	}
	name := Ident{NamePos: pos, Name: *g.Name}
	if g.Array == nil {
		return &Const{name}
	}
	a := &Array{Name: name, Size: p.expr(g.Array.Size)}
	if g.Array.Inline != nil {
		a.Coop = true
		a.Actions = p.actions(g.Array.Inline.Actions)
		if g.Array.Open != "" {
			p.errorf(pos, "array %s: two action lists (one inside the brackets, one after them); give one", name.Name)
		}
		return a
	}
	if g.Array.Open != "" {
		a.Coop = true
		a.Actions = p.actions(g.Array.Actions)
		if want := map[string]string{"[": "]", "{": "}"}[g.Array.Open]; g.Array.Close != want {
			p.errorf(pos, "array %s: action list opened with '%s' must close with '%s', found '%s'", name.Name, g.Array.Open, want, g.Array.Close)
		}
	}
	return a
}
