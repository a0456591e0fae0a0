// Package serve is 'pepa serve': robustness figures from observed progress
// (semantics.md section 6) over HTTP, for a controller that posts a
// running batch's models and completions, and a page for people. The verb
// in cmd/pepa parses its flags and makes one call, Run: it reads the token
// (ReadToken), opens the Server (Open), listens and serves (Serve); a
// SetupError names the setting at fault (the token file, the address).
//
// What is in it: the handlers and their checks of every input (http.go,
// events.go: JSON keys exactly as documented, numbers strictly decimal and
// within [0, MaxSeconds]); the registry of models, each with its tracker
// (models/observe) and its record (models.go); the durable record on disk
// (record.go, lock.go); the figures' cache, computed once per record, goal
// and time for every request asking (figures.go); the page (page.go).
//
// API (JSON; every request but GET /v1/health and the page's own files
// needs "Authorization: Bearer TOKEN"):
//
//	GET    /v1/health                        {"status": "ok", "models": N}; 503 {"status": "failing", "error"} after a failed write
//	POST   /v1/models[?name=NAME]            body: the model's text -> 201 {"id", "name", "events", "warnings"?}
//	GET    /v1/models                        {"models": [{"id", "name", "events", "last_event_time", "created"}]}
//	GET    /v1/models/{id}                   one of those
//	DELETE /v1/models/{id}                   {"deleted": ID}
//	POST   /v1/models/{id}/events            body: {"time", "machine", "action"} or a list -> {"taken", "events"}
//	                                         (header Idempotency-Key: a retry gets the first answer)
//	GET    /v1/models/{id}/events            {"events": [...]}, the record taken so far
//	GET    /v1/models/{id}/robustness?beta=B[&now=T]
//	       exactly what 'pepa robustness --format json --beta B --observed
//	       RECORD --now T' prints (T: the latest event's time by default)
//	GET    /v1/models/{id}/cdf[?beta=B][&now=T]
//	       every machine's conditional finishing-time CDF, for the page
//
// Invariants:
//
//   - What is acknowledged is on disk: a model's directory is complete and
//     fsynced, and a request's events are appended and fsynced, before the
//     answer; a restart replays them.
//   - A batch is whole or absent: the events one request takes are one
//     line of the record, written in one append; a line a crash cut (no
//     newline) was never acknowledged and is dropped whole on replay. The
//     tracker takes a request's events on a snapshot that replaces it only
//     once the line is on disk.
//   - One server per state directory: an exclusive flock on DIR/serve.lock,
//     which names the holder's pid; a directory the server cannot write
//     (probed at start: a file created, synced and removed) is refused.
//   - Every request ends by its deadline (Config.RequestTimeout): its
//     work runs under a context that ends then or when its client goes
//     away, and is answered 503 with why. Figures are computed on a frozen
//     snapshot of the record, never under the lock that events take, so a
//     long computation delays neither events nor the queries the cache
//     answers; a computation no request waits for any more is stopped.
//   - A retry is safe: a request with an Idempotency-Key that took events
//     keeps its key, its body's SHA-256 and its answer in its record line;
//     the same key and body get that answer again (after a restart too),
//     the same key with another body 422.
package serve
