package lang

import (
	"io"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle grammar: a concrete syntax tree that parse.go turns into the
// AST. Repetition is written as lists (a+b+c, -(-x), (a,r).(b,s).P) rather
// than recursion, so that only brackets nest the parser's call stack, and the
// statement splitter bounds bracket depth before participle runs.

type gIdent struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
}

type gAction struct {
	Pos  lexer.Position
	Name string `parser:"@(Ident | \"tau\")"`
}

// ---- rate expressions ----

type gExpr struct {
	Left *gTerm    `parser:"@@"`
	Rest []*gAddOp `parser:"@@*"`
}

type gAddOp struct {
	Pos  lexer.Position
	Op   string `parser:"@(\"+\" | \"-\")"`
	Term *gTerm `parser:"@@"`
}

type gTerm struct {
	Left *gUnary   `parser:"@@"`
	Rest []*gMulOp `parser:"@@*"`
}

type gMulOp struct {
	Pos lexer.Position
	Op  string  `parser:"@(\"*\" | \"/\")"`
	X   *gUnary `parser:"@@"`
}

type gUnary struct {
	Signs []*gSign  `parser:"@@*"`
	X     *gPrimary `parser:"@@"`
}

type gSign struct {
	Pos lexer.Position
	Op  string `parser:"@(\"-\" | \"+\")"`
}

type gPrimary struct {
	Pos     lexer.Position
	Number  *string `parser:"  @Number"`
	Name    *string `parser:"| @Ident"`
	Passive bool    `parser:"| @(\"infty\" | \"T\" | \"_\")"`
	Paren   *gExpr  `parser:"| \"(\" @@ \")\""`
}

// ---- processes ----

type gChoice struct {
	Alts []*gCoop `parser:"@@ (\"+\" @@)*"`
}

type gCoop struct {
	Left *gHide    `parser:"@@"`
	Rest []*gCoopR `parser:"@@*"`
}

type gCoopR struct {
	Set   *gCoopSet `parser:"@@"`
	Right *gHide    `parser:"@@"`
}

type gCoopSet struct {
	Pos      lexer.Position
	Parallel bool       `parser:"(  @\"||\""`
	Wildcard bool       `parser:" | \"<\" ( @\"*\""`
	Actions  []*gAction `parser:"      | @@ (\",\" @@)* )? \">\" )"`
}

type gHide struct {
	X    *gPrefix `parser:"@@"`
	Sets []*gHSet `parser:"@@*"`
}

type gHSet struct {
	Pos     lexer.Position
	Actions []*gAction `parser:"\"/\" ( \"{\" (@@ (\",\" @@)*)? \"}\" | \"<\" (@@ (\",\" @@)*)? \">\" )"`
}

type gPrefix struct {
	Acts []*gActivity `parser:"@@*"`
	Atom *gAtom       `parser:"@@"`
}

type gActivity struct {
	Pos    lexer.Position
	Action *gAction `parser:"\"(\" @@ \",\""`
	Rate   *gExpr   `parser:"@@ \")\" \".\""`
}

type gAtom struct {
	Pos   lexer.Position
	Name  *string  `parser:"(  @Name"`
	Array *gArray  `parser:"   @@?"`
	Paren *gChoice `parser:" | \"(\" @@ \")\" )"`
}

// gArray is Name[n], Name[n][a, b] or Name[n]{a, b}, and the Imperial
// PEPA Compiler's Name[n, {a, b}] (Inline).
type gArray struct {
	Size    *gExpr     `parser:"\"[\" @@"`
	Inline  *gActSet   `parser:"( \",\" @@ )? \"]\""`
	Open    string     `parser:"( @(\"[\" | \"{\")"`
	Actions []*gAction `parser:"  (@@ (\",\" @@)*)?"`
	Close   string     `parser:"  @(\"]\" | \"}\") )?"`
}

type gActSet struct {
	Pos     lexer.Position
	Actions []*gAction `parser:"\"{\" (@@ (\",\" @@)*)? \"}\""`
}

// ---- statements ----

type gRateDef struct {
	Marker bool    `parser:"@\"%\"?"`
	Name   *gIdent `parser:"@@ ( \"=\" | \":=\" )"`
	Value  *gExpr  `parser:"@@"`
}

type gProcDef struct {
	Marker bool     `parser:"@\"#\"?"`
	Name   *gName   `parser:"@@ ( \"=\" | \":=\" )"`
	Body   *gChoice `parser:"@@"`
}

type gName struct {
	Pos  lexer.Position
	Name string `parser:"@Name"`
}

type gSystem struct {
	Body *gChoice `parser:"@@"`
}

type lexDef struct{}

func (lexDef) Symbols() map[string]lexer.TokenType { return symbols() }
func (lexDef) Lex(string, io.Reader) (lexer.Lexer, error) {
	panic("lang: the grammar is only driven through ParseFromLexer")
}

var (
	rateParser = participle.MustBuild[gRateDef](participle.Lexer(lexDef{}), participle.UseLookahead(1))
	procParser = participle.MustBuild[gProcDef](participle.Lexer(lexDef{}), participle.UseLookahead(1))
	sysParser  = participle.MustBuild[gSystem](participle.Lexer(lexDef{}), participle.UseLookahead(1))
)
