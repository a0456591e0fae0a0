package steady

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// classGraph is one closed class's transitions, renumbered 0..n-1 in
// state order, for the sparse GTH solver (sparse.go): the rates out of
// each state (rows: targets ascending, parallel transitions merged,
// self-loops left out), the rates into it (cols: the transpose), and the
// undirected graph of both (adj: each neighbour once), which the nested
// dissection below cuts.
type classGraph struct {
	n                int
	class            []int32 // local index -> chain state
	rowPtr, colPtr   []int64
	rowCol, colSrc   []int32
	rowRate, colRate []float64
	adjPtr           []int64
	adj              []int32
}

// classGraphBytes: the renumbering (4 bytes a chain state); the rows and
// columns (12 bytes a transition each, and 8 a state for each pointer
// array); the undirected graph (at most 8 bytes a transition, 8 a state);
// the marks that merge parallel transitions (4 bytes a state).
func classGraphBytes(N, n int, T int64) int64 {
	return membudget.Bytes(int64(N), 4) + membudget.Bytes(T, 32) + membudget.Bytes(int64(n), 28)
}

// newClassGraph builds the class's graph. Every transition of a class
// state stays in the class (it is closed).
func newClassGraph(c *ctmc.Chain, class []int32) (*classGraph, error) {
	n := len(class)
	local := make([]int32, c.N)
	for i := range local {
		local[i] = -1
	}
	for k, i := range class {
		local[i] = int32(k)
	}
	g := &classGraph{n: n, class: class, rowPtr: make([]int64, n+1)}
	// seen[j] is the position in rowCol of the row's entry for j, valid
	// when it is at or after the row's start: parallel transitions are
	// merged (the sparse reduction sums them anyway).
	seen := make([]int64, n)
	for j := range seen {
		seen[j] = -1
	}
	var T int64
	for _, i := range class {
		T += c.RowPtr[i+1] - c.RowPtr[i]
	}
	g.rowCol = make([]int32, 0, T)
	g.rowRate = make([]float64, 0, T)
	for k, i := range class {
		start := int64(len(g.rowCol))
		for t := c.RowPtr[i]; t < c.RowPtr[i+1]; t++ {
			j := local[c.Col[t]]
			if j < 0 {
				return nil, fmt.Errorf("internal error: closed class leaks from state %d to %d", i, c.Col[t])
			}
			if int(j) == k {
				continue
			}
			r := c.RateAt(t)
			if at := seen[j]; at >= start {
				g.rowRate[at] += r
				continue
			}
			seen[j] = int64(len(g.rowCol))
			g.rowCol = append(g.rowCol, j)
			g.rowRate = append(g.rowRate, r)
		}
		row := g.rowCol[start:]
		rates := g.rowRate[start:]
		sortRow(row, rates)
		g.rowPtr[k+1] = int64(len(g.rowCol))
		if len(row) == 0 && n > 1 {
			return nil, fmt.Errorf("state %d (%s) has no transition to another state of its closed class", i, c.StateString(int(i)))
		}
	}
	// The columns: the transpose, sources ascending.
	g.colPtr = make([]int64, n+1)
	for _, j := range g.rowCol {
		g.colPtr[j+1]++
	}
	for j := 0; j < n; j++ {
		g.colPtr[j+1] += g.colPtr[j]
	}
	nnz := g.colPtr[n]
	g.colSrc = make([]int32, nnz)
	g.colRate = make([]float64, nnz)
	fill := seen // reused: the next free slot of each column
	copy(fill, g.colPtr[:n])
	for i := 0; i < n; i++ {
		for t := g.rowPtr[i]; t < g.rowPtr[i+1]; t++ {
			j := g.rowCol[t]
			g.colSrc[fill[j]] = int32(i)
			g.colRate[fill[j]] = g.rowRate[t]
			fill[j]++
		}
	}
	// The undirected graph: the merge of each state's row and column.
	g.adjPtr = make([]int64, n+1)
	g.adj = make([]int32, 0, nnz+nnz/2)
	for v := 0; v < n; v++ {
		a, b := g.rowCol[g.rowPtr[v]:g.rowPtr[v+1]], g.colSrc[g.colPtr[v]:g.colPtr[v+1]]
		for len(a) > 0 || len(b) > 0 {
			switch {
			case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
				g.adj = append(g.adj, a[0])
				a = a[1:]
			case len(a) == 0 || b[0] < a[0]:
				g.adj = append(g.adj, b[0])
				b = b[1:]
			default:
				g.adj = append(g.adj, a[0])
				a, b = a[1:], b[1:]
			}
		}
		g.adjPtr[v+1] = int64(len(g.adj))
	}
	return g, nil
}

// sortRow sorts a row's targets ascending, its rates with them (rows are
// short: insertion sort).
func sortRow(col []int32, rate []float64) {
	for i := 1; i < len(col); i++ {
		for k := i; k > 0 && col[k] < col[k-1]; k-- {
			col[k], col[k-1] = col[k-1], col[k]
			rate[k], rate[k-1] = rate[k-1], rate[k]
		}
	}
}

// Nested dissection (George 1973; the level-structure separators of
// George and Liu's SPARSPAK). A region of the graph (a connected set of
// states) is cut by one level of a breadth-first search from a
// pseudo-peripheral state: the states of that level with a neighbour in
// the next level separate the levels before from the levels after. The
// pieces are cut again, down to regions of ndLeafStates states. States
// are then eliminated piece before separator, so that the fill of
// eliminating a piece stays within the piece and the separators around
// it. Any graph can be cut this way (a breadth-first level always
// separates); how well depends on the graph: a population model's chain
// is a lattice of count vectors, whose levels are its diagonals, of about
// n^((d-1)/d) states in d dimensions, and the elimination then costs
// about n^(3(d-1)/d) (n^1.5 in two dimensions); the product of many small
// components (mapping models) has huge levels, and analyse says so
// before anything is computed.

// ndLeafStates is the largest region not cut further (eliminated as one
// dense front). A variable so that tests can cut small chains.
var ndLeafStates = 64

// ndNode is one node of the dissection tree: a separator or a leaf
// region, with the states it eliminates at positions lo..hi-1 of the
// elimination order, its subtree's states at start..hi-1, and its
// boundary: the later positions its subtree's states are joined to
// (directly or through fill), ascending.
type ndNode struct {
	lo, hi, start int32
	parent        int32
	bound         []int32
}

// ndOrder is a class's elimination order with its dissection tree.
type ndOrder struct {
	perm  []int32 // position -> local state
	pos   []int32 // local state -> position
	nodes []ndNode
	// Predicted by analyse: multiply-adds of the reduction, float64
	// entries of the factors kept, the largest front (states), and the
	// most float64 entries of pending update matrices.
	work                 float64
	factor, maxFront     int64
	stackPeak, frontPeak int64
	maxSep               int
}

// ndBytes: the order's arrays (positions, permutation, labels, queue,
// levels: 4 bytes a state each, with room), its nodes' boundaries
// (estimated at 8 bytes a state).
func ndBytes(n int) int64 { return membudget.Bytes(int64(n), 40) }

// dissect orders the class's states by nested dissection and analyses the
// reduction that order gives. It stops early, returning what it found so
// far and too true, when the work passes maxWork (0: no cap) (a separator
// of s states costs at least s^3/3). An anchor (a local state, -1 for
// none) is placed last, alone at the top of the tree: the state the
// reduction keeps, from which the back-substitution and the error
// estimate's correction start (sparse.go says why it should be a probable
// state).
func dissect(ctx context.Context, g *classGraph, maxWork float64, anchor int32) (o *ndOrder, tooMuch bool, err error) {
	n := g.n
	o = &ndOrder{perm: make([]int32, n), pos: make([]int32, n)}
	label := make([]int32, n) // region of each state; -1 once placed in a node
	level := make([]int32, n) // BFS level of each state of the region being cut
	queue := make([]int32, n)
	verts := make([]int32, n)
	for i := range verts {
		verts[i] = int32(i)
	}
	// The tree is built top down (a node's own states in own[ownAt[k]:
	// ownAt[k+1]]), then numbered in postorder.
	type region struct {
		lo, hi int // verts[lo:hi]
		parent int32
	}
	var own []int32
	ownAt := []int{0}
	var parents []int32
	var work []region
	next := int32(1) // region labels: 0 is the whole class
	// split lays the states of rv still labelled lab out piece by piece
	// (connected pieces, each a new region under parent), queue holding
	// the new order.
	split := func(lo int, rv []int32, lab, parent int32) {
		out := 0
		first := len(work)
		for _, v := range rv {
			if label[v] != lab {
				continue
			}
			piece := next
			next++
			start := out
			label[v] = piece
			queue[out] = v
			out++
			for h := start; h < out; h++ {
				u := queue[h]
				for _, w := range g.adj[g.adjPtr[u]:g.adjPtr[u+1]] {
					if label[w] == lab {
						label[w] = piece
						queue[out] = w
						out++
					}
				}
			}
			work = append(work, region{lo + start, lo + out, parent})
		}
		copy(rv, queue[:out])
		// Pieces are taken from the end of work: reverse these so that
		// they are cut in the order found (the order does not change
		// the reduction's work, only the positions).
		slices.Reverse(work[first:])
	}
	if anchor >= 0 && n > 1 {
		// The anchor alone at the top: the last state, the one the
		// reduction keeps; the rest in its connected pieces below it.
		parents = append(parents, -1)
		own = append(own, anchor)
		ownAt = append(ownAt, len(own))
		label[anchor] = -1
		verts[anchor], verts[n-1] = verts[n-1], verts[anchor]
		split(0, verts[:n-1], 0, 0)
	} else {
		work = append(work, region{0, n, -1})
	}
	var sepWork float64
	for len(work) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		r := work[len(work)-1]
		work = work[:len(work)-1]
		rv := verts[r.lo:r.hi]
		id := int32(len(parents))
		parents = append(parents, r.parent)
		lab := label[rv[0]]
		if len(rv) <= ndLeafStates {
			own = append(own, rv...)
			ownAt = append(ownAt, len(own))
			for _, v := range rv {
				label[v] = -1
			}
			continue
		}
		sep := cutRegion(g, rv, lab, label, level, queue)
		if sep == nil {
			// No level to cut at: eliminated whole.
			own = append(own, rv...)
			ownAt = append(ownAt, len(own))
			for _, v := range rv {
				label[v] = -1
			}
			sepWork += float64(len(rv)) * float64(len(rv)) * float64(len(rv)) / 3
			if maxWork > 0 && sepWork > maxWork {
				return o, true, nil
			}
			continue
		}
		own = append(own, sep...)
		ownAt = append(ownAt, len(own))
		s := float64(len(sep))
		sepWork += s * s * s / 3
		if maxWork > 0 && sepWork > maxWork {
			return o, true, nil
		}
		for _, v := range sep {
			label[v] = -1
		}
		split(r.lo, rv, lab, id)
	}
	o.number(parents, own, ownAt)
	if err := o.analyse(ctx, g, maxWork); err != nil {
		return nil, false, err
	}
	return o, maxWork > 0 && o.work > maxWork, nil
}

// number lays the dissection tree out in o in postorder (children, in the
// order they were found, before their parent): each node's own states
// (own[ownAt[k]:ownAt[k+1]] for tree node k, parents[k] its parent, -1 at
// the root) take the next positions.
func (o *ndOrder) number(parents, own []int32, ownAt []int) {
	nn := len(parents)
	children := make([][]int32, nn)
	for k := 1; k < nn; k++ {
		children[parents[k]] = append(children[parents[k]], int32(k))
	}
	o.nodes = make([]ndNode, 0, nn)
	type frame struct {
		node  int32
		child int
		start int32
	}
	p := int32(0)
	stack := []frame{{0, 0, 0}}
	index := make([]int32, nn) // tree node -> postorder index
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.child < len(children[f.node]) {
			ch := children[f.node][f.child]
			f.child++
			stack = append(stack, frame{ch, 0, p})
			continue
		}
		lo := p
		for _, v := range own[ownAt[f.node]:ownAt[f.node+1]] {
			o.perm[p] = v
			o.pos[v] = p
			p++
		}
		index[f.node] = int32(len(o.nodes))
		o.nodes = append(o.nodes, ndNode{lo: lo, hi: p, start: f.start, parent: parents[f.node]})
		stack = stack[:len(stack)-1]
	}
	for k := range o.nodes {
		if par := o.nodes[k].parent; par >= 0 {
			o.nodes[k].parent = index[par]
		}
	}
}

// cutRegion finds a separator of the region rv (its states labelled lab):
// the states of one breadth-first level, from a pseudo-peripheral state,
// that have a neighbour in the next level; the level is chosen among
// those that leave 30-70% of the region before it, the smallest. It
// returns nil when the region has fewer than three levels.
func cutRegion(g *classGraph, rv []int32, lab int32, label, level, queue []int32) []int32 {
	// The start: the state of least degree; then, up to four times, the
	// state of least degree in the last level of the previous search, as
	// long as the search gets deeper (George and Liu's pseudo-peripheral
	// node).
	root := rv[0]
	for _, v := range rv {
		if g.adjPtr[v+1]-g.adjPtr[v] < g.adjPtr[root+1]-g.adjPtr[root] {
			root = v
		}
	}
	var sizes []int
	bfs := func(root int32) int {
		for _, v := range rv {
			level[v] = -1
		}
		sizes = sizes[:0]
		queue[0] = root
		level[root] = 0
		out := 1
		for h := 0; h < out; h++ {
			u := queue[h]
			l := level[u]
			if int(l) == len(sizes) {
				sizes = append(sizes, 0)
			}
			sizes[l]++
			for _, w := range g.adj[g.adjPtr[u]:g.adjPtr[u+1]] {
				if label[w] == lab && level[w] < 0 {
					level[w] = l + 1
					queue[out] = w
					out++
				}
			}
		}
		return out
	}
	bfs(root)
	for try := 0; try < 4; try++ {
		depth := len(sizes)
		last := queue[len(rv)-sizes[depth-1] : len(rv)]
		cand := last[0]
		for _, v := range last {
			if g.adjPtr[v+1]-g.adjPtr[v] < g.adjPtr[cand+1]-g.adjPtr[cand] {
				cand = v
			}
		}
		bfs(cand)
		if len(sizes) <= depth {
			// Not deeper: keep the previous search (run again: its
			// levels were overwritten).
			bfs(root)
			break
		}
		root = cand
	}
	h := len(sizes)
	if h < 3 {
		return nil
	}
	total := len(rv)
	best, bestSize := -1, math.MaxInt
	before := 0
	half := -1
	for l := 0; l < h; l++ {
		if l >= 1 && l <= h-2 {
			if f := float64(before) / float64(total); f >= 0.3 && f <= 0.7 && sizes[l] < bestSize {
				best, bestSize = l, sizes[l]
			}
			if half < 0 && before+sizes[l] >= total/2 {
				half = l
			}
		}
		before += sizes[l]
	}
	if best < 0 {
		best = half
	}
	if best < 0 {
		best = 1
	}
	var sep []int32
	for _, v := range rv {
		if level[v] != int32(best) {
			continue
		}
		for _, w := range g.adj[g.adjPtr[v]:g.adjPtr[v+1]] {
			if label[w] == lab && level[w] == int32(best+1) {
				sep = append(sep, v)
				break
			}
		}
	}
	return sep
}

// analyse finds every node's boundary and predicts the reduction's work
// and memory.
func (o *ndOrder) analyse(ctx context.Context, g *classGraph, maxWork float64) error {
	n := int32(len(o.perm))
	mark := make([]int32, n) // by position: the last node that listed it, plus 1
	var stack []int64        // the pending update matrices' sizes
	var pending int64
	var list []int32
	for k := range o.nodes {
		if k&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		nd := &o.nodes[k]
		stamp := int32(k + 1)
		list = list[:0]
		add := func(p int32) {
			if p >= nd.hi && mark[p] != stamp {
				mark[p] = stamp
				list = append(list, p)
			}
		}
		for p := nd.lo; p < nd.hi; p++ {
			v := o.perm[p]
			for _, w := range g.adj[g.adjPtr[v]:g.adjPtr[v+1]] {
				add(o.pos[w])
			}
		}
		// The children are the nodes just before, back to the subtree's
		// start, whose parent is k.
		nchild := 0
		for c := k - 1; c >= 0 && o.nodes[c].hi > nd.start; c-- {
			if o.nodes[c].parent == int32(k) {
				for _, p := range o.nodes[c].bound {
					add(p)
				}
				nchild++
			}
		}
		slices.Sort(list)
		nd.bound = slices.Clip(append([]int32(nil), list...))
		m, b := int64(nd.hi-nd.lo), int64(len(nd.bound))
		F := m + b
		elim := m
		if nd.parent < 0 {
			elim = m - 1 // the class's last state is not eliminated
		}
		for j := int64(0); j < elim; j++ {
			r := float64(F - 1 - j)
			o.work += r * r
			o.factor += 2 * (F - 1 - j)
		}
		o.maxFront = max(o.maxFront, F)
		o.maxSep = max(o.maxSep, int(m))
		// The children's updates are popped once this front is made;
		// the peak is with both.
		for ; nchild > 0; nchild-- {
			pending -= stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		o.frontPeak = max(o.frontPeak, pending+F*F)
		stack = append(stack, b*b)
		pending += b * b
		o.stackPeak = max(o.stackPeak, pending)
		if maxWork > 0 && o.work > maxWork {
			return nil
		}
	}
	return nil
}

// guessProbable is a state of the class that is likely among its most
// probable: the one a random walk of the class's jump chain spends the
// most expected time in (1 / exit rate a visit), over up to walkSteps
// jumps from state 0, deterministic (a fixed seed). It only chooses the
// anchor of the order; a poor guess costs a second reduction
// (sparsePlan.solve), never accuracy.
func guessProbable(g *classGraph, steps int) int32 {
	if g.n <= 1 {
		return 0
	}
	stay := make([]float64, g.n)
	rng := rand.New(rand.NewPCG(1, 2))
	v := int32(0)
	best := int32(0)
	for k := 0; k < steps; k++ {
		row := g.rowRate[g.rowPtr[v]:g.rowPtr[v+1]]
		q := 0.0
		for _, r := range row {
			q += r
		}
		stay[v] += 1 / q
		if stay[v] > stay[best] {
			best = v
		}
		u := rng.Float64() * q
		next := g.rowCol[g.rowPtr[v+1]-1]
		for t, r := range row {
			if u < r {
				next = g.rowCol[g.rowPtr[v]+int64(t)]
				break
			}
			u -= r
		}
		v = next
	}
	return best
}
