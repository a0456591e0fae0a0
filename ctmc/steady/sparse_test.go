package steady

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
)

// shopModel is the web shop of issue 41: users cycling think -> browse ->
// buy, a pool of servers on browse and buy. Its chain is a closed
// product-form network (an infinite-server station, think, and two
// c-server stations, browse and buy: the servers never change state, so
// each action's rate is min(n_station * rate, c * rate)).
func shopModel(users, servers int, think, browse, buy float64) string {
	return fmt.Sprintf(`User = (think, %g).UserB;
UserB = (browse, %g).UserY;
UserY = (buy, %g).User;
Server = (browse, %g).Server + (buy, %g).Server;
User[%d] <browse, buy> Server[%d]
`, think, browse, buy, browse, buy, users, servers)
}

// shopThroughput is the closed form of the web shop's throughput (every
// action's: the users cycle), X = think E[t] (shopMeans).
func shopThroughput(users, servers int, think, browse, buy float64) float64 {
	t, _, _ := shopMeans(users, servers, think, browse, buy)
	return think * t
}

// shopMeans is the closed form of the web shop's mean populations
// (thinking, browsing, buying), computed in log space from the product
// form pi(t, b, y) ~ 1/(t! think^t) 1/(beta_c(b) browse^b) 1/(beta_c(y)
// buy^y), beta_c(n) = n! for n <= c, c! c^(n-c) above. It shares nothing
// with the solvers.
func shopMeans(users, servers int, think, browse, buy float64) (t, b, y float64) {
	lbeta := func(n int) float64 {
		if n <= servers {
			lg, _ := math.Lgamma(float64(n + 1))
			return lg
		}
		lg, _ := math.Lgamma(float64(servers + 1))
		return lg + float64(n-servers)*math.Log(float64(servers))
	}
	type point struct {
		l       float64
		t, b, y int
	}
	var pts []point
	top := math.Inf(-1)
	for nb := 0; nb <= users; nb++ {
		for ny := 0; nb+ny <= users; ny++ {
			nt := users - nb - ny
			lt, _ := math.Lgamma(float64(nt + 1))
			l := -lt - float64(nt)*math.Log(think) - lbeta(nb) - float64(nb)*math.Log(browse) - lbeta(ny) - float64(ny)*math.Log(buy)
			pts = append(pts, point{l, nt, nb, ny})
			top = math.Max(top, l)
		}
	}
	var S float64
	for _, p := range pts {
		w := math.Exp(p.l - top)
		S += w
		t += w * float64(p.t)
		b += w * float64(p.b)
		y += w * float64(p.y)
	}
	return t / S, b / S, y / S
}

// TestSparseShopClosedForm: sparse GTH, forced and chosen by auto, on web
// shops whose probabilities span from 1 to far below what float64 holds
// (300 users: 1e-400 and less), against the product form.
func TestSparseShopClosedForm(t *testing.T) {
	for _, tc := range []struct {
		users  int
		method string
		think  float64
		scaled bool // the reduction underflows unscaled
	}{{100, MethodAuto, 1, false}, {100, MethodSparse, 1, false}, {150, MethodSparse, 1, false}, {300, MethodSparse, 1, false},
		// Users who rarely stop thinking: the states with many of them
		// browsing or buying are down to 1e-379 (150 users) and 1e-1200
		// (300 users, think 1e-4) beside their fronts' other states, and
		// their inflow underflows in the unscaled reduction.
		{150, MethodSparse, 1e-3, true}, {300, MethodAuto, 1e-4, true}} {
		c := testchain.Chain(t, shopModel(tc.users, 10, tc.think, 7.5, 20))
		res, err := Solve(context.Background(), c, Options{Method: tc.method})
		if err != nil {
			t.Fatalf("%d users, method %q: %v", tc.users, tc.method, err)
		}
		if got := strings.Contains(res.Reason, "scaled by the steady state"); got != tc.scaled {
			t.Errorf("%d users, think %g: scaled pass %v, want %v (%s)", tc.users, tc.think, got, tc.scaled, res.Reason)
		}
		want := shopThroughput(tc.users, 10, tc.think, 7.5, 20)
		for _, a := range []string{"think", "browse", "buy"} {
			got := throughputOf(c, res.Pi, a)
			if math.Abs(got-want) > 1e-11*want {
				t.Errorf("%d users, %q: %s throughput %.15g, closed form %.15g", tc.users, tc.method, a, got, want)
			}
			if est := res.ThroughputError[a]; !(est < 1e-12) {
				t.Errorf("%d users, %q: %s estimated error %g", tc.users, tc.method, a, est)
			}
		}
		if res.Method != MethodSparse {
			t.Errorf("%d users, %q: method %s (%s), want sparse GTH", tc.users, tc.method, res.Method, res.Reason)
		}
	}
}

// TestSparseShopThousandUsers is issue 41's web shop of 1,000 users and
// 10 servers (501,501 states; probabilities from 1 down to 1e-2300): auto
// solves it by sparse GTH, every throughput and mean population within
// 1e-10 of the product form. Before, the error estimate's ratios of
// probabilities overflowed (x_j / x_p beyond 1e308 where the rate beside
// it was as small), and nothing answered. About 10 s: not with -short.
func TestSparseShopThousandUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("501,501 states: about 10 s")
	}
	const users, servers, think, browse, buy = 1000, 10, 0.1, 2, 1
	c := testchain.Chain(t, shopModel(users, servers, think, browse, buy))
	if c.N != 501501 {
		t.Fatalf("%d states, want 501501", c.N)
	}
	res, err := Solve(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodSparse {
		t.Errorf("method %s (%s), want sparse GTH", res.Method, res.Reason)
	}
	mt, mb, my := shopMeans(users, servers, think, browse, buy)
	for _, a := range []string{"think", "browse", "buy"} {
		if got, want := throughputOf(c, res.Pi, a), think*mt; math.Abs(got-want) > 1e-10*want {
			t.Errorf("%s throughput %.15g, closed form %.15g", a, got, want)
		}
	}
	// Mean populations by the users' local state (the array's count of
	// each, from the count vectors).
	for _, p := range []struct {
		state string
		want  float64
	}{{"User", mt}, {"UserB", mb}, {"UserY", my}} {
		if got := utilisationOf(c, res.Pi, "User", p.state); math.Abs(got-p.want) > 1e-10*p.want {
			t.Errorf("mean number in %s %.15g, closed form %.15g", p.state, got, p.want)
		}
	}
}

// TestAutoHandsOver: under auto, a method that fails hands over to the
// next, and the reason says which failed and why. Gauss-Seidel, forced to
// give up at once (a sweep limit of 1), hands over to sparse GTH, which
// was not tried first (SparseEarlyWork negative).
func TestAutoHandsOver(t *testing.T) {
	c := testchain.Chain(t, shopModel(100, 10, 1, 7.5, 20))
	res, err := Solve(context.Background(), c, Options{SparseEarlyWork: -1, SweepLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodSparse || !strings.Contains(res.Reason, "Gauss-Seidel sweeps over the chain in place gave up") {
		t.Fatalf("method %s, reason %q: want sparse GTH after Gauss-Seidel gave up", res.Method, res.Reason)
	}
	want := shopThroughput(100, 10, 1, 7.5, 20)
	if got := throughputOf(c, res.Pi, "browse"); math.Abs(got-want) > 1e-11*want {
		t.Errorf("browse %.15g, closed form %.15g", got, want)
	}
}

// TestSparseEstimateTracksError: the error estimate of sparse GTH is the
// correction one refinement step would apply, so on a vector with a known
// error it must say that error. The web shop's solution, each probability
// perturbed by a relative 1e-7 at random, is handed to the estimate; its
// estimate of every throughput's error must be within a factor of 2 of
// the true error (against the product form): the correction part of it,
// which the estimate's floor (each state's relative imbalance, here about
// the perturbation itself) would hide; the estimate itself at least the
// true error. Unscaled, and with the reduction scaled by the solution
// (the second pass's path).
func TestSparseEstimateTracksError(t *testing.T) {
	ctx := context.Background()
	const users, servers, think, browse, buy = 60, 10, 1, 7.5, 20
	c := testchain.Chain(t, shopModel(users, servers, think, browse, buy))
	want := shopThroughput(users, servers, think, browse, buy)
	for _, scaled := range []bool{false, true} {
		pl, s, x := sparseSolved(t, c)
		var err error
		if scaled {
			if s, err = factorSparse(ctx, pl.g, pl.o, x, s.piv, nil); err != nil {
				t.Fatal(err)
			}
			y, _, err := s.solve(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			x = y.times(x)
		}
		rng := rand.New(rand.NewSource(7))
		bad := &xvec{m: make([]float64, len(x.m)), e: make([]int32, len(x.m))}
		for p := range x.m {
			m, e := math.Frexp(x.m[p] * (1 + 1e-7*(2*rng.Float64()-1)))
			bad.m[p], bad.e[p] = m, x.e[p]+int32(e)
		}
		y := bad
		if s.w != nil {
			// y = bad / w, the reduction's own scale.
			y = &xvec{m: make([]float64, len(x.m)), e: make([]int32, len(x.m))}
			for p := range x.m {
				m, e := math.Frexp(bad.m[p] / s.w.m[p])
				y.m[p], y.e[p] = m, bad.e[p]-s.w.e[p]+int32(e)
			}
		}
		sol, err := pl.estimate(ctx, c, nil, s, bad, y)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"think", "browse", "buy"} {
			got := throughputOf(c, sol.pi, a)
			trueErr := math.Abs(got-want) / want
			est := sol.correction[a]
			if sol.est[a] < trueErr {
				t.Errorf("scaled %v, %s: estimate %.3g below the true error %.3g", scaled, a, sol.est[a], trueErr)
			}
			if trueErr < 1e-11 {
				t.Fatalf("scaled %v, %s: the perturbation left an error of %.3g only", scaled, a, trueErr)
			}
			if est < trueErr/2 || est > 2*trueErr {
				t.Errorf("scaled %v, %s: estimate %.3g, true error %.3g", scaled, a, est, trueErr)
			}
		}
	}
}

// procResModel is issue 41's process/resource model, scaled: n processes
// that boot once (the start-up states are transient), then think, wait
// for one of m resources and use it.
func procResModel(n, m int) string {
	return fmt.Sprintf(`r_boot = 0.05; r_think = 1.0; r_acq = 5.0; r_rel = 0.25;
ProcInit = (boot, r_boot).Proc;
Proc = (think, r_think).ProcWait;
ProcWait = (acquire, r_acq).ProcUse;
ProcUse = (release, r_rel).Proc;
Res = (acquire, r_acq).ResBusy;
ResBusy = (release, r_rel).Res;
ProcInit[%d] <acquire, release> Res[%d]
`, n, m)
}

// procResThroughput is the think throughput of procResModel's closed
// class, from its chain written here by hand from the semantics (states
// (p, w, u): thinking, waiting, using, p + w + u = n, u <= m; think at p,
// acquire at min(5 w, 5 (m - u)) by the apparent-rate rule, release at
// 0.25 u) and solved by a dense GTH of its own. It shares nothing with
// ctmc or the solvers.
func procResThroughput(n, m int) float64 {
	type st struct{ p, w, u int }
	var states []st
	index := map[st]int{}
	for u := 0; u <= m && u <= n; u++ {
		for w := 0; w+u <= n; w++ {
			index[st{n - w - u, w, u}] = len(states)
			states = append(states, st{n - w - u, w, u})
		}
	}
	N := len(states)
	a := make([][]float64, N)
	for i := range a {
		a[i] = make([]float64, N)
	}
	for i, s := range states {
		if s.p > 0 {
			a[i][index[st{s.p - 1, s.w + 1, s.u}]] += float64(s.p)
		}
		if r := 5 * float64(min(s.w, m-s.u)); r > 0 {
			a[i][index[st{s.p, s.w - 1, s.u + 1}]] += r
		}
		if s.u > 0 {
			a[i][index[st{s.p + 1, s.w, s.u - 1}]] += 0.25 * float64(s.u)
		}
	}
	pi := handGTH(a)
	X := 0.0
	for k, s := range states {
		X += pi[k] * float64(s.p)
	}
	return X
}

// handGTH is the steady state of the generator a (off-diagonal rates;
// the diagonal is not read), by a dense GTH of the tests' own, written
// apart from ctmc/steady and ctmc/elim.
func handGTH(a [][]float64) []float64 {
	N := len(a)
	// GTH: eliminate states N-1 down to 1 (each pivot the sum of the
	// rates left to the states before it), then back-substitute from
	// state 0.
	piv := make([]float64, N)
	for k := N - 1; k > 0; k-- {
		for j := 0; j < k; j++ {
			piv[k] += a[k][j]
		}
		for i := 0; i < k; i++ {
			if a[i][k] == 0 {
				continue
			}
			f := a[i][k] / piv[k]
			for j := 0; j < k; j++ {
				if j != i {
					a[i][j] += f * a[k][j]
				}
			}
		}
	}
	pi := make([]float64, N)
	pi[0] = 1
	sum := 1.0
	for k := 1; k < N; k++ {
		for i := 0; i < k; i++ {
			pi[k] += pi[i] * a[i][k]
		}
		pi[k] /= piv[k]
		sum += pi[k]
	}
	for k := range pi {
		pi[k] /= sum
	}
	return pi
}

// usePoolModel is the other process/resource shape of issue 41 (the IPC's
// procres test, with numbers of our own): n processes that wait once,
// then alternate thinking and using one of m resources, which reset
// after each use. Its closed class is (busy processes, resetting
// resources): (n+1)(m+1) states.
func usePoolModel(n, m int) string {
	return fmt.Sprintf(`think_r = 0.8; use_r = 1.5; reset_r = 2.5;
Waiting = (use, use_r).P1;
P1 = (think, think_r).P2;
P2 = (use, use_r).P1;
R1 = (use, use_r).R2;
R2 = (reset, reset_r).R1;
R1[%d] <use> Waiting[%d]
`, m, n)
}

// usePoolThroughput is usePoolModel's think throughput, from its closed
// class written by hand (a processes ready to use, b resources
// resetting; think at 0.8 (n - a), use at min(1.5 a, 1.5 (m - b)),
// reset at 2.5 b) and handGTH.
func usePoolThroughput(n, m int) float64 {
	N := (n + 1) * (m + 1)
	id := func(a, b int) int { return a*(m+1) + b }
	q := make([][]float64, N)
	for i := range q {
		q[i] = make([]float64, N)
	}
	for a := 0; a <= n; a++ {
		for b := 0; b <= m; b++ {
			i := id(a, b)
			if a < n {
				q[i][id(a+1, b)] += 0.8 * float64(n-a)
			}
			if r := 1.5 * float64(min(a, m-b)); r > 0 {
				q[i][id(a-1, b+1)] += r
			}
			if b > 0 {
				q[i][id(a, b-1)] += 2.5 * float64(b)
			}
		}
	}
	pi := handGTH(q)
	X := 0.0
	for a := 0; a <= n; a++ {
		for b := 0; b <= m; b++ {
			X += pi[id(a, b)] * 0.8 * float64(n-a)
		}
	}
	return X
}

// TestSparseProcessResource: the process/resource model of issue 41
// scaled down (40 processes, 20 resources: 10,801 states, of which the
// closed class has 651, the rest the processes' start-up), by auto and by
// sparse GTH forced, against the chain written by hand. The full size
// (244 processes, 192 resources: 2,456,311 states, a closed class of
// 28,757) is solved by the CLI in about 10 s; its figures are compared
// with simulation's intervals in the note.
func TestSparseProcessResource(t *testing.T) {
	for _, tc := range []struct{ n, m int }{{40, 20}, {30, 30}, {50, 5}} {
		c := testchain.Chain(t, procResModel(tc.n, tc.m))
		want := procResThroughput(tc.n, tc.m)
		for _, method := range []string{MethodAuto, MethodSparse} {
			res, err := Solve(context.Background(), c, Options{Method: method})
			if err != nil {
				t.Fatalf("%d processes, %d resources, %q: %v", tc.n, tc.m, method, err)
			}
			for _, a := range []string{"think", "acquire", "release"} {
				if got := throughputOf(c, res.Pi, a); math.Abs(got-want) > 1e-11*want {
					t.Errorf("%d processes, %d resources, %q: %s throughput %.15g, by hand %.15g", tc.n, tc.m, method, a, got, want)
				}
			}
			if got := throughputOf(c, res.Pi, "boot"); got != 0 {
				t.Errorf("%d processes, %d resources, %q: boot throughput %g, want 0 (transient)", tc.n, tc.m, method, got)
			}
		}
		t.Logf("%d processes, %d resources: %d states, throughput %.12g", tc.n, tc.m, c.N, want)
	}
	for _, tc := range []struct{ n, m int }{{40, 24}, {25, 40}} {
		c := testchain.Chain(t, usePoolModel(tc.n, tc.m))
		want := usePoolThroughput(tc.n, tc.m)
		for _, method := range []string{MethodAuto, MethodSparse} {
			res, err := Solve(context.Background(), c, Options{Method: method})
			if err != nil {
				t.Fatalf("use pool %d/%d, %q: %v", tc.n, tc.m, method, err)
			}
			for _, a := range []string{"think", "use", "reset"} {
				if got := throughputOf(c, res.Pi, a); math.Abs(got-want) > 1e-11*want {
					t.Errorf("use pool %d/%d, %q: %s throughput %.15g, by hand %.15g", tc.n, tc.m, method, a, got, want)
				}
			}
		}
		t.Logf("use pool %d processes, %d resources: %d states, throughput %.12g", tc.n, tc.m, c.N, want)
	}
}

// TestFillUnknownEstimates: the estimate a pass that underflowed leaves
// for the next pass's scaling. On the web shop's exact solution, the
// first half of the positions (the states reduced first, where inflows
// underflow) is made unknown (every other one) or unsure and far too
// small (2^-3000 times its value, as a state solved without most of its
// inflow); fillUnknown must bring every one within 2^100 of its value
// (the next pass needs about float64's range, 2^1000, across a front:
// measured, 2^35.7; without the sweeps, from below only, 2^186), and
// leave the sure states as they were.
func TestFillUnknownEstimates(t *testing.T) {
	c := testchain.Chain(t, shopModel(300, 10, 1, 7.5, 20))
	pl, _, x := sparseSolved(t, c)
	n := pl.g.n
	est := &xvec{m: append([]float64(nil), x.m...), e: append([]int32(nil), x.e...)}
	unsure := make([]bool, n)
	for p := 0; p < n/2; p++ {
		unsure[p] = true
		if p%2 == 0 {
			est.m[p], est.e[p] = 0, 0
		} else {
			est.e[p] -= 3000
		}
	}
	fillUnknown(pl.g, pl.o, est, unsure)
	worst := 0.0
	for p := range x.m {
		off := math.Log2(est.m[p]/x.m[p]) + float64(est.e[p]-x.e[p])
		if !unsure[p] && off != 0 {
			t.Fatalf("position %d was sure, changed by 2^%g", p, off)
		}
		worst = math.Max(worst, math.Abs(off))
	}
	t.Logf("worst estimate off by 2^%.1f", worst)
	if !(worst < 100) {
		t.Errorf("an estimate is off by 2^%.1f", worst)
	}
}

// sparseSolved plans c's one closed class (every state) for sparse GTH,
// reduces it unscaled and back-substitutes: the plan, the reduction and
// the solution up to scale, by position.
func sparseSolved(t *testing.T, c *ctmc.Chain) (*sparsePlan, *sparseGTH, *xvec) {
	t.Helper()
	ctx := context.Background()
	class := make([]int32, c.N)
	for i := range class {
		class[i] = int32(i)
	}
	pl, err := planSparse(ctx, c, class, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := factorSparse(ctx, pl.g, pl.o, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, _, err := s.solve(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl, s, x
}
