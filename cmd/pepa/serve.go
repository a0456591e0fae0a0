package main

// 'pepa serve': robustness figures from observed progress (semantics.md
// section 6) for a controller that posts a running batch's completions
// over HTTP, and a page for people.
//
// API (JSON; every request but GET /v1/health and the page's own files
// needs "Authorization: Bearer TOKEN", TOKEN the --token-file's content,
// trimmed):
//
//	GET    /v1/health                        {"status": "ok", "models": N}
//	POST   /v1/models[?name=NAME]            body: the model's text -> 201 {"id", "name", "events", "warnings"?}
//	GET    /v1/models                        {"models": [{"id", "name", "events", "last_event_time", "created"}]}
//	GET    /v1/models/{id}                   one of those
//	DELETE /v1/models/{id}                   {"deleted": ID}
//	POST   /v1/models/{id}/events            body: {"time", "machine", "action"} or a list of them -> {"taken", "events"}
//	GET    /v1/models/{id}/events            {"events": [...]}, the record taken so far
//	GET    /v1/models/{id}/robustness?beta=B[&now=T]
//	       exactly what 'pepa robustness --format json --beta B' prints for
//	       the model conditioned on the record at T (default: the latest
//	       event's time)
//	GET    /v1/models/{id}/cdf[?beta=B][&now=T]
//	       every machine's conditional finishing-time CDF sampled on an
//	       absolute time axis, for the page
//
// Errors are {"error": MESSAGE}: 400 malformed input or a model that does
// not load (the diagnostics, NAME:LINE:COL), 401 no or a wrong token, 404
// unknown id or path, 405 wrong method, 413 a body over 8 MiB (models) or
// 1 MiB (events), 500/503 the server's own failures.
//
// Events of one request are taken in order (observe.Tracker.Add); the
// first that cannot be taken (malformed fields reject the whole request
// before any is taken; an event out of time order, of an unknown machine
// or action, or impossible given the record, stops it) is answered 400
// with "taken", the number taken before it, which stay taken and are
// persisted.
//
// Persistence: in the state directory, one directory per model, named by
// its id, holding model.pepa, meta.json and events.jsonl (one event a
// line). A model's directory is built under a temporary name (model.pepa
// and meta.json each written to a temporary file, fsynced and renamed,
// the directory fsynced) and renamed into place, the state directory
// fsynced, before the 201; a request's events are appended to events.jsonl
// in one write and fsynced before its answer. On start every model is
// reloaded and its events replayed; a torn last line (a crash in the
// middle of an append, never acknowledged) is dropped with a log line.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/lang"
	"pepa/models"
	"pepa/models/observe"
)

// Limits of the service.
const (
	serveModelLimit  = 8 << 20 // bytes of a model's text
	serveEventsLimit = 1 << 20 // bytes of one request's events
	serveNameLimit   = 256     // bytes of a model's name
	serveCacheSize   = 32      // figures kept per model (per record, goal and now)
	serveWarm        = 8       // figures computed ahead for a new record
	serveWarmTime    = 250 * time.Millisecond
	serveCDFPoints   = 160 // CDF samples per machine for the page
	serveShutdown    = 10 * time.Second
)

// The files of a model's directory.
const (
	serveModelFile  = "model.pepa"
	serveMetaFile   = "meta.json"
	serveEventsFile = "events.jsonl"
)

const serveExamples = `  pepa serve --listen 127.0.0.1:0 --token-file serve.token --state-dir serve-state & sleep 2; kill $!; wait $!
        serve on a free loopback port (the log names it) for 2 s, then stop (SIGTERM: the
        requests in progress are finished first); serve.token is created with a random
        token when missing, and serve-state keeps the models and their events across restarts
`

const serveHelp = `serve answers a controller's questions about running batches: POST a mapping's
model, POST its machines' completions as they happen, GET its robustness figures
conditioned on them (what 'pepa robustness --format json' prints). Every request
but GET /v1/health and the page needs the header "Authorization: Bearer TOKEN",
TOKEN the content of --token-file, trimmed (created with a random token, mode
0600, when the file does not exist).

  POST   /v1/models[?name=NAME]              the model's text -> 201 {"id", "name", "events"}
  GET    /v1/models                          {"models": [{"id", "name", "events", ...}]}
  GET    /v1/models/ID                       one model
  DELETE /v1/models/ID                       forget it (and its files)
  POST   /v1/models/ID/events                {"time", "machine", "action"} or a list -> {"taken", "events"}
  GET    /v1/models/ID/events                the record so far
  GET    /v1/models/ID/robustness?beta=B[&now=T]  figures at now = T (default: the latest event's time)
  GET    /v1/models/ID/cdf[?beta=B][&now=T]  each machine's conditional CDF, sampled (beta default: E[makespan])
  GET    /v1/health                          {"status": "ok", "models": N}, no token needed
  GET    /                                   the page: every model's CDFs, updated every 2 s

Events are taken in order: a request with a malformed event takes none; at the
first event that cannot be taken (out of time order, unknown machine or action,
impossible given the record) it stops with 400 and "taken", the number taken
before it, which stay taken. Errors are {"error": MESSAGE}: 400 bad input (a
model's diagnostics as NAME:LINE:COL: error: MESSAGE), 401 no or wrong token,
404 unknown model, 405 wrong method, 413 a body over 8 MiB (model) or 1 MiB
(events). A model or event answered is on disk (fsynced) in --state-dir before
the answer; a restart reloads every model and replays its events. One server
per --state-dir. The page keeps the token in the tab's sessionStorage and sends
it in the header, never in a URL (open /#token=TOKEN&beta=45 to pass it: the
fragment is not sent, and is removed once read). SIGINT or SIGTERM stops the
server after the requests in progress. With the server on 127.0.0.1:8321:

  T=$(cat serve.token)
  curl -H "Authorization: Bearer $T" --data-binary @testdata/mapping-a.pepa 'http://127.0.0.1:8321/v1/models?name=mapping-a'
  curl -H "Authorization: Bearer $T" -d '{"time": 3.5, "machine": "M1", "action": "compute1"}' http://127.0.0.1:8321/v1/models/ID/events
  curl -H "Authorization: Bearer $T" 'http://127.0.0.1:8321/v1/models/ID/robustness?beta=45'
`

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "serve", "serve --listen ADDR --token-file FILE --state-dir DIR [flags]", serveExamples)
	listen := fs.String("listen", "127.0.0.1:8321", "serve HTTP on `ADDR` (host:port; port 0 picks a free one)")
	tokenFile := fs.String("token-file", "", "the bearer token every request needs is this `FILE`'s content, trimmed (created with a random token when missing; required)")
	stateDir := fs.String("state-dir", "", "keep the models and their events in `DIR` (created when missing; required)")
	maxStates := fs.Int("max-states", 0, "refuse models whose groups have more than `N` states (0: the memory budget / 160 bytes a state)")
	var mem memoryFlag
	mem.register(fs)
	fs.Usage = func() { // newFlags' usage, with what the server answers
		w := fs.Output()
		fmt.Fprintf(w, "Usage: pepa serve --listen ADDR --token-file FILE --state-dir DIR [flags]\n\n%s\n", serveHelp)
		fs.PrintDefaults()
		fmt.Fprintf(w, "\nExamples:\n%s", serveExamples)
		fmt.Fprint(w, docsPointer)
	}
	rest, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	c := &checker{e: e, verb: "serve"}
	c.require(len(rest) == 0, "unexpected argument %q: models are posted to the server, not named on the command line", strings.Join(rest, " "))
	c.require(*tokenFile != "", "--token-file is required")
	c.require(*stateDir != "", "--state-dir is required")
	c.require(*listen != "", "--listen is required")
	c.require(*maxStates >= 0, "--max-states must be positive")
	if c.failed() {
		return c.code
	}
	ctx, code = mem.resolve(ctx, e, "serve")
	if code >= 0 {
		return code
	}
	if *maxStates == 0 {
		*maxStates, mem.defaulted = statesFor(mem.budget), true
	}
	logf := serveLogger(e.stderr)
	token, created, warn, err := serveToken(*tokenFile)
	if err != nil {
		return usageError(e, "serve", "--token-file: %v", err)
	}
	if created {
		logf("created %s with a new random token (mode 0600)", *tokenFile)
	}
	if warn != "" {
		logf("%s", warn)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := serveOpen(ctx, serveConfig{dir: *stateDir, token: token, maxStates: *maxStates, logf: logf})
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "pepa serve: %v\n", err)
		return exitInvalid
	}
	defer s.close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usageError(e, "serve", "--listen: %v", err)
	}
	if err := s.serve(ctx, ln); err != nil {
		fmt.Fprintf(e.stderr, "pepa serve: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// serveLogger writes "pepa serve: TIME MESSAGE" lines, one at a time.
func serveLogger(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		line := fmt.Sprintf("pepa serve: %s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), fmt.Sprintf(format, args...))
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, line)
	}
}

// serveToken reads the token file (trimmed), or creates it with a
// random token (32 bytes, hex) when it does not exist.
func serveToken(path string) (token string, created bool, warn string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", false, "", err
		}
		token = hex.EncodeToString(raw[:])
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, "", err
		}
		if _, err := f.WriteString(token + "\n"); err != nil {
			f.Close()
			return "", false, "", err
		}
		if err := f.Close(); err != nil {
			return "", false, "", err
		}
		return token, true, "", nil
	}
	if err != nil {
		return "", false, "", err
	}
	token = strings.TrimSpace(string(b))
	if token == "" {
		return "", false, "", fmt.Errorf("%s is empty: a token is needed", path)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o044 != 0 {
		warn = fmt.Sprintf("warning: %s is readable by others (mode %04o): chmod 600 it", path, st.Mode().Perm())
	}
	return token, false, warn, nil
}

// serveConfig is what a server is made of.
type serveConfig struct {
	dir       string
	token     string
	maxStates int // 0: no bound
	logf      func(format string, args ...any)
}

// serveState is the state of 'pepa serve': the models, each with its
// tracker, by id.
type serveState struct {
	dir      string
	tokenSum [32]byte
	copt     ctmc.Options
	mopt     models.Options
	logf     func(format string, args ...any)
	// base carries the memory budget; the computations run under it,
	// not under a request's context, so that one client leaving does not
	// fail the others waiting for the same figures. It ends after the
	// server has shut down.
	base   context.Context
	cancel context.CancelFunc

	mu     sync.RWMutex
	models map[string]*serveModel
}

// serveModel is one model: its record, tracker and cached figures.
type serveModel struct {
	id, name string
	created  time.Time
	dir      string
	src      []byte

	// mu is held to write while events are taken, to read while figures
	// are computed (so that they are those of the record they are keyed
	// by).
	mu      sync.RWMutex
	tracker *observe.Tracker
	events  []observe.Event
	gen     uint64 // the record's version: the events taken, and rebuilds
	deleted bool
	broken  error // the tracker is lost (a failed rebuild): every request fails

	snap atomic.Pointer[serveSnap] // what mu guards, as of the last change, read without it

	cacheMu sync.Mutex
	cache   map[serveFigKey]*serveFigEntry
	order   []serveFigKey
}

// serveSnap is a model's state as queries see it without its lock.
type serveSnap struct {
	gen     uint64
	n       int     // events taken
	last    float64 // the latest event's time (0 without events)
	deleted bool
	broken  error
}

type serveFigKey struct {
	gen       uint64
	beta, now float64
}

// serveFigEntry is the figures for one record, goal and now, computed once for
// every request asking for them.
type serveFigEntry struct {
	done chan struct{}
	res  *models.Result
	err  error
	now  float64
	gen  uint64
	n    int // events in the record

	jsonOnce sync.Once
	json     []byte
	jsonErr  error
	cdfOnce  sync.Once
	cdf      *serveCDFDoc
	cdfErr   error
}

// serveOpen loads the state directory (created when missing).
func serveOpen(ctx context.Context, cfg serveConfig) (*serveState, error) {
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &serveState{dir: cfg.dir, tokenSum: sha256.Sum256([]byte(cfg.token)), logf: cfg.logf, base: base, cancel: cancel,
		copt:   ctmc.Options{Aggregate: true, MaxStates: cfg.maxStates},
		mopt:   models.Options{Epsilon: 1e-10, Transient: "auto", MaxGroupStates: cfg.maxStates},
		models: map[string]*serveModel{}}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	if err := s.load(ctx); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

func (s *serveState) close() { s.cancel() }

// serve answers on ln until ctx ends, then shuts down: the requests in
// progress are finished (for at most serveShutdown).
func (s *serveState) serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute, ErrorLog: log.New(&serveLogAdapter{s.logf}, "", 0)}
	s.mu.RLock()
	n := len(s.models)
	s.mu.RUnlock()
	s.logf("listening on http://%s/ (%s, state in %s)", ln.Addr(), servePlural(n, "model", "models"), s.dir)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.logf("stopping: finishing the requests in progress")
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdown)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.cancel()
	if err != nil {
		hs.Close()
		s.logf("stopped (requests still running after %s were cut: %v)", serveShutdown, err)
		return nil
	}
	s.logf("stopped")
	return nil
}

func servePlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// --- HTTP -------------------------------------------------------------

// handler routes the API, the page and its files.
func (s *serveState) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/health", s.methods(map[string]http.HandlerFunc{"GET": s.health}))
	mux.HandleFunc("/v1/models", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.listModels, "POST": s.createModel})))
	mux.HandleFunc("/v1/models/{id}", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.getModel, "DELETE": s.deleteModel})))
	mux.HandleFunc("/v1/models/{id}/events", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.getEvents, "POST": s.postEvents})))
	mux.HandleFunc("/v1/models/{id}/robustness", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.robustness})))
	mux.HandleFunc("/v1/models/{id}/cdf", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.cdf})))
	mux.HandleFunc("/{$}", s.methods(map[string]http.HandlerFunc{"GET": servePageHandler("text/html; charset=utf-8", servePageHTML)}))
	mux.HandleFunc("/serve.js", s.methods(map[string]http.HandlerFunc{"GET": servePageHandler("text/javascript; charset=utf-8", servePageJS)}))
	mux.HandleFunc("/serve.css", s.methods(map[string]http.HandlerFunc{"GET": servePageHandler("text/css; charset=utf-8", servePageCSS)}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		serveFail(w, http.StatusNotFound, "no such path %s (the API is under /v1/)", r.URL.Path)
	})
	return s.logged(mux)
}

// methods dispatches on the method (HEAD as GET), 405 otherwise.
func (s *serveState) methods(by map[string]http.HandlerFunc) http.HandlerFunc {
	var allowed []string
	for m := range by {
		allowed = append(allowed, m)
		if m == "GET" {
			allowed = append(allowed, "HEAD")
		}
	}
	sort.Strings(allowed)
	allow := strings.Join(allowed, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		if method == "HEAD" {
			method = "GET"
		}
		h, ok := by[method]
		if !ok {
			w.Header().Set("Allow", allow)
			serveFail(w, http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)
			return
		}
		h(w, r)
	}
}

// authed checks the bearer token (in constant time: both sides hashed
// first, so that neither the token nor its length leaks by timing).
func (s *serveState) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const prefix = "bearer "
		a := r.Header.Get("Authorization")
		var got [32]byte
		ok := len(a) > len(prefix) && strings.EqualFold(a[:len(prefix)], prefix)
		if ok {
			got = sha256.Sum256([]byte(strings.TrimSpace(a[len(prefix):])))
		}
		if subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pepa serve"`)
			serveFail(w, http.StatusUnauthorized, "missing or wrong token: send the header \"Authorization: Bearer TOKEN\", TOKEN the content of the server's --token-file")
			return
		}
		h(w, r)
	}
}

// serveStatusWriter remembers the status sent.
type serveStatusWriter struct {
	http.ResponseWriter
	status int
}

func (w *serveStatusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *serveStatusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// logged logs every request that changes something, and every failure
// (the page's and controllers' polls that succeed are not logged).
func (s *serveState) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &serveStatusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		if r.Method != "GET" && r.Method != "HEAD" || sw.status >= 400 {
			s.logf("%s %s %d (%s, %s)", r.Method, r.URL.Path, sw.status, time.Since(start).Round(time.Microsecond), r.RemoteAddr)
		}
	})
}

// serveLogAdapter sends net/http's own messages to the log.
type serveLogAdapter struct{ logf func(string, ...any) }

func (l *serveLogAdapter) Write(p []byte) (int, error) {
	l.logf("http: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

func servePageHandler(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		io.WriteString(w, body)
	}
}

// sendJSON writes v as the API's JSON (indented, as the command line
// prints it).
func serveSendJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		writeJSON(&b, map[string]any{"error": "encoding the answer: " + err.Error()})
	}
	serveSendBytes(w, status, b.Bytes())
}

func serveSendBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}

// fail answers {"error": MESSAGE}.
func serveFail(w http.ResponseWriter, status int, format string, args ...any) {
	serveSendJSON(w, status, map[string]any{"error": fmt.Sprintf(format, args...)})
}

// readBody reads a body of at most limit bytes; a larger one is answered
// 413 (ok false).
func serveReadBody(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, bool) {
	if r.ContentLength > limit {
		serveFail(w, http.StatusRequestEntityTooLarge, "%s of %d bytes: the limit is %d bytes", what, r.ContentLength, limit)
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			serveFail(w, http.StatusRequestEntityTooLarge, "%s over the limit of %d bytes", what, limit)
			return nil, false
		}
		serveFail(w, http.StatusBadRequest, "reading the body: %v", err)
		return nil, false
	}
	return b, true
}

// query parses the query string strictly (a malformed one is 400).
func serveQuery(w http.ResponseWriter, r *http.Request, allowed ...string) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		serveFail(w, http.StatusBadRequest, "malformed query string: %v", err)
		return nil, false
	}
	for k, v := range q {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			if len(allowed) == 0 {
				serveFail(w, http.StatusBadRequest, "unknown query parameter %q (none is taken here)", k)
			} else {
				serveFail(w, http.StatusBadRequest, "unknown query parameter %q (taken: %s)", k, strings.Join(allowed, ", "))
			}
			return nil, false
		}
		if len(v) > 1 {
			serveFail(w, http.StatusBadRequest, "query parameter %q given %d times", k, len(v))
			return nil, false
		}
	}
	return q, true
}

// seconds parses a query parameter as seconds: a finite number, > 0 for
// beta, >= 0 for now. It returns nil when absent.
func serveSeconds(w http.ResponseWriter, q url.Values, name string, positive bool) (*float64, bool) {
	v, ok := q[name]
	if !ok {
		return nil, true
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || positive && x == 0 {
		want := "a finite number of seconds >= 0"
		if positive {
			want = "a positive finite number of seconds"
		}
		serveFail(w, http.StatusBadRequest, "%s=%q: expected %s", name, v[0], want)
		return nil, false
	}
	return &x, true
}

// model finds the request's model, 404 when there is none.
func (s *serveState) model(w http.ResponseWriter, r *http.Request) *serveModel {
	id := r.PathValue("id")
	s.mu.RLock()
	m := s.models[id]
	s.mu.RUnlock()
	if m == nil {
		serveFail(w, http.StatusNotFound, "no model %q", id)
	}
	return m
}

func (s *serveState) health(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	n := len(s.models)
	s.mu.RUnlock()
	serveSendJSON(w, http.StatusOK, map[string]any{"status": "ok", "models": n})
}

// modelInfo is a model as the list shows it.
func (m *serveModel) info() map[string]any {
	sn := m.snap.Load()
	var last any
	if sn.n > 0 {
		last = sn.last
	}
	return map[string]any{"id": m.id, "name": m.name, "events": sn.n, "last_event_time": last,
		"created": m.created.UTC().Format(time.RFC3339Nano)}
}

func (s *serveState) listModels(w http.ResponseWriter, r *http.Request) {
	if _, ok := serveQuery(w, r); !ok {
		return
	}
	s.mu.RLock()
	ms := make([]*serveModel, 0, len(s.models))
	for _, m := range s.models {
		ms = append(ms, m)
	}
	s.mu.RUnlock()
	serveSortModels(ms)
	list := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		list = append(list, m.info())
	}
	serveSendJSON(w, http.StatusOK, map[string]any{"models": list})
}

// sortModels orders models by creation, then id.
func serveSortModels(ms []*serveModel) {
	sort.Slice(ms, func(i, j int) bool {
		if !ms[i].created.Equal(ms[j].created) {
			return ms[i].created.Before(ms[j].created)
		}
		return ms[i].id < ms[j].id
	})
}

func (s *serveState) getModel(w http.ResponseWriter, r *http.Request) {
	if _, ok := serveQuery(w, r); !ok {
		return
	}
	if m := s.model(w, r); m != nil {
		serveSendJSON(w, http.StatusOK, m.info())
	}
}

// validName checks a model's name: what results and diagnostics carry.
func serveValidName(name string) error {
	switch {
	case name == "":
		return errors.New("name= is empty")
	case len(name) > serveNameLimit:
		return fmt.Errorf("name= has %d bytes: at most %d", len(name), serveNameLimit)
	case !utf8.ValidString(name):
		return errors.New("name= is not UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return errors.New("name= has a control character")
		}
	}
	return nil
}

// newID is a random model id: 16 hex digits, never reused (a controller
// holding the id of a deleted model cannot reach another one).
func serveNewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func serveValidID(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func (s *serveState) createModel(w http.ResponseWriter, r *http.Request) {
	q, ok := serveQuery(w, r, "name")
	if !ok {
		return
	}
	src, ok := serveReadBody(w, r, serveModelLimit, "model")
	if !ok {
		return
	}
	id, err := serveNewID()
	if err != nil {
		serveFail(w, http.StatusInternalServerError, "making an id: %v", err)
		return
	}
	name := id
	if v, given := q["name"]; given {
		name = v[0]
		if err := serveValidName(name); err != nil {
			serveFail(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	tr, warnings, diags, err := s.newTracker(name, src)
	if diags != nil {
		serveSendJSON(w, http.StatusBadRequest, map[string]any{"error": strings.Join(diags, "\n"), "diagnostics": diags})
		return
	}
	if err != nil {
		status := http.StatusBadRequest
		if s.base.Err() != nil {
			status = http.StatusServiceUnavailable
		}
		serveFail(w, status, "%s: error: %v", name, err)
		return
	}
	m := &serveModel{id: id, name: name, created: time.Now().UTC(), dir: filepath.Join(s.dir, id), src: src, tracker: tr,
		cache: map[serveFigKey]*serveFigEntry{}}
	m.publish()
	if err := s.persistNew(m); err != nil {
		s.logf("model %s (%s): not saved: %v", id, name, err)
		serveFail(w, http.StatusInternalServerError, "saving the model: %v", err)
		return
	}
	s.mu.Lock()
	s.models[id] = m
	s.mu.Unlock()
	s.logf("model %s (%s): created", id, name)
	w.Header().Set("Location", "/v1/models/"+id)
	doc := map[string]any{"id": id, "name": name, "events": 0}
	if len(warnings) > 0 {
		doc["warnings"] = warnings
	}
	serveSendJSON(w, http.StatusCreated, doc)
}

// newTracker loads and checks a model (diags: its errors, as
// NAME:LINE:COL: error: MESSAGE) and makes its tracker (err: the model
// cannot be analysed).
func (s *serveState) newTracker(name string, src []byte) (tr *observe.Tracker, warnings, diags []string, err error) {
	lm, ds := lang.Load(name, src)
	for _, d := range ds {
		if d.Severity == lang.Warning {
			warnings = append(warnings, d.String())
		} else {
			diags = append(diags, d.String())
		}
	}
	if lm == nil {
		if diags == nil {
			diags = []string{name + ": error: the model does not load"}
		}
		return nil, warnings, diags, nil
	}
	tr, err = observe.NewTracker(s.base, lm, s.copt, s.mopt)
	return tr, warnings, nil, err
}

func (s *serveState) deleteModel(w http.ResponseWriter, r *http.Request) {
	if _, ok := serveQuery(w, r); !ok {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	m := s.models[id]
	delete(s.models, id)
	s.mu.Unlock()
	if m == nil {
		serveFail(w, http.StatusNotFound, "no model %q", id)
		return
	}
	m.mu.Lock()
	gone := filepath.Join(s.dir, ".deleted-"+id)
	err := os.Rename(m.dir, gone)
	if err == nil {
		err = serveSyncDir(s.dir)
	}
	if err != nil {
		m.mu.Unlock()
		s.mu.Lock()
		s.models[id] = m
		s.mu.Unlock()
		serveFail(w, http.StatusInternalServerError, "deleting the model's files: %v", err)
		return
	}
	m.deleted = true
	m.publish()
	m.mu.Unlock()
	if err := os.RemoveAll(gone); err != nil {
		s.logf("model %s: removing %s: %v (removed at the next start)", id, gone, err)
	}
	s.logf("model %s (%s): deleted", id, m.name)
	serveSendJSON(w, http.StatusOK, map[string]any{"deleted": id})
}

// serveEventWire is an event as posted: every field required.
type serveEventWire struct {
	Time    *float64 `json:"time"`
	Machine *string  `json:"machine"`
	Action  *string  `json:"action"`
}

// parseEvents reads one event or a list of them; any malformed event
// rejects the whole body.
func serveParseEvents(body []byte) ([]observe.Event, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New(`empty body: expected an event {"time", "machine", "action"} or a list of them`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var ws []serveEventWire
	var err error
	if trimmed[0] == '[' {
		err = dec.Decode(&ws)
	} else {
		var one serveEventWire
		err = dec.Decode(&one)
		ws = []serveEventWire{one}
	}
	if err != nil {
		return nil, fmt.Errorf(`malformed events (expected {"time": SECONDS, "machine": NAME, "action": NAME} or a list of them): %v`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed events: more after the JSON value")
	}
	out := make([]observe.Event, len(ws))
	for i, ew := range ws {
		where := fmt.Sprintf("event %d of %d", i+1, len(ws))
		switch {
		case ew.Time == nil:
			return nil, fmt.Errorf(`%s: missing "time"`, where)
		case ew.Machine == nil || *ew.Machine == "":
			return nil, fmt.Errorf(`%s: missing "machine"`, where)
		case ew.Action == nil || *ew.Action == "":
			return nil, fmt.Errorf(`%s: missing "action"`, where)
		}
		out[i] = observe.Event{Time: *ew.Time, Machine: *ew.Machine, Action: *ew.Action}
	}
	return out, nil
}

func (s *serveState) postEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := serveQuery(w, r); !ok {
		return
	}
	m := s.model(w, r)
	if m == nil {
		return
	}
	body, ok := serveReadBody(w, r, serveEventsLimit, "events")
	if !ok {
		return
	}
	evs, err := serveParseEvents(body)
	if err != nil {
		serveSendJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error() + "; none was taken", "taken": 0})
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleted {
		serveFail(w, http.StatusNotFound, "no model %q", m.id)
		return
	}
	if m.broken != nil {
		serveFail(w, http.StatusInternalServerError, "the model's tracker is lost: %v (restart the server)", m.broken)
		return
	}
	taken := 0
	var addErr error
	for _, ev := range evs {
		if addErr = m.tracker.Add(s.base, ev, ""); addErr != nil {
			break
		}
		taken++
	}
	if taken > 0 {
		if err := serveAppendEvents(filepath.Join(m.dir, serveEventsFile), evs[:taken]); err != nil {
			// The tracker is ahead of the disk: make it the record on
			// disk again.
			s.logf("model %s: saving %d events failed: %v", m.id, taken, err)
			if rerr := m.rebuild(s); rerr != nil {
				m.broken = rerr
				m.publish()
				s.logf("model %s: rebuilding its tracker failed: %v", m.id, rerr)
			}
			serveSendJSON(w, http.StatusInternalServerError, map[string]any{"error": fmt.Sprintf("saving the events: %v; none of this request's events was taken", err),
				"taken": 0, "events": len(m.events)})
			return
		}
		s.takeWarm(m, evs[:taken])
	}
	if addErr != nil {
		status := http.StatusBadRequest
		var ee *observe.EventError
		if !errors.As(addErr, &ee) {
			status = http.StatusInternalServerError
			if s.base.Err() != nil {
				status = http.StatusServiceUnavailable
			}
		}
		msg := addErr.Error()
		if len(evs) > 1 {
			msg = fmt.Sprintf("event %d of %d: %s; %s before it taken", taken+1, len(evs), msg, servePlural(taken, "event", "events"))
		}
		serveSendJSON(w, status, map[string]any{"error": msg, "taken": taken, "events": len(m.events)})
		return
	}
	serveSendJSON(w, http.StatusOK, map[string]any{"taken": taken, "events": len(m.events)})
}

// take records events the tracker has taken (and the disk holds); mu is
// held.
func (m *serveModel) take(evs []observe.Event) {
	m.events = append(m.events, evs...)
	m.gen++
	m.publish()
}

// takeWarm is take for events a request posted (mu held to write): the
// figures asked for the record before (the cache's, most recent first:
// at most serveWarm, started within serveWarmTime) are computed for the
// new record before it is published, the ones at the latest event's time
// moving to the new latest event's. Queries meanwhile are answered for
// the record before (the request taking the events is not answered yet),
// and a poll after the answer finds its figures ready.
func (s *serveState) takeWarm(m *serveModel, evs []observe.Event) {
	oldLast := m.snap.Load().last
	m.events = append(m.events, evs...)
	m.gen++
	newLast := m.events[len(m.events)-1].Time
	m.cacheMu.Lock()
	keys := append([]serveFigKey(nil), m.order...)
	m.cacheMu.Unlock()
	cache := map[serveFigKey]*serveFigEntry{}
	var order []serveFigKey
	start := time.Now()
	for i := len(keys) - 1; i >= 0 && len(order) < serveWarm && time.Since(start) < serveWarmTime; i-- {
		k := serveFigKey{gen: m.gen, beta: keys[i].beta, now: keys[i].now}
		if k.now == oldLast {
			k.now = newLast
		}
		if k.now < newLast || cache[k] != nil {
			continue
		}
		res, err := m.tracker.Figures(s.base, k.beta, k.now)
		if err != nil {
			continue // asked again, it fails then
		}
		res.Model = m.name
		e := &serveFigEntry{done: make(chan struct{}), res: res, now: k.now, gen: m.gen, n: len(m.events)}
		close(e.done)
		cache[k] = e
		order = append([]serveFigKey{k}, order...)
	}
	m.publishCache(cache, order)
}

// publish makes what mu guards (held to write) the snapshot queries see,
// and empties the cache.
func (m *serveModel) publish() { m.publishCache(map[serveFigKey]*serveFigEntry{}, nil) }

// publishCache is publish with the new record's cache.
func (m *serveModel) publishCache(cache map[serveFigKey]*serveFigEntry, order []serveFigKey) {
	sn := &serveSnap{gen: m.gen, n: len(m.events), deleted: m.deleted, broken: m.broken}
	if sn.n > 0 {
		sn.last = m.events[sn.n-1].Time
	}
	m.cacheMu.Lock()
	m.cache, m.order = cache, order
	m.cacheMu.Unlock()
	m.snap.Store(sn)
}

// rebuild makes the tracker anew from the events taken (mu is held).
func (m *serveModel) rebuild(s *serveState) error {
	tr, _, diags, err := s.newTracker(m.name, m.src)
	if diags != nil {
		return errors.New(strings.Join(diags, "; "))
	}
	if err != nil {
		return err
	}
	for _, ev := range m.events {
		if err := tr.Add(s.base, ev, ""); err != nil {
			return err
		}
	}
	m.tracker = tr
	m.gen++
	m.publish()
	return nil
}

func (s *serveState) getEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := serveQuery(w, r); !ok {
		return
	}
	m := s.model(w, r)
	if m == nil {
		return
	}
	m.mu.RLock()
	evs := append([]observe.Event{}, m.events...)
	m.mu.RUnlock()
	serveSendJSON(w, http.StatusOK, map[string]any{"id": m.id, "events": evs})
}

// figures are the model's figures for goal beta at now (nil: the latest
// event's time), computed once per record, beta and now and kept (the
// last serveCacheSize).
func (s *serveState) figures(ctx context.Context, m *serveModel, beta float64, now *float64) (*serveFigEntry, int, error) {
	for {
		// A query whose figures are cached takes no lock but the cache's.
		sn := m.snap.Load()
		switch {
		case sn.deleted:
			return nil, http.StatusNotFound, fmt.Errorf("no model %q", m.id)
		case sn.broken != nil:
			return nil, http.StatusInternalServerError, fmt.Errorf("the model's tracker is lost: %v (restart the server)", sn.broken)
		}
		t := sn.last
		if now != nil {
			t = *now
		}
		if t < sn.last {
			return nil, http.StatusBadRequest, fmt.Errorf("now=%g is before the record's latest event (%g)", t, sn.last)
		}
		key := serveFigKey{gen: sn.gen, beta: beta, now: t}
		m.cacheMu.Lock()
		e := m.cache[key]
		m.cacheMu.Unlock()
		if e == nil {
			m.mu.RLock()
			if m.gen != sn.gen || m.deleted || m.broken != nil {
				m.mu.RUnlock()
				continue // events were taken meanwhile
			}
			m.cacheMu.Lock()
			e = m.cache[key]
			owner := e == nil
			if owner {
				e = &serveFigEntry{done: make(chan struct{}), now: t, gen: sn.gen, n: sn.n}
				m.cache[key] = e
				m.order = append(m.order, key)
				if len(m.order) > serveCacheSize {
					delete(m.cache, m.order[0])
					m.order = m.order[1:]
				}
			}
			m.cacheMu.Unlock()
			if owner {
				e.res, e.err = m.tracker.Figures(s.base, beta, t)
				if e.err == nil {
					e.res.Model = m.name
				} else {
					m.cacheMu.Lock()
					if m.cache[key] == e {
						delete(m.cache, key)
					}
					m.cacheMu.Unlock()
				}
				close(e.done)
			}
			m.mu.RUnlock()
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, http.StatusServiceUnavailable, ctx.Err()
		}
		if e.err != nil {
			status := http.StatusBadRequest // the analysis cannot be done (the command line's exit 1)
			switch {
			case s.base.Err() != nil:
				status = http.StatusServiceUnavailable
			case errors.Is(e.err, membudget.ErrOverBudget):
				status = http.StatusServiceUnavailable
			}
			return nil, status, fmt.Errorf("%s: error: %v", m.name, e.err)
		}
		return e, http.StatusOK, nil
	}
}

// goalQuery reads a figures request: its query's beta= and now= (nil when
// not given) and its model; ok is false once an error has been answered.
func (s *serveState) goalQuery(w http.ResponseWriter, r *http.Request) (beta, now *float64, m *serveModel, ok bool) {
	q, ok := serveQuery(w, r, "beta", "now")
	if !ok {
		return nil, nil, nil, false
	}
	if beta, ok = serveSeconds(w, q, "beta", true); !ok {
		return nil, nil, nil, false
	}
	if now, ok = serveSeconds(w, q, "now", false); !ok {
		return nil, nil, nil, false
	}
	if m = s.model(w, r); m == nil {
		return nil, nil, nil, false
	}
	return beta, now, m, true
}

func (s *serveState) robustness(w http.ResponseWriter, r *http.Request) {
	beta, now, m, ok := s.goalQuery(w, r)
	if !ok {
		return
	}
	if beta == nil {
		serveFail(w, http.StatusBadRequest, "beta= is required: the makespan goal in seconds")
		return
	}
	e, status, err := s.figures(r.Context(), m, *beta, now)
	if err != nil {
		serveFail(w, status, "%v", err)
		return
	}
	e.jsonOnce.Do(func() {
		// What 'pepa robustness --format json' prints for one model
		// (robustnessCmd.document).
		var b bytes.Buffer
		e.jsonErr = writeJSON(&b, resultJSON(&models.Ranked{Result: e.res, Rank: 1}, false))
		e.json = b.Bytes()
	})
	if e.jsonErr != nil {
		serveFail(w, http.StatusInternalServerError, "encoding the figures: %v", e.jsonErr)
		return
	}
	w.Header().Set("X-Pepa-Events", strconv.Itoa(e.n))
	w.Header().Set("X-Pepa-Now", fmtFloat(e.now))
	serveSendBytes(w, http.StatusOK, e.json)
}

// serveCDFDoc is the page's view of a model: the figures and every machine's
// conditional CDF on an absolute time axis (seconds since the batch
// started, as the events' times).
type serveCDFDoc struct {
	ID               string            `json:"id"`
	Model            string            `json:"model"`
	Beta             float64           `json:"beta"`
	BetaDefault      bool              `json:"beta_default"` // beta was not given: E[makespan] rounded up
	Now              float64           `json:"now"`
	Events           int               `json:"events"`
	Robustness       any               `json:"robustness"`
	PAllByBeta       any               `json:"p_all_by_beta"`
	ExpectedMakespan any               `json:"expected_makespan"`
	TMax             float64           `json:"t_max"`
	Machines         []serveCDFMachine `json:"machines"`
}

// serveCDFMachine is one machine's curve: P(F <= t | record) at times t (0
// before now for a running machine, a step at its time for a finished
// one); empty when it was not computed (Note says why).
type serveCDFMachine struct {
	Name       string       `json:"name"`
	PByBeta    any          `json:"p_by_beta"`
	Mean       any          `json:"mean"`
	Q99        any          `json:"q99"`
	FinishedAt any          `json:"finished_at"`
	Bottleneck bool         `json:"bottleneck"`
	Note       string       `json:"note,omitempty"`
	Points     [][2]float64 `json:"points"`
}

func (s *serveState) cdf(w http.ResponseWriter, r *http.Request) {
	beta, now, m, ok := s.goalQuery(w, r)
	if !ok {
		return
	}
	defaulted := beta == nil
	if defaulted {
		// The goal by default: the expected makespan given the record
		// (which any goal's figures have), rounded up.
		e, status, err := s.figures(r.Context(), m, 1, now)
		if err != nil {
			serveFail(w, status, "%v", err)
			return
		}
		b := serveDefaultBeta(e.res.ExpectedMakespan, e.now)
		beta = &b
	}
	e, status, err := s.figures(r.Context(), m, *beta, now)
	if err != nil {
		serveFail(w, status, "%v", err)
		return
	}
	e.cdfOnce.Do(func() { e.cdf, e.cdfErr = serveCDFOf(m.id, e) })
	if e.cdfErr != nil {
		serveFail(w, http.StatusInternalServerError, "sampling the CDFs: %v", e.cdfErr)
		return
	}
	doc := *e.cdf
	doc.BetaDefault = defaulted
	serveSendJSON(w, http.StatusOK, &doc)
}

// defaultBeta is x rounded up to two significant digits (past now).
func serveDefaultBeta(x, now float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		x = now + 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-1)
	b := math.Ceil(x/p) * p
	if b = math.Round(b*1e9) / 1e9; b <= 0 {
		b = 1
	}
	return b
}

// serveCDFOf samples every machine's conditional CDF. A running machine's
// distribution counts from now (observe.Tracker.Figures); its points are
// put on the absolute axis.
func serveCDFOf(id string, e *serveFigEntry) (*serveCDFDoc, error) {
	r := e.res
	doc := &serveCDFDoc{ID: id, Model: r.Model, Beta: r.Beta, Now: e.now, Events: e.n, Robustness: jsonFloat(r.Robustness),
		PAllByBeta: jsonFloat(r.PAllByBeta), ExpectedMakespan: jsonFloat(r.ExpectedMakespan)}
	tmax := math.Max(r.Beta*1.25, e.now*1.05)
	finished := make([]float64, len(r.Machines))
	bottleneck := -1
	for i := range r.Machines {
		mr := &r.Machines[i]
		finished[i] = math.NaN()
		if v, err := mr.CDF(0); err == nil && math.IsNaN(v) && mr.Mean == mr.Quantile && mr.Mean <= e.now {
			finished[i] = mr.Mean // finished at its recorded time
		}
		for _, x := range []float64{mr.Quantile, finished[i]} {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				tmax = math.Max(tmax, x*1.05)
			}
		}
		if !math.IsNaN(mr.PByBeta) && (bottleneck < 0 || mr.PByBeta < r.Machines[bottleneck].PByBeta) {
			bottleneck = i
		}
	}
	doc.TMax = tmax
	for i := range r.Machines {
		mr := &r.Machines[i]
		cm := serveCDFMachine{Name: mr.Name, PByBeta: jsonFloat(mr.PByBeta), Mean: jsonFloat(mr.Mean), Q99: jsonFloat(mr.Quantile),
			FinishedAt: jsonFloat(finished[i]), Bottleneck: i == bottleneck, Note: mr.Note, Points: [][2]float64{}}
		switch at := finished[i]; {
		case !math.IsNaN(at):
			cm.Points = append(cm.Points, [2]float64{0, 0}, [2]float64{at, 0}, [2]float64{at, 1}, [2]float64{tmax, 1})
		default:
			if v, err := mr.CDF(0); err != nil || math.IsNaN(v) {
				break // not computed (the note says why)
			}
			if e.now > 0 {
				cm.Points = append(cm.Points, [2]float64{0, 0})
			}
			for k := 0; k <= serveCDFPoints; k++ {
				t := e.now + (tmax-e.now)*float64(k)/serveCDFPoints
				v, err := mr.CDF(t - e.now)
				if err != nil {
					break // past the horizon the series was computed for
				}
				cm.Points = append(cm.Points, [2]float64{t, v})
			}
		}
		doc.Machines = append(doc.Machines, cm)
	}
	return doc, nil
}

// --- persistence ----------------------------------------------------

// syncDir fsyncs a directory, so that the entries made or renamed in it
// survive a crash.
func serveSyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeFileDurable writes a file atomically and durably: a temporary file
// beside it, fsynced, renamed over it, the directory fsynced.
func serveWriteFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return serveSyncDir(dir)
}

// serveMeta is a model's meta.json.
type serveMeta struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// persistNew writes a new model's directory: built as .new-ID (its files
// each written durably, an empty events.jsonl), renamed to ID, the state
// directory fsynced.
func (s *serveState) persistNew(m *serveModel) (err error) {
	tmp := filepath.Join(s.dir, ".new-"+m.id)
	if err = os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	meta, err := json.MarshalIndent(serveMeta{ID: m.id, Name: m.name, Created: m.created}, "", "  ")
	if err != nil {
		return err
	}
	if err = serveWriteFile(filepath.Join(tmp, serveModelFile), m.src); err != nil {
		return err
	}
	if err = serveWriteFile(filepath.Join(tmp, serveMetaFile), append(meta, '\n')); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(tmp, serveEventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = serveSyncDir(tmp); err != nil {
		return err
	}
	if err = os.Rename(tmp, m.dir); err != nil {
		return err
	}
	return serveSyncDir(s.dir)
}

// appendEvents appends events to a record file, one JSON object a line,
// in one write, and fsyncs it; on failure the file is cut back to where it
// was.
func serveAppendEvents(path string, evs []observe.Event) error {
	var b bytes.Buffer
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if _, err = f.Write(b.Bytes()); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Truncate(st.Size())
		f.Sync()
		f.Close()
		return err
	}
	return f.Close()
}

// readEvents reads a record file: the complete lines' events, and the
// length of a torn last line (bytes after the last newline).
func serveReadEvents(path string) ([]observe.Event, int64, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	torn := len(data) - end
	var out []observe.Event
	sc := bufio.NewScanner(bytes.NewReader(data[:end]))
	sc.Buffer(make([]byte, 0, 64<<10), serveEventsLimit+1)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if text[0] != '{' {
			return nil, 0, 0, fmt.Errorf("%s:%d: not an event object", path, line)
		}
		evs, err := serveParseEvents(text)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		evs[0].Line = line
		out = append(out, evs[0])
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %v", path, err)
	}
	return out, int64(end), torn, nil
}

// load reloads the state directory: every model, its events replayed.
// Leftovers of interrupted creations and deletions are removed; a torn
// last event line is dropped (the file is cut back to its last complete
// line) with a log line. Anything else that does not load stops the
// start, naming the file, rather than serving without it.
func (s *serveState) load(ctx context.Context) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	start := time.Now()
	events := 0
	for _, ent := range entries {
		name := ent.Name()
		path := filepath.Join(s.dir, name)
		switch {
		case !ent.IsDir():
			continue
		case strings.HasPrefix(name, ".new-") || strings.HasPrefix(name, ".deleted-"):
			s.logf("removing %s, left by an interrupted creation or deletion", path)
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			continue
		case !serveValidID(name):
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m, err := s.loadModel(path, name)
		if err != nil {
			return fmt.Errorf("%v\n(the server does not start without a model it holds: move %s out of --state-dir to start without it)", err, path)
		}
		s.models[name] = m
		events += len(m.events)
	}
	if len(s.models) > 0 {
		s.logf("loaded %s and %s from %s in %s", servePlural(len(s.models), "model", "models"), servePlural(events, "event", "events"), s.dir, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// loadModel loads one model's directory and replays its record.
func (s *serveState) loadModel(dir, id string) (*serveModel, error) {
	src, err := os.ReadFile(filepath.Join(dir, serveModelFile))
	if err != nil {
		return nil, err
	}
	var meta serveMeta
	b, err := os.ReadFile(filepath.Join(dir, serveMetaFile))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, serveMetaFile), err)
	}
	if meta.ID != id || serveValidName(meta.Name) != nil {
		return nil, fmt.Errorf("%s: id or name not valid", filepath.Join(dir, serveMetaFile))
	}
	m := &serveModel{id: id, name: meta.Name, created: meta.Created, dir: dir, src: src, cache: map[serveFigKey]*serveFigEntry{}}
	tr, _, diags, err := s.newTracker(meta.Name, src)
	if diags != nil {
		return nil, fmt.Errorf("%s: the model does not load: %s", filepath.Join(dir, serveModelFile), strings.Join(diags, "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", filepath.Join(dir, serveModelFile), meta.Name, err)
	}
	m.tracker = tr
	path := filepath.Join(dir, serveEventsFile)
	evs, end, torn, err := serveReadEvents(path)
	if err != nil {
		return nil, err
	}
	if torn > 0 {
		s.logf("model %s (%s): %s: ignoring a torn last line (%d bytes, never acknowledged: a crash in the middle of an append)", id, meta.Name, path, torn)
		if err := serveTruncate(path, end); err != nil {
			return nil, err
		}
	}
	for _, ev := range evs {
		if err := tr.Add(s.base, ev, path); err != nil {
			return nil, err
		}
	}
	m.take(evs)
	return m, nil
}

// truncateDurable cuts a file to size and fsyncs it.
func serveTruncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
