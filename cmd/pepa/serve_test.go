package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pepa/lang"
	"pepa/models"
	"pepa/models/observe"
	"pepa/passage"
)

const (
	serveTestToken = "s3cret-token-for-tests"
	serveSeed      = "../../testdata/mapping-a.pepa" // the seed's shape; its name as the command line shows it
)

// serveSeedEvents: M1 completes its whole cycle by 14 (ideal path), M2 its
// first application at 5, M3 its first two by 11.
var serveSeedEvents = []observe.Event{
	{Time: 3.5, Machine: "M1", Action: "compute1"},
	{Time: 5, Machine: "M2", Action: "compute2"},
	{Time: 6.25, Machine: "M3", Action: "compute3"},
	{Time: 8, Machine: "M1", Action: "compute5"},
	{Time: 11, Machine: "M3", Action: "compute7"},
	{Time: 14, Machine: "M1", Action: "compute9"},
}

// syncBuffer is a log safe to write from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe opens a server on dir and serves it on a loopback listener.
func startServe(t *testing.T, dir string) (*serveState, *httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	s, err := serveOpen(context.Background(), serveConfig{dir: dir, token: serveTestToken, logf: serveLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(func() {
		ts.Close()
		s.close()
	})
	return s, ts, logs
}

// call makes a request (token "" sends none) and returns the status and
// body.
func call(t testing.TB, client *http.Client, method, url, token string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func postModel(t *testing.T, base, name, src string) string {
	t.Helper()
	code, b := call(t, nil, "POST", base+"/v1/models?name="+name, serveTestToken, strings.NewReader(src))
	if code != http.StatusCreated {
		t.Fatalf("POST model: %d %s", code, b)
	}
	var doc struct{ ID string }
	if err := json.Unmarshal(b, &doc); err != nil || doc.ID == "" {
		t.Fatalf("POST model: %s (%v)", b, err)
	}
	return doc.ID
}

func eventsJSON(evs []observe.Event) string {
	b, _ := json.Marshal(evs)
	return string(b)
}

func postEvents(t *testing.T, base, id string, evs []observe.Event) {
	t.Helper()
	code, b := call(t, nil, "POST", base+"/v1/models/"+id+"/events", serveTestToken, strings.NewReader(eventsJSON(evs)))
	if code != http.StatusOK {
		t.Fatalf("POST events: %d %s", code, b)
	}
}

// errorOf is the answer's "error", failing the test when the body is not
// the API's error JSON.
func errorOf(t *testing.T, b []byte) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	msg, ok := doc["error"].(string)
	if !ok || msg == "" {
		t.Fatalf("no error message: %s", b)
	}
	return msg
}

func readSeed(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(serveSeed)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeAuth: every request but the health check and the page needs
// the token (401 otherwise, wrong tokens included).
func TestServeAuth(t *testing.T) {
	_, ts, _ := startServe(t, t.TempDir())
	id := postModel(t, ts.URL, "m", readSeed(t))
	for _, path := range []string{"/", "/serve.js", "/serve.css", "/v1/health"} {
		if code, b := call(t, nil, "GET", ts.URL+path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s without token: %d %s", path, code, b)
		}
	}
	protected := []struct{ method, path, body string }{
		{"GET", "/v1/models", ""},
		{"POST", "/v1/models", readSeed(t)},
		{"GET", "/v1/models/" + id, ""},
		{"DELETE", "/v1/models/" + id, ""},
		{"POST", "/v1/models/" + id + "/events", eventsJSON(serveSeedEvents[:1])},
		{"GET", "/v1/models/" + id + "/events", ""},
		{"GET", "/v1/models/" + id + "/robustness?beta=45", ""},
		{"GET", "/v1/models/" + id + "/cdf?beta=45", ""},
		{"GET", "/v1/models/0123456789abcdef", ""},
	}
	for _, p := range protected {
		for _, token := range []string{"", "wrong", serveTestToken + "x", serveTestToken[:5]} {
			code, b := call(t, nil, p.method, ts.URL+p.path, token, strings.NewReader(p.body))
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d, want 401", p.method, p.path, token, code)
				continue
			}
			errorOf(t, b)
		}
	}
	// Nothing was changed by the refused requests; the right token in any
	// case of "Bearer" works.
	req, _ := http.NewRequest("GET", ts.URL+"/v1/models/"+id, nil)
	req.Header.Set("Authorization", "bearer "+serveTestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"events": 0`) {
		t.Errorf("GET model with the token: %d %s", resp.StatusCode, b)
	}
}

// hiddenLength hides a body's length from the client (chunked encoding),
// so that the server finds the excess while reading.
type hiddenLength struct{ io.Reader }

// TestServeBadRequests: 400 (with the diagnostics or the message), 404,
// 405 and 413, each with a JSON {"error"}; a list of events stops at the
// first that cannot be taken, the ones before it staying taken (and on
// disk), a malformed list takes none.
func TestServeBadRequests(t *testing.T) {
	dir := t.TempDir()
	_, ts, _ := startServe(t, dir)
	id := postModel(t, ts.URL, "seed.pepa", readSeed(t))
	u := ts.URL + "/v1/models/" + id
	type req struct {
		method, url, body string
		code              int
		want              string // in the error message
	}
	big := strings.Repeat("// padding\n", serveModelLimit/11+1)
	bigEvents := "[" + strings.Repeat(`{"time": 1, "machine": "M1", "action": "compute1"},`, serveEventsLimit/50) + "]"
	cases := []req{
		{"POST", ts.URL + "/v1/models?name=bad.pepa", "r = 1;\nP = (a, s).P;\nP\n", 400, "bad.pepa:2:9: error: undefined rate s"},
		{"POST", ts.URL + "/v1/models?name=bad.pepa", "", 400, "bad.pepa:"},
		{"POST", ts.URL + "/v1/models?name=a%00b", readSeed(t), 400, "control character"},
		{"POST", ts.URL + "/v1/models?name=", readSeed(t), 400, "name= is empty"},
		{"POST", ts.URL + "/v1/models?nam=x", readSeed(t), 400, `unknown query parameter "nam"`},
		{"POST", ts.URL + "/v1/models?name=%zz", readSeed(t), 400, "malformed query"},
		{"POST", ts.URL + "/v1/models?name=nomachine", "r = 1; P = (a, r).P; P\n", 400, "nomachine: error:"},
		{"POST", ts.URL + "/v1/models", big, 413, "limit"},
		{"POST", u + "/events", "", 400, "empty body"},
		{"POST", u + "/events", "{", 400, "malformed events"},
		{"POST", u + "/events", `{"time": 1, "machine": "M1"}`, 400, `missing "action"`},
		{"POST", u + "/events", `[{"time": 1, "machine": "M1", "action": "compute1"}, {"machine": "M1", "action": "compute5"}]`, 400, `event 2 of 2: missing "time"`},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute1", "extra": 2}`, 400, `unknown field "extra"`},
		{"POST", u + "/events", `{"time": "1", "machine": "M1", "action": "compute1"}`, 400, "malformed events"},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute1"} {}`, 400, "more after the JSON value"},
		{"POST", u + "/events", `{"time": -1, "machine": "M1", "action": "compute1"}`, 400, "expected a finite number of seconds >= 0"},
		{"POST", u + "/events", `{"time": 1, "machine": "M9", "action": "compute1"}`, 400, `no machine "M9"`},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute2"}`, 400, "no observable action compute2"},
		{"POST", u + "/events", bigEvents, 413, "limit"},
		{"GET", u + "/robustness", "", 400, "beta= is required"},
		{"GET", u + "/robustness?beta=-1", "", 400, "positive"},
		{"GET", u + "/robustness?beta=0", "", 400, "positive"},
		{"GET", u + "/robustness?beta=abc", "", 400, "positive"},
		{"GET", u + "/robustness?beta=NaN", "", 400, "positive"},
		{"GET", u + "/robustness?beta=45&now=-2", "", 400, ">= 0"},
		{"GET", u + "/robustness?beta=45&beta=46", "", 400, "given 2 times"},
		{"GET", u + "/robustness?beta=45&x=1", "", 400, `unknown query parameter "x"`},
		{"GET", u + "/cdf?beta=inf", "", 400, "positive"},
		{"GET", ts.URL + "/v1/models/0123456789abcdef", "", 404, "no model"},
		{"DELETE", ts.URL + "/v1/models/0123456789abcdef", "", 404, "no model"},
		{"POST", ts.URL + "/v1/models/nope/events", `{"time": 1, "machine": "M1", "action": "compute1"}`, 404, "no model"},
		{"GET", ts.URL + "/v1/models/nope/events", "", 404, "no model"},
		{"GET", ts.URL + "/v1/models/nope/robustness?beta=45", "", 404, "no model"},
		{"GET", ts.URL + "/v1/models/nope/cdf", "", 404, "no model"},
		{"GET", ts.URL + "/v2/models", "", 404, "no such path"},
		{"GET", ts.URL + "/index.html", "", 404, "no such path"},
		{"PUT", ts.URL + "/v1/models", "", 405, "method PUT not allowed"},
		{"DELETE", ts.URL + "/v1/models", "", 405, "allowed: GET, HEAD, POST"},
		{"PATCH", u, "", 405, "allowed: DELETE, GET, HEAD"},
		{"PUT", u + "/events", "", 405, "not allowed"},
		{"POST", u + "/robustness?beta=45", "", 405, "allowed: GET, HEAD"},
		{"DELETE", u + "/cdf", "", 405, "not allowed"},
		{"POST", ts.URL + "/v1/health", "", 405, "not allowed"},
		{"POST", ts.URL + "/", "", 405, "not allowed"},
	}
	for _, c := range cases {
		code, b := call(t, nil, c.method, c.url, serveTestToken, strings.NewReader(c.body))
		if code != c.code {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.url, code, c.code, b)
			continue
		}
		if msg := errorOf(t, b); !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: error %q lacks %q", c.method, c.url, msg, c.want)
		}
	}
	// 413 also without a Content-Length (chunked): the excess is found
	// while reading.
	for _, c := range []struct{ url, body string }{{ts.URL + "/v1/models", big}, {u + "/events", bigEvents}} {
		code, b := call(t, nil, "POST", c.url, serveTestToken, hiddenLength{strings.NewReader(c.body)})
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s chunked, too large: %d %s", c.url, code, b)
		}
	}
	// Nothing above was taken.
	code, b := call(t, nil, "GET", u+"/events", serveTestToken, nil)
	if code != 200 || !strings.Contains(string(b), `"events": []`) {
		t.Fatalf("events after refused requests: %d %s", code, b)
	}
	// A list whose third event is impossible (M1 completes compute5
	// before compute1): the two before it are taken, and on disk.
	list := append(append([]observe.Event{}, serveSeedEvents[:2]...), observe.Event{Time: 7, Machine: "M1", Action: "compute9"}, serveSeedEvents[3])
	code, b = call(t, nil, "POST", u+"/events", serveTestToken, strings.NewReader(eventsJSON(list)))
	if code != http.StatusBadRequest {
		t.Fatalf("impossible third event: %d %s", code, b)
	}
	var partial struct {
		Error         string
		Taken, Events int
	}
	json.Unmarshal(b, &partial)
	if partial.Taken != 2 || partial.Events != 2 || !strings.Contains(partial.Error, "event 3 of 4") || !strings.Contains(partial.Error, "2 events before it taken") {
		t.Errorf("impossible third event: %s", b)
	}
	lines, _ := os.ReadFile(filepath.Join(dir, id, serveEventsFile))
	if n := strings.Count(string(lines), "\n"); n != 2 {
		t.Errorf("events.jsonl has %d lines, want 2:\n%s", n, lines)
	}
	// Out of time order, and now before the latest event.
	code, b = call(t, nil, "POST", u+"/events", serveTestToken, strings.NewReader(`{"time": 4, "machine": "M3", "action": "compute3"}`))
	if code != 400 || !strings.Contains(errorOf(t, b), "time order") {
		t.Errorf("event out of order: %d %s", code, b)
	}
	code, b = call(t, nil, "GET", u+"/robustness?beta=45&now=4", serveTestToken, nil)
	if code != 400 || !strings.Contains(errorOf(t, b), "before the record's latest event") {
		t.Errorf("now before the latest event: %d %s", code, b)
	}
	// Deleted: gone from the list and the disk, 404 after.
	code, b = call(t, nil, "DELETE", u, serveTestToken, nil)
	if code != 200 {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if code, b = call(t, nil, "GET", u+"/robustness?beta=45", serveTestToken, nil); code != 404 {
		t.Errorf("robustness of a deleted model: %d %s", code, b)
	}
	if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
		t.Errorf("the deleted model's directory: %v", err)
	}
	if code, b = call(t, nil, "GET", ts.URL+"/v1/models", serveTestToken, nil); code != 200 || !strings.Contains(string(b), `"models": []`) {
		t.Errorf("list after DELETE: %d %s", code, b)
	}
}

// cliRobustness is what 'pepa robustness --format json --beta B --now T
// --observed RECORD' prints for the seed. Until the command line has
// --observed, it is what its document prints for the report
// observe.Robustness makes with the command line's default request (the
// library call --observed makes).
func cliRobustness(t *testing.T, evs []observe.Event, beta, now float64) string {
	t.Helper()
	var rec strings.Builder
	rec.WriteString("time,machine,action\n")
	for _, ev := range evs {
		fmt.Fprintf(&rec, "%s,%s,%s\n", fmtFloat(ev.Time), ev.Machine, ev.Action)
	}
	file := writeTemp(t, "record.csv", rec.String())
	if _, help, _ := runPepa(t, "", "robustness", "--help"); strings.Contains(help, "-observed") {
		code, out, stderr := runPepa(t, "", "robustness", "--format", "json", "--beta", fmtFloat(beta), "--now", fmtFloat(now), "--observed", file, serveSeed)
		if code != exitOK {
			t.Fatalf("pepa robustness --observed: exit %d: %s", code, stderr)
		}
		return out
	}
	t.Logf("pepa robustness has no --observed yet: comparing with its JSON document of observe.Robustness's report")
	src := readSeed(t)
	m, diags := lang.Load(serveSeed, []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	req := models.Request{Beta: beta, Semantics: passage.Initial, Epsilon: 1e-10, Tie: 0.01, Transient: "auto", Level: 0.9, RankBy: "robustness"}
	req.Compile.Aggregate = true
	rep, err := observe.Robustness(context.Background(), []models.Input{{Name: serveSeed, Model: m}}, req, evs, file, now)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, (&robustnessCmd{}).document(rep)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestServeRobustnessMatchesCLI: the figures GET robustness answers are
// byte for byte what the command line prints for the same model and
// record, at the latest event and later; the CDF endpoint draws the same
// figures.
func TestServeRobustnessMatchesCLI(t *testing.T) {
	_, ts, _ := startServe(t, t.TempDir())
	id := postModel(t, ts.URL, serveSeed, readSeed(t))
	u := ts.URL + "/v1/models/" + id
	postEvents(t, ts.URL, id, serveSeedEvents[:1])         // one
	postEvents(t, ts.URL, id, serveSeedEvents[1:2])        // one as an object
	postEvents(t, ts.URL, id, serveSeedEvents[2:])         // a list
	code, b := call(t, nil, "GET", u, serveTestToken, nil) // the model's entry
	if code != 200 || !strings.Contains(string(b), `"events": 6`) || !strings.Contains(string(b), `"last_event_time": 14`) {
		t.Fatalf("GET model: %d %s", code, b)
	}
	for _, c := range []struct {
		query string
		beta  float64
		now   float64
	}{
		{"beta=45", 45, 14},
		{"beta=45&now=14", 45, 14},
		{"beta=30&now=20.5", 30, 20.5},
		{"beta=12", 12, 14}, // a goal already past: 0 for the running machines
	} {
		code, got := call(t, nil, "GET", u+"/robustness?"+c.query, serveTestToken, nil)
		if code != 200 {
			t.Fatalf("robustness?%s: %d %s", c.query, code, got)
		}
		want := cliRobustness(t, serveSeedEvents, c.beta, c.now)
		if string(got) != want {
			t.Errorf("robustness?%s differs from the command line's:\n%s\nwant\n%s", c.query, got, want)
		}
		// Cached: the same bytes again.
		if _, again := call(t, nil, "GET", u+"/robustness?"+c.query, serveTestToken, nil); !bytes.Equal(again, got) {
			t.Errorf("robustness?%s: a second answer differs", c.query)
		}
	}
	// The CDFs: M1 finished at 14 (a step), the others running from now,
	// their curves rising from 0 to their P(F <= beta) at beta.
	code, b = call(t, nil, "GET", u+"/cdf?beta=45", serveTestToken, nil)
	if code != 200 {
		t.Fatalf("cdf: %d %s", code, b)
	}
	var doc serveCDFDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != serveSeed || doc.Now != 14 || doc.Events != 6 || doc.Beta != 45 || doc.BetaDefault || len(doc.Machines) != 4 {
		t.Fatalf("cdf: %+v", doc)
	}
	for _, m := range doc.Machines {
		if m.Name == "M1" {
			if m.FinishedAt != 14.0 || len(m.Points) != 4 || m.Points[2] != [2]float64{14, 1} {
				t.Errorf("cdf: M1 finished at 14: %+v", m)
			}
			continue
		}
		if m.FinishedAt != nil || len(m.Points) < serveCDFPoints {
			t.Errorf("cdf: %s running: %+v", m.Name, m)
			continue
		}
		prev := -1.0
		for _, p := range m.Points {
			if p[1] < prev-1e-12 || p[1] < 0 || p[1] > 1 || p[0] > 0 && p[0] < 14 {
				t.Errorf("cdf: %s: point %v after %g", m.Name, p, prev)
				break
			}
			prev = p[1]
			if p[0] <= 45 {
				// The last point at or before beta is close to P(F <= beta).
				if pb := m.PByBeta.(float64); p[0] > 45-(doc.TMax-14)/serveCDFPoints && (p[1] > pb+1e-9 || p[1] < pb-0.05) {
					t.Errorf("cdf: %s: %v near beta, P(F <= 45) = %g", m.Name, p, pb)
				}
			}
		}
	}
	// Without beta: E[makespan] rounded up, flagged.
	code, b = call(t, nil, "GET", u+"/cdf", serveTestToken, nil)
	doc = serveCDFDoc{}
	if json.Unmarshal(b, &doc); code != 200 || !doc.BetaDefault || doc.Beta < doc.ExpectedMakespan.(float64) || doc.Beta > 1.1*doc.ExpectedMakespan.(float64) {
		t.Errorf("cdf without beta: %d %s", code, b)
	}
}

// serveChild is 'pepa serve' run as a child process (this test binary as
// pepa), and the address it listens on.
type serveChild struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

func startServeChild(t *testing.T, dir, tokenFile string) *serveChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--state-dir", dir)
	cmd.Env = append(os.Environ(), runAsPepa+"=1")
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &serveChild{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-c.done
		}
	})
	addr := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`listening on (http://[^/ ]+)/`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(c.stderr, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		c.done <- cmd.Wait()
	}()
	select {
	case c.url = <-addr:
	case err := <-c.done:
		t.Fatalf("pepa serve ended: %v\n%s", err, c.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("pepa serve did not listen in 30 s:\n%s", c.stderr)
	}
	return c
}

// TestServeRestartAfterKill: a server killed with SIGKILL right after
// answering loses nothing it answered: restarted on the same state
// directory it has every model and event, and answers the same figures
// byte for byte. A torn last line (a crash in the middle of an append) is
// dropped with a log line and the record goes on after it. SIGTERM stops
// the server gracefully (exit 0).
func TestServeRestartAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tokenFile := writeTemp(t, "token", "  "+serveTestToken+"\n")
	c := startServeChild(t, dir, tokenFile)
	id := postModel(t, c.url, serveSeed, readSeed(t))
	other := postModel(t, c.url, "other", readSeed(t))
	for _, ev := range serveSeedEvents[:4] {
		postEvents(t, c.url, id, []observe.Event{ev})
	}
	postEvents(t, c.url, other, serveSeedEvents[:2])
	_, before := call(t, nil, "GET", c.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	_, list := call(t, nil, "GET", c.url+"/v1/models", serveTestToken, nil)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-c.done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("pepa serve after SIGKILL: %v", err)
	}
	// What a crash in the middle of the next append leaves.
	f, err := os.OpenFile(filepath.Join(dir, id, serveEventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":11,"machine":"M3","act`)
	f.Close()

	c2 := startServeChild(t, dir, tokenFile)
	if !strings.Contains(c2.stderr.String(), "ignoring a torn last line") {
		t.Errorf("no log line about the torn line:\n%s", c2.stderr)
	}
	_, after := call(t, nil, "GET", c2.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	if !bytes.Equal(before, after) {
		t.Errorf("figures after the restart differ:\n%s\nbefore:\n%s", after, before)
	}
	_, list2 := call(t, nil, "GET", c2.url+"/v1/models", serveTestToken, nil)
	if !bytes.Equal(list, list2) {
		t.Errorf("models after the restart:\n%s\nbefore:\n%s", list2, list)
	}
	_, evs := call(t, nil, "GET", c2.url+"/v1/models/"+id+"/events", serveTestToken, nil)
	var rec struct{ Events []observe.Event }
	if err := json.Unmarshal(evs, &rec); err != nil || fmt.Sprint(rec.Events) != fmt.Sprint(serveSeedEvents[:4]) {
		t.Errorf("events after the restart: %s (%v)", evs, err)
	}
	// The record goes on after the dropped line; a graceful stop, and a
	// third start has all of it.
	postEvents(t, c2.url, id, serveSeedEvents[4:])
	_, final := call(t, nil, "GET", c2.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	c2.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-c2.done; err != nil {
		t.Errorf("pepa serve after SIGTERM: %v\n%s", err, c2.stderr)
	}
	if !strings.Contains(c2.stderr.String(), "stopped") {
		t.Errorf("no log line about stopping:\n%s", c2.stderr)
	}
	_, ts, _ := startServe(t, dir) // in process
	_, again := call(t, nil, "GET", ts.URL+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	if !bytes.Equal(final, again) || !bytes.Equal(final, []byte(cliRobustness(t, serveSeedEvents, 45, 14))) {
		t.Errorf("figures after the third start:\n%s\nbefore the stop:\n%s", again, final)
	}
}

// TestServeLoad: 50 clients at once make 2,000 robustness queries on the
// seed's model (three goals, now at the latest event or later) while
// events are posted; no query fails. It logs the latency's percentiles as
// the clients see them and as the server spends them (the clients share
// the test's CPUs), and the time of the posts, which compute the figures
// asked for the record before for the new one before they answer.
func TestServeLoad(t *testing.T) {
	logs := &syncBuffer{}
	s, err := serveOpen(context.Background(), serveConfig{dir: t.TempDir(), token: serveTestToken, logf: serveLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var serverMu sync.Mutex
	var server []time.Duration
	h := s.handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/robustness") {
			d := time.Since(t0)
			serverMu.Lock()
			server = append(server, d)
			serverMu.Unlock()
		}
	}))
	defer ts.Close()
	id := postModel(t, ts.URL, serveSeed, readSeed(t))
	postEvents(t, ts.URL, id, serveSeedEvents[:2])
	u := ts.URL + "/v1/models/" + id + "/robustness"
	betas := []string{"40", "45", "50"}
	query := func(i int) string {
		q := "?beta=" + betas[i%len(betas)]
		if i%10 == 7 {
			q += "&now=30"
		}
		return q
	}
	// The clients have been polling: each query asked once (the first
	// uncached), each client's connection open.
	for i := 0; i < 10; i++ {
		start := time.Now()
		if code, b := call(t, nil, "GET", u+query(i), serveTestToken, nil); code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		if i == 0 {
			t.Logf("one uncached query: %s", time.Since(start))
		}
	}
	const clients, queries = 50, 2000
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	var warm sync.WaitGroup
	for w := 0; w < clients; w++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			if resp, err := client.Get(ts.URL + "/v1/health"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	warm.Wait()
	serverMu.Lock()
	server = server[:0]
	serverMu.Unlock()

	next := make(chan int, queries)
	for i := 0; i < queries; i++ {
		next <- i
	}
	close(next)
	lat := make([]time.Duration, queries)
	errs := make(chan string, queries+10)
	stopPosting := make(chan struct{})
	posts := make(chan []time.Duration, 1)
	go func() { // a few events while the queries run
		var took []time.Duration
		defer func() { posts <- took }()
		for _, ev := range serveSeedEvents[2:] {
			select {
			case <-stopPosting:
				return
			case <-time.After(10 * time.Millisecond):
			}
			t0 := time.Now()
			req, _ := http.NewRequest("POST", ts.URL+"/v1/models/"+id+"/events", strings.NewReader(eventsJSON([]observe.Event{ev})))
			req.Header.Set("Authorization", "Bearer "+serveTestToken)
			resp, err := client.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took = append(took, time.Since(t0))
			if resp.StatusCode != 200 {
				errs <- fmt.Sprintf("POST events: %d", resp.StatusCode)
			}
		}
	}()
	var wg sync.WaitGroup
	wall := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				q := query(i)
				t0 := time.Now()
				req, _ := http.NewRequest("GET", u+q, nil)
				req.Header.Set("Authorization", "Bearer "+serveTestToken)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err.Error()
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if err != nil || resp.StatusCode != 200 || !bytes.HasPrefix(body, []byte("{")) {
					errs <- fmt.Sprintf("%s: %d %v %s", q, resp.StatusCode, err, body)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(wall)
	close(stopPosting)
	took := <-posts
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	pct := func(lat []time.Duration) string {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))].Round(time.Microsecond) }
		return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", p(0.5), p(0.9), p(0.99), p(1))
	}
	serverMu.Lock()
	defer serverMu.Unlock()
	t.Logf("%d queries by %d clients in %s (%.0f/s) on %d CPUs, %d events posted meanwhile (each answered in %v)",
		queries, clients, elapsed.Round(time.Millisecond), queries/elapsed.Seconds(), runtime.NumCPU(), len(took), took)
	p99 := func() time.Duration { return lat[queries*99/100] }
	t.Logf("latency as the clients see it: %s", pct(lat))
	t.Logf("latency in the server: %s", pct(server))
	if p99() > 2*time.Second {
		t.Errorf("p99 latency %s", p99())
	}
}

// TestServeFlags: usage errors exit 2 before anything is served; --help
// exits 0; an empty token file is refused; the token file is created
// (0600) when missing.
func TestServeFlags(t *testing.T) {
	dir := t.TempDir()
	empty := writeTemp(t, "empty", " \n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--help"}, exitOK, ""},
		{[]string{"serve", "--state-dir", dir}, exitUsage, "--token-file is required"},
		{[]string{"serve", "--token-file", empty}, exitUsage, "--state-dir is required"},
		{[]string{"serve", "--token-file", empty, "--state-dir", dir}, exitUsage, "is empty"},
		{[]string{"serve", "--token-file", empty, "--state-dir", dir, "x.pepa"}, exitUsage, "unexpected argument"},
		{[]string{"serve", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"serve", "--token-file", filepath.Join(dir, "tok"), "--state-dir", dir, "--listen", "256.0.0.1:99999"}, exitUsage, "--listen"},
	} {
		code, out, stderr := runPepa(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("pepa %v: exit %d, stderr %q", c.args, code, stderr)
		}
		if c.code == exitOK && !strings.Contains(out, "Examples:") {
			t.Errorf("pepa %v: %s", c.args, out)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "tok"))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() < 64 {
		t.Errorf("created token file: %v %v", st, err)
	}
}
