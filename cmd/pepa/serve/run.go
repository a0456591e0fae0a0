package serve

import (
	"context"
	"net"
)

// RunConfig is what pepa serve runs: the server's Config, its token read
// from TokenFile (created with a random token when missing) and the
// address it listens on.
type RunConfig struct {
	Config
	TokenFile string
	Listen    string // host:port; port 0 picks a free one
}

// SetupError is a fault of what the caller named, not of the server: the
// token file (Setting "token-file") or the address (Setting "listen").
type SetupError struct {
	Setting string
	Err     error
}

func (e *SetupError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Run reads the token (saying on Logf when it created the file, and what
// is wrong with its mode), opens the server on its state directory,
// listens and serves until ctx ends, then shuts down (Serve).
func Run(ctx context.Context, rc RunConfig) error {
	logf := rc.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	token, created, warnings, err := ReadToken(rc.TokenFile)
	if err != nil {
		return &SetupError{Setting: "token-file", Err: err}
	}
	if created {
		logf("created %s with a new random token (mode 0600)", rc.TokenFile)
	}
	for _, w := range warnings {
		logf("%s", w)
	}
	cfg := rc.Config
	cfg.Token = token
	s, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", rc.Listen)
	if err != nil {
		return &SetupError{Setting: "listen", Err: err}
	}
	return s.Serve(ctx, ln)
}
