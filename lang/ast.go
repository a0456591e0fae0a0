package lang

// The abstract syntax tree. Every node records the position of its first
// token; spelling variants that mean the same thing (T and infty, || and <>,
// /<a> and /{a}, := and =, the % and # markers) are not recorded, so the
// printer writes one canonical form and two sources that mean the same model
// have equal trees (Equal).

// Node is any syntax tree node.
type Node interface {
	Pos() Pos
}

// Ident is a name with its position.
type Ident struct {
	NamePos Pos
	Name    string
}

func (x *Ident) Pos() Pos { return x.NamePos }

// ---- rate expressions ----

// Expr is a rate expression.
type Expr interface {
	Node
	exprNode()
}

type (
	// Number is a numeric literal; Text is its spelling in the source, which
	// the printer keeps.
	Number struct {
		ValuePos Pos
		Text     string
		Value    float64
	}
	// RateRef names a rate definition.
	RateRef struct{ Ident }
	// Passive is the passive rate, infty or T.
	Passive struct{ InftyPos Pos }
	// Unary is -X or +X.
	Unary struct {
		OpPos Pos
		Op    byte
		X     Expr
	}
	// Binary is X op Y with op one of + - * /.
	Binary struct {
		X     Expr
		OpPos Pos
		Op    byte
		Y     Expr
	}
	// ParenExpr is ( X ).
	ParenExpr struct {
		Lparen Pos
		X      Expr
	}
)

func (x *Number) Pos() Pos    { return x.ValuePos }
func (x *Passive) Pos() Pos   { return x.InftyPos }
func (x *Unary) Pos() Pos     { return x.OpPos }
func (x *Binary) Pos() Pos    { return x.X.Pos() }
func (x *ParenExpr) Pos() Pos { return x.Lparen }

func (*Number) exprNode()    {}
func (*RateRef) exprNode()   {}
func (*Passive) exprNode()   {}
func (*Unary) exprNode()     {}
func (*Binary) exprNode()    {}
func (*ParenExpr) exprNode() {}

// ---- processes ----

// Process is a process term.
type Process interface {
	Node
	procNode()
}

// CoopKind says how a cooperation set was given.
type CoopKind int

const (
	CoopList     CoopKind = iota // <a, b> (an empty list is <> or ||)
	CoopWildcard                 // <*>: the actions both sides perform
)

type (
	// Prefix is (Action, Rate).Then.
	Prefix struct {
		Lparen Pos
		Action Ident // "tau" for the silent action
		Rate   Expr
		Then   Process
	}
	// Choice is Alts[0] + Alts[1] + ... (a race; at least two alternatives).
	Choice struct {
		Alts []Process
	}
	// Coop is X <Actions> Y; left associative.
	Coop struct {
		X       Process
		SetPos  Pos
		Kind    CoopKind
		Actions []Ident
		Y       Process
	}
	// Hide is X / {Actions}.
	Hide struct {
		X        Process
		SlashPos Pos
		Actions  []Ident
	}
	// Const names a process definition.
	Const struct{ Ident }
	// Array is Name[Size] or Name[Size][Actions]: Size copies of Name, in
	// parallel (no Actions) or cooperating on Actions.
	Array struct {
		Name    Ident
		Size    Expr
		Actions []Ident // nil: pure parallel; the printer writes [a, b] when non-nil
		Coop    bool    // an action list was written (possibly empty)
	}
	// ParenProc is ( X ).
	ParenProc struct {
		Lparen Pos
		X      Process
	}
)

func (x *Prefix) Pos() Pos    { return x.Lparen }
func (x *Choice) Pos() Pos    { return x.Alts[0].Pos() }
func (x *Coop) Pos() Pos      { return x.X.Pos() }
func (x *Hide) Pos() Pos      { return x.X.Pos() }
func (x *Array) Pos() Pos     { return x.Name.NamePos }
func (x *ParenProc) Pos() Pos { return x.Lparen }

func (*Prefix) procNode()    {}
func (*Choice) procNode()    {}
func (*Coop) procNode()      {}
func (*Hide) procNode()      {}
func (*Const) procNode()     {}
func (*Array) procNode()     {}
func (*ParenProc) procNode() {}

// ---- declarations ----

// Decl is a rate or process definition.
type Decl interface {
	Node
	declNode()
	// EndPos is the position just after the terminating ';'.
	EndPos() Pos
}

type (
	// RateDecl is name = Value;
	RateDecl struct {
		Name  Ident
		Value Expr
		End   Pos
	}
	// ProcDecl is Name = Body;
	ProcDecl struct {
		Name Ident
		Body Process
		End  Pos
	}
)

func (d *RateDecl) Pos() Pos    { return d.Name.NamePos }
func (d *ProcDecl) Pos() Pos    { return d.Name.NamePos }
func (d *RateDecl) EndPos() Pos { return d.End }
func (d *ProcDecl) EndPos() Pos { return d.End }
func (*RateDecl) declNode()     {}
func (*ProcDecl) declNode()     {}

// File is a parsed model.
type File struct {
	Name      string // file name used in diagnostics
	Decls     []Decl
	System    Process // nil if the file has none (an error has been reported)
	SystemEnd Pos     // just after the system equation (and its ';' if any)
	Comments  []Comment
	// Broken holds the names of definitions that had syntax errors, so that
	// the checker does not report them again as undefined.
	Broken map[string]bool
}
