package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pepa/cmd/pepa/internal/atomicfile"
	"pepa/models/observe"
)

// The state directory holds one directory per model, named by its id:
// model.pepa, meta.json and events.jsonl, the record, one line per request
// that took events (a batch). A model's directory is built as .new-ID and
// renamed into place; a deleted one is renamed .deleted-ID before it is
// removed. Leftovers of either are removed at the next start.
const (
	modelFile  = "model.pepa"
	metaFile   = "meta.json"
	eventsFile = "events.jsonl"
)

// batch is one line of a record: the events one request took, and with
// an Idempotency-Key the key, the SHA-256 of the request's body and the
// answer given (what a retry gets).
type batch struct {
	Events     []observe.Event `json:"events"`
	Key        string          `json:"key,omitempty"`
	BodySHA256 string          `json:"body_sha256,omitempty"`
	Status     int             `json:"status,omitempty"`
	Answer     json.RawMessage `json:"answer,omitempty"`
}

// meta is a model's meta.json.
type meta struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// durable is how the state's files are written.
var durable = atomicfile.Options{Perm: 0o600, Durable: true}

// persistNew writes a new model's directory: built as .new-ID (its files
// each written durably, an empty record), renamed to ID, the state
// directory fsynced.
func (s *Server) persistNew(m *model) (err error) {
	tmp := filepath.Join(s.dir, ".new-"+m.id)
	if err = os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	doc, err := json.MarshalIndent(meta{ID: m.id, Name: m.name, Created: m.created}, "", "  ")
	if err != nil {
		return err
	}
	if err = atomicfile.WriteFile(filepath.Join(tmp, modelFile), m.src, durable); err != nil {
		return err
	}
	if err = atomicfile.WriteFile(filepath.Join(tmp, metaFile), append(doc, '\n'), durable); err != nil {
		return err
	}
	if err = atomicfile.WriteFile(filepath.Join(tmp, eventsFile), nil, durable); err != nil {
		return err
	}
	if err = os.Rename(tmp, m.dir); err != nil {
		return err
	}
	return atomicfile.SyncDir(s.dir)
}

// appendBatch appends a batch to a record file as one line, in one write,
// and fsyncs it; on failure the file is cut back to where it was. A crash
// in the middle leaves a line without its newline, which replay drops.
func appendBatch(path string, b *batch) error {
	line, err := json.Marshal(b)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if _, err = f.Write(line); err == nil {
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

// recordLine is a batch as read back, with its line in the file.
type recordLine struct {
	batch
	line int
}

// readRecord reads a record file: the complete lines' batches, the
// length of the complete lines, and that of a torn last line (the bytes
// after the last newline). A line of one event object, as servers before
// batches wrote, is a batch of that event.
func readRecord(path string) ([]recordLine, int64, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, 0, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	torn := len(data) - end
	var out []recordLine
	sc := bufio.NewScanner(bytes.NewReader(data[:end]))
	sc.Buffer(make([]byte, 0, 64<<10), 2*eventsLimit+keyLimit+4096)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		b, err := parseBatch(text)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		for i := range b.Events {
			b.Events[i].Line = line
		}
		out = append(out, recordLine{batch: *b, line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %v", path, err)
	}
	return out, int64(end), torn, nil
}

// parseBatch reads one record line.
func parseBatch(text []byte) (*batch, error) {
	if text[0] != '{' {
		return nil, errors.New("not a batch of events")
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(text, &keys); err != nil {
		return nil, err
	}
	if _, ok := keys["events"]; !ok {
		evs, err := parseEvents(text) // one event, as servers before batches wrote
		if err != nil {
			return nil, err
		}
		return &batch{Events: evs}, nil
	}
	var raw struct {
		Events     json.RawMessage `json:"events"`
		Key        string          `json:"key"`
		BodySHA256 string          `json:"body_sha256"`
		Status     int             `json:"status"`
		Answer     json.RawMessage `json:"answer"`
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	evs, err := parseEvents(raw.Events)
	if err != nil {
		return nil, err
	}
	if raw.Key != "" && (len(raw.BodySHA256) != 64 || raw.Status == 0 || !json.Valid(raw.Answer)) {
		return nil, errors.New("a batch with a key but no body hash, status or answer")
	}
	return &batch{Events: evs, Key: raw.Key, BodySHA256: raw.BodySHA256, Status: raw.Status, Answer: raw.Answer}, nil
}

// load reloads the state directory: every model, its record replayed.
// Leftovers of interrupted creations and deletions are removed; a torn
// last line is dropped (the file cut back to its last complete line) with
// a log line. Anything else that does not load stops the start, naming
// the file, rather than serving without it.
func (s *Server) load(ctx context.Context) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
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
		case !validID(name):
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m, err := s.loadModel(path, name)
		if err != nil {
			return fmt.Errorf("%v\n(the server does not start without a model it holds: move %s out of the state directory to start without it)", err, path)
		}
		s.models[name] = m
		events += len(m.events)
	}
	if len(s.models) > 0 {
		s.logf("loaded %s and %s from %s in %s", plural(len(s.models), "model", "models"), plural(events, "event", "events"), s.dir, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// loadModel loads one model's directory and replays its record.
func (s *Server) loadModel(dir, id string) (*model, error) {
	src, err := os.ReadFile(filepath.Join(dir, modelFile))
	if err != nil {
		return nil, err
	}
	var mt meta
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &mt); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, metaFile), err)
	}
	if mt.ID != id || validName(mt.Name) != nil {
		return nil, fmt.Errorf("%s: id or name not valid", filepath.Join(dir, metaFile))
	}
	tr, _, diags, err := s.newTracker(s.base, mt.Name, src)
	if diags != nil {
		return nil, fmt.Errorf("%s: the model does not load: %s", filepath.Join(dir, modelFile), strings.Join(diags, "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", filepath.Join(dir, modelFile), mt.Name, err)
	}
	path := filepath.Join(dir, eventsFile)
	lines, end, torn, err := readRecord(path)
	if err != nil {
		return nil, err
	}
	if torn > 0 {
		s.logf("model %s (%s): %s: ignoring a torn last line (%d bytes: a request's batch cut by a crash in the middle of its append, never acknowledged; none of its events is replayed)", id, mt.Name, path, torn)
		if err := truncate(path, end); err != nil {
			return nil, err
		}
	}
	var evs []observe.Event
	keys := map[string]keyed{}
	for _, l := range lines {
		for _, ev := range l.Events {
			if err := tr.Add(s.base, ev, path); err != nil {
				return nil, err
			}
		}
		evs = append(evs, l.Events...)
		if l.Key != "" {
			keys[l.Key] = keyed{bodySHA256: l.BodySHA256, status: l.Status, answer: l.Answer}
		}
	}
	m := newModel(id, mt.Name, dir, mt.Created, src, tr)
	m.events, m.keys, m.gen = evs, keys, 1
	s.publish(m, false)
	return m, nil
}

// truncate cuts a file to size and fsyncs it.
func truncate(path string, size int64) error {
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
