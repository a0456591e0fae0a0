package observe

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/models"
	"pepa/passage"
)

func tracker(t *testing.T, src string) *Tracker {
	t.Helper()
	m, diags := lang.Load("m.pepa", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	tr, err := NewTracker(context.Background(), m, ctmc.DefaultOptions, models.Options{Question: models.Question{Epsilon: 1e-13}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// twoBranches: machine M takes the ideal path (c1 at r1, then c2 at r2)
// or the perturbed one (p1, p2), racing on c1; N computes c3 alone.
const twoBranches = `r1 = 0.5; r2 = 0.4; p1 = 0.2; p2 = 0.1; r3 = 0.3;
A1 = (c1, infty).A1; A2 = (c2, infty).A2; A3 = (c3, infty).A3;
M = (c1, r1).(c2, r2).M + (c1, p1).(c2, p2).M;
N = (c3, r3).N;
(A1 <> A2 <> A3) <c1, c2, c3> (M <> N)
`

// TestBranchPosterior: a machine with two branches of exponential work.
// After c1 at t1 the branch's posterior is r1 : p1 (the race's densities
// r1 e^{-(r1+p1) t1} and p1 e^{-(r1+p1) t1}); with no c2 by T it becomes
// r1 e^{-r2 (T - t1)} : p1 e^{-p2 (T - t1)}, and then
// P(F <= beta | R) = sum_b w_b (1 - e^{-rate_b (beta - T)}) and
// E[F | R] = T + sum_b w_b / rate_b: to 1e-9, before and after each
// completion; the machine alone (N) is memoryless: its figures from T are
// its unconditional ones shifted. A completed cycle is finished at its
// recorded time.
func TestBranchPosterior(t *testing.T) {
	const r1, r2, p1, p2, r3 = 0.5, 0.4, 0.2, 0.1, 0.3
	ctx := context.Background()
	tr := tracker(t, twoBranches)
	check := func(what string, beta, now float64, wantP, wantMean float64, name string) {
		t.Helper()
		r, err := tr.Figures(ctx, beta, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, mr := range r.Machines {
			if mr.Name != name {
				continue
			}
			if math.Abs(mr.PByBeta-wantP) > 1e-9 || math.Abs(mr.Mean-wantMean) > 1e-9*wantMean {
				t.Errorf("%s: %s P(F <= %g) %.12g E[F] %.12g, by hand %.12g %.12g", what, name, beta, mr.PByBeta, mr.Mean, wantP, wantMean)
			}
			return
		}
		t.Errorf("%s: no machine %s in %+v", what, name, r.Machines)
	}
	// Nothing seen by T = 2: M still at its start (memoryless), so F - 2 is
	// the race then the chosen path's c2.
	{
		const T, beta = 2.0, 12.0
		q := r1 + p1
		// P(F - T <= x) for the hypoexponential of each branch, weighted
		// by r1/q and p1/q.
		hypo := func(a, b, x float64) float64 { return 1 - (b*math.Exp(-a*x)-a*math.Exp(-b*x))/(b-a) }
		x := beta - T
		wantP := r1/q*hypo(q, r2, x) + p1/q*hypo(q, p2, x)
		wantMean := T + 1/q + r1/q/r2 + p1/q/p2
		check("nothing seen", beta, T, wantP, wantMean, "M")
		check("nothing seen", beta, T, 1-math.Exp(-r3*(beta-T)), T+1/r3, "N")
	}
	const t1 = 1.5
	if err := tr.Add(ctx, Event{Time: t1, Machine: "M", Action: "c1"}, ""); err != nil {
		t.Fatal(err)
	}
	for _, T := range []float64{t1, 3, 7} {
		wi, wp := r1*math.Exp(-r2*(T-t1)), p1*math.Exp(-p2*(T-t1))
		wi, wp = wi/(wi+wp), wp/(wi+wp)
		const beta = 10.0
		wantP := wi*(1-math.Exp(-r2*(beta-T))) + wp*(1-math.Exp(-p2*(beta-T)))
		check("after c1", beta, T, wantP, T+wi/r2+wp/p2, "M")
	}
	if err := tr.Add(ctx, Event{Time: 8, Machine: "M", Action: "c2"}, ""); err != nil {
		t.Fatal(err)
	}
	check("M finished at 8", 10, 9, 1, 8, "M")
	check("M finished at 8, beta 7", 7, 9, 0, 8, "M")
	r, err := tr.Figures(ctx, 10, 9)
	if err != nil {
		t.Fatal(err)
	}
	// P(all <= 10) is N's alone, E[makespan] = E[max(8, 9 + Exp(r3))] = 9 + 1/r3.
	if math.Abs(r.PAllByBeta-(1-math.Exp(-r3*1))) > 1e-9 || math.Abs(r.ExpectedMakespan-(9+1/r3)) > 1e-8 {
		t.Errorf("P(all) %.12g E[makespan] %.12g, want %.12g %.12g", r.PAllByBeta, r.ExpectedMakespan, 1-math.Exp(-r3), 9+1/r3)
	}
}

// TestRecordErrors: a record's faults name the file and line, and an
// event the model cannot produce leaves the tracker unchanged.
func TestRecordErrors(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct{ csv, want string }{
		{"time,machine,action\n1,M,c1\n2,M,c9\n", "r.csv:3: error: machine M has no observable action c9 (it performs c1, c2)"},
		{"time,machine,action\n1,M,c2\n", "r.csv:2: error: impossible: machine M cannot complete c2 at 1 given the record before it"},
		{"time,machine,action\n2,M,c1\n1,N,c3\n", "r.csv:3: error: time 1 is before the previous event's (2)"},
		{"time,machine,action\n1,X,c1\n", `r.csv:2: error: no machine "X" (the machines are M, N)`},
		{"time,machine\n", "r.csv:1: error: expected the header time,machine,action"},
		{"time,machine,action\nsoon,M,c1\n", `r.csv:2: error: time "soon": expected a finite number`},
		{"time,machine,action\n1,M,c1\n2,M,c2\n3,M,c1\n", "r.csv:4: error: machine M finished its cycle at 2"},
	} {
		tr := tracker(t, twoBranches)
		evs, err := ReadRecord("r.csv", strings.NewReader(tt.csv))
		for _, ev := range evs {
			if err != nil {
				break
			}
			err = tr.Add(ctx, ev, "r.csv")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.csv, err, tt.want)
		}
	}
	tr := tracker(t, twoBranches)
	if err := tr.Add(ctx, Event{Time: 1, Machine: "M", Action: "c2"}, ""); err == nil {
		t.Fatal("c2 before c1 accepted")
	}
	if tr.Events() != 0 {
		t.Errorf("a refused event was counted")
	}
}

// TestSnapshotFinishedRange: a Snapshot keeps the record it was taken at
// while the Tracker takes more (its figures those of the closed form for
// nothing seen, the Tracker's those after c1), and the other way round;
// FinishedAt is the recorded time of a completed cycle; a time or now too
// far past the last completion for the chain's rates is refused with the
// range taken, the Tracker unchanged; a cancelled context stops Figures;
// Figures and Add run at once (go test -race).
func TestSnapshotFinishedRange(t *testing.T) {
	const r1, r2, p1, p2 = 0.5, 0.4, 0.2, 0.1
	ctx := context.Background()
	tr := tracker(t, twoBranches)
	snap := tr.Snapshot()
	if err := tr.Add(ctx, Event{Time: 1.5, Machine: "M", Action: "c1"}, ""); err != nil {
		t.Fatal(err)
	}
	mOf := func(tr *Tracker, beta, now float64) models.MachineResult {
		t.Helper()
		r, err := tr.Figures(ctx, beta, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, mr := range r.Machines {
			if mr.Name == "M" {
				return mr
			}
		}
		t.Fatalf("no machine M")
		return models.MachineResult{}
	}
	q := r1 + p1
	hypo := func(a, b, x float64) float64 { return 1 - (b*math.Exp(-a*x)-a*math.Exp(-b*x))/(b-a) }
	if got, want := mOf(snap, 12, 2).PByBeta, r1/q*hypo(q, r2, 10)+p1/q*hypo(q, p2, 10); snap.Events() != 0 || math.Abs(got-want) > 1e-9 {
		t.Errorf("snapshot before c1: %d events, P(F <= 12) %.12g, closed form %.12g", snap.Events(), got, want)
	}
	wi, wp := r1*math.Exp(-r2*0.5), p1*math.Exp(-p2*0.5)
	wi, wp = wi/(wi+wp), wp/(wi+wp)
	if got, want := mOf(tr, 12, 2).PByBeta, wi*(1-math.Exp(-r2*10))+wp*(1-math.Exp(-p2*10)); math.Abs(got-want) > 1e-9 {
		t.Errorf("tracker after c1: P(F <= 12) %.12g, closed form %.12g", got, want)
	}
	// The snapshot takes its own record; the tracker does not see it.
	if err := snap.Add(ctx, Event{Time: 1, Machine: "N", Action: "c3"}, ""); err != nil {
		t.Fatal(err)
	}
	if tr.Events() != 1 || snap.Events() != 1 {
		t.Errorf("events: tracker %d, snapshot %d", tr.Events(), snap.Events())
	}
	if _, ok := tr.FinishedAt("N"); ok {
		t.Errorf("the snapshot's completion of N reached the tracker")
	}
	if at, ok := snap.FinishedAt("N"); !ok || at != 1 {
		t.Errorf("N finished at %g %v, want 1", at, ok)
	}
	// Out of range: an event, and now.
	err := tr.Add(ctx, Event{Time: 1e300, Machine: "M", Action: "c2"}, "")
	var ee *EventError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "time 1e+300 is out of range: at most ") || tr.Events() != 1 {
		t.Errorf("event at 1e300: %v (%d events)", err, tr.Events())
	}
	_, err = tr.Figures(ctx, 10, 1e300)
	var re *RangeError
	if !errors.As(err, &re) || re.What != "now" || !(re.Max > 1.5 && re.Max < 1e300) {
		t.Errorf("now 1e300: %v", err)
	}
	// The latest now taken: the group whose span ends first. Both groups'
	// filters run by Laplace-transform inversion (auto), whose span is
	// passage.LaplaceSpan: N's (filtered at 0) before M's (at 1.5).
	if want := math.Min(1.5+passage.LaplaceSpan, passage.LaplaceSpan); re != nil && math.Abs(re.Max-want) > 1e-9*want {
		t.Errorf("now's range: at most %g, want %g", re.Max, want)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tr.Figures(cancelled, 10, 5); !errors.Is(err, context.Canceled) {
		t.Errorf("figures under a cancelled context: %v", err)
	}
	// Figures while events are taken.
	tr = tracker(t, twoBranches)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				if _, err := tr.Figures(ctx, 20, 9); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for _, ev := range []Event{{Time: 1, Machine: "M", Action: "c1"}, {Time: 2, Machine: "N", Action: "c3"}, {Time: 8, Machine: "M", Action: "c2"}} {
		if err := tr.Add(ctx, ev, ""); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}
