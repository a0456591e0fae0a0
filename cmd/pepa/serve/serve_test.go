package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"pepa/models/observe"
)

const (
	testToken = "s3cret-token-for-tests"
	seedPath  = "../../../testdata/mapping-a.pepa" // the seed's shape
)

// seedEvents: M1 completes its whole cycle by 14 (ideal path), M2 its
// first application at 5, M3 its first two by 11.
var seedEvents = []observe.Event{
	{Time: 3.5, Machine: "M1", Action: "compute1"},
	{Time: 5, Machine: "M2", Action: "compute2"},
	{Time: 6.25, Machine: "M3", Action: "compute3"},
	{Time: 8, Machine: "M1", Action: "compute5"},
	{Time: 11, Machine: "M3", Action: "compute7"},
	{Time: 14, Machine: "M1", Action: "compute9"},
}

// stiffModel is a machine whose private spin (rate 1000, hidden) is far
// faster than its one application (rate 0.001): its figures at now = 1e6
// filter through about 7.6e8 uniformization steps (5 s on a quiet core)
// before the mass left is negligible. (With auto, Laplace-transform
// inversion answers it at once: the tests that need a long computation
// force uniformization.)
const stiffModel = `f = 1000; r = 0.001;
A1 = (compute1, infty).A1;
M1 = (spin, f).M1 + (compute1, r).M1;
A1 <compute1> M1
`

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

// testServer is a server on a loopback listener.
type testServer struct {
	s    *Server
	ts   *httptest.Server
	url  string
	logs *syncBuffer
}

// start opens a server on dir (cfg's Dir, Token and Logf filled in) and
// serves it on a loopback listener until the test ends.
func start(t *testing.T, dir string, cfg Config) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Dir, cfg.Token, cfg.Logf = dir, testToken, NewLogger(logs)
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return &testServer{s: s, ts: ts, url: ts.URL, logs: logs}
}

// call makes a request (token "" sends none) and returns the status and
// body.
func call(t testing.TB, method, url, token string, body io.Reader, header ...string) (int, []byte) {
	t.Helper()
	code, b, _, err := callErr(context.Background(), method, url, token, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// callErr is call with a context, returning the error and the answer's
// header.
func callErr(ctx context.Context, method, url, token string, body io.Reader, header ...string) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

func postModel(t *testing.T, base, name, src string) string {
	t.Helper()
	code, b := call(t, "POST", base+"/v1/models?name="+name, testToken, strings.NewReader(src))
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
	code, b := call(t, "POST", base+"/v1/models/"+id+"/events", testToken, strings.NewReader(eventsJSON(evs)))
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
	b, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recordOf is the events a model's GET /events answers.
func recordOf(t *testing.T, base, id string) []observe.Event {
	t.Helper()
	code, b := call(t, "GET", base+"/v1/models/"+id+"/events", testToken, nil)
	var doc struct{ Events []observe.Event }
	if err := json.Unmarshal(b, &doc); code != 200 || err != nil {
		t.Fatalf("GET events: %d %s", code, b)
	}
	return doc.Events
}

// TestAuth: every request but the health check and the page needs the
// token (401 otherwise, wrong tokens included).
func TestAuth(t *testing.T) {
	srv := start(t, t.TempDir(), Config{})
	id := postModel(t, srv.url, "m", readSeed(t))
	for _, path := range []string{"/", "/serve.js", "/serve.css", "/v1/health"} {
		if code, b := call(t, "GET", srv.url+path, "", nil); code != http.StatusOK {
			t.Errorf("GET %s without token: %d %s", path, code, b)
		}
	}
	protected := []struct{ method, path, body string }{
		{"GET", "/v1/models", ""},
		{"POST", "/v1/models", readSeed(t)},
		{"GET", "/v1/models/" + id, ""},
		{"DELETE", "/v1/models/" + id, ""},
		{"POST", "/v1/models/" + id + "/events", eventsJSON(seedEvents[:1])},
		{"GET", "/v1/models/" + id + "/events", ""},
		{"GET", "/v1/models/" + id + "/robustness?beta=45", ""},
		{"GET", "/v1/models/" + id + "/cdf?beta=45", ""},
		{"GET", "/v1/models/0123456789abcdef", ""},
	}
	for _, p := range protected {
		for _, token := range []string{"", "wrong", testToken + "x", testToken[:5]} {
			code, b := call(t, p.method, srv.url+p.path, token, strings.NewReader(p.body))
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d, want 401", p.method, p.path, token, code)
				continue
			}
			errorOf(t, b)
		}
	}
	// Nothing was changed by the refused requests; the right token in any
	// case of "Bearer" works.
	req, _ := http.NewRequest("GET", srv.url+"/v1/models/"+id, nil)
	req.Header.Set("Authorization", "bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"events": 0`) {
		t.Errorf("GET model with the token: %d %s", resp.StatusCode, b)
	}
	// A token shorter than MinTokenBytes does not open a server.
	if _, err := Open(context.Background(), Config{Dir: t.TempDir(), Token: "short"}); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a 5-byte token: %v", err)
	}
}

// hiddenLength hides a body's length from the client (chunked encoding),
// so that the server finds the excess while reading.
type hiddenLength struct{ io.Reader }

// TestBadRequests: 400 (with the diagnostics or the message), 404, 405 and
// 413, each with a JSON {"error"}; input is read strictly (keys exactly,
// numbers in decimal and in range, each key once); a list of events stops
// at the first that cannot be taken, the ones before it staying taken (and
// on disk), a malformed list takes none.
func TestBadRequests(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, Config{})
	id := postModel(t, srv.url, "seed.pepa", readSeed(t))
	u := srv.url + "/v1/models/" + id
	type req struct {
		method, url, body string
		code              int
		want              string // in the error message
	}
	big := strings.Repeat("// padding\n", modelLimit/11+1)
	bigEvents := "[" + strings.Repeat(`{"time": 1, "machine": "M1", "action": "compute1"},`, eventsLimit/50) + "]"
	cases := []req{
		{"POST", srv.url + "/v1/models?name=bad.pepa", "r = 1;\nP = (a, s).P;\nP\n", 400, "bad.pepa:2:9: error: undefined rate s"},
		{"POST", srv.url + "/v1/models?name=bad.pepa", "", 400, "bad.pepa:"},
		{"POST", srv.url + "/v1/models?name=a%00b", readSeed(t), 400, "control character"},
		{"POST", srv.url + "/v1/models?name=", readSeed(t), 400, "name= is empty"},
		{"POST", srv.url + "/v1/models?nam=x", readSeed(t), 400, `unknown query parameter "nam"`},
		{"POST", srv.url + "/v1/models?name=%zz", readSeed(t), 400, "malformed query"},
		{"POST", srv.url + "/v1/models?name=nomachine", "r = 1; P = (a, r).P; P\n", 400, "nomachine: error:"},
		{"POST", srv.url + "/v1/models", big, 413, "limit"},
		{"POST", u + "/events", "", 400, "empty body"},
		{"POST", u + "/events", "[]", 400, "an empty list"},
		{"POST", u + "/events", "{", 400, "malformed events"},
		{"POST", u + "/events", `{"time": 1, "machine": "M1"}`, 400, `missing "action"`},
		{"POST", u + "/events", `[{"time": 1, "machine": "M1", "action": "compute1"}, {"machine": "M1", "action": "compute5"}]`, 400, `event 2: missing "time"`},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute1", "extra": 2}`, 400, `unknown field "extra"`},
		// Keys match exactly: encoding/json would have taken "Time" for
		// "time" (the later one winning).
		{"POST", u + "/events", `{"time": 1, "Time": 2, "machine": "M1", "action": "compute1"}`, 400, `unknown field "Time"`},
		{"POST", u + "/events", `{"TIME": 1, "machine": "M1", "action": "compute1"}`, 400, `unknown field "TIME"`},
		{"POST", u + "/events", `{"time": 1, "time": 2, "machine": "M1", "action": "compute1"}`, 400, `"time" given twice`},
		{"POST", u + "/events", `{"time": "1", "machine": "M1", "action": "compute1"}`, 400, `"time" is a string, not a number`},
		{"POST", u + "/events", `{"time": 1, "machine": 7, "action": "compute1"}`, 400, `"machine" is a number, not a string`},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute1"} {}`, 400, "more after the JSON value"},
		{"POST", u + "/events", `{"time": -1, "machine": "M1", "action": "compute1"}`, 400, "time -1: out of range: expected a number of seconds in [0, 1e+09]"},
		{"POST", u + "/events", `{"time": 1e300, "machine": "M1", "action": "compute1"}`, 400, "time 1e300: out of range: expected a number of seconds in [0, 1e+09]"},
		{"POST", u + "/events", `{"time": 1e400, "machine": "M1", "action": "compute1"}`, 400, "time 1e400: out of range"},
		{"POST", u + "/events", `{"time": 1, "machine": "M9", "action": "compute1"}`, 400, `no machine "M9"`},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute2"}`, 400, "no observable action compute2"},
		{"POST", u + "/events", bigEvents, 413, "limit"},
		{"GET", u + "/robustness", "", 400, "beta= is required"},
		{"GET", u + "/robustness?beta=-1", "", 400, "out of range: expected a number of seconds in (0, 1e+09]"},
		{"GET", u + "/robustness?beta=0", "", 400, "(0, 1e+09]"},
		{"GET", u + "/robustness?beta=abc", "", 400, "written in decimal"},
		{"GET", u + "/robustness?beta=NaN", "", 400, "written in decimal"},
		{"GET", u + "/robustness?beta=1_0", "", 400, `beta="1_0": expected a number of seconds in (0, 1e+09], written in decimal`},
		{"GET", u + "/robustness?beta=0x10p0", "", 400, "written in decimal"},
		{"GET", u + "/robustness?beta=%2045", "", 400, "written in decimal"},
		{"GET", u + "/robustness?beta=1e300", "", 400, "out of range"},
		{"GET", u + "/robustness?beta=45&now=-2", "", 400, "[0, 1e+09]"},
		{"GET", u + "/robustness?beta=45&now=1e10", "", 400, `now="1e10": out of range: expected a number of seconds in [0, 1e+09]`},
		{"GET", u + "/robustness?beta=45&beta=46", "", 400, "given 2 times"},
		{"GET", u + "/robustness?beta=45&x=1", "", 400, `unknown query parameter "x"`},
		{"GET", u + "/cdf?beta=inf", "", 400, "written in decimal"},
		{"POST", u + "/events", `{"time": 1, "machine": "M1", "action": "compute1"}`, 400, "Idempotency-Key has 129 bytes"},
		{"GET", srv.url + "/v1/models/0123456789abcdef", "", 404, "no model"},
		{"DELETE", srv.url + "/v1/models/0123456789abcdef", "", 404, "no model"},
		{"POST", srv.url + "/v1/models/nope/events", `{"time": 1, "machine": "M1", "action": "compute1"}`, 404, "no model"},
		{"GET", srv.url + "/v1/models/nope/events", "", 404, "no model"},
		{"GET", srv.url + "/v1/models/nope/robustness?beta=45", "", 404, "no model"},
		{"GET", srv.url + "/v1/models/nope/cdf", "", 404, "no model"},
		{"GET", srv.url + "/v2/models", "", 404, "no such path"},
		{"GET", srv.url + "/index.html", "", 404, "no such path"},
		{"PUT", srv.url + "/v1/models", "", 405, "method PUT not allowed"},
		{"DELETE", srv.url + "/v1/models", "", 405, "allowed: GET, HEAD, POST"},
		{"PATCH", u, "", 405, "allowed: DELETE, GET, HEAD"},
		{"PUT", u + "/events", "", 405, "not allowed"},
		{"POST", u + "/robustness?beta=45", "", 405, "allowed: GET, HEAD"},
		{"DELETE", u + "/cdf", "", 405, "not allowed"},
		{"POST", srv.url + "/v1/health", "", 405, "not allowed"},
		{"POST", srv.url + "/", "", 405, "not allowed"},
	}
	for _, c := range cases {
		var header []string
		if strings.Contains(c.want, "Idempotency-Key") {
			header = []string{"Idempotency-Key", strings.Repeat("k", keyLimit+1)}
		}
		code, b := call(t, c.method, c.url, testToken, strings.NewReader(c.body), header...)
		if code != c.code {
			t.Errorf("%s %s %s: %d, want %d: %s", c.method, c.url, c.body, code, c.code, b)
			continue
		}
		if msg := errorOf(t, b); !strings.Contains(msg, c.want) {
			t.Errorf("%s %s %s: error %q lacks %q", c.method, c.url, c.body, msg, c.want)
		}
	}
	// 413 also without a Content-Length (chunked): the excess is found
	// while reading.
	for _, c := range []struct{ url, body string }{{srv.url + "/v1/models", big}, {u + "/events", bigEvents}} {
		code, b := call(t, "POST", c.url, testToken, hiddenLength{strings.NewReader(c.body)})
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s chunked, too large: %d %s", c.url, code, b)
		}
	}
	// Nothing above was taken.
	if evs := recordOf(t, srv.url, id); len(evs) != 0 {
		t.Fatalf("events after refused requests: %v", evs)
	}
	// A list whose third event is impossible (M1 completes compute9
	// before compute5): the two before it are taken, and on disk, as one
	// line.
	list := append(append([]observe.Event{}, seedEvents[:2]...), observe.Event{Time: 7, Machine: "M1", Action: "compute9"}, seedEvents[3])
	code, b := call(t, "POST", u+"/events", testToken, strings.NewReader(eventsJSON(list)))
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
	lines, _ := os.ReadFile(filepath.Join(dir, id, eventsFile))
	if n := strings.Count(string(lines), "\n"); n != 1 || strings.Count(string(lines), `"machine"`) != 2 {
		t.Errorf("events.jsonl has %d lines, want 1 with 2 events:\n%s", n, lines)
	}
	// Out of time order, and now before the latest event.
	code, b = call(t, "POST", u+"/events", testToken, strings.NewReader(`{"time": 4, "machine": "M3", "action": "compute3"}`))
	if code != 400 || !strings.Contains(errorOf(t, b), "time order") {
		t.Errorf("event out of order: %d %s", code, b)
	}
	code, b = call(t, "GET", u+"/robustness?beta=45&now=4", testToken, nil)
	if code != 400 || !strings.Contains(errorOf(t, b), "before the record's latest event") {
		t.Errorf("now before the latest event: %d %s", code, b)
	}
	// Deleted: gone from the list and the disk, 404 after.
	code, b = call(t, "DELETE", u, testToken, nil)
	if code != 200 {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	if code, b = call(t, "GET", u+"/robustness?beta=45", testToken, nil); code != 404 {
		t.Errorf("robustness of a deleted model: %d %s", code, b)
	}
	if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
		t.Errorf("the deleted model's directory: %v", err)
	}
	if code, b = call(t, "GET", srv.url+"/v1/models", testToken, nil); code != 200 || !strings.Contains(string(b), `"models": []`) {
		t.Errorf("list after DELETE: %d %s", code, b)
	}
}

// TestParseSeconds: what the API takes as seconds, and what it refuses.
func TestParseSeconds(t *testing.T) {
	for _, c := range []struct {
		text     string
		positive bool
		want     float64
		ok       bool
	}{
		{"45", true, 45, true}, {"45.", true, 45, true}, {".5", true, 0.5, true}, {"4.5e1", true, 45, true}, {"1E9", true, 1e9, true},
		{"0", false, 0, true}, {"-0", false, 0, true}, {"0", true, 0, false}, {"1e9", false, 1e9, true}, {"1000000001", false, 0, false},
		{"1_0", true, 0, false}, {"0x10p0", true, 0, false}, {"inf", true, 0, false}, {"Infinity", true, 0, false}, {"nan", true, 0, false},
		{" 45", true, 0, false}, {"45 ", true, 0, false}, {"+45", true, 0, false}, {"", true, 0, false}, {".", true, 0, false},
		{"1e", true, 0, false}, {"-1", false, 0, false}, {"1e-400", true, 0, false}, {"1e400", false, 0, false},
	} {
		got, err := parseSeconds(c.text, c.positive)
		if (err == nil) != c.ok || c.ok && got != c.want {
			t.Errorf("parseSeconds(%q, %v) = %g, %v; want %g, ok %v", c.text, c.positive, got, err, c.want, c.ok)
		}
	}
}

// TestLock: a second server on a state directory refuses to start, naming
// the first's pid (this process's) and the lock file; once the first is
// closed, another starts.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(context.Background(), Config{Dir: dir, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), Config{Dir: dir, Token: testToken})
	want := fmt.Sprintf("in use by another pepa serve (pid %d, holding %s)", os.Getpid(), filepath.Join(dir, lockFile))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a second server: %v, want %q", err, want)
	}
	first.Close()
	again, err := Open(context.Background(), Config{Dir: dir, Token: testToken})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	again.Close()
}

// TestTornBatch: a request's events are one line; a line a crash cut (no
// newline) is dropped whole at the next start, with a log line, and the
// record goes on after it; a record written one event a line (by servers
// before batches) still loads.
func TestTornBatch(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, Config{})
	id := postModel(t, srv.url, "seed", readSeed(t))
	postEvents(t, srv.url, id, seedEvents[:2])
	srv.ts.Close()
	srv.s.Close()
	path := filepath.Join(dir, id, eventsFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Two events of a batch written, the third cut: none is replayed.
	line, _ := json.Marshal(batch{Events: seedEvents[2:5]})
	f.Write(line[:len(line)*3/4])
	f.Close()
	srv = start(t, dir, Config{})
	if !strings.Contains(srv.logs.String(), "ignoring a torn last line") {
		t.Errorf("no log line about the torn batch:\n%s", srv.logs)
	}
	if got := recordOf(t, srv.url, id); fmt.Sprint(got) != fmt.Sprint(seedEvents[:2]) {
		t.Errorf("after the torn batch: %v, want %v", got, seedEvents[:2])
	}
	postEvents(t, srv.url, id, seedEvents[2:])
	if got := recordOf(t, srv.url, id); fmt.Sprint(got) != fmt.Sprint(seedEvents) {
		t.Errorf("after the record went on: %v", got)
	}
	// The legacy layout: one event object a line.
	srv.ts.Close()
	srv.s.Close()
	var legacy strings.Builder
	for _, ev := range seedEvents[:3] {
		b, _ := json.Marshal(ev)
		legacy.Write(append(b, '\n'))
	}
	os.WriteFile(path, []byte(legacy.String()), 0o600)
	srv = start(t, dir, Config{})
	if got := recordOf(t, srv.url, id); fmt.Sprint(got) != fmt.Sprint(seedEvents[:3]) {
		t.Errorf("a legacy record: %v", got)
	}
	// A line that is complete but not a batch stops the start, naming it.
	srv.ts.Close()
	srv.s.Close()
	os.WriteFile(path, []byte(legacy.String()+`{"events": [{"time": 9, "machine": "M1", "Action": "compute5"}]}`+"\n"), 0o600)
	if _, err := Open(context.Background(), Config{Dir: dir, Token: testToken}); err == nil || !strings.Contains(err.Error(), path+":4:") {
		t.Errorf("a corrupt line: %v", err)
	}
}

// TestRetry: a request with an Idempotency-Key whose answer was lost (the
// connection cut after its events were on disk, the server then gone as
// after kill -9) is retried on the next server with the same key and body:
// it gets the answer the first would have had, marked replayed, and the
// record has its events once; the same key with another body is 422; a
// retry while the server lives gets the bytes of the first answer.
func TestRetry(t *testing.T) {
	dir := t.TempDir()
	cut := true
	var cutMu sync.Mutex
	srv := start(t, dir, Config{afterAppend: func(string) {
		cutMu.Lock()
		defer cutMu.Unlock()
		if cut {
			panic(http.ErrAbortHandler) // the answer is never sent
		}
	}})
	id := postModel(t, srv.url, "seed", readSeed(t))
	u := srv.url + "/v1/models/" + id + "/events"
	body := eventsJSON(seedEvents[:3])
	// On a connection of its own: net/http retries a request with an
	// Idempotency-Key by itself when a reused connection breaks.
	req, _ := http.NewRequest("POST", u, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Idempotency-Key", "batch-1")
	if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the cut request was answered: %d", resp.StatusCode)
	}
	srv.ts.Close()
	srv.s.Close() // the lock released, nothing else: what kill -9 leaves
	srv = start(t, dir, Config{})
	u = srv.url + "/v1/models/" + id + "/events"
	code, b, h, err := callErr(context.Background(), "POST", u, testToken, strings.NewReader(body), "Idempotency-Key", "batch-1")
	if err != nil || code != 200 || string(b) != "{\n  \"events\": 3,\n  \"taken\": 3\n}\n" || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry: %d %q %v (%v)", code, b, h, err)
	}
	if got := recordOf(t, srv.url, id); fmt.Sprint(got) != fmt.Sprint(seedEvents[:3]) {
		t.Errorf("the record after the retry: %v", got)
	}
	code, b = call(t, "POST", u, testToken, strings.NewReader(eventsJSON(seedEvents[3:4])), "Idempotency-Key", "batch-1")
	if code != http.StatusUnprocessableEntity || !strings.Contains(errorOf(t, b), `Idempotency-Key "batch-1" was used by a request with another body`) {
		t.Errorf("the key with another body: %d %s", code, b)
	}
	// A partial request's answer (400, 1 taken) is kept too.
	partial := eventsJSON([]observe.Event{seedEvents[3], {Time: 9, Machine: "M2", Action: "compute10"}})
	code1, first := call(t, "POST", u, testToken, strings.NewReader(partial), "Idempotency-Key", "batch-2")
	code2, again := call(t, "POST", u, testToken, strings.NewReader(partial), "Idempotency-Key", "batch-2")
	if code1 != 400 || code2 != 400 || !bytes.Equal(first, again) || !strings.Contains(string(first), `"taken": 1`) {
		t.Errorf("a partial request retried: %d %s, then %d %s", code1, first, code2, again)
	}
	if got := recordOf(t, srv.url, id); len(got) != 4 {
		t.Errorf("the record after the partial request and its retry: %v", got)
	}
}

// TestTokenFile: a missing file is made (mode 0600, 32 random bytes in
// hex); a short token is refused; a file others can read or write is
// warned about.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tok")
	token, created, warnings, err := ReadToken(path)
	st, _ := os.Stat(path)
	if err != nil || !created || len(token) != 64 || len(warnings) != 0 || st == nil || st.Mode().Perm() != 0o600 {
		t.Errorf("a created token file: %q %v %v %v %v", token, created, warnings, err, st)
	}
	if again, created, _, _ := ReadToken(path); again != token || created {
		t.Errorf("read back: %q %v", again, created)
	}
	for _, c := range []struct {
		content string
		mode    os.FileMode
		want    []string // warnings, or the error
		err     bool
	}{
		{"x\n", 0o600, []string{"holds a token of 1 bytes: at least 16"}, true},
		{"  \n", 0o600, []string{"is empty"}, true},
		{testToken, 0o600, nil, false},
		{testToken, 0o640, []string{"readable by others (mode 0640)"}, false},
		{testToken, 0o666, []string{"writable by others (mode 0666)", "readable by others (mode 0666)"}, false},
		{testToken, 0o602, []string{"writable by others (mode 0602)"}, false},
		{testToken, 0o620, []string{"writable by others (mode 0620)"}, false},
	} {
		os.WriteFile(path, []byte(c.content), 0o600)
		os.Chmod(path, c.mode)
		_, _, warnings, err := ReadToken(path)
		got := warnings
		if err != nil {
			got = []string{err.Error()}
		}
		ok := (err != nil) == c.err && len(got) == len(c.want)
		for i := range c.want {
			ok = ok && strings.Contains(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%q mode %04o: %q, want %q", c.content, c.mode, got, c.want)
		}
	}
}

// TestConcurrentQueries: 20 clients query three goals of a model while its
// events are posted: every answer is the figures of some record taken
// (its X-Pepa-Events header from 2 to 6, its body the same bytes as a
// query of that record on a server that never had concurrent traffic).
func TestConcurrentQueries(t *testing.T) {
	srv := start(t, t.TempDir(), Config{})
	id := postModel(t, srv.url, "seed", readSeed(t))
	postEvents(t, srv.url, id, seedEvents[:2])
	betas := []string{"40", "45", "50"}
	type answer struct {
		events, beta string
		body         []byte
	}
	answers := make(chan answer, 1000)
	var wg sync.WaitGroup
	for c := 0; c < 20; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				beta := betas[(c+i)%3]
				code, b, h, err := callErr(context.Background(), "GET", srv.url+"/v1/models/"+id+"/robustness?beta="+beta, testToken, nil)
				if err != nil || code != 200 {
					t.Errorf("query: %d %s %v", code, b, err)
					return
				}
				answers <- answer{h.Get("X-Pepa-Events"), beta, b}
			}
		}(c)
	}
	for _, ev := range seedEvents[2:] {
		postEvents(t, srv.url, id, []observe.Event{ev})
	}
	wg.Wait()
	close(answers)
	// The reference: each record's figures on a quiet server.
	quiet := start(t, t.TempDir(), Config{})
	qid := postModel(t, quiet.url, "seed", readSeed(t))
	want := map[string][]byte{}
	for n := 2; n <= len(seedEvents); n++ {
		if n == 2 {
			postEvents(t, quiet.url, qid, seedEvents[:2])
		} else {
			postEvents(t, quiet.url, qid, seedEvents[n-1:n])
		}
		for _, beta := range betas {
			_, want[fmt.Sprint(n)+"/"+beta] = call(t, "GET", quiet.url+"/v1/models/"+qid+"/robustness?beta="+beta, testToken, nil)
		}
	}
	for a := range answers {
		if w, ok := want[a.events+"/"+a.beta]; !ok || !bytes.Equal(a.body, w) {
			t.Errorf("an answer for %s events, beta %s, is not that record's figures", a.events, a.beta)
		}
	}
}

// TestCDF: the page's curves: M1, whose cycle the record completed at 14,
// a step there (the recorded fact, observe.Tracker.FinishedAt); the
// others running from now, their curves rising from 0 to their
// P(F <= beta) near beta; without beta, E[makespan] rounded up.
func TestCDF(t *testing.T) {
	srv := start(t, t.TempDir(), Config{})
	id := postModel(t, srv.url, "seed", readSeed(t))
	u := srv.url + "/v1/models/" + id
	postEvents(t, srv.url, id, seedEvents)
	// The CDFs: M1 finished at 14 (a step), the others running from now,
	// their curves rising from 0 to their P(F <= beta) at beta.
	code, b := call(t, "GET", u+"/cdf?beta=45", testToken, nil)
	if code != 200 {
		t.Fatalf("cdf: %d %s", code, b)
	}
	var doc cdfDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "seed" || doc.Now != 14 || doc.Events != 6 || doc.Beta != 45 || doc.BetaDefault || len(doc.Machines) != 4 {
		t.Fatalf("cdf: %+v", doc)
	}
	for _, m := range doc.Machines {
		if m.Name == "M1" {
			if m.FinishedAt != 14.0 || len(m.Points) != 4 || m.Points[2] != [2]float64{14, 1} {
				t.Errorf("cdf: M1 finished at 14: %+v", m)
			}
			continue
		}
		if m.FinishedAt != nil || len(m.Points) < cdfPoints {
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
				if pb := m.PByBeta.(float64); p[0] > 45-(doc.TMax-14)/cdfPoints && (p[1] > pb+1e-9 || p[1] < pb-0.05) {
					t.Errorf("cdf: %s: %v near beta, P(F <= 45) = %g", m.Name, p, pb)
				}
			}
		}
	}
	// Without beta: E[makespan] rounded up, flagged.
	code, b = call(t, "GET", u+"/cdf", testToken, nil)
	doc = cdfDoc{}
	if json.Unmarshal(b, &doc); code != 200 || !doc.BetaDefault || doc.Beta < doc.ExpectedMakespan.(float64) || doc.Beta > 1.1*doc.ExpectedMakespan.(float64) {
		t.Errorf("cdf without beta: %d %s", code, b)
	}
}
