package fluid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/passage"
)

// TestSteadyClosedForm: the fixed point of P1[5] <a> Q1[2] (the plug-in's
// array0) solved by hand: min(P1, 3 Q1) = 2 P2 = 4 Q2 with P1 + P2 = 5,
// Q1 + Q2 = 2 gives P1 = 10/3, Q1 = 7/6 (a taken by P, 10/3 < 3 Q1 = 7/2).
func TestSteadyClosedForm(t *testing.T) {
	_, fm := load(t, "P1 = (a,1).P2; P2 = (b,2).P1; Q1 = (a,3).Q2; Q2 = (d,4).Q1; P1[5] <a> Q1[2]")
	st, err := fm.SteadyState(context.Background(), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"P1:P1": 10. / 3, "P1:P2": 5. / 3, "Q1:Q1": 7. / 6, "Q1:Q2": 5. / 6}
	for name, w := range want {
		if got := st.Populations[index(t, fm, name)]; math.Abs(got-w) > 1e-12 {
			t.Errorf("%s: %.15g, want %.15g", name, got, w)
		}
	}
	if !st.Settled || st.Residual > 1e-10 {
		t.Errorf("settled %v residual %g", st.Settled, st.Residual)
	}
	for i, l := range fm.Labels {
		if math.Abs(st.Throughputs[i]-10./3) > 1e-12 {
			t.Errorf("throughput of %s %.15g, want 10/3", l, st.Throughputs[i])
		}
	}
}

// TestNotSettled: a trajectory stopped before it settles says so, with
// the populations still moving.
func TestNotSettled(t *testing.T) {
	_, fm := load(t, "P = (a, 1e-3).P2; P2 = (b, 2e-3).P; P[100]")
	st, err := fm.SteadyState(context.Background(), 1, Options{MaxTime: 50})
	if err != nil {
		t.Fatal(err)
	}
	if st.Settled || len(st.Swings) == 0 || st.Residual < 1e-3 {
		t.Fatalf("settled %v, residual %g, swings %v", st.Settled, st.Residual, st.Swings)
	}
	for _, s := range st.Swings {
		if !(s.Max > s.Min) || s.To <= s.From {
			t.Errorf("swing %+v", s)
		}
	}
}

// TestConservation: every group keeps its copies along the series.
func TestConservation(t *testing.T) {
	_, fm := load(t, clientServer)
	s, err := fm.Series(context.Background(), DefaultTimes(30), 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range s.Times {
		for _, g := range fm.Groups {
			sum := 0.0
			for d := range g.States {
				sum += s.Populations[g.Offset+d][k]
				if s.Populations[g.Offset+d][k] < -1e-9*float64(g.Copies) {
					t.Errorf("negative population %s at t=%g", g.States[d], s.Times[k])
				}
			}
			if math.Abs(sum-float64(g.Copies)) > 1e-9*float64(g.Copies) {
				t.Errorf("t=%g: %s sums to %.12g of %d", s.Times[k], g.Name, sum, g.Copies)
			}
		}
	}
}

// TestPassageClosedForm: without cooperation a tagged copy is the
// component's own chain: from P the first b is Exp(2) then Exp(3)
// (hypoexponential), and entering P2 is Exp(2); the plug-in semantics
// from P2 (entered by a) to P (entered by b) is Exp(3).
func TestPassageClosedForm(t *testing.T) {
	_, fm := load(t, "P = (a, 2).P2; P2 = (b, 3).P; P[50]")
	times := []float64{0, 0.1, 0.5, 1, 2, 4}
	for _, tc := range []struct {
		q    PassageQuery
		cdf  func(t float64) float64
		mean float64
	}{
		{PassageQuery{TargetActions: []string{"b"}}, func(t float64) float64 { return 1 - 3*math.Exp(-2*t) + 2*math.Exp(-3*t) }, 0.5 + 1./3},
		{PassageQuery{Target: "P == P2"}, func(t float64) float64 { return 1 - math.Exp(-2*t) }, 0.5},
		{PassageQuery{SourceActions: []string{"a"}, TargetActions: []string{"b"}}, func(t float64) float64 { return 1 - math.Exp(-3*t) }, 1. / 3},
	} {
		q := tc.q
		q.Times = times
		p, err := fm.Passage(context.Background(), q, Options{RelTol: 1e-10, AbsTol: 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		for i, tt := range times {
			if math.Abs(p.CDF[i]-tc.cdf(tt)) > 1e-8 {
				t.Errorf("%+v: CDF(%g) = %.12g, want %.12g", tc.q, tt, p.CDF[i], tc.cdf(tt))
			}
		}
		if math.Abs(p.Mean-tc.mean) > 1e-8 {
			t.Errorf("%+v: mean %.12g, want %.12g (%s)", tc.q, p.Mean, tc.mean, p.MeanNote)
		}
		// The density is the CDF's derivative.
		for i := 1; i+1 < len(times); i++ {
			h := 1e-5
			d := (tc.cdf(times[i]+h) - tc.cdf(times[i]-h)) / (2 * h)
			if math.Abs(p.PDF[i]-d) > 1e-6 {
				t.Errorf("%+v: PDF(%g) = %.10g, want %.10g", tc.q, times[i], p.PDF[i], d)
			}
		}
	}
}

// TestTaggedPassageApproachesChain: one client among N, followed in the
// chain (a separate component TClient with the same behaviour) and in
// the fluid limit: the CDFs' distance shrinks as N grows.
func TestTaggedPassageApproachesChain(t *testing.T) {
	const tmpl = `
Client = (request, 2.0).Client_wait;
Client_wait = (response, 1.0).Client_think;
Client_think = (think, 0.5).Client;
TClient = (request, 2.0).TClient_wait;
TClient_wait = (response, 1.0).TClient_think;
TClient_think = (think, 0.5).TClient;
Server = (request, 2.0).Server_busy;
Server_busy = (response, 1.0).Server;
(Client[%d] || TClient) <request, response> Server[%d]
`
	times := []float64{0.5, 1, 2, 3, 5, 8}
	var dist []float64
	for _, n := range []int{5, 20, 60} {
		src := fmt.Sprintf(tmpl, n-1, n/5)
		m, diags := lang.Load("tagged.pepa", []byte(src))
		if m == nil {
			t.Fatal(diags)
		}
		s, err := ctmc.Compile(m, ctmc.Options{Aggregate: true})
		if err != nil {
			t.Fatal(err)
		}
		exact, err := passage.Analyze(context.Background(), s, passage.Query{Target: "TClient == TClient_think", Times: times}, passage.AnalyzeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, fm := load(t, src) // the fluid of TClient (1 copy) is that of a tagged client
		p, err := fm.Passage(context.Background(), PassageQuery{Tag: "TClient", Target: "TClient == TClient_think", Times: times}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := 0.0
		for i := range times {
			d = math.Max(d, math.Abs(p.CDF[i]-exact.Points[i].CDF))
		}
		t.Logf("N=%d: sup |F_fluid - F_chain| = %.4g (chain %d states; means %.4g and %.4g)", n, d, exact.Chain.N, p.Mean, exact.Mean)
		dist = append(dist, d)
	}
	if !(dist[1] < dist[0]*0.6 && dist[2] < dist[1]*0.6) {
		t.Errorf("distances %v do not shrink", dist)
	}
}

// TestModelErrors: what the fluid semantics refuses, and why.
func TestModelErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"P = (h, infty).(h, 1.0).P; Q = (h, 2.0).(h, infty).Q; P[2] <h> Q[2]", "both actively and passively"},
		{"P = (a, 1.0).P2; P2 = (b, 1.0).P; Q = (a, infty).Q; (P[3] <a> Q) || P[2]", ""},
	} {
		m, diags := lang.Load("e.pepa", []byte(tc.src))
		if m == nil {
			t.Fatalf("%s: %v", tc.src, diags)
		}
		_, err := Build(m)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.src, err, tc.want)
		}
	}
	_, fm := load(t, clientServer)
	_, err := fm.Passage(context.Background(), PassageQuery{TargetActions: []string{"response"}, Times: []float64{1}}, Options{})
	if !errors.Is(err, ErrAmbiguousTag) {
		t.Errorf("a shared target action: %v, want ErrAmbiguousTag", err)
	}
	for _, q := range []PassageQuery{
		{Tag: "Client", TargetActions: []string{"fix"}},
		{Target: "Client == Nowhere"},
		{Target: "Client == Client_wait || Server == Server"},
		{Tag: "Nobody", TargetActions: []string{"think"}},
	} {
		q.Times = []float64{1}
		if _, err := fm.Passage(context.Background(), q, Options{}); err == nil {
			t.Errorf("%+v: no error", q)
		}
	}
}

// TestPopulationMerging: copies in parallel are one group; identical
// static subtrees in parallel are one subtree with the populations added,
// and the fluid is the same as written the long way.
func TestPopulationMerging(t *testing.T) {
	base := "P = (a, 1.0).P2; P2 = (b, 2.0).P; Q = (a, 3.0).Q2; Q2 = (c, 1.0).Q;\n"
	_, merged := load(t, base+"S = P[2] <a> Q; S[3] || P || P[4]")
	_, long := load(t, base+"(P[6] <a> Q[3]) || P[5]")
	if len(merged.Groups) != 3 || merged.Groups[0].Copies != 6 || merged.Groups[1].Copies != 3 || merged.Groups[2].Copies != 5 {
		t.Fatalf("groups %+v", merged.Groups)
	}
	a, err := merged.Series(context.Background(), []float64{0.5, 2}, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := long.Series(context.Background(), []float64{0.5, 2}, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Populations {
		for k := range a.Times {
			if math.Abs(a.Populations[i][k]-b.Populations[i][k]) > 1e-9 {
				t.Errorf("%s at %g: %g vs %g", merged.StateName(i), a.Times[k], a.Populations[i][k], b.Populations[i][k])
			}
		}
	}
}
