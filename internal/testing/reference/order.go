package reference

import "slices"

// blockOrder numbers the states of a chain given by its rows (rows[i]
// lists the moves out of state i) so that every move goes to a state of
// the same strongly connected component or of a later one: the components
// in a topological order (Tarjan's algorithm emits them sinks first; they
// are reversed), the states of one component in increasing number. In
// this order the generator is block upper triangular and its transpose
// block lower triangular, so the sparse LU of the stiff integrator fills
// in only inside components, and the products of the double-double
// transient skip the zero blocks. order[p] is the state at position p,
// pos its inverse, and blockOf[p] the component of position p (0 first).
func blockOrder(rows [][]flow) (order, pos, blockOf []int) {
	n := len(rows)
	index := make([]int, n) // discovery number + 1 (0: unvisited)
	low := make([]int, n)
	onStack := make([]bool, n)
	var stack []int
	var comps [][]int
	counter := 0
	var visit func(v int)
	visit = func(v int) {
		counter++
		index[v], low[v] = counter, counter
		stack = append(stack, v)
		onStack[v] = true
		for _, m := range rows[v] {
			w := m.to
			if w >= n || w == v {
				continue
			}
			if index[w] == 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for v := 0; v < n; v++ {
		if index[v] == 0 {
			visit(v)
		}
	}
	order = make([]int, 0, n)
	blockOf = make([]int, 0, n)
	for b := len(comps) - 1; b >= 0; b-- {
		comp := comps[b]
		slices.Sort(comp)
		for _, s := range comp {
			order = append(order, s)
			blockOf = append(blockOf, len(comps)-1-b)
		}
	}
	pos = make([]int, n)
	for p, s := range order {
		pos[s] = p
	}
	return order, pos, blockOf
}
