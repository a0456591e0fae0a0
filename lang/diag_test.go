package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiagnostics has one case per diagnostic the front end gives. Each
// expected line is "LINE:COL: SEVERITY: TEXT" where TEXT must occur in the
// message; the case fails on any missing or extra diagnostic.
func TestDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// Lexical.
		{"bad character", "P = (a, 1).P @ ; P", []string{"1:14: error: unexpected character '@'"}},
		{"NUL byte", "P = (a, 1).P;\x00 P", []string{"1:14: error: illegal character NUL"}},
		{"invalid UTF-8", "P = (a, 1).P; \xff P", []string{"1:15: error: illegal byte 0xff"}},
		{"unterminated comment", "P = (a, 1).P; P /* never closed", []string{"1:17: error: comment not terminated"}},
		{"bad exponent", "r = 1e+; P = (a, r).P; P", []string{"1:5: error: malformed number \"1e+\""}},
		{"digit then letter", "r = 2x; P = (a, r).P; P", []string{"1:5: error: malformed number \"2x\""}},
		{"prime on a rate", "r' = 1; P = (a, 1).P; P", []string{"1:1: error: a prime (') is not allowed in the action or rate name r'"}},
		{"prime inside an action name", "P = (bid'_in, 1).P; P", []string{"1:6: error: a prime (') is not allowed in the action or rate name bid'_in: a name that starts with a lower-case letter names an action or a rate"}},
		{"prime inside a process name", "P'x = (a, 1).P'x; P'x", []string{"1:1: error: a prime (') is only allowed at the end of a process name (P', P''), not inside it as in P'x (2 more in this file)"}},
		{"two malformed numbers in a statement", "r = 1e+ + 2x; P = (a, 1).P; P", []string{"1:5: error: malformed number \"1e+\""}},
		{"a stray character once a file", "P = (a, \\top).P; Q = (b, \\top).Q; P <> Q", []string{"1:9: error: unexpected character '\\\\' (1 more in this file)"}},
		{"one lexical error a statement", "P = (a, 1).P @ $ ; Q = (b, 1).Q ? ; P <> Q", []string{"1:14: error: unexpected character '@'", "1:33: error: unexpected character '?'"}},
		{"number out of range", "r = 1e999; P = (a, r).P; P", []string{"1:5: error: number 1e999 is out of the range"}},
		// Syntax: every statement's error, each saying what was expected and found.
		{"syntax errors in several statements", "r = (1 + ;\nP = (a, r).P + ;\nQ = (a r).Q;\nP",
			[]string{
				"1:10: error: syntax error: expected an operand after '+', found ';' (end of statement)",
				"2:16: error: syntax error: expected a process",
				"3:8: error: syntax error: expected ',', found name r",
			}},
		{"missing dot", "P = (a, 1) P; P", []string{"1:12: error: syntax error: expected '.', found process name P"}},
		{"missing semicolon", "r = 1 s = 2; P = (a, r).P; P", []string{"1:7: error: syntax error: expected the end of the statement, found name s"}},
		{"empty statement", "P = (a, 1).P;; P", []string{"1:14: error: empty statement"}},
		{"nesting too deep", "P = (a, 1).P; " + strings.Repeat("(", 300) + "P" + strings.Repeat(")", 300),
			[]string{fmt.Sprintf("1:%d: error: brackets nested more than 256 deep", 15+256)}},
		{"mismatched array brackets", "P = (a, 1).P; P[2][a}", []string{"1:15: error: array P: action list opened with '[' must close with ']'"}},
		{"empty file", "", []string{"1:1: error: missing system equation"}},
		{"only definitions", "P = (a, 1).P;\n", []string{"2:1: error: missing system equation"}},
		{"two system equations", "P = (a, 1).P; P; P", []string{"1:18: error: a model has one system equation"}},
		{"definition after system", "P = (a, 1).P; P; Q = (b, 1).Q;", []string{"1:18: error: definition after the system equation"}},
		{"no unused warnings after a syntax error", "r = 1.0; s = 2.0;\nP = (a, r).P + (b, s) P; P", []string{"2:23: error: syntax error"}},
		{"byte-order mark", "\xEF\xBB\xBFr = 1.0; P = (a, r).P; P", nil},
		{"byte-order mark not counted in columns", "\xEF\xBB\xBFr = 1.0; P = (a, r).P; P x", []string{"1:26: error: syntax error"}},
		{"byte-order mark only at the start", "P = (a, 1.0).P;\n\xEF\xBB\xBFP", []string{"2:1: error"}},
		// One cause, one error.
		{"percent comment before a definition", "% a PC-LAN from `Modelling and Simulation'\n\nlambda = 0.01;\n#P = (a, lambda).P;\nP", nil},
		{"percent marker", "%lambda = 0.01; %mu := 2;\nP = (a, lambda).(b, mu).P; P", nil},
		{"percent blank name is a comment", "% lambda = 0.01;\nP = (a, 1).P; P", nil},
		{"definition glued to a broken one", "r = 1 s = 2; P = (a, s).P; P", []string{"1:7: error: syntax error: expected the end of the statement, found name s"}},
		{"missing semicolon between definitions", "P = (a, 1).P\nQ = (b, 1).Q;\nP <> Q", []string{"2:1: error: syntax error: expected the end of the statement, found process name Q (is the ';' at the end of line 1 missing?)"}},
		{"missing equals", "P (a, 1).P;\nP <> P", []string{"1:3: error: syntax error: expected '=' after P, found '('"}},
		{"colon for semicolon", "P = (a, 1).P:\nP <> P", []string{"1:13: error: syntax error: expected the end of the statement, found ':' (a ';' written as ':'?)"}},
		{"rate named with a capital", "PEPA_r = 0.24;\nP = (a, PEPA_r).P + (b, 2 * PEPA_r).P;\nP", []string{"1:1: error: rate names start with a lower-case letter; PEPA_r is read as a process name"}},
		{"rate named with a capital used in a rate", "R = 1.0; s = 2 * R; P = (a, s).P; P", []string{"1:1: error: rate names start with a lower-case letter; R is read as a process name"}},
		{"process named in lower case", "p = (a, 1).p;\n(p <> p)", []string{"1:1: error: process names start with an upper-case letter; p is read as a rate name"}},
		{"reserved word defined", "r = 1.0; P = S; S = T; T = P; R = (a, r).R; P <> R", []string{"1:24: error: T is reserved: it is the passive rate"}},
		{"tau defined", "tau = 1.0; P = (a, 1).P; P", []string{"1:1: error: tau is reserved: it is the silent action"}},
		{"action named with a capital", "P = (A, 1).P; P", []string{"1:6: error: action names start with a lower-case letter; A is read as a process name"}},
		{"process in a rate", "P = (a, Q).P; P", []string{"1:9: error: rate names start with a lower-case letter; Q is read as a process name"}},
		{"immediate actions", "P = a . (b, 1).P; Q = tau . Q; P <> Q", []string{"1:5: error: immediate actions ('a . P' and '(a, w:immediate)', an extension of the Imperial PEPA Compiler) are not PEPA: every activity takes an exponentially distributed time, with a rate, as in (a, r).P (1 more in this file)"}},
		{"immediate rate", "P = (a, 0.3:immediate).P; P", []string{"1:13: error: immediate actions"}},
		{"priorities", "P = (a[2], 1).P; P", []string{"1:6: error: activity priorities ('(a[2], r)', an extension of the Imperial PEPA Compiler) are not PEPA"}},
		{"conditional rates", "P = (a, if Q > 1 && Q < 3 then 1 else 2).P; Q = (b, 1).Q; P <> Q", []string{"1:9: error: conditional rates and behaviours"}},
		{"functional rates", "T1 = (a, 1).T2; T2 = (b, 1).T1; S = (c, T1 * 2).S; S <> T1", []string{"1:41: error: functional rates (a rate that depends on the state of a process, here T1"}},
		{"Stop", "P = (a, 1).Stop; P", []string{"1:12: error: undefined process Stop (Stop, the Imperial PEPA Compiler's process that does nothing, is not PEPA"}},
		{"undefined name reported once", "P = (a, r).(b, r).P + (c, r).P; P", []string{"1:9: error: undefined rate r (and 2 more uses)"}},
		{"hiding tau", "P = (tau, 1).P; P/{tau}", []string{"1:20: error: tau is the silent action and cannot be hidden"}},
		// Dialects accepted.
		{"underscore is passive", "P = (a, _).P; Q = (a, 1).Q; P <a> Q", nil},
		{"Workbench top is passive", "P = (a, top).P; Q = (a, 1).Q; P <a> Q", nil},
		{"a rate named top is a rate", "top = 2; P = (a, top).P; P", nil},
		{"array with an inline action set", "P = (a, 1).P; P[3, {a}] <> P[2]", nil},
		{"array with two action lists", "P = (a, 1).P; P[3, {a}][a]", []string{"1:15: error: array P: two action lists"}},
		// Names.
		{"undefined rate", "P = (a, r).P; P", []string{"1:9: error: undefined rate r"}},
		{"undefined process", "P = (a, 1).Q; P", []string{"1:12: error: undefined process Q"}},
		{"undefined array element", "P = (a, 1).P; Q[2]", []string{"1:15: error: undefined process Q", "1:1: warning: process P is defined but never used"}},
		{"duplicate rate", "r = 1;\nr = 2; P = (a, r).P; P", []string{"2:1: error: duplicate definition of rate r (first defined at 1:1)"}},
		{"duplicate process", "P = (a, 1).P;\nP = (b, 1).P; P", []string{"2:1: error: duplicate definition of process P (first defined at 1:1)"}},
		{"broken definition not reported as undefined", "r = ;\nP = (a, r).P; P", []string{"1:5: error: syntax error"}},
		// Rates.
		{"cyclic rates", "a = b + 1;\nb = 2 * a;\nP = (x, a).P; P", []string{"1:1: error: cyclic rate definitions: a -> b -> a"}},
		{"self-referential rate", "a = a; P = (x, a).P; P", []string{"1:1: error: cyclic rate definitions: a -> a"}},
		{"negative rate", "r = 1 - 2; P = (a, r).P; P", []string{"1:20: error: rate of action a is -1: a rate must be a finite positive number"}},
		{"zero rate", "P = (a, 0).P; P", []string{"1:9: error: rate of action a is 0"}},
		{"division by zero", "r = 1 / 0; P = (a, r).P; P", []string{"1:20: error: rate of action a is +Inf"}},
		{"negative intermediate is fine", "x = -1; r = x + 2; P = (a, r).P; P", nil},
		{"bad passive weight", "P = (a, -1 * infty).P; Q = (a, 1).Q; P <a> Q", []string{"1:9: error: weight of passive action a is -1"}},
		{"infty inside an expression", "P = (a, 1 + infty).P; P", []string{"1:13: error: the passive rate infty cannot be used in a rate expression"}},
		{"infty in a rate definition", "r = infty; P = (a, r).P; P", []string{"1:5: error: the passive rate infty cannot be used in a rate definition"}},
		{"array size not whole", "P = (a, 1).P; P[2.5]", []string{"1:17: error: array size of P is 2.5"}},
		{"array size zero", "P = (a, 1).P; P[0]", []string{"1:17: error: array size of P is 0"}},
		// Structure.
		{"unguarded recursion", "P = Q;\nQ = P; P", []string{"1:1: error: unguarded recursion: P -> Q -> P"}},
		{"unguarded self choice", "P = P + (a, 1).P; P", []string{"1:1: error: unguarded recursion: P -> P"}},
		{"recursion through cooperation", "P = (a, 1).(P <> P); P", []string{"1:12: error: recursion through a cooperation: P recurs inside a cooperation"}},
		{"recursion through a static name", "S = P <a> P;\nP = (a, 1).S; S", []string{"2:12: error: recursion through a cooperation: P recurs inside S, a composed component"}},
		{"cooperation after a prefix", "Q = (b, 1).Q; P = (a, 1).(Q <> Q); P", []string{"1:26: error: a prefix must be followed by a sequential process, but this is a cooperation"}},
		{"choice of a cooperation", "Q = (b, 1).Q; P = (a, 1).P + (Q <> Q); P", []string{"1:30: error: both sides of a choice must be sequential processes"}},
		// Actions.
		{"passive never synchronised", "P = (a, infty).P; P", []string{"1:6: error: action a is passive and never synchronised with an active partner"}},
		{"passive with passive", "P = (a, infty).P; Q = (a, T).Q; P <a> Q", []string{"1:6: error: action a is passive and never synchronised"}},
		{"passive outside the set", "P = (a, infty).P; Q = (a, 1).Q; P <> Q", []string{"1:6: error: action a is passive and never synchronised"}},
		{"passive hidden", "P = (a, infty).P; Q = (b, 1).Q; (P <> Q)/{a}", []string{"1:6: error: passive action a is hidden"}},
		{"passive resolved", "P = (a, infty).P; Q = (a, 1).Q; P <a> Q", nil},
		// Passive checks decided on what is certain (semantics.md section 1).
		{"passive in one derivative, active in another", "P = (h, infty).(h, 1.0).P; Q = (h, 2.0).(h, infty).Q; P <h> Q", nil},
		{"passive reached by a free move", "P = (b, 1).(a, infty).P; P", []string{"1:13: error: action a is passive and never synchronised"}},
		{"passive reached only through a blocked move", "P = (b, 1).(a, infty).P; Q = (c, 1).Q; P <b> Q",
			[]string{"1:43: warning: action b in the cooperation set is never performed by the right side", "1:13: warning: action a may be passive"}},
		{"passive reached through a synchronised move", "P = (b, 1).(a, infty).P; Q = (b, 1).Q; P <b> Q", []string{"1:13: warning: action a may be passive"}},
		{"passive partners reached by free moves", "P = (x, 1).(a, infty).P; Q = (y, 1).(a, T).Q; P <a> Q", []string{"1:13: error: action a is passive and never synchronised"}},
		{"passive in an array", "P = (x, 1).(a, infty).P; P[3][a]", []string{"1:13: error: action a is passive and never synchronised"}},
		{"passive and active in one state", "P = (a, 1).P + (a, infty).P; Q = (a, 2).Q; P <a> Q", nil},
		{"passive hidden behind a blocked move", "P = (b, 1).(a, infty).P; Q = (c, 1).Q; (P <b> Q)/{a}",
			[]string{"1:44: warning: action b in the cooperation set", "1:13: warning: passive action a may be hidden"}},
		{"hiding frees a move", "P = (b, 1).(a, infty).P; Q = (b, 1).Q; (P/{b}) <b> Q", []string{"1:13: error: action a is passive and never synchronised", "1:49: warning: action b in the cooperation set is never performed by the left side"}},
		{"wildcard resolves", "P = (a, infty).P; Q = (a, 1).Q; P <*> Q", nil},
		{"tau in a set", "P = (tau, 1).P; P <tau> P", []string{"1:20: error: tau is the silent action"}},
		{"set action one side never does", "P = (a, 1).P; Q = (b, 1).Q; P <a> Q", []string{"1:32: warning: action a in the cooperation set is never performed by the right side"}},
		{"set action no side does", "P = (a, 1).P; P <c> P", []string{"1:18: warning: action c in the cooperation set is never performed by either side"}},
		{"array set action not done", "P = (a, 1).P; P[2][b]", []string{"1:20: warning: action b in the cooperation set is never performed by the array's components"}},
		{"hidden action not performed", "P = (a, 1).P; P/{b}", []string{"1:18: warning: hidden action b is never performed"}},
		// Unused.
		{"unused rate", "r = 1; s = 2; P = (a, r).P; P", []string{"1:8: warning: rate s is defined but never used"}},
		{"unused process", "P = (a, 1).P; Q = (b, 1).Q; P", []string{"1:15: warning: process Q is defined but never used"}},
		{"derivative is used", "P = (a, 1).P2; P2 = (b, 1).P; P", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := Load("t.pepa", []byte(tt.src))
			var got []string
			for _, d := range diags {
				got = append(got, fmt.Sprintf("%d:%d: %s: %s", d.Pos.Line, d.Pos.Col, d.Severity, d.Msg))
			}
			matched := make([]bool, len(got))
			for _, w := range tt.want {
				found := false
				for i, g := range got {
					if !matched[i] && strings.HasPrefix(g, w[:strings.Index(w, ": ")+2]) && strings.Contains(g, w[strings.Index(w, ": ")+2:]) {
						matched[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("missing diagnostic %q", w)
				}
			}
			for i, g := range got {
				if !matched[i] {
					t.Errorf("unexpected diagnostic %q", g)
				}
			}
		})
	}
}

func TestDiagnosticFormat(t *testing.T) {
	_, diags := Load("dir/m.pepa", []byte("P = (a, r).P; P"))
	if len(diags) != 1 || diags[0].String() != "dir/m.pepa:1:9: error: undefined rate r" {
		t.Fatalf("got %q", diags)
	}
}

// TestHostileInput: none of these may panic, hang or take long, and each
// gets a diagnostic.
func TestHostileInput(t *testing.T) {
	mb := 1 << 20
	inputs := map[string]string{
		"1 MB of open parentheses":   strings.Repeat("(", mb),
		"1 MB of nested parentheses": strings.Repeat("(", mb/2) + strings.Repeat(")", mb/2),
		"1 MB of minus signs":        "r = " + strings.Repeat("-", mb) + "1; P = (a, r).P; P",
		"1 MB of prefixes":           "P = " + strings.Repeat("(a, 1).", mb/8) + "P; Q = (b, infty).Q; P <> Q",
		"1 MB of plus":               "r = 1" + strings.Repeat("+1", mb/2) + "; P = (a, r).P; P",
		"1 MB of semicolons":         strings.Repeat(";", mb),
		"1 MB of NUL":                strings.Repeat("\x00", mb),
		"unterminated comment":       "P = (a, 1).P; /* " + strings.Repeat("x", mb),
		"NUL bytes":                  "P = (a,\x00 1).P;\x00\x00 P",
		"empty":                      "",
		"only a comment":             "// nothing",
		"1 MB coop chain":            "P = (a, 1).P; P" + strings.Repeat(" <a> P", mb/8),
	}
	for name, src := range inputs {
		t.Run(name, func(t *testing.T) {
			_, diags := Load("h.pepa", []byte(src))
			if len(diags) == 0 && name != "1 MB of prefixes" && name != "1 MB of plus" && name != "1 MB coop chain" {
				t.Errorf("no diagnostic")
			}
		})
	}
}

// testModels lists the project's models and, when present beside the
// project, the published examples.
func testModels(t *testing.T) []string {
	var names []string
	for _, pat := range []string{"../testdata/*.pepa", "../../shared/examples/*.pepa"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	if len(names) == 0 {
		t.Fatal("no models found")
	}
	return names
}

func readFile(t *testing.T, name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
