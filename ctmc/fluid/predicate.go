package fluid

import (
	"fmt"
	"strings"

	"pepa/ctmc"
)

// localPredicate is a state predicate (the syntax of 'pepa passage
// --target': COMPONENT == STATE, !=, &&, ||, !, parentheses, names in
// double quotes where they need it) about one component: a tagged copy
// has one local state, so every atom must name the same component.
type localPredicate struct {
	component string
	text      string
	root      *predNode
}

type predNode struct {
	op    string // "==", "!=", "&&", "||", "!"
	state string
	kids  []*predNode
}

func parseLocalPredicate(text string) (*localPredicate, error) {
	toks, err := ctmc.PredicateTokens(text)
	if err != nil {
		return nil, err
	}
	p := &predParser{toks: toks, text: text}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("predicate %q: unexpected %q", text, p.toks[p.i].Text)
	}
	return &localPredicate{component: p.component, text: text, root: root}, nil
}

// holds evaluates the predicate with the copy in local state s; states
// are the component's local states, for the check that every state named
// exists.
func (lp *localPredicate) holds(s string, states []string) (bool, error) {
	var eval func(n *predNode) (bool, error)
	eval = func(n *predNode) (bool, error) {
		switch n.op {
		case "==", "!=":
			found := false
			for _, x := range states {
				if x == n.state {
					found = true
				}
			}
			if !found {
				return false, fmt.Errorf("predicate: component %s has no local state %q (its states are %s)", lp.component, n.state, strings.Join(states, "; "))
			}
			return (s == n.state) == (n.op == "=="), nil
		case "!":
			v, err := eval(n.kids[0])
			return !v, err
		}
		a, err := eval(n.kids[0])
		if err != nil {
			return false, err
		}
		b, err := eval(n.kids[1])
		if err != nil {
			return false, err
		}
		if n.op == "&&" {
			return a && b, nil
		}
		return a || b, nil
	}
	return eval(lp.root)
}

type predParser struct {
	toks      []ctmc.PredicateToken
	i         int
	text      string
	component string
}

func (p *predParser) peek(op string) bool {
	return p.i < len(p.toks) && p.toks[p.i].Is(op)
}

func (p *predParser) or() (*predNode, error) {
	n, err := p.and()
	for err == nil && p.peek("||") {
		p.i++
		var m *predNode
		if m, err = p.and(); err == nil {
			n = &predNode{op: "||", kids: []*predNode{n, m}}
		}
	}
	return n, err
}

func (p *predParser) and() (*predNode, error) {
	n, err := p.unary()
	for err == nil && p.peek("&&") {
		p.i++
		var m *predNode
		if m, err = p.unary(); err == nil {
			n = &predNode{op: "&&", kids: []*predNode{n, m}}
		}
	}
	return n, err
}

func (p *predParser) unary() (*predNode, error) {
	switch {
	case p.peek("!"):
		p.i++
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &predNode{op: "!", kids: []*predNode{n}}, nil
	case p.peek("("):
		p.i++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("predicate %q: expected ')'", p.text)
		}
		p.i++
		return n, nil
	}
	if p.i+3 > len(p.toks) {
		return nil, fmt.Errorf("predicate %q: expected COMPONENT == STATE", p.text)
	}
	comp, op, state := p.toks[p.i], p.toks[p.i+1], p.toks[p.i+2]
	if !op.Is("==") && !op.Is("!=") {
		return nil, fmt.Errorf("predicate %q: expected == or != after %s, found %q", p.text, comp.Text, op.Text)
	}
	p.i += 3
	if p.component == "" {
		p.component = comp.Text
	} else if p.component != comp.Text {
		return nil, fmt.Errorf("predicate %q names %s and %s: a tagged copy's passage is about one component", p.text, p.component, comp.Text)
	}
	return &predNode{op: op.Text, state: state.Text}, nil
}
