package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"pepa/models/observe"
)

// parseEvents reads one event or a list of them, strictly: an object's
// keys are exactly "time", "machine" and "action" (encoding/json would
// match "Time" too, and keep the last of two), each once; the time a
// JSON number in [0, MaxSeconds]; the names non-empty strings. Any
// malformed event rejects the whole body.
func parseEvents(body []byte) ([]observe.Event, error) {
	const shape = `expected {"time": SECONDS, "machine": NAME, "action": NAME} or a list of them`
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("empty body: %s", shape)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	malformed := func(err error) error {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("malformed events (%s): %v", shape, err)
	}
	var out []observe.Event
	list := trimmed[0] == '['
	if list {
		if _, err := dec.Token(); err != nil {
			return nil, malformed(err)
		}
	}
	for !list || dec.More() {
		ev, err := parseEvent(dec, malformed)
		if err != nil {
			if list {
				return nil, fmt.Errorf("event %d: %w", len(out)+1, err)
			}
			return nil, err
		}
		out = append(out, ev)
		if !list {
			break
		}
	}
	if list {
		if _, err := dec.Token(); err != nil { // ]
			return nil, malformed(err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed events: more after the JSON value")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("an empty list: %s", shape)
	}
	return out, nil
}

// parseEvent reads one event object from dec.
func parseEvent(dec *json.Decoder, malformed func(error) error) (observe.Event, error) {
	var ev observe.Event
	tok, err := dec.Token()
	if err != nil {
		return ev, malformed(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return ev, malformed(fmt.Errorf("%v where an event object was expected", tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ev, malformed(err)
		}
		key := tok.(string) // object keys are strings
		if seen[key] {
			return ev, fmt.Errorf("%q given twice", key)
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return ev, malformed(err)
		}
		switch key {
		case "time":
			n, ok := tok.(json.Number)
			if !ok {
				return ev, malformed(fmt.Errorf(`"time" is %s, not a number`, tokenKind(tok)))
			}
			if ev.Time, err = parseSeconds(n.String(), false); err != nil {
				return ev, fmt.Errorf("time %s: %v", n, err)
			}
		case "machine", "action":
			str, ok := tok.(string)
			if !ok {
				return ev, malformed(fmt.Errorf("%q is %s, not a string", key, tokenKind(tok)))
			}
			if key == "machine" {
				ev.Machine = str
			} else {
				ev.Action = str
			}
		default:
			return ev, fmt.Errorf("unknown field %q (the fields are \"time\", \"machine\" and \"action\", in lower case)", key)
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return ev, malformed(err)
	}
	switch {
	case !seen["time"]:
		return ev, errors.New(`missing "time"`)
	case ev.Machine == "":
		return ev, errors.New(`missing "machine"`)
	case ev.Action == "":
		return ev, errors.New(`missing "action"`)
	}
	return ev, nil
}

func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "an object or list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// idempotencyKey is the request's Idempotency-Key ("" without one): 1 to
// keyLimit printable ASCII characters.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", errors.New("Idempotency-Key given more than once")
	case len(vs[0]) == 0 || len(vs[0]) > keyLimit:
		return "", fmt.Errorf("Idempotency-Key has %d bytes: 1 to %d are taken", len(vs[0]), keyLimit)
	}
	for _, c := range []byte(vs[0]) {
		if c < 0x21 || c > 0x7e {
			return "", errors.New("Idempotency-Key: printable ASCII characters only, no spaces")
		}
	}
	return vs[0], nil
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if _, ok := query(w, r); !ok {
		return
	}
	m := s.model(w, r)
	if m == nil {
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		sendJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error() + "; none was taken", "taken": 0})
		return
	}
	body, ok := s.readBody(w, r, eventsLimit, "events")
	if !ok {
		return
	}
	evs, err := parseEvents(body)
	if err != nil {
		sendJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error() + "; none was taken", "taken": 0})
		return
	}
	sum := sha256.Sum256(body)
	bodySum := hex.EncodeToString(sum[:])
	if !m.acquire(ctx) {
		s.ended(w, ctx, "waiting for the model's record", map[string]any{"taken": 0})
		return
	}
	defer m.release()
	if m.deleted {
		fail(w, http.StatusNotFound, "no model %q", m.id)
		return
	}
	if k, seen := m.keys[key]; key != "" && seen {
		if k.bodySHA256 != bodySum {
			sendJSON(w, http.StatusUnprocessableEntity, map[string]any{"taken": 0, "events": len(m.events),
				"error": fmt.Sprintf("Idempotency-Key %q was used by a request with another body: a key names one request (none of these events was taken)", key)})
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		sendCompact(w, k.status, k.answer)
		return
	}
	// The events are taken on a snapshot, which becomes the model's
	// tracker once they are on disk: a request whose work is stopped, or
	// whose write fails, leaves the model as it was.
	tr := m.tracker.Snapshot()
	taken := 0
	var addErr error
	for _, ev := range evs {
		if addErr = tr.Add(ctx, ev, ""); addErr != nil {
			break
		}
		taken++
	}
	var ee *observe.EventError
	if addErr != nil && !errors.As(addErr, &ee) {
		if stopped(addErr) {
			s.ended(w, ctx, "taking the events", map[string]any{"taken": 0, "events": len(m.events)})
		} else {
			sendJSON(w, http.StatusInternalServerError, map[string]any{"error": fmt.Sprintf("taking the events: %v; none was taken", addErr),
				"taken": 0, "events": len(m.events)})
		}
		return
	}
	status := http.StatusOK
	answer := map[string]any{"taken": taken, "events": len(m.events) + taken}
	if addErr != nil {
		// The events before the first that cannot be taken stay taken.
		status = http.StatusBadRequest
		msg := addErr.Error()
		if len(evs) > 1 {
			msg = fmt.Sprintf("event %d of %d: %s; %s before it taken", taken+1, len(evs), msg, plural(taken, "event", "events"))
		}
		answer["error"] = msg
	}
	if taken > 0 {
		b := batch{Events: evs[:taken]}
		if key != "" {
			compact, err := json.Marshal(answer)
			if err != nil {
				fail(w, http.StatusInternalServerError, "encoding the answer: %v", err)
				return
			}
			b.Key, b.BodySHA256, b.Status, b.Answer = key, bodySum, status, compact
		}
		err := appendBatch(filepath.Join(m.dir, eventsFile), &b)
		s.wrote(err)
		if err != nil {
			s.logf("model %s: saving %d events failed: %v", m.id, taken, err)
			sendJSON(w, http.StatusInternalServerError, map[string]any{"error": fmt.Sprintf("saving the events: %v; none of this request's events was taken", err),
				"taken": 0, "events": len(m.events)})
			return
		}
		m.tracker = tr
		m.events = append(m.events, evs[:taken]...)
		m.gen++
		if key != "" {
			m.keys[key] = keyed{bodySHA256: bodySum, status: status, answer: b.Answer}
		}
		s.publish(m, true)
		if s.afterAppend != nil {
			s.afterAppend(m.id)
		}
	}
	sendJSON(w, status, answer)
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := query(w, r); !ok {
		return
	}
	m := s.model(w, r)
	if m == nil {
		return
	}
	evs := m.state.Load().events
	if evs == nil {
		evs = []observe.Event{}
	}
	sendJSON(w, http.StatusOK, map[string]any{"id": m.id, "events": evs})
}
