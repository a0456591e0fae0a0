package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"pepa/cmd/pepa/internal/render"
)

// Handler routes the API, the page and its files.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/health", s.methods(map[string]http.HandlerFunc{"GET": s.health}))
	mux.HandleFunc("/v1/models", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.listModels, "POST": s.createModel})))
	mux.HandleFunc("/v1/models/{id}", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.getModel, "DELETE": s.deleteModel})))
	mux.HandleFunc("/v1/models/{id}/events", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.getEvents, "POST": s.postEvents})))
	mux.HandleFunc("/v1/models/{id}/robustness", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.robustness})))
	mux.HandleFunc("/v1/models/{id}/cdf", s.authed(s.methods(map[string]http.HandlerFunc{"GET": s.cdf})))
	mux.HandleFunc("/{$}", s.methods(map[string]http.HandlerFunc{"GET": pageHandler("text/html; charset=utf-8", pageHTML)}))
	mux.HandleFunc("/serve.js", s.methods(map[string]http.HandlerFunc{"GET": pageHandler("text/javascript; charset=utf-8", pageJS)}))
	mux.HandleFunc("/serve.css", s.methods(map[string]http.HandlerFunc{"GET": pageHandler("text/css; charset=utf-8", pageCSS)}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "no such path %s (the API is under /v1/)", r.URL.Path)
	})
	return s.logged(s.deadline(mux))
}

// deadline gives every request its context: the server's (the memory
// budget), ending at the request's deadline, when its client goes away,
// or when the server is closed.
func (s *Server) deadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(s.base, s.timeout)
		defer cancel()
		stop := context.AfterFunc(r.Context(), cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// ended answers a request whose work its context stopped: 503, saying
// why (a client gone does not read it; the log does).
func (s *Server) ended(w http.ResponseWriter, ctx context.Context, what string, extra map[string]any) {
	msg := fmt.Sprintf("%s: stopped", what)
	switch {
	case s.base.Err() != nil:
		msg = fmt.Sprintf("%s: the server is stopping", what)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("%s did not finish within the request deadline (%s, --request-timeout): stopped", what, s.timeout)
	case ctx.Err() != nil:
		msg = fmt.Sprintf("%s: the client went away: stopped", what)
	}
	doc := map[string]any{"error": msg}
	for k, v := range extra {
		doc[k] = v
	}
	sendJSON(w, http.StatusServiceUnavailable, doc)
}

// stopped reports whether err is the end of a request's or the server's
// context rather than a failure of the work itself.
func stopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// methods dispatches on the method (HEAD as GET), 405 otherwise.
func (s *Server) methods(by map[string]http.HandlerFunc) http.HandlerFunc {
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
			fail(w, http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)
			return
		}
		h(w, r)
	}
}

// authed checks the bearer token (in constant time: both sides hashed
// first, so that neither the token nor its length leaks by timing).
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
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
			fail(w, http.StatusUnauthorized, "missing or wrong token: send the header \"Authorization: Bearer TOKEN\", TOKEN the content of the server's --token-file")
			return
		}
		h(w, r)
	}
}

// statusWriter remembers the status sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// logged logs every request that changes something, and every failure
// (the page's and controllers' polls that succeed are not logged).
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		if r.Method != "GET" && r.Method != "HEAD" || sw.status >= 400 {
			s.logf("%s %s %d (%s, %s)", r.Method, r.URL.Path, sw.status, time.Since(start).Round(time.Microsecond), r.RemoteAddr)
		}
	})
}

func pageHandler(contentType, body string) http.HandlerFunc {
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
func sendJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	if err := render.WriteJSON(&b, v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		render.WriteJSON(&b, map[string]any{"error": "encoding the answer: " + err.Error()})
	}
	sendBytes(w, status, b.Bytes())
}

// sendCompact writes a compact JSON document as sendJSON would have
// written it (an answer kept in the record).
func sendCompact(w http.ResponseWriter, status int, compact []byte) {
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		fail(w, http.StatusInternalServerError, "the answer kept is not JSON: %v", err)
		return
	}
	b.WriteByte('\n')
	sendBytes(w, status, b.Bytes())
}

func sendBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}

// fail answers {"error": MESSAGE}.
func fail(w http.ResponseWriter, status int, format string, args ...any) {
	sendJSON(w, status, map[string]any{"error": fmt.Sprintf(format, args...)})
}

// readBody reads a body of at most limit bytes; a larger one is answered
// 413, one the deadline cuts 503 (ok false).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, bool) {
	if r.ContentLength > limit {
		fail(w, http.StatusRequestEntityTooLarge, "%s of %d bytes: the limit is %d bytes", what, r.ContentLength, limit)
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			fail(w, http.StatusRequestEntityTooLarge, "%s over the limit of %d bytes", what, limit)
		case r.Context().Err() != nil:
			s.ended(w, r.Context(), "reading the "+what, nil)
		default:
			fail(w, http.StatusBadRequest, "reading the body: %v", err)
		}
		return nil, false
	}
	return b, true
}

// query parses the query string strictly (a malformed one is 400).
func query(w http.ResponseWriter, r *http.Request, allowed ...string) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, http.StatusBadRequest, "malformed query string: %v", err)
		return nil, false
	}
	for k, v := range q {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			if len(allowed) == 0 {
				fail(w, http.StatusBadRequest, "unknown query parameter %q (none is taken here)", k)
			} else {
				fail(w, http.StatusBadRequest, "unknown query parameter %q (taken: %s)", k, strings.Join(allowed, ", "))
			}
			return nil, false
		}
		if len(v) > 1 {
			fail(w, http.StatusBadRequest, "query parameter %q given %d times", k, len(v))
			return nil, false
		}
	}
	return q, true
}

// decimal is a number as the API takes it: decimal digits with an
// optional sign, fraction and exponent (as JSON writes numbers; no
// underscores, hexadecimal, inf or nan, which strconv.ParseFloat would
// take).
var decimal = regexp.MustCompile(`^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseSeconds reads a number of seconds written as decimal allows, in
// [0, MaxSeconds] (above 0 if positive).
func parseSeconds(text string, positive bool) (float64, error) {
	want := fmt.Sprintf("a number of seconds in [0, %g]", MaxSeconds)
	if positive {
		want = fmt.Sprintf("a number of seconds in (0, %g]", MaxSeconds)
	}
	if !decimal.MatchString(text) {
		return 0, fmt.Errorf("expected %s, written in decimal (digits, an optional fraction and exponent)", want)
	}
	x, err := strconv.ParseFloat(text, 64)
	if err != nil || x < 0 || x > MaxSeconds || positive && x == 0 {
		return 0, fmt.Errorf("out of range: expected %s", want)
	}
	return x, nil
}

// seconds reads query parameter name as seconds (nil when absent).
func seconds(w http.ResponseWriter, q url.Values, name string, positive bool) (*float64, bool) {
	v, ok := q[name]
	if !ok {
		return nil, true
	}
	x, err := parseSeconds(v[0], positive)
	if err != nil {
		fail(w, http.StatusBadRequest, "%s=%q: %v", name, v[0], err)
		return nil, false
	}
	return &x, true
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	n := len(s.models)
	s.mu.RUnlock()
	if msg := s.writeFailure.Load(); msg != nil {
		sendJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "failing", "models": n,
			"error": "the last write to the state directory failed (nothing was acknowledged by it): " + *msg})
		return
	}
	sendJSON(w, http.StatusOK, map[string]any{"status": "ok", "models": n})
}
