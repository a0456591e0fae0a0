package lang

import (
	"math"
	"strings"
	"testing"
)

// TestParseConstructs checks the tree of every construct of the dialect.
func TestParseConstructs(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"rate number", "r = 0.5; P = (a, r).P; P", "(rate r 0.5)"},
		{"number forms", "r = 12 + .5 + 5. + 1e-3 + 2.5E+2; P = (a, r).P; P", "(rate r (+ (+ (+ (+ 12 .5) 5.) 1e-3) 2.5E+2))"},
		{"precedence", "r = 1 + 2 * 3 - 4 / 5; P = (a, r).P; P", "(rate r (- (+ 1 (* 2 3)) (/ 4 5)))"},
		{"unary minus", "r = - -2 * -(3); P = (a, r).P; P", "(rate r (* (- (- 2)) (- (paren 3))))"},
		{"legacy rate marker", "%r := 2; P = (a, r).P; P", "(rate r 2)"},
		{"legacy process marker", "r = 1; #P = (a, r).P; P", "(proc P (. a r P))"},
		{"prefix chain", "r = 1; P = (a, r).(b, 2*r).P; P", "(proc P (. a r (. b (* 2 r) P)))"},
		{"choice", "r = 1; P = (a, r).P + (b, r).P + (c, r).P; P", "(proc P (+ (. a r P) (. b r P) (. c r P)))"},
		{"passive forms", "P = (a, infty).P + (b, T).P + (c, 2 * infty).P + (d, 3*T).P; Q = (a, 1).(b, 1).(c, 1).(d, 1).Q; P <*> Q",
			"(proc P (+ (. a infty P) (. b infty P) (. c (* 2 infty) P) (. d (* 3 infty) P)))"},
		{"primes", "P' = (a, 1).P''; P'' = (b, 1).P'; P'", "(proc P' (. a 1 P''))"},
		{"tau", "P = (tau, 1).P; P", "(proc P (. tau 1 P))"},
		{"coop list", "P = (a, 1).P; P <a, b> P", "(system (coop {a b} P P))"},
		{"coop empty", "P = (a, 1).P; P <> P", "(system (coop {} P P))"},
		{"coop parallel bars", "P = (a, 1).P; P || P", "(system (coop {} P P))"},
		{"coop wildcard", "P = (a, 1).P; P <*> P", "(system (coop * P P))"},
		{"coop left assoc", "P = (a, 1).P; P <a> P <b> P", "(system (coop {b} (coop {a} P P) P))"},
		{"coop parens", "P = (a, 1).P; P <a> (P <b> P)", "(system (coop {a} P (paren (coop {b} P P))))"},
		{"hide braces", "P = (a, 1).P; P / {a}", "(system (hide {a} P))"},
		{"hide angles", "P = (a, 1).P; P/<a, b>", "(system (hide {a b} P))"},
		{"hide binds tighter than coop", "P = (a, 1).P; P/{a} <a> P/{b}", "(system (coop {a} (hide {a} P) (hide {b} P)))"},
		{"hide twice", "P = (a, 1).P; P/{a}/{b}", "(system (hide {b} (hide {a} P)))"},
		{"array", "P = (a, 1).P; P[3]", "(system (array P 3))"},
		{"array coop", "P = (a, 1).P; P[2*2][a, b]", "(system (array P (* 2 2) {a b}))"},
		{"array coop braces", "P = (a, 1).P; P[2]{a}", "(system (array P 2 {a}))"},
		{"static component", "P = (a, 1).P; S = P <a> P; S", "(proc S (coop {a} P P))"},
		{"system with semicolon", "P = (a, 1).P; P;", "(system P)"},
		{"comments", "// c\n%% d\n/* e\n f */ P = (a, 1).P; // g\nP %% h", "(proc P (. a 1 P))"},
		{"comment on last line without newline", "P = (a, 1).P; P // end", "(system P)"},
		{"parenthesised process", "P = ((a, 1).P); (P)", "(proc P (paren (. a 1 P)))"},
		{"prefix then paren", "P = (a, 1).((b, 1).P + (c, 1).P); P", "(proc P (. a 1 (paren (+ (. b 1 P) (. c 1 P)))))"},
		{"choice of prefixes binds looser than prefix", "P = (a, 1).P + (b, 1).(c, 1).P; P", "(proc P (+ (. a 1 P) (. b 1 (. c 1 P))))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, diags := Parse("t.pepa", []byte(tt.src))
			if diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%v", diags.Err())
			}
			got := TreeString(f)
			if !strings.Contains(got, tt.want) {
				t.Errorf("tree of %q:\n%s\nwant it to contain %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	src := "r = 1;\nP = (a, r).P\n  + (b, infty).P;\nP <b> Q"
	f, _ := Parse("t.pepa", []byte(src))
	d := f.Decls[1].(*ProcDecl)
	ch := d.Body.(*Choice)
	pre := ch.Alts[1].(*Prefix)
	if pre.Lparen != (Pos{Offset: 24, Line: 3, Col: 5}) {
		t.Errorf("prefix at %+v, want 3:5", pre.Lparen)
	}
	if pre.Action.NamePos.Col != 6 || pre.Rate.Pos().Col != 9 {
		t.Errorf("action at %v, rate at %v; want 3:6 and 3:9", pre.Action.NamePos, pre.Rate.Pos())
	}
	c := f.System.(*Coop)
	if c.SetPos != (Pos{Offset: 40, Line: 4, Col: 3}) || c.Y.Pos().Col != 7 {
		t.Errorf("set at %+v, right operand at %v", c.SetPos, c.Y.Pos())
	}
}

// TestShapeCacheIsExact parses statements of one shape and compares each
// tree with a parse of the statement alone (which cannot hit the cache).
func TestShapeCacheIsExact(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 400; i++ {
		b.WriteString("r")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" = ")
		b.WriteString([]string{"1", "2.5", "3e2"}[i%3])
		b.WriteString(" * (q + 1);\n")
	}
	b.WriteString("q = 1; P = (a, q).P; P\n")
	f, _ := Parse("t.pepa", []byte(b.String()))
	for i, d := range f.Decls[:400] {
		rd := d.(*RateDecl)
		line := strings.Split(b.String(), "\n")[i]
		alone, diags := Parse("t.pepa", []byte(line+" P = (a, 1).P; P"))
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		want := alone.Decls[0].(*RateDecl)
		if ExprString(rd.Value) != ExprString(want.Value) || rd.Name.Name != want.Name.Name {
			t.Fatalf("statement %d: cached %s = %s, alone %s = %s", i, rd.Name.Name, ExprString(rd.Value), want.Name.Name, ExprString(want.Value))
		}
		if rd.Name.NamePos.Line != i+1 || rd.Value.Pos().Line != i+1 {
			t.Fatalf("statement %d: positions %v %v are not on line %d", i, rd.Name.NamePos, rd.Value.Pos(), i+1)
		}
		if rd.End.Line != i+1 || rd.End.Col != len(line)+1 {
			t.Fatalf("statement %d: end %v, want %d:%d", i, rd.End, i+1, len(line)+1)
		}
	}
	// Duplicate names found through cached trees still carry the right line.
	_, diags := Load("t.pepa", []byte(b.String()))
	if diags.HasErrors() {
		for _, d := range diags {
			if d.Severity == Error && !strings.Contains(d.Msg, "duplicate definition of rate") {
				t.Errorf("unexpected %s", d)
			}
		}
	}
}

func TestExamplesParse(t *testing.T) {
	for _, name := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			_, diags := Load(name, readFile(t, name))
			if diags.HasErrors() {
				t.Fatalf("%v", diags.Err())
			}
		})
	}
}

func TestPrefixRateDerivative(t *testing.T) {
	m, diags := Load("t.pepa", []byte("a = 2; b = 3 * a; P = (x, a * b / (1 + a)).P + (y, infty).P; Q = (y, 1).Q; P <y> Q"))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	var pre *Prefix
	walkProc(m.Procs["P"].Decl.Body, func(p Process) {
		if q, ok := p.(*Prefix); ok && q.Action.Name == "x" {
			pre = q
		}
	})
	// rate = a * 3a / (1 + a) = 3a^2/(1+a): d/da = (6a(1+a) - 3a^2)/(1+a)^2 = 36/9 - 12/9 = 24/9 at a = 2
	// (b follows a); d/db with a fixed = a/(1+a) = 2/3.
	if d := m.PrefixRateDerivative(pre, "a"); math.Abs(d-24.0/9) > 1e-14 {
		t.Errorf("d/da = %g, want %g", d, 24.0/9)
	}
	if d := m.PrefixRateDerivative(pre, "b"); math.Abs(d-2.0/3) > 1e-14 {
		t.Errorf("d/db = %g, want %g", d, 2.0/3)
	}
	if names := m.PrefixRateNames(pre); len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Errorf("names %v", names)
	}
}
