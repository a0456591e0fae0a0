package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"pepa/cmd/pepa/serve"
)

// 'pepa serve': the flags, then package serve (which has the service).

const serveExamples = `  pepa serve --listen 127.0.0.1:0 --token-file serve.token --state-dir serve-state & sleep 2; kill $!; wait $!
        serve on a free loopback port (the log names it) for 2 s, then stop (SIGTERM: the
        requests in progress are given 10 s to finish); serve.token is created with a random
        token when missing, and serve-state keeps the models and their events across restarts
`

const serveHelp = `serve answers a controller's questions about running batches: POST a mapping's
model, POST its machines' completions as they happen, GET its robustness figures
conditioned on them (what 'pepa robustness --format json' prints). Every request
but GET /v1/health and the page needs the header "Authorization: Bearer TOKEN",
TOKEN the content of --token-file, trimmed, at least 16 bytes (created with a
random token, mode 0600, when the file does not exist; a file others can read or
write is warned about).

  POST   /v1/models[?name=NAME]              the model's text -> 201 {"id", "name", "events"}
  GET    /v1/models                          {"models": [{"id", "name", "events", ...}]}
  GET    /v1/models/ID                       one model
  DELETE /v1/models/ID                       forget it (and its files)
  POST   /v1/models/ID/events                {"time", "machine", "action"} or a list -> {"taken", "events"}
  GET    /v1/models/ID/events                the record so far
  GET    /v1/models/ID/robustness?beta=B[&now=T]  figures at now = T (default: the latest event's time)
  GET    /v1/models/ID/cdf[?beta=B][&now=T]  each machine's conditional CDF, sampled (beta default: E[makespan])
  GET    /v1/health                          {"status": "ok", "models": N}, no token needed (503 after a failed write)
  GET    /                                   the page: every model's CDFs, updated every 2 s

Events are taken in order: a request with a malformed event takes none; at the
first event that cannot be taken (out of time order, unknown machine or action,
impossible given the record) it stops with 400 and "taken", the number taken
before it, which stay taken. An event's keys are exactly "time", "machine" and
"action"; times, beta= and now= are decimal numbers of seconds in [0, 1e9]. A
request with the header "Idempotency-Key: KEY" can be retried safely: the same
key and body get the first answer again (after a restart too), the same key with
another body 422. Errors are {"error": MESSAGE}: 400 bad input (a model's
diagnostics as NAME:LINE:COL: error: MESSAGE), 401 no or wrong token, 404 unknown
model, 405 wrong method, 413 a body over 8 MiB (model) or 1 MiB (events), 503 a
request past its deadline (--request-timeout; its work is stopped, as when its
client goes away). A model or a request's events answered are on disk (fsynced,
the events of one request as one line: whole or absent after a crash) in
--state-dir before the answer; a restart reloads every model and replays its
events. One server per --state-dir (a second one refuses to start, naming the
first's pid); a directory the server cannot write is refused. The page keeps the
token in the tab's sessionStorage and sends it in the header, never in a URL (open
/#token=TOKEN&beta=45 to pass it: the fragment is not sent, and is removed once
read). SIGINT or SIGTERM stops the server: the requests in progress are given 10 s
to finish, then cut (their clients see the connection close; what was answered is
on disk). With the server on 127.0.0.1:8321:

  T=$(cat serve.token)
  curl -H "Authorization: Bearer $T" --data-binary @testdata/mapping-a.pepa 'http://127.0.0.1:8321/v1/models?name=mapping-a'
  curl -H "Authorization: Bearer $T" -H "Idempotency-Key: M1-1" -d '{"time": 3.5, "machine": "M1", "action": "compute1"}' http://127.0.0.1:8321/v1/models/ID/events
  curl -H "Authorization: Bearer $T" 'http://127.0.0.1:8321/v1/models/ID/robustness?beta=45'
`

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "serve", "serve --listen ADDR --token-file FILE --state-dir DIR [flags]", serveExamples)
	listen := fs.String("listen", "127.0.0.1:8321", "serve HTTP on `ADDR` (host:port; port 0 picks a free one)")
	tokenFile := fs.String("token-file", "", "the bearer token every request needs is this `FILE`'s content, trimmed, at least 16 bytes (created with a random token when missing; required)")
	stateDir := fs.String("state-dir", "", "keep the models and their events in `DIR` (created when missing; required)")
	maxStates := fs.Int("max-states", 0, "refuse models whose groups have more than `N` states (0: the memory budget / 160 bytes a state)")
	transient := fs.String("transient", "auto", "transient `ENGINE` of the filter and the figures: auto, uniformization or laplace (as robustness's)")
	timeout := fs.Duration("request-timeout", serve.DefaultRequestTimeout, "every request's deadline (`DURATION`, e.g. 30s): past it, its work is stopped and it is answered 503")
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
	c.require(*timeout > 0 && *timeout <= 24*time.Hour, "--request-timeout must be positive and at most 24h")
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
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := serve.Run(ctx, serve.RunConfig{TokenFile: *tokenFile, Listen: *listen,
		Config: serve.Config{Dir: *stateDir, MaxStates: *maxStates, RequestTimeout: *timeout, Transient: *transient, Logf: serve.NewLogger(e.stderr)}})
	var se *serve.SetupError
	switch {
	case errors.As(err, &se):
		return usageError(e, "serve", "--%s: %v", se.Setting, se.Err)
	case err != nil && ctx.Err() != nil:
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(e.stderr, "pepa serve: %v\n", err)
		return exitInvalid
	}
	return exitOK
}
