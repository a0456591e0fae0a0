package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// computations counts the figures computations that ended, by outcome,
// and passes each end on.
type computations struct {
	ended, stopped atomic.Int64
	done           chan error
}

func newComputations() *computations { return &computations{done: make(chan error, 100)} }

func (c *computations) hook(err error) {
	c.ended.Add(1)
	if stopped(err) {
		c.stopped.Add(1)
	}
	c.done <- err
}

// next waits for the next computation to end (failing after wait).
func (c *computations) next(t *testing.T, wait time.Duration) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(wait):
		t.Fatalf("no computation ended within %s", wait)
		return nil
	}
}

// TestDeadline: a query whose figures take far longer than the request
// deadline (the stiff model at now = 1e6: seconds of filtering) is
// answered 503 at the deadline, saying so, and its computation is stopped
// (it ends with the context's error, not with the figures); an event
// whose filtering would run past the deadline is answered 503 too, taking
// nothing.
func TestDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	comps := newComputations()
	srv := start(t, t.TempDir(), Config{RequestTimeout: deadline, Transient: "uniformization", computed: comps.hook})
	id := postModel(t, srv.url, "stiff", stiffModel)
	t0 := time.Now()
	code, b := call(t, "GET", srv.url+"/v1/models/"+id+"/robustness?beta=1e7&now=1e6", testToken, nil)
	took := time.Since(t0)
	if code != http.StatusServiceUnavailable || !strings.Contains(errorOf(t, b), "did not finish within the request deadline (300ms, --request-timeout): stopped") {
		t.Errorf("a long query: %d %s", code, b)
	}
	// Generous for a loaded machine; the work itself takes seconds.
	if took > deadline+2*time.Second {
		t.Errorf("a long query answered after %s (deadline %s)", took, deadline)
	}
	if err := comps.next(t, 3*time.Second); !stopped(err) {
		t.Errorf("the long query's computation ended with %v, want it stopped", err)
	}
	code, b = call(t, "POST", srv.url+"/v1/models/"+id+"/events", testToken, strings.NewReader(`{"time": 9e5, "machine": "M1", "action": "compute1"}`))
	if code != http.StatusServiceUnavailable || !strings.Contains(errorOf(t, b), "taking the events did not finish within the request deadline") || !strings.Contains(string(b), `"taken": 0`) {
		t.Errorf("a long event: %d %s", code, b)
	}
	if evs := recordOf(t, srv.url, id); len(evs) != 0 {
		t.Errorf("the long event was taken: %v", evs)
	}
}

// TestStiffFilterByLaplace: with the default engine a query on the stiff
// model at now = 5000 is answered at once (the filter by Laplace-transform
// inversion, whose cost does not grow with now), with the figures
// uniformization's forced server gives after its 5e6 steps, within 1e-8.
func TestStiffFilterByLaplace(t *testing.T) {
	figures := func(engine string) map[string]any {
		srv := start(t, t.TempDir(), Config{Transient: engine})
		id := postModel(t, srv.url, "stiff", stiffModel)
		t0 := time.Now()
		code, b := call(t, "GET", srv.url+"/v1/models/"+id+"/robustness?beta=1e4&now=5000", testToken, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", engine, code, b)
		}
		t.Logf("%s: answered in %s", engine, time.Since(t0).Round(time.Millisecond))
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t0 := time.Now()
	lap := figures("")
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("auto took %s", took)
	}
	uni := figures("uniformization")
	for _, key := range []string{"robustness", "p_all_by_beta", "expected_makespan"} {
		a, _ := lap[key].(float64)
		b, _ := uni[key].(float64)
		if math.Abs(a-b) > 1e-8*math.Max(1, math.Abs(b)) {
			t.Errorf("%s: auto %.12g, uniformization %.12g", key, a, b)
		}
	}
}

// TestCancelOnDisconnect: a client that goes away while its figures are
// computed stops the computation (the hook sees it end with the context's
// error long before the seconds it needs), and the next request on the
// model waits for nothing.
func TestCancelOnDisconnect(t *testing.T) {
	comps := newComputations()
	srv := start(t, t.TempDir(), Config{Transient: "uniformization", computed: comps.hook})
	id := postModel(t, srv.url, "stiff", stiffModel)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, _, err := callErr(ctx, "GET", srv.url+"/v1/models/"+id+"/robustness?beta=1e7&now=1e6", testToken, nil)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // the computation under way
	if n := comps.ended.Load(); n != 0 {
		t.Fatalf("%d computations ended before the client left", n)
	}
	t0 := time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the client: %v", err)
	}
	if err := comps.next(t, 3*time.Second); !stopped(err) {
		t.Errorf("the computation ended with %v, want it stopped", err)
	}
	t.Logf("stopped %s after the client left", time.Since(t0).Round(time.Millisecond))
	// The next request is answered at once from another computation.
	code, b := call(t, "GET", srv.url+"/v1/models/"+id+"/robustness?beta=1e7&now=10", testToken, nil)
	if code != 200 {
		t.Errorf("the next query: %d %s", code, b)
	}
}

// TestRecordFirst: while a model's figures are being computed (seconds of
// work), an event POST on it is answered, and a query the cache holds
// too, before that computation ends: the event is on disk and its record
// published, and the computation, for the record before, goes on until
// its client leaves.
func TestRecordFirst(t *testing.T) {
	comps := newComputations()
	srv := start(t, t.TempDir(), Config{Transient: "uniformization", computed: comps.hook})
	id := postModel(t, srv.url, "stiff", stiffModel)
	u := srv.url + "/v1/models/" + id
	if code, b := call(t, "GET", u+"/robustness?beta=1e7&now=10", testToken, nil); code != 200 {
		t.Fatalf("a quick query: %d %s", code, b)
	}
	if err := comps.next(t, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, cached := call(t, "GET", u+"/robustness?beta=1e7&now=10", testToken, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := make(chan int, 1)
	go func() {
		code, _, _, _ := callErr(ctx, "GET", u+"/robustness?beta=1e7&now=1e6", testToken, nil)
		long <- code
	}()
	time.Sleep(200 * time.Millisecond)
	if code, b := call(t, "GET", u+"/robustness?beta=1e7&now=10", testToken, nil); code != 200 || !bytes.Equal(b, cached) || comps.ended.Load() != 1 {
		t.Errorf("a cached query during the computation: %d %s (%d computations ended)", code, b, comps.ended.Load())
	}
	// A bound far above an answer's milliseconds, far below the
	// computation's seconds: a POST that waited for it fails here rather
	// than hanging the test.
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	code, b, _, err := callErr(pctx, "POST", u+"/events", testToken, strings.NewReader(`{"time": 20, "machine": "M1", "action": "compute1"}`))
	if err != nil || code != 200 || !strings.Contains(string(b), `"events": 1`) {
		t.Errorf("an event during the computation: %d %s %v", code, b, err)
	}
	if n := comps.ended.Load(); n != 1 {
		t.Errorf("the event was answered after the long computation ended (%d ended)", n)
	}
	select {
	case code := <-long:
		t.Errorf("the long query was answered (%d) before its client left", code)
	default:
	}
	if evs := recordOf(t, srv.url, id); len(evs) != 1 {
		t.Errorf("the record after the event: %v", evs)
	}
	cancel()
	select {
	case <-long:
	case <-time.After(20 * time.Second):
		t.Errorf("the long query's client did not return after it left")
	}
}

// immutable makes dir unwritable for this process: chmod for a user,
// the immutable attribute (chattr +i) for root, whom modes do not stop.
// It returns the undo, or skips the test when neither is available.
func immutable(t *testing.T, dir string) func() {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		return func() { os.Chmod(dir, 0o700) }
	}
	if err := setFlags(dir, true); err != nil {
		t.Skipf("root, and no immutable attribute here (%v): cannot make a directory unwritable", err)
	}
	return func() { setFlags(dir, false) }
}

// setFlags sets or clears the immutable attribute of a file (chattr).
func setFlags(path string, on bool) error {
	flag := "-i"
	if on {
		flag = "+i"
	}
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		return fmt.Errorf("chattr %s: %v: %s", flag, err, out)
	}
	return nil
}

// TestUnwritableDir: a state directory the server cannot write is
// refused at start, saying so; a write that fails later (a model's
// directory made unwritable) is answered 500 taking nothing, and health
// answers 503 until a write succeeds again.
func TestUnwritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	os.Mkdir(dir, 0o700)
	undo := immutable(t, dir)
	_, err := Open(context.Background(), Config{Dir: dir, Token: testToken})
	undo()
	if err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Fatalf("an unwritable directory: %v", err)
	}
	srv := start(t, dir, Config{})
	id := postModel(t, srv.url, "seed", readSeed(t))
	undo = immutable(t, filepath.Join(dir, id, eventsFile))
	defer undo()
	code, b := call(t, "POST", srv.url+"/v1/models/"+id+"/events", testToken, strings.NewReader(eventsJSON(seedEvents[:1])))
	if code != 500 || !strings.Contains(errorOf(t, b), "saving the events") || !strings.Contains(string(b), `"taken": 0`) {
		t.Errorf("an event that cannot be written: %d %s", code, b)
	}
	if code, b := call(t, "GET", srv.url+"/v1/health", "", nil); code != 503 || !strings.Contains(string(b), `"status": "failing"`) {
		t.Errorf("health after a failed write: %d %s", code, b)
	}
	undo()
	postEvents(t, srv.url, id, seedEvents[:1])
	if code, b := call(t, "GET", srv.url+"/v1/health", "", nil); code != 200 || !strings.Contains(string(b), `"status": "ok"`) {
		t.Errorf("health after a write succeeded: %d %s", code, b)
	}
	if evs := recordOf(t, srv.url, id); len(evs) != 1 {
		t.Errorf("the record: %v", evs)
	}
}
