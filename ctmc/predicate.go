package ctmc

import (
	"fmt"
	"strings"
)

// Predicate selects global states by their components' local states.
//
// Syntax:
//
//	pred  := or
//	or    := and { "||" and }
//	and   := unary { "&&" unary }
//	unary := "!" unary | "(" or ")" | COMPONENT ("==" | "!=") STATE
//
// COMPONENT is a component as the state names show it (M1, Client[2]);
// STATE a local derivative name (M1, Done). Either may be written in double
// quotes, which a name with spaces or parentheses needs:
// M1 == "(compute9, r9).M1".
type Predicate struct {
	eval func(state []uint64) bool
	text string
}

// Holds reports whether the predicate is true of a packed state.
func (p *Predicate) Holds(state []uint64) bool { return p.eval(state) }

func (p *Predicate) String() string { return p.text }

// SelectStates marks the states of c where p holds.
func SelectStates(c *Chain, p *Predicate) []bool {
	out := make([]bool, c.N)
	for i := range out {
		out[i] = p.Holds(c.State(i))
	}
	return out
}

// ParsePredicate parses a state predicate against a structure's components.
func ParsePredicate(s *Structure, text string) (*Predicate, error) {
	toks, err := PredicateTokens(text)
	if err != nil {
		return nil, err
	}
	pp := &predParser{s: s, toks: toks}
	f, err := pp.or()
	if err != nil {
		return nil, err
	}
	if pp.i < len(pp.toks) {
		return nil, fmt.Errorf("predicate %q: unexpected %q", text, pp.toks[pp.i].Text)
	}
	return &Predicate{eval: f, text: text}, nil
}

// PredicateToken is one token of a state predicate: an operator (==, !=,
// &&, ||, !, parentheses) or a name; Quoted marks a name written in double
// quotes (never an operator, whatever its text).
type PredicateToken struct {
	Text   string
	Quoted bool
}

// Is reports whether the token is the operator op.
func (t PredicateToken) Is(op string) bool { return !t.Quoted && t.Text == op }

// PredicateTokens splits a state predicate (Predicate's syntax) into
// tokens. The fluid analysis's one-component predicates share it.
func PredicateTokens(text string) ([]PredicateToken, error) {
	var out []PredicateToken
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case strings.HasPrefix(text[i:], "==") || strings.HasPrefix(text[i:], "!=") ||
			strings.HasPrefix(text[i:], "&&") || strings.HasPrefix(text[i:], "||"):
			out = append(out, PredicateToken{Text: text[i : i+2]})
			i += 2
		case c == '!' || c == '(' || c == ')':
			out = append(out, PredicateToken{Text: text[i : i+1]})
			i++
		case c == '"':
			j := strings.IndexByte(text[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("predicate %q: unterminated quote", text)
			}
			out = append(out, PredicateToken{Text: text[i+1 : i+1+j], Quoted: true})
			i += j + 2
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \t=!&|()\"", rune(text[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("predicate %q: unexpected %q", text, text[i:i+1])
			}
			out = append(out, PredicateToken{Text: text[i:j]})
			i = j
		}
	}
	return out, nil
}

type predParser struct {
	s    *Structure
	toks []PredicateToken
	i    int
}

func (p *predParser) peek(op string) bool {
	return p.i < len(p.toks) && p.toks[p.i].Is(op)
}

func (p *predParser) or() (func([]uint64) bool, error) {
	f, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek("||") {
		p.i++
		g, err := p.and()
		if err != nil {
			return nil, err
		}
		f0 := f
		f = func(s []uint64) bool { return f0(s) || g(s) }
	}
	return f, nil
}

func (p *predParser) and() (func([]uint64) bool, error) {
	f, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peek("&&") {
		p.i++
		g, err := p.unary()
		if err != nil {
			return nil, err
		}
		f0 := f
		f = func(s []uint64) bool { return f0(s) && g(s) }
	}
	return f, nil
}

func (p *predParser) unary() (func([]uint64) bool, error) {
	switch {
	case p.peek("!"):
		p.i++
		f, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(s []uint64) bool { return !f(s) }, nil
	case p.peek("("):
		p.i++
		f, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("predicate: expected ')'")
		}
		p.i++
		return f, nil
	}
	if p.i+3 > len(p.toks) {
		return nil, fmt.Errorf("predicate: expected COMPONENT == STATE")
	}
	comp, op, state := p.toks[p.i], p.toks[p.i+1], p.toks[p.i+2]
	if !op.Is("==") && !op.Is("!=") {
		return nil, fmt.Errorf("predicate: expected == or != after %s, found %q", comp.Text, op.Text)
	}
	p.i += 3
	var leaf *Leaf
	var names []string
	for _, l := range p.s.Leaves {
		names = append(names, l.Name)
		if l.Name == comp.Text {
			leaf = l
		}
	}
	if leaf == nil {
		return nil, fmt.Errorf("predicate: no component %q (the components are %s)", comp.Text, strings.Join(limit(names, 12), ", "))
	}
	local := -1
	var states []string
	for s := 0; s < leaf.NumLocal; s++ {
		n := leaf.LocalName(s)
		states = append(states, n)
		if n == state.Text {
			local = s
		}
	}
	if local < 0 {
		return nil, fmt.Errorf("predicate: component %s has no local state %q (its states are %s)", comp.Text, state.Text, strings.Join(limit(states, 12), "; "))
	}
	eq := op.Text == "=="
	return func(s []uint64) bool { return (leaf.Local(s) == local) == eq }, nil
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}
