package steady

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

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
// action's: the users cycle), computed in log space from the product
// form pi(t, b, y) ~ 1/(t! think^t) 1/(beta_c(b) browse^b) 1/(beta_c(y)
// buy^y), beta_c(n) = n! for n <= c, c! c^(n-c) above, and X = think E[t].
// It shares nothing with the solvers.
func shopThroughput(users, servers int, think, browse, buy float64) float64 {
	lbeta := func(n int) float64 {
		if n <= servers {
			lg, _ := math.Lgamma(float64(n + 1))
			return lg
		}
		lg, _ := math.Lgamma(float64(servers + 1))
		return lg + float64(n-servers)*math.Log(float64(servers))
	}
	var lw []float64
	var nt []int
	top := math.Inf(-1)
	for b := 0; b <= users; b++ {
		for y := 0; b+y <= users; y++ {
			t := users - b - y
			lt, _ := math.Lgamma(float64(t + 1))
			l := -lt - float64(t)*math.Log(think) - lbeta(b) - float64(b)*math.Log(browse) - lbeta(y) - float64(y)*math.Log(buy)
			lw = append(lw, l)
			nt = append(nt, t)
			top = math.Max(top, l)
		}
	}
	var S, T float64
	for k, l := range lw {
		w := math.Exp(l - top)
		S += w
		T += w * float64(nt[k])
	}
	return think * T / S
}

// TestSparseShopClosedForm: sparse GTH, forced and chosen by auto, on web
// shops whose probabilities span from 1 to far below what float64 holds
// (300 users: 1e-400 and less), against the product form.
func TestSparseShopClosedForm(t *testing.T) {
	for _, tc := range []struct {
		users  int
		method string
	}{{100, MethodAuto}, {100, MethodSparse}, {150, MethodSparse}, {300, MethodSparse}} {
		c := testchain.Chain(t, shopModel(tc.users, 10, 1, 7.5, 20))
		res, err := Solve(context.Background(), c, Options{Method: tc.method})
		if err != nil {
			t.Fatalf("%d users, method %q: %v", tc.users, tc.method, err)
		}
		want := shopThroughput(tc.users, 10, 1, 7.5, 20)
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
