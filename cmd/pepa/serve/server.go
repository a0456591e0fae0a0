package serve

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pepa/cmd/pepa/internal/atomicfile"
	"pepa/ctmc"
	"pepa/models"
	"pepa/passage"
)

// Limits and defaults of the service.
const (
	modelLimit  = 8 << 20 // bytes of a model's text
	eventsLimit = 1 << 20 // bytes of one request's events
	nameLimit   = 256     // bytes of a model's name
	keyLimit    = 128     // bytes of an Idempotency-Key
	cacheSize   = 32      // figures kept per model (per record, goal and now)
	warmMax     = 4       // figures computed ahead for a new record: the goals asked last
	cdfPoints   = 160     // CDF samples per machine for the page

	// MaxSeconds is the largest time, now or goal taken (about 32 years):
	// beyond it no batch runs, and the filter's work grows with it.
	MaxSeconds = 1e9
	// MinTokenBytes is the shortest token taken.
	MinTokenBytes = 16
	// DefaultRequestTimeout is a request's deadline unless configured.
	DefaultRequestTimeout = 30 * time.Second
	// ShutdownGrace is how long a stop waits for the requests in progress
	// before it cuts them (their clients see the connection close; what
	// was acknowledged is on disk).
	ShutdownGrace = 10 * time.Second
)

// Config is what a server is made of.
type Config struct {
	Dir            string        // the state directory (created when missing)
	Token          string        // the bearer token, at least MinTokenBytes
	MaxStates      int           // refuse models whose groups have more states (0: no bound)
	RequestTimeout time.Duration // every request's deadline (0: DefaultRequestTimeout)
	// Transient is the transient engine of the filter and the figures
	// ("" or "auto", "uniformization", "laplace": passage's engines).
	Transient string
	Logf      func(format string, args ...any)

	// Test hooks: afterAppend runs when a request's events are on disk
	// (and taken), before it is answered; computed when a figures
	// computation ends.
	afterAppend func(modelID string)
	computed    func(err error)
}

// Server is 'pepa serve' on one state directory.
type Server struct {
	dir      string
	tokenSum [32]byte
	copt     ctmc.Options
	mopt     models.Options
	logf     func(format string, args ...any)
	timeout  time.Duration
	// base carries the memory budget; every computation runs under a
	// context derived from it. It ends when the server is closed.
	base   context.Context
	cancel context.CancelFunc
	lock   *os.File // DIR/serve.lock, flocked while the server lives

	afterAppend func(modelID string)
	computed    func(err error)

	mu     sync.RWMutex
	models map[string]*model

	// writeFailure is the last failed write to the state directory (nil
	// once a write succeeds again): health is not ok meanwhile.
	writeFailure atomic.Pointer[string]
}

// Open takes the state directory (created when missing): it refuses one
// it cannot write, or one another server holds, then reloads every model
// and replays its record.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if len(cfg.Token) < MinTokenBytes {
		return nil, fmt.Errorf("the token has %d bytes: at least %d are needed", len(cfg.Token), MinTokenBytes)
	}
	if cfg.Dir == "" {
		return nil, errors.New("no state directory")
	}
	if err := passage.CheckEngine(cfg.Transient); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := probeWritable(cfg.Dir); err != nil {
		return nil, fmt.Errorf("state directory %s is not writable (%w): the server could acknowledge nothing", cfg.Dir, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{dir: cfg.Dir, tokenSum: sha256.Sum256([]byte(cfg.Token)), logf: cfg.Logf, timeout: cfg.RequestTimeout,
		base: base, cancel: cancel, lock: lock, afterAppend: cfg.afterAppend, computed: cfg.computed,
		copt: ctmc.Options{Aggregate: true, MaxStates: cfg.MaxStates},
		mopt: models.Options{Question: models.Question{Epsilon: 1e-10, Transient: transientOr(cfg.Transient)},
			MaxGroupStates: cfg.MaxStates},
		models: map[string]*model{}}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	if err := s.load(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close stops every computation and releases the state directory.
func (s *Server) Close() {
	s.cancel()
	if s.lock != nil {
		unlockDir(s.lock)
		s.lock = nil
	}
}

// probeWritable creates, writes, syncs and removes a file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString("probe\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	return err
}

// Serve answers on ln until ctx ends, then shuts down: the requests in
// progress are given ShutdownGrace to finish, and cut after.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		// A request's body is read, and its answer written, within its
		// deadline (and a little more for the answer saying it passed).
		ReadTimeout: s.timeout, WriteTimeout: s.timeout + 5*time.Second,
		IdleTimeout: 2 * time.Minute, ErrorLog: log.New(&logAdapter{s.logf}, "", 0)}
	s.mu.RLock()
	n := len(s.models)
	s.mu.RUnlock()
	s.logf("listening on http://%s/ (%s, state in %s, request deadline %s)", ln.Addr(), plural(n, "model", "models"), s.dir, s.timeout)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.logf("stopping: finishing the requests in progress (for at most %s)", ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.cancel()
	if err != nil {
		hs.Close()
		s.logf("stopped (requests still running after %s were cut: %v)", ShutdownGrace, err)
		return nil
	}
	s.logf("stopped")
	return nil
}

// NewLogger writes "pepa serve: TIME MESSAGE" lines, one at a time.
func NewLogger(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		line := fmt.Sprintf("pepa serve: %s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), fmt.Sprintf(format, args...))
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, line)
	}
}

// logAdapter sends net/http's own messages to the log.
type logAdapter struct{ logf func(string, ...any) }

func (l *logAdapter) Write(p []byte) (int, error) {
	l.logf("http: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// wrote records the outcome of a write to the state directory, for
// health.
func (s *Server) wrote(err error) {
	if err == nil {
		s.writeFailure.Store(nil)
		return
	}
	msg := err.Error()
	s.writeFailure.Store(&msg)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// transientOr is the engine asked, "auto" by default.
func transientOr(engine string) string {
	if engine == "" {
		return "auto"
	}
	return engine
}
