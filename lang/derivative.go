package lang

import "sort"

// PrefixRateNames lists the rate definitions that an active prefix's rate
// depends on, directly or through other definitions, sorted.
func (m *Model) PrefixRateNames(p *Prefix) []string {
	seen := map[string]bool{}
	var walk func(e Expr)
	walk = func(e Expr) {
		switch e := e.(type) {
		case *RateRef:
			if !seen[e.Name] {
				seen[e.Name] = true
				walk(m.Rates[e.Name].Decl.Value)
			}
		case *ParenExpr:
			walk(e.X)
		case *Unary:
			walk(e.X)
		case *Binary:
			walk(e.X)
			walk(e.Y)
		}
	}
	if !m.PrefixRate(p).Passive {
		walk(p.Rate)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// PrefixRateDerivative is the derivative of an active prefix's rate with
// respect to the value of the rate definition name: definitions built from
// name change with it (chain rule through the definitions). 0 for a
// passive prefix.
func (m *Model) PrefixRateDerivative(p *Prefix, name string) float64 {
	if m.PrefixRate(p).Passive {
		return 0
	}
	_, d := m.valueAndDerivative(p.Rate, name)
	return d
}

// valueAndDerivative evaluates e and its derivative with respect to the
// value of the rate definition name (forward mode).
func (m *Model) valueAndDerivative(e Expr, name string) (float64, float64) {
	switch e := e.(type) {
	case *Number:
		return e.Value, 0
	case *RateRef:
		info := m.Rates[e.Name]
		if e.Name == name {
			return info.Value, 1
		}
		_, d := m.valueAndDerivative(info.Decl.Value, name)
		return info.Value, d
	case *ParenExpr:
		return m.valueAndDerivative(e.X, name)
	case *Unary:
		v, d := m.valueAndDerivative(e.X, name)
		if e.Op == '-' {
			return -v, -d
		}
		return v, d
	case *Binary:
		x, dx := m.valueAndDerivative(e.X, name)
		y, dy := m.valueAndDerivative(e.Y, name)
		switch e.Op {
		case '+':
			return x + y, dx + dy
		case '-':
			return x - y, dx - dy
		case '*':
			return x * y, dx*y + x*dy
		default:
			return x / y, (dx*y - x*dy) / (y * y)
		}
	}
	return 0, 0
}
