package lang

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types produced by the scanner. They are participle token types so the
// grammar can name them (@Ident, @Name, @Number).
const (
	tokEOF     = lexer.EOF
	tokIdent   = lexer.TokenType(-2 - iota) // lower-case name: rate or action
	tokName                                 // upper-case name: process (may end in primes)
	tokNumber                               // numeric literal
	tokKeyword                              // infty, T, tau
	tokPunct                                // operators and brackets
	tokInvalid                              // a character the scanner rejected (already reported)
)

// symbols is a function, not a variable, because participle reads it while
// package variables are initialised.
func symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":     tokEOF,
		"Ident":   tokIdent,
		"Name":    tokName,
		"Number":  tokNumber,
		"Keyword": tokKeyword,
		"Punct":   tokPunct,
		"Invalid": tokInvalid,
	}
}

// Comment is a source comment, kept so that the printer can reproduce it.
type Comment struct {
	Pos  Pos
	Text string // including the comment markers, without the trailing newline
}

// scanner turns source text into tokens. It never stops at an error: a bad
// character is reported, turned into a tokInvalid token and skipped, so that
// one run reports every lexical error.
type scanner struct {
	file     string
	src      string
	off      int
	line     int
	lineOff  int // offset of the first byte of the current line
	toks     []lexer.Token
	comments []Comment
	diags    *Diagnostics
	// stmtBad is set once the current statement (since the last ';') has
	// had a lexical error: the parser drops the statement, resyncing at
	// the next ';', so a second bad token in it is not another cause.
	stmtBad bool
	// badNames counts the uses of each malformed name after the first,
	// which alone is reported.
	badNames map[string]*badName
}

type badName struct {
	diag  int // index in diags
	count int
}

// badNameError reports a malformed name, or a stray character, once, at
// its first use.
func (s *scanner) badNameError(start int, name, format string, args ...any) {
	if b, ok := s.badNames[name]; ok {
		b.count++
		s.stmtBad = true
		return
	}
	if s.stmtBad {
		return
	}
	s.errorf(start, format, args...)
	if s.badNames == nil {
		s.badNames = map[string]*badName{}
	}
	s.badNames[name] = &badName{diag: len(*s.diags) - 1}
}

func (s *scanner) pos(off int) Pos {
	return Pos{Offset: off, Line: s.line, Col: off - s.lineOff + 1}
}

func (s *scanner) lpos(off int) lexer.Position {
	return lexer.Position{Filename: s.file, Offset: off, Line: s.line, Column: off - s.lineOff + 1}
}

func (s *scanner) emit(typ lexer.TokenType, start int) {
	s.toks = append(s.toks, lexer.Token{Type: typ, Value: s.src[start:s.off], Pos: s.lpos(start)})
}

func (s *scanner) errorf(off int, format string, args ...any) {
	if s.stmtBad {
		return
	}
	s.stmtBad = true
	s.diags.add(Diagnostic{File: s.file, Pos: s.pos(off), Severity: Error, Msg: fmt.Sprintf(format, args...)})
}

// newline records that src[off] is '\n'.
func (s *scanner) newline(off int) {
	s.line++
	s.lineOff = off + 1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// byteOrderMark is U+FEFF encoded in UTF-8.
const byteOrderMark = "\xEF\xBB\xBF"

func scan(file, src string, diags *Diagnostics) *scanner {
	s := &scanner{file: file, src: src, line: 1, diags: diags}
	s.toks = make([]lexer.Token, 0, len(src)/4+1)
	if strings.HasPrefix(src, byteOrderMark) {
		// Editors on Windows start UTF-8 files with a byte-order mark; it
		// is not part of the text (columns count from after it).
		s.off, s.lineOff = len(byteOrderMark), len(byteOrderMark)
	}
	for s.off < len(src) {
		c := src[s.off]
		start := s.off
		switch {
		case c == '\n':
			s.newline(s.off)
			s.off++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			s.off++
		case c == '/' && s.peek(1) == '/', c == '%' && !s.rateMarker():
			s.lineComment()
		case c == '/' && s.peek(1) == '*':
			s.blockComment()
		case isLetter(c):
			s.word()
		case isDigit(c) || c == '.' && isDigit(s.peek(1)):
			s.number()
		default:
			s.punct(start)
		}
	}
	s.toks = append(s.toks, lexer.Token{Type: tokEOF, Pos: s.lpos(s.off)})
	for _, b := range s.badNames {
		if b.count > 0 {
			(*s.diags)[b.diag].Msg += fmt.Sprintf(" (%d more in this file)", b.count)
		}
	}
	return s
}

func (s *scanner) peek(k int) byte {
	if s.off+k < len(s.src) {
		return s.src[s.off+k]
	}
	return 0
}

// rateMarker reports whether the '%' at s.off is the PEPA Workbench's
// marker before a rate definition ("%lambda = 0.2;", "%mu := 8;"): a
// lower-case name right after it, then '=' or ':=' on the same line.
// Any other '%' starts a comment to the end of the line, as in PRISM's
// PEPA import ("% a PC-LAN as described in ...") and the Imperial PEPA
// Compiler; so does "%%", and so does "% lambda = 0.2;" (with a blank,
// the way a definition is commented out).
func (s *scanner) rateMarker() bool {
	i := s.off + 1
	if i >= len(s.src) || s.src[i] < 'a' || s.src[i] > 'z' {
		return false
	}
	for i < len(s.src) && (isLetter(s.src[i]) || isDigit(s.src[i])) {
		i++
	}
	for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	return i < len(s.src) && (s.src[i] == '=' || s.src[i] == ':' && i+1 < len(s.src) && s.src[i+1] == '=')
}

func (s *scanner) lineComment() {
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '\n' {
		s.off++
	}
	text := s.src[start:s.off]
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	s.comments = append(s.comments, Comment{Pos: s.pos(start), Text: text})
}

func (s *scanner) blockComment() {
	start := s.off
	startPos := s.pos(start)
	s.off += 2
	for {
		if s.off >= len(s.src) {
			s.diags.add(Diagnostic{File: s.file, Pos: startPos, Severity: Error,
				Msg: "comment not terminated: expected */ before the end of the file"})
			return
		}
		c := s.src[s.off]
		if c == '*' && s.peek(1) == '/' {
			s.off += 2
			break
		}
		if c == '\n' {
			s.newline(s.off)
		}
		s.off++
	}
	s.comments = append(s.comments, Comment{Pos: startPos, Text: s.src[start:s.off]})
}

func (s *scanner) word() {
	start := s.off
	for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
		s.off++
	}
	upper := s.src[start] >= 'A' && s.src[start] <= 'Z'
	primes := s.off
	for s.off < len(s.src) && s.src[s.off] == '\'' {
		s.off++
	}
	inner := false
	if s.off > primes && s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
		// A prime inside a name (the PEPA Workbench's bid'_in): take the
		// whole name, so that it is one error, not a name and the rest.
		inner = true
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off]) || s.src[s.off] == '\'') {
			s.off++
		}
	}
	word := s.src[start:primes]
	name := s.src[start:s.off]
	switch {
	case s.off > primes && !upper:
		s.badNameError(start, name, "a prime (') is not allowed in the action or rate name %s: a name that starts with a lower-case letter names an action or a rate, and only process names (upper-case) may end in primes, as P' does", name)
		s.emit(tokInvalid, start)
	case inner:
		s.badNameError(start, name, "a prime (') is only allowed at the end of a process name (P', P''), not inside it as in %s", name)
		s.emit(tokInvalid, start)
	case s.off > primes:
		s.emit(tokName, start)
	case word == "infty" || word == "T" || word == "tau" || word == "_":
		s.emit(tokKeyword, start)
	case upper:
		s.emit(tokName, start)
	default:
		s.emit(tokIdent, start)
	}
}

func (s *scanner) number() {
	start := s.off
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.off++
	}
	if s.off < len(s.src) && s.src[s.off] == '.' {
		s.off++
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.off++
		}
	}
	if c := s.peek(0); c == 'e' || c == 'E' {
		k := 1
		if d := s.peek(1); d == '+' || d == '-' {
			k = 2
		}
		if isDigit(s.peek(k)) {
			s.off += k
			for s.off < len(s.src) && isDigit(s.src[s.off]) {
				s.off++
			}
		} else {
			s.off += k
			s.errorf(start, "malformed number %q: expected digits in the exponent", s.src[start:s.off])
			s.emit(tokInvalid, start)
			return
		}
	}
	if s.off < len(s.src) && isLetter(s.src[s.off]) {
		end := s.off
		for end < len(s.src) && (isLetter(s.src[end]) || isDigit(s.src[end])) {
			end++
		}
		s.errorf(start, "malformed number %q: a name cannot start with a digit", s.src[start:end])
		s.off = end
		s.emit(tokInvalid, start)
		return
	}
	s.emit(tokNumber, start)
}

// punctuation, longest match first.
// "<*>" is scanned as "<" "*" ">", so the grammar sees one shape for every
// cooperation set.
//
// The comparisons, "&&", "!" and ":" are no part of PEPA; they are
// tokens so that the extensions of the Imperial PEPA Compiler
// (conditional rates "if P > 2 && Q then r else s", immediate rates
// "0.3:immediate") reach the parser, which names the extension, instead
// of a run of "unexpected character" errors.
var puncts = []string{":=", "||", "&&", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", "<", ">", ",", ".", ";", "=", "+", "-", "*", "/", "%", "#", "!", ":"}

func (s *scanner) punct(start int) {
	for _, p := range puncts {
		if len(s.src)-s.off >= len(p) && s.src[s.off:s.off+len(p)] == p {
			s.off += len(p)
			s.emit(tokPunct, start)
			if p == ";" {
				s.stmtBad = false
			}
			return
		}
	}
	r, size := utf8.DecodeRuneInString(s.src[s.off:])
	if n := len(s.toks); n > 0 && s.toks[n-1].Type == tokInvalid && s.toks[n-1].Pos.Offset+len(s.toks[n-1].Value) == start {
		// A run of bad characters is one error.
		if r == utf8.RuneError {
			size = 1
		}
		s.off += size
		s.toks[n-1].Value = s.src[s.toks[n-1].Pos.Offset:s.off]
		return
	}
	switch {
	case r == utf8.RuneError && size <= 1:
		s.errorf(start, "illegal byte 0x%02x (the file is not valid UTF-8)", s.src[s.off])
		size = 1
	case r == 0:
		s.errorf(start, "illegal character NUL")
	case r < ' ' || r == 0x7f:
		s.errorf(start, "illegal control character %U", r)
	default:
		// The same stray character throughout a file (PEPA written with
		// a LaTeX \top) is one cause.
		s.badNameError(start, "char "+string(r), "unexpected character %q", r)
	}
	s.off += size
	s.emit(tokInvalid, start)
}
