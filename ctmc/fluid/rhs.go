package fluid

import "math"

// evaluator runs the model's program at one population vector: the
// apparent rate of every slot bottom-up, then every slot's factor
// top-down (the share of the slot's apparent rate that the cooperations
// above it let through), then the activities' flows. One per goroutine;
// it allocates nothing after newEvaluator.
type evaluator struct {
	m       *Model
	c       []float64 // by activity: rate * x[src] (the activity's own apparent rate)
	v       []float64 // by slot: apparent rate
	f       []float64 // by slot: factor
	argmin  []int32   // by op: the input whose value is the minimum (-1: none, the result is 0 by a passive side at 0)
	dc      []float64 // directional derivatives of c, v, f (jvp)
	dv, df  []float64
	scratch []float64
	dir     []float64
}

func (m *Model) newEvaluator() *evaluator {
	return &evaluator{
		m: m, c: make([]float64, len(m.acts)), v: make([]float64, m.slots), f: make([]float64, m.slots),
		argmin: make([]int32, len(m.ops)),
		dc:     make([]float64, len(m.acts)), dv: make([]float64, m.slots), df: make([]float64, m.slots),
		scratch: make([]float64, m.Dim), dir: make([]float64, m.Dim),
	}
}

// run evaluates apparent rates and factors at x. Populations below 0
// (an integrator's rounding) count as 0.
func (e *evaluator) run(x []float64) {
	m := e.m
	v, f := e.v, e.f
	for i := range v {
		v[i] = 0
	}
	for k := range m.acts {
		a := &m.acts[k]
		c := a.rate * math.Max(x[a.src], 0)
		e.c[k] = c
		v[a.slot] += c
	}
	for k := range m.ops {
		o := &m.ops[k]
		in := m.opIn[o.in:o.end]
		if o.kind == opSum {
			s := 0.0
			for _, i := range in {
				s += v[i]
			}
			v[o.out] = s
			continue
		}
		v[o.out], e.argmin[k] = e.minimum(in)
	}
	for i := range f {
		f[i] = 0
	}
	for _, r := range m.roots {
		f[r] = 1
	}
	for k := len(m.ops) - 1; k >= 0; k-- {
		o := &m.ops[k]
		fo := f[o.out]
		in := m.opIn[o.in:o.end]
		if o.kind == opSum {
			for _, i := range in {
				f[i] = fo
			}
			continue
		}
		r := v[o.out]
		for _, i := range in {
			if v[i] > 0 {
				f[i] = fo * r / v[i]
			} else {
				f[i] = 0
			}
		}
	}
}

// minimum combines a cooperation's sides on one action (semantics.md
// section 8): the smallest active apparent rate; a passive side imposes
// none, but a passive side with no weight (no copy ready) blocks the
// action; sides all passive give a passive weight, the smallest. It
// returns the value and which input gave it (-1 when a passive side at 0
// blocks).
func (e *evaluator) minimum(in []int32) (float64, int32) {
	m := e.m
	best, arg := math.Inf(1), int32(-1)
	bestW, argW := math.Inf(1), int32(-1)
	blocked := false
	for j, i := range in {
		x := e.v[i]
		if m.passive[i] {
			if x <= 0 {
				blocked = true
			}
			if x < bestW {
				bestW, argW = x, int32(j)
			}
			continue
		}
		if x < best {
			best, arg = x, int32(j)
		}
	}
	switch {
	case arg < 0: // every side passive
		return math.Max(bestW, 0), argW
	case blocked:
		return 0, -1
	}
	return math.Max(best, 0), arg
}

// kinkWidth is how close (relatively) two sides of a cooperation must be
// to count as tied at a kink of the minimum: there the derivative is the
// average of the tied sides' (a symmetric choice of the generalised
// gradient). A trajectory that follows a kink (two sides equal by
// construction, as a client waiting for each busy server) keeps its
// symmetry under the stiff method's implicit stages that way, where a
// one-sided derivative would split the sides and make the covariance and
// the step sizes chatter.
const kinkWidth = 1e-7

// drift writes F(x) (after run(x)) to dx.
func (e *evaluator) drift(dx []float64) {
	for i := range dx {
		dx[i] = 0
	}
	m := e.m
	for k := range m.acts {
		a := &m.acts[k]
		fl := e.c[k] * e.f[a.slot]
		dx[a.src] -= fl
		dx[a.dst] += fl
	}
}

// throughputs writes every label's throughput (after run) to out: its
// apparent rate at the top of the tree.
func (e *evaluator) throughputs(out []float64) {
	for i, s := range e.m.roots {
		out[i] = e.v[s]
	}
}

// copyRate is the rate at which one copy in activity k's local state
// performs it (after run): the flow divided by the population.
func (e *evaluator) copyRate(k int) float64 {
	a := &e.m.acts[k]
	return a.rate * e.f[a.slot]
}

// jvp writes the derivative of F at x (run(x) done) in direction d to
// out. At a kink of a minimum it takes the average of the tied sides'
// derivatives (kinkWidth).
func (e *evaluator) jvp(x, d, out []float64) {
	m := e.m
	dv, df := e.dv, e.df
	for i := range dv {
		dv[i] = 0
	}
	for k := range m.acts {
		a := &m.acts[k]
		dc := 0.0
		if x[a.src] > 0 {
			dc = a.rate * d[a.src]
		}
		e.dc[k] = dc
		dv[a.slot] += dc
	}
	for k := range m.ops {
		o := &m.ops[k]
		in := m.opIn[o.in:o.end]
		if o.kind == opSum {
			s := 0.0
			for _, i := range in {
				s += dv[i]
			}
			dv[o.out] = s
			continue
		}
		if j := e.argmin[k]; j >= 0 && e.v[o.out] > 0 {
			// the average over the sides tied with the minimum
			best, passive := e.v[in[j]], m.passive[in[j]]
			sum, ties := 0.0, 0
			for _, i := range in {
				if m.passive[i] == passive && e.v[i] <= best+kinkWidth*math.Abs(best) {
					sum += dv[i]
					ties++
				}
			}
			dv[o.out] = sum / float64(ties)
		} else {
			dv[o.out] = 0
		}
	}
	for i := range df {
		df[i] = 0
	}
	for k := len(m.ops) - 1; k >= 0; k-- {
		o := &m.ops[k]
		fo, dfo := e.f[o.out], df[o.out]
		in := m.opIn[o.in:o.end]
		if o.kind == opSum {
			for _, i := range in {
				df[i] = dfo
			}
			continue
		}
		r, dr := e.v[o.out], dv[o.out]
		for _, i := range in {
			vi := e.v[i]
			if vi > 0 {
				df[i] = dfo*r/vi + fo*dr/vi - fo*r*dv[i]/(vi*vi)
			} else {
				df[i] = 0
			}
		}
	}
	for i := range out {
		out[i] = 0
	}
	for k := range m.acts {
		a := &m.acts[k]
		dfl := e.dc[k]*e.f[a.slot] + e.c[k]*df[a.slot]
		out[a.src] -= dfl
		out[a.dst] += dfl
	}
}

// jacobian writes dF/dx at x (run(x) done) to jac, row-major Dim x Dim.
func (e *evaluator) jacobian(x, jac []float64) {
	n := e.m.Dim
	d := e.dir
	col := e.scratch
	for j := 0; j < n; j++ {
		d[j] = 1
		e.jvp(x, d, col)
		d[j] = 0
		for i := 0; i < n; i++ {
			jac[i*n+j] = col[i]
		}
	}
}

// diffusion writes D(x) (after run(x)), the covariance rate of one step of
// the chain at populations x (moments.go), to d (row-major Dim x Dim).
func (e *evaluator) diffusion(d []float64) {
	m := e.m
	n := m.Dim
	for i := range d {
		d[i] = 0
	}
	add := func(k, l int, w float64) {
		a, b := &m.acts[k], &m.acts[l]
		for _, p := range [2]struct {
			i int32
			s float64
		}{{a.src, -1}, {a.dst, 1}} {
			for _, q := range [2]struct {
				i int32
				s float64
			}{{b.src, -1}, {b.dst, 1}} {
				d[int(p.i)*n+int(q.i)] += w * p.s * q.s
			}
		}
	}
	for k := range m.acts {
		a := &m.acts[k]
		if a.src == a.dst {
			continue
		}
		if fl := e.c[k] * e.f[a.slot]; fl > 0 {
			add(k, k, fl)
		}
	}
	for oi := range m.ops {
		o := &m.ops[oi]
		if o.kind != opMin {
			continue
		}
		// the rate at which joint firings pass through this cooperation
		r := e.v[o.out] * e.f[o.out]
		if r <= 0 {
			continue
		}
		below := m.below[oi]
		for i := range below {
			for j := range below {
				if i == j {
					continue
				}
				for _, k := range below[i] {
					fk := e.c[k] * e.f[m.acts[k].slot]
					if fk == 0 || m.acts[k].src == m.acts[k].dst {
						continue
					}
					for _, l := range below[j] {
						fl := e.c[l] * e.f[m.acts[l].slot]
						if fl == 0 || m.acts[l].src == m.acts[l].dst {
							continue
						}
						add(int(k), int(l), fk*fl/r)
					}
				}
			}
		}
	}
}
