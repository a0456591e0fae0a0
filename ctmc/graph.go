package ctmc

// Graph is a directed graph on the vertices 0..N-1, as StrongComponents
// reads it: vertex v's edges are the indices [lo, hi) that Edges returns,
// edge e leading to the vertex Target(v, e), or nowhere when that is
// negative. A chain's transitions are such a graph (Edges a row, Target
// its column), and so is any view of them that drops or redirects some.
type Graph struct {
	N      int
	Edges  func(v int32) (lo, hi int64)
	Target func(v int32, e int64) int32
}

// StrongComponents returns the strongly connected components of the part
// of g reachable from roots (every vertex, in increasing order, when roots
// is nil), in the order Tarjan's algorithm completes them: reverse
// topological, a component after every component it has an edge into.
// Component k is flat[ptr[k]:ptr[k+1]], its vertices in the order the
// algorithm pops them. The search is iterative, so that a chain as deep as
// it has states does not exhaust the stack; its stacks are made with room
// for hint vertices (the vertices searched: growing them on a product
// chain, whose search goes about as deep as there are states, copied them
// again and again).
func StrongComponents(g Graph, roots []int32, hint int) (flat []int32, ptr []int) {
	index := make([]int32, g.N)
	low := make([]int32, g.N)
	onStack := make([]bool, g.N)
	for i := range index {
		index[i] = -1
	}
	stack := make([]int32, 0, hint)
	type frame struct {
		v      int32
		e, end int64 // the next of v's edges to follow, and the end of them
	}
	call := make([]frame, 0, hint)
	flat = make([]int32, 0, hint)
	ptr = []int{0}
	next := int32(0)
	visit := func(root int32) {
		if index[root] >= 0 {
			return
		}
		lo, hi := g.Edges(root)
		call = append(call[:0], frame{root, lo, hi})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < f.end {
				w := g.Target(v, f.e)
				f.e++
				if w < 0 {
					continue
				}
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					lo, hi := g.Edges(w)
					call = append(call, frame{w, lo, hi})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					flat = append(flat, w)
					if w == v {
						break
					}
				}
				ptr = append(ptr, len(flat))
			}
		}
	}
	if roots == nil {
		for v := 0; v < g.N; v++ {
			visit(int32(v))
		}
	} else {
		for _, v := range roots {
			visit(v)
		}
	}
	return flat, ptr
}

// Graph is the chain's transition graph (self-loops included: a
// self-loop makes no component of its own).
func (c *Chain) Graph() Graph {
	return Graph{
		N:      c.N,
		Edges:  func(v int32) (int64, int64) { return c.RowPtr[v], c.RowPtr[v+1] },
		Target: func(_ int32, e int64) int32 { return c.Col[e] },
	}
}
