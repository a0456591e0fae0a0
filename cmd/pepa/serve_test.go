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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pepa/cmd/pepa/serve"
	"pepa/models/observe"
)

// The service's own tests are package serve's; these run it as the
// command line does (flags, a child process, SIGKILL, SIGTERM) and compare
// its figures with the robustness verb's.

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

// syncBuffer is a log safe to write from several goroutines.
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

// startServe opens a server on dir in this process and serves it on a
// loopback listener.
func startServe(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	s, err := serve.Open(context.Background(), serve.Config{Dir: dir, Token: serveTestToken, Logf: serve.NewLogger(&syncBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return ts
}

// call makes a request (token "" sends none; header: name, value, ...)
// and returns the status and body.
func call(t testing.TB, method, url, token string, body io.Reader, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
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
	code, b := call(t, "POST", base+"/v1/models?name="+name, serveTestToken, strings.NewReader(src))
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
	code, b := call(t, "POST", base+"/v1/models/"+id+"/events", serveTestToken, strings.NewReader(eventsJSON(evs)))
	if code != http.StatusOK {
		t.Fatalf("POST events: %d %s", code, b)
	}
}

func readSeed(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(serveSeed)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cliRobustness is what 'pepa robustness --format json --beta B --now T
// --observed RECORD' prints for the seed.
func cliRobustness(t *testing.T, evs []observe.Event, beta, now float64) string {
	t.Helper()
	var rec strings.Builder
	rec.WriteString("time,machine,action\n")
	for _, ev := range evs {
		fmt.Fprintf(&rec, "%s,%s,%s\n", fmtFloat(ev.Time), ev.Machine, ev.Action)
	}
	file := writeTemp(t, "record.csv", rec.String())
	code, out, stderr := runPepa(t, "", "robustness", "--format", "json", "--beta", fmtFloat(beta), "--now", fmtFloat(now), "--observed", file, serveSeed)
	if code != exitOK {
		t.Fatalf("pepa robustness --observed: exit %d: %s", code, stderr)
	}
	return out
}

// TestServeRobustnessMatchesCLI: the figures GET robustness answers are
// byte for byte what the command line prints for the same model and
// record, at the latest event and later, for a goal already past too.
func TestServeRobustnessMatchesCLI(t *testing.T) {
	ts := startServe(t, t.TempDir())
	id := postModel(t, ts.URL, serveSeed, readSeed(t))
	u := ts.URL + "/v1/models/" + id
	postEvents(t, ts.URL, id, serveSeedEvents[:1])
	postEvents(t, ts.URL, id, serveSeedEvents[1:2])
	postEvents(t, ts.URL, id, serveSeedEvents[2:])
	code, b := call(t, "GET", u, serveTestToken, nil)
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
		code, got := call(t, "GET", u+"/robustness?"+c.query, serveTestToken, nil)
		if code != 200 {
			t.Fatalf("robustness?%s: %d %s", c.query, code, got)
		}
		want := cliRobustness(t, serveSeedEvents, c.beta, c.now)
		if string(got) != want {
			t.Errorf("robustness?%s differs from the command line's:\n%s\nwant\n%s", c.query, got, want)
		}
		// Cached: the same bytes again.
		if _, again := call(t, "GET", u+"/robustness?"+c.query, serveTestToken, nil); !bytes.Equal(again, got) {
			t.Errorf("robustness?%s: a second answer differs", c.query)
		}
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

func startServeChild(t *testing.T, dir, tokenFile string, extra ...string) *serveChild {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--state-dir", dir}, extra...)
	cmd := exec.Command(os.Args[0], args...)
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

// kill sends SIGKILL and waits for the child to be gone.
func (c *serveChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-c.done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("pepa serve after SIGKILL: %v", err)
	}
}

// TestServeRestartAfterKill: a server killed with SIGKILL right after
// answering loses nothing it answered: restarted on the same state
// directory (the dead one's lock gone with it) it has every model and
// event, and answers the same figures byte for byte. A torn last line (a
// crash in the middle of an append) is dropped with a log line and the
// record goes on after it. SIGTERM stops the server gracefully (exit 0).
func TestServeRestartAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tokenFile := writeTemp(t, "token", "  "+serveTestToken+"\n")
	os.Chmod(tokenFile, 0o600)
	c := startServeChild(t, dir, tokenFile)
	id := postModel(t, c.url, serveSeed, readSeed(t))
	other := postModel(t, c.url, "other", readSeed(t))
	for _, ev := range serveSeedEvents[:4] {
		postEvents(t, c.url, id, []observe.Event{ev})
	}
	postEvents(t, c.url, other, serveSeedEvents[:2])
	_, before := call(t, "GET", c.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	_, list := call(t, "GET", c.url+"/v1/models", serveTestToken, nil)
	c.kill(t)
	// What a crash in the middle of the next append leaves.
	f, err := os.OpenFile(filepath.Join(dir, id, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"events":[{"time":11,"machine":"M3","act`)
	f.Close()

	c2 := startServeChild(t, dir, tokenFile)
	if !strings.Contains(c2.stderr.String(), "ignoring a torn last line") {
		t.Errorf("no log line about the torn line:\n%s", c2.stderr)
	}
	_, after := call(t, "GET", c2.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	if !bytes.Equal(before, after) {
		t.Errorf("figures after the restart differ:\n%s\nbefore:\n%s", after, before)
	}
	_, list2 := call(t, "GET", c2.url+"/v1/models", serveTestToken, nil)
	if !bytes.Equal(list, list2) {
		t.Errorf("models after the restart:\n%s\nbefore:\n%s", list2, list)
	}
	_, evs := call(t, "GET", c2.url+"/v1/models/"+id+"/events", serveTestToken, nil)
	var rec struct{ Events []observe.Event }
	if err := json.Unmarshal(evs, &rec); err != nil || fmt.Sprint(rec.Events) != fmt.Sprint(serveSeedEvents[:4]) {
		t.Errorf("events after the restart: %s (%v)", evs, err)
	}
	// The record goes on after the dropped line; a graceful stop, and a
	// third start has all of it.
	postEvents(t, c2.url, id, serveSeedEvents[4:])
	_, final := call(t, "GET", c2.url+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	c2.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-c2.done; err != nil {
		t.Errorf("pepa serve after SIGTERM: %v\n%s", err, c2.stderr)
	}
	if !strings.Contains(c2.stderr.String(), "stopped") {
		t.Errorf("no log line about stopping:\n%s", c2.stderr)
	}
	ts := startServe(t, dir) // in process
	_, again := call(t, "GET", ts.URL+"/v1/models/"+id+"/robustness?beta=45", serveTestToken, nil)
	if !bytes.Equal(final, again) || !bytes.Equal(final, []byte(cliRobustness(t, serveSeedEvents, 45, 14))) {
		t.Errorf("figures after the third start:\n%s\nbefore the stop:\n%s", again, final)
	}
}

// TestServeRetryAfterKill: a controller posts events with an
// Idempotency-Key, the server is killed (SIGKILL) before the controller
// could use the answer, and the controller retries on the restarted
// server: it gets the same answer, byte for byte, and the record has the
// events once; the same key with another body is 422.
func TestServeRetryAfterKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tokenFile := writeTemp(t, "token", serveTestToken+"\n")
	os.Chmod(tokenFile, 0o600)
	c := startServeChild(t, dir, tokenFile)
	id := postModel(t, c.url, serveSeed, readSeed(t))
	body := eventsJSON(serveSeedEvents[:3])
	code, first := call(t, "POST", c.url+"/v1/models/"+id+"/events", serveTestToken, strings.NewReader(body), "Idempotency-Key", "controller-7/batch-1")
	if code != 200 {
		t.Fatalf("POST events: %d %s", code, first)
	}
	c.kill(t)
	c2 := startServeChild(t, dir, tokenFile)
	code, again := call(t, "POST", c2.url+"/v1/models/"+id+"/events", serveTestToken, strings.NewReader(body), "Idempotency-Key", "controller-7/batch-1")
	if code != 200 || !bytes.Equal(first, again) {
		t.Errorf("the retry: %d %s, first %s", code, again, first)
	}
	_, evs := call(t, "GET", c2.url+"/v1/models/"+id+"/events", serveTestToken, nil)
	var rec struct{ Events []observe.Event }
	if err := json.Unmarshal(evs, &rec); err != nil || fmt.Sprint(rec.Events) != fmt.Sprint(serveSeedEvents[:3]) {
		t.Errorf("the record after the retry: %s (%v)", evs, err)
	}
	code, b := call(t, "POST", c2.url+"/v1/models/"+id+"/events", serveTestToken, strings.NewReader(eventsJSON(serveSeedEvents[3:4])), "Idempotency-Key", "controller-7/batch-1")
	if code != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d %s", code, b)
	}
}

// TestServeOnePerDir: a second 'pepa serve' on a state directory another
// holds exits 1 at once, naming the holder's pid; with the first stopped,
// it starts.
func TestServeOnePerDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tokenFile := writeTemp(t, "token", serveTestToken+"\n")
	os.Chmod(tokenFile, 0o600)
	c := startServeChild(t, dir, tokenFile)
	code, _, stderr := runPepa(t, "", "serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--state-dir", dir)
	want := fmt.Sprintf("in use by another pepa serve (pid %d,", c.cmd.Process.Pid)
	if code != exitInvalid || !strings.Contains(stderr, want) {
		t.Errorf("a second server: exit %d, stderr %q, want %q", code, stderr, want)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	startServeChild(t, dir, tokenFile)
}

// TestServeFlags: usage errors exit 2 before anything is served; --help
// exits 0 and says what a stop does to the requests in progress; an empty
// or short token is refused; the token file is created (0600) when
// missing; a token file others can read or write is warned about.
func TestServeFlags(t *testing.T) {
	dir := t.TempDir()
	empty := writeTemp(t, "empty", " \n")
	short := writeTemp(t, "short", "abc\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--help"}, exitOK, "the requests in progress are given 10 s"},
		{[]string{"serve", "--state-dir", dir}, exitUsage, "--token-file is required"},
		{[]string{"serve", "--token-file", empty}, exitUsage, "--state-dir is required"},
		{[]string{"serve", "--token-file", empty, "--state-dir", dir}, exitUsage, "is empty"},
		{[]string{"serve", "--token-file", short, "--state-dir", dir}, exitUsage, "holds a token of 3 bytes: at least 16 are needed"},
		{[]string{"serve", "--token-file", empty, "--state-dir", dir, "x.pepa"}, exitUsage, "unexpected argument"},
		{[]string{"serve", "--token-file", empty, "--state-dir", dir, "--request-timeout", "0s"}, exitUsage, "--request-timeout must be positive"},
		{[]string{"serve", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"serve", "--token-file", filepath.Join(dir, "tok"), "--state-dir", dir, "--listen", "256.0.0.1:99999"}, exitUsage, "--listen"},
	} {
		code, out, stderr := runPepa(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr+out, c.want) {
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
	open := writeTemp(t, "open-token", serveTestToken+"\n")
	os.Chmod(open, 0o666)
	c := startServeChild(t, filepath.Join(t.TempDir(), "state"), open)
	for _, want := range []string{"warning: " + open + " is writable by others (mode 0666)", "warning: " + open + " is readable by others (mode 0666)"} {
		if !strings.Contains(c.stderr.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, c.stderr)
		}
	}
}
