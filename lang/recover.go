package lang

import (
	"errors"
	"fmt"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// One cause, one error.
//
// A statement that does not parse is dropped whole, up to its ';' (the
// scanner has already cut the input there, and reports at most one
// lexical error per statement). What it would have defined is not
// reported again as undefined: every "X =" in it counts as a definition
// that failed (definedNames). Its syntax error is put into words only
// once every statement has been parsed (diagnose), because the cause is
// often elsewhere: a rate definition whose name starts with a capital
// (PEPA_r = 0.24;) makes every use of PEPA_r a syntax error, and the
// definition is where the user has to act. The extensions of other PEPA
// tools that are not PEPA (the Imperial PEPA Compiler's immediate
// actions, priorities, conditional and functional rates) are named as
// such, once per file.

// definedNames returns the names a statement that did not parse would
// define: every name followed by '=' or ':=' (a missing ';' glues a
// definition to the statement before it), and its first name (a
// definition whose '=' is missing).
func (st *stmt) definedNames() []string {
	var out []string
	for i, t := range st.toks {
		if t.Type != tokIdent && t.Type != tokName {
			continue
		}
		if i == 0 || i+1 < len(st.toks) && isAssign(st.toks[i+1]) {
			out = append(out, t.Value)
		}
		if i == 1 && isMarker(st.toks[0]) {
			out = append(out, t.Value)
		}
	}
	return out
}

func isAssign(t lexer.Token) bool {
	return t.Type == tokPunct && (t.Value == "=" || t.Value == ":=")
}

func isMarker(t lexer.Token) bool {
	return t.Type == tokPunct && (t.Value == "%" || t.Value == "#")
}

func isPunct(t lexer.Token, v string) bool { return t.Type == tokPunct && t.Value == v }

// nameKey identifies a name with its kind (rate/action, process or
// reserved word): a key of diagnose's explained set.
type nameKey struct {
	typ  lexer.TokenType
	name string
}

// extension is a construct of another PEPA tool that is no part of PEPA.
type extension struct {
	at      lexer.Token
	feature string // the key for one report a file
	msg     string
}

// diagnose reports the syntax errors of the statements (results[i].synErr),
// one cause one error, and records in f.Broken what the statements that
// did not parse would have defined.
func (p *parser) diagnose(stmts []*stmt, results []stmtResult, f *File) {
	failed := func(i int) bool { return stmts[i].bad || results[i].synErr != nil }
	// Process names the file defines, for telling a functional rate
	// (a process in a rate) from a misspelt rate.
	procs := map[string]bool{}
	for i, st := range stmts {
		for _, name := range st.definedNames() {
			if failed(i) {
				f.Broken[name] = true
			}
		}
		if st.kind() == stmtProc {
			if name := st.defName(); name != "" {
				procs[name] = true
			}
		}
	}

	// Definitions whose name is of the wrong kind: the error is theirs,
	// not that of the statements that use the name.
	explained := map[nameKey]bool{}
	for i, st := range stmts {
		r := &results[i]
		if r.synErr == nil {
			continue
		}
		if tok, msg, ok := wrongKindDefinition(st); ok {
			p.errorf(toPos(tok.Pos), "%s", msg)
			explained[nameKey{tok.Type, tok.Value}] = true
			delete(procs, tok.Value)
			r.synErr = nil
		}
	}

	type firstUse struct {
		diag  int // index in p.diags
		count int
	}
	seen := map[string]*firstUse{}
	for i, st := range stmts {
		r := &results[i]
		if r.synErr == nil {
			continue
		}
		err := r.synErr
		r.synErr = nil
		if st.usesExplained(explained, err) {
			continue // reported at the definition of the name
		}
		if i < len(stmts)-1 && st.missingAssign() {
			p.errorf(toPos(st.toks[1].Pos), "syntax error: expected '=' after %s, found %s: a statement before the last one is a definition (the system equation comes last)", st.toks[0].Value, describe(st.toks[1]))
			continue
		}
		if x, ok := st.extension(procs); ok {
			if u := seen[x.feature]; u != nil && x.feature != "" {
				u.count++
				continue
			}
			p.errorf(toPos(x.at.Pos), "%s", x.msg)
			if x.feature != "" {
				seen[x.feature] = &firstUse{diag: len(*p.diags) - 1}
			}
			continue
		}
		p.syntaxError(err, st)
	}
	for _, u := range seen {
		if u.count > 0 {
			(*p.diags)[u.diag].Msg += fmt.Sprintf(" (%d more in this file)", u.count)
		}
	}
}

// missingAssign reports whether a statement reads as a definition whose
// '=' is missing: a name, then the start of a process or rate.
func (st *stmt) missingAssign() bool {
	if len(st.toks) < 2 || st.toks[0].Type != tokName && st.toks[0].Type != tokIdent {
		return false
	}
	t := st.toks[1]
	return t.Type == tokNumber || t.Type == tokIdent || t.Type == tokName || isPunct(t, "(")
}

// wrongKindDefinition recognises a definition whose name is of the wrong
// kind for its body: a rate named with a capital (read as a process), a
// process named in lower case (read as a rate), or a reserved word.
func wrongKindDefinition(st *stmt) (lexer.Token, string, bool) {
	toks := st.toks
	if len(toks) > 0 && isMarker(toks[0]) {
		toks = toks[1:]
	}
	if len(toks) < 3 || !isAssign(toks[1]) {
		return lexer.Token{}, "", false
	}
	name := toks[0]
	switch name.Type {
	case tokKeyword:
		if name.Value == "tau" {
			return name, "tau is reserved: it is the silent action, so it cannot be defined", true
		}
		return name, fmt.Sprintf("%s is reserved: it is the passive rate (as infty is), so it cannot be defined", name.Value), true
	case tokName:
		if rateLike(toks[2:]) && reparses(toks, tokIdent, func(l *lexer.PeekingLexer) error { _, err := rateParser.ParseFromLexer(l); return err }) {
			return name, fmt.Sprintf("rate names start with a lower-case letter; %s is read as a process name, so its definition as a number is not a process (rename the rate, here and where it is used)", name.Value), true
		}
	case tokIdent:
		if reparses(toks, tokName, func(l *lexer.PeekingLexer) error { _, err := procParser.ParseFromLexer(l); return err }) {
			return name, fmt.Sprintf("process names start with an upper-case letter; %s is read as a rate name, so its definition as a process is not a rate (rename the process, here and where it is used)", name.Value), true
		}
	}
	return lexer.Token{}, "", false
}

// reparses reports whether the definition toks parses once its name is
// read as a token of type typ.
func reparses(toks []lexer.Token, typ lexer.TokenType, parse func(*lexer.PeekingLexer) error) bool {
	renamed := append([]lexer.Token{}, toks...)
	for i, t := range renamed {
		if t.Type == toks[0].Type && t.Value == toks[0].Value {
			renamed[i].Type = typ // the definition's own uses too (p = (a, r).p)
		}
	}
	st := &stmt{toks: renamed, term: lexer.Token{Type: tokEOF}}
	return parse(st.lexer()) == nil
}

// rateLike reports whether a definition's body could only be a rate: it
// has a number or a rate name, and no reserved word (S = T is a process
// defined as the reserved T, not a rate).
func rateLike(body []lexer.Token) bool {
	some := false
	for _, t := range body {
		switch t.Type {
		case tokKeyword:
			return false
		case tokNumber, tokIdent:
			some = true
		}
	}
	return some
}

// unexpectedToken is the token at which participle stopped.
func unexpectedToken(err error) (lexer.Token, bool) {
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		return ute.Unexpected, true
	}
	return lexer.Token{}, false
}

// usesExplained reports whether the statement's syntax error comes from a
// name whose definition has been reported as of the wrong kind: the
// statement uses it (a reserved word only where the parser stopped at it,
// since infty and T are also the passive rate).
func (st *stmt) usesExplained(explained map[nameKey]bool, err error) bool {
	if len(explained) == 0 {
		return false
	}
	for _, t := range st.toks {
		if t.Type != tokKeyword && explained[nameKey{t.Type, t.Value}] {
			return true
		}
	}
	if at, ok := unexpectedToken(err); ok && at.Type == tokKeyword {
		return explained[nameKey{at.Type, at.Value}]
	}
	return false
}

// extension finds, in a statement that did not parse, a construct of
// another PEPA tool that PEPA does not have; procs are the names of the
// file's process definitions.
func (st *stmt) extension(procs map[string]bool) (extension, bool) {
	const ipc = "an extension of the Imperial PEPA Compiler"
	toks := st.toks
	action := func(t lexer.Token) bool { return t.Type == tokIdent || t.Type == tokKeyword && t.Value == "tau" }
	for i, t := range toks {
		if t.Type == tokIdent && t.Value == "if" {
			return extension{t, "conditional", fmt.Sprintf("conditional rates and behaviours ('if ... then ...', %s) are not PEPA: a rate is a number or an expression of rates", ipc)}, true
		}
		if i+2 < len(toks) && isPunct(t, "(") && action(toks[i+1]) && isPunct(toks[i+2], "[") {
			return extension{toks[i+1], "priority", fmt.Sprintf("activity priorities ('(%s[2], r)', %s) are not PEPA: write (%s, r)", toks[i+1].Value, ipc, toks[i+1].Value)}, true
		}
		if i+1 < len(toks) && action(t) && isPunct(toks[i+1], ".") ||
			i > 0 && t.Type == tokIdent && t.Value == "immediate" && isPunct(toks[i-1], ":") {
			return extension{t, "immediate", fmt.Sprintf("immediate actions ('a . P' and '(a, w:immediate)', %s) are not PEPA: every activity takes an exponentially distributed time, with a rate, as in (a, r).P", ipc)}, true
		}
	}
	// Names inside an activity's rate, and the activity's action.
	for i := 0; i+2 < len(toks); i++ {
		if !isPunct(toks[i], "(") || !isPunct(toks[i+2], ",") {
			continue
		}
		if toks[i+1].Type == tokName {
			return extension{toks[i+1], "", fmt.Sprintf("action names start with a lower-case letter; %s is read as a process name", toks[i+1].Value)}, true
		}
		if !action(toks[i+1]) {
			continue
		}
		depth := 0
		for j := i + 3; j < len(toks); j++ {
			t := toks[j]
			switch {
			case isPunct(t, "("):
				depth++
			case isPunct(t, ")"):
				depth--
			case t.Type == tokName && procs[t.Value]:
				return extension{t, "functional", fmt.Sprintf("functional rates (a rate that depends on the state of a process, here %s; %s) are not PEPA: a rate is a number or an expression of rates", t.Value, ipc)}, true
			case t.Type == tokName:
				return extension{t, "", fmt.Sprintf("rate names start with a lower-case letter; %s is read as a process name", t.Value)}, true
			}
			if depth < 0 {
				break
			}
		}
	}
	return extension{}, false
}
