package fluid

import (
	"context"
	"math"
	"testing"
)

// The fluid ODE of two models derived by hand from semantics.md section
// 7, solved by RK4 with small steps, against the package's ODE and
// integrators: populations and throughputs.

const clientServer = `
r_req = 2.0; r_resp = 1.0; r_think = 0.2; r_brk = 0.05; r_fix = 0.5;
Client = (request, r_req).Client_wait;
Client_wait = (response, r_resp).Client_think;
Client_think = (think, r_think).Client;
Server = (request, r_req).Server_busy + (break, r_brk).Server_broken;
Server_busy = (response, r_resp).Server;
Server_broken = (fix, r_fix).Server;
Client[100] <request, response> Server[20]
`

// clientServerODE: C, CW, CT, S, SB, SX.
func clientServerODE(y, dy []float64) {
	c, cw, ct, s, sb, sx := y[0], y[1], y[2], y[3], y[4], y[5]
	req := math.Min(2*c, 2*s)
	resp := math.Min(1*cw, 1*sb)
	think := 0.2 * ct
	brk := 0.05 * s
	fix := 0.5 * sx
	dy[0] = -req + think
	dy[1] = req - resp
	dy[2] = resp - think
	dy[3] = -req + resp - brk + fix
	dy[4] = req - resp
	dy[5] = brk - fix
}

// splitModel has a shared action in two local states of one side, at
// different rates, and a passive partner: the flow out of each state is
// its share of the side's apparent rate.
const splitModel = `
a = 1.5; b = 0.5; s = 4.0; u = 0.7; w = 0.3;
P = (go, a).P2 + (rest, u).P3;
P2 = (go, b).P + (back, w).P;
P3 = (wake, 1.0).P;
Q = (go, s).Q2;
Q2 = (done, 2.0).Q;
R = (done, infty).R2;
R2 = (reset, 3.0).R;
P[30] <go> (Q[10] <done> R[5])
`

// splitODE: P, P2, P3, Q, Q2, R, R2.
func splitODE(y, dy []float64) {
	p, p2, p3, q, q2, r, r2 := y[0], y[1], y[2], y[3], y[4], y[5], y[6]
	side := 1.5*p + 0.5*p2
	goFlow := math.Min(side, 4*q)
	fromP, fromP2 := 0.0, 0.0
	if side > 0 {
		fromP, fromP2 = goFlow*1.5*p/side, goFlow*0.5*p2/side
	}
	// done: Q2 active at 2 per copy, R passive (weight 1 per copy): the
	// active side's rate, if some R is ready.
	done := 0.0
	if r > 0 {
		done = 2 * q2
	}
	rest, back, wake, reset := 0.7*p, 0.3*p2, 1.0*p3, 3.0*r2
	dy[0] = -fromP - rest + fromP2 + back + wake
	dy[1] = fromP - fromP2 - back
	dy[2] = rest - wake
	dy[3] = -goFlow + done
	dy[4] = goFlow - done
	dy[5] = -done + reset
	dy[6] = done - reset
}

func TestHandDerivedODE(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		ode    func(y, dy []float64)
		order  []string
		labels map[string]func(y []float64) float64
	}{
		{"client-server", clientServer, clientServerODE,
			[]string{"Client:Client", "Client:Client_wait", "Client:Client_think", "Server:Server", "Server:Server_busy", "Server:Server_broken"},
			map[string]func(y []float64) float64{
				"request":  func(y []float64) float64 { return math.Min(2*y[0], 2*y[3]) },
				"response": func(y []float64) float64 { return math.Min(y[1], y[4]) },
				"break":    func(y []float64) float64 { return 0.05 * y[3] },
			}},
		{"split and passive", splitModel, splitODE,
			[]string{"P:P", "P:P2", "P:P3", "Q:Q", "Q:Q2", "R:R", "R:R2"},
			map[string]func(y []float64) float64{
				"go":   func(y []float64) float64 { return math.Min(1.5*y[0]+0.5*y[1], 4*y[3]) },
				"done": func(y []float64) float64 { return 2 * y[4] },
				"back": func(y []float64) float64 { return 0.3 * y[1] },
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fm := load(t, tc.src)
			perm := make([]int, len(tc.order))
			for i, n := range tc.order {
				perm[i] = index(t, fm, n)
			}
			y0 := make([]float64, len(perm))
			x0 := fm.Initial()
			for i, p := range perm {
				y0[i] = x0[p]
			}
			times := []float64{0.1, 0.5, 1, 2, 5, 10}
			want := rk4(tc.ode, y0, times, 1e-4)
			for _, method := range []string{MethodAuto, MethodRodas4, MethodDopri5} {
				s, err := fm.Series(context.Background(), times, 1, Options{Method: method, RelTol: 1e-10, AbsTol: 1e-12})
				if err != nil {
					t.Fatal(err)
				}
				for k := range times {
					for i, p := range perm {
						if got := s.Populations[p][k]; math.Abs(got-want[k][i]) > 1e-7*math.Max(1, math.Abs(want[k][i])) {
							t.Errorf("%s: t=%g %s: %.12g, hand-derived %.12g", method, times[k], tc.order[i], got, want[k][i])
						}
					}
					for name, f := range tc.labels {
						li := -1
						for j, l := range fm.Labels {
							if l == name {
								li = j
							}
						}
						if li < 0 {
							t.Fatalf("no label %s in %v", name, fm.Labels)
						}
						if got, w := s.Throughputs[li][k], f(want[k]); math.Abs(got-w) > 1e-7*math.Max(1, w) {
							t.Errorf("%s: t=%g throughput of %s: %.12g, hand-derived %.12g", method, times[k], name, got, w)
						}
					}
				}
			}
			// The drift itself, at the hand solution's points.
			dx := make([]float64, fm.Dim)
			dy := make([]float64, len(perm))
			x := make([]float64, fm.Dim)
			for _, yk := range want {
				for i, p := range perm {
					x[p] = yk[i]
				}
				fm.Drift(x, dx)
				tc.ode(yk, dy)
				for i, p := range perm {
					if math.Abs(dx[p]-dy[i]) > 1e-12*math.Max(1, math.Abs(dy[i])) {
						t.Errorf("drift of %s at %v: %.15g, hand-derived %.15g", tc.order[i], yk, dx[p], dy[i])
					}
				}
			}
		})
	}
}
