package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"pepa/cmd/pepa/internal/atomicfile"
	"pepa/lang"
	"pepa/models/observe"
)

// model is one posted model: its record, its tracker and its figures.
type model struct {
	id, name string
	created  time.Time
	dir      string
	src      []byte

	// lock is held while the record changes (events taken, deletion):
	// one writer at a time, waited for under the request's context. Only
	// such writers take it; queries read state.
	lock chan struct{}
	// Guarded by lock:
	tracker *observe.Tracker // at the record taken; replaced (an advanced Snapshot), never changed in place
	events  []observe.Event
	keys    map[string]keyed // the Idempotency-Keys of the requests that took events
	gen     uint64           // the record's version
	deleted bool

	// state is what lock guards as of its last change, for readers; it
	// is stored under cache.mu, so that the cache and it agree.
	state atomic.Pointer[modelState]
	cache figCache
}

// modelState is a model as queries see it, without its lock.
type modelState struct {
	gen     uint64
	events  []observe.Event // the record (never appended to in place: its length is its capacity)
	last    float64         // the latest event's time (0 without events)
	deleted bool
	tracker *observe.Tracker // frozen at this record
}

// keyed is what a request with an Idempotency-Key left: its body's hash
// and its answer.
type keyed struct {
	bodySHA256 string
	status     int
	answer     []byte // compact JSON
}

func newModel(id, name, dir string, created time.Time, src []byte, tr *observe.Tracker) *model {
	m := &model{id: id, name: name, created: created, dir: dir, src: src, lock: make(chan struct{}, 1), tracker: tr,
		keys: map[string]keyed{}}
	m.cache.entries = map[figKey]*figEntry{}
	m.state.Store(&modelState{tracker: tr.Snapshot()})
	return m
}

// acquire takes the model's lock, or gives up when ctx ends.
func (m *model) acquire(ctx context.Context) bool {
	select {
	case m.lock <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (m *model) release() { <-m.lock }

// publish makes the record (lock held) what queries see, with a cache of
// its own (the figures of the record before, warmed for this one, or
// none).
func (s *Server) publish(m *model, warm bool) {
	sn := &modelState{gen: m.gen, events: m.events[:len(m.events):len(m.events)], deleted: m.deleted, tracker: m.tracker}
	if n := len(m.events); n > 0 {
		sn.last = m.events[n-1].Time
	}
	s.resetCache(m, sn, warm)
}

// model finds the request's model, 404 when there is none.
func (s *Server) model(w http.ResponseWriter, r *http.Request) *model {
	id := r.PathValue("id")
	s.mu.RLock()
	m := s.models[id]
	s.mu.RUnlock()
	if m == nil {
		fail(w, http.StatusNotFound, "no model %q", id)
	}
	return m
}

// info is a model as the list shows it.
func (m *model) info() map[string]any {
	sn := m.state.Load()
	var last any
	if len(sn.events) > 0 {
		last = sn.last
	}
	return map[string]any{"id": m.id, "name": m.name, "events": len(sn.events), "last_event_time": last,
		"created": m.created.UTC().Format(time.RFC3339Nano)}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if _, ok := query(w, r); !ok {
		return
	}
	s.mu.RLock()
	ms := make([]*model, 0, len(s.models))
	for _, m := range s.models {
		ms = append(ms, m)
	}
	s.mu.RUnlock()
	sort.Slice(ms, func(i, j int) bool { // by creation, then id
		if !ms[i].created.Equal(ms[j].created) {
			return ms[i].created.Before(ms[j].created)
		}
		return ms[i].id < ms[j].id
	})
	list := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		list = append(list, m.info())
	}
	sendJSON(w, http.StatusOK, map[string]any{"models": list})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	if _, ok := query(w, r); !ok {
		return
	}
	if m := s.model(w, r); m != nil {
		sendJSON(w, http.StatusOK, m.info())
	}
}

// validName checks a model's name: what results and diagnostics carry.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("name= is empty")
	case len(name) > nameLimit:
		return fmt.Errorf("name= has %d bytes: at most %d", len(name), nameLimit)
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
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func validID(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

func (s *Server) createModel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q, ok := query(w, r, "name")
	if !ok {
		return
	}
	src, ok := s.readBody(w, r, modelLimit, "model")
	if !ok {
		return
	}
	id, err := newID()
	if err != nil {
		fail(w, http.StatusInternalServerError, "making an id: %v", err)
		return
	}
	name := id
	if v, given := q["name"]; given {
		name = v[0]
		if err := validName(name); err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	tr, warnings, diags, err := s.newTracker(ctx, name, src)
	if diags != nil {
		sendJSON(w, http.StatusBadRequest, map[string]any{"error": strings.Join(diags, "\n"), "diagnostics": diags})
		return
	}
	if err != nil {
		if stopped(err) {
			s.ended(w, ctx, "deriving the model's chains", nil)
			return
		}
		fail(w, http.StatusBadRequest, "%s: error: %v", name, err)
		return
	}
	m := newModel(id, name, filepath.Join(s.dir, id), time.Now().UTC(), src, tr)
	err = s.persistNew(m)
	s.wrote(err)
	if err != nil {
		s.logf("model %s (%s): not saved: %v", id, name, err)
		fail(w, http.StatusInternalServerError, "saving the model: %v", err)
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
	sendJSON(w, http.StatusCreated, doc)
}

// newTracker loads and checks a model (diags: its errors, as
// NAME:LINE:COL: error: MESSAGE) and makes its tracker (err: the model
// cannot be analysed, or ctx ended).
func (s *Server) newTracker(ctx context.Context, name string, src []byte) (tr *observe.Tracker, warnings, diags []string, err error) {
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
	tr, err = observe.NewTracker(ctx, lm, s.copt, s.mopt)
	return tr, warnings, nil, err
}

func (s *Server) deleteModel(w http.ResponseWriter, r *http.Request) {
	if _, ok := query(w, r); !ok {
		return
	}
	m := s.model(w, r)
	if m == nil {
		return
	}
	if !m.acquire(r.Context()) {
		s.ended(w, r.Context(), "waiting for the model's record", nil)
		return
	}
	defer m.release()
	if m.deleted {
		fail(w, http.StatusNotFound, "no model %q", m.id)
		return
	}
	gone := filepath.Join(s.dir, ".deleted-"+m.id)
	err := os.Rename(m.dir, gone)
	if err == nil {
		err = atomicfile.SyncDir(s.dir)
	}
	s.wrote(err)
	if err != nil {
		fail(w, http.StatusInternalServerError, "deleting the model's files: %v", err)
		return
	}
	s.mu.Lock()
	delete(s.models, m.id)
	s.mu.Unlock()
	m.deleted = true
	s.publish(m, false)
	if err := os.RemoveAll(gone); err != nil {
		s.logf("model %s: removing %s: %v (removed at the next start)", m.id, gone, err)
	}
	s.logf("model %s (%s): deleted", m.id, m.name)
	sendJSON(w, http.StatusOK, map[string]any{"deleted": m.id})
}
