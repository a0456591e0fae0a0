package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"

	"pepa/cmd/pepa/internal/render"
	"pepa/internal/membudget"
	"pepa/models"
	"pepa/models/observe"
)

// figCache is a model's figures for its current record: computed once
// per goal and now for every request asking, the last cacheSize kept.
type figCache struct {
	mu      sync.Mutex
	entries map[figKey]*figEntry
	order   []figKey // least recently asked first
}

type figKey struct {
	gen       uint64
	beta, now float64
}

// figEntry is the figures for one record, goal and now: computed by one
// goroutine on the record's frozen tracker, waited for by every request
// asking. A computation no request waits for any more is stopped, unless
// it was started ahead (warm), for the requests to come.
type figEntry struct {
	key     figKey
	done    chan struct{} // closed when res and err are set
	res     *models.Result
	err     error
	tracker *observe.Tracker // the record the figures are of
	events  int

	cancel  context.CancelFunc
	waiters int  // guarded by figCache.mu
	warm    bool // started ahead for a new record: runs without waiters

	jsonOnce sync.Once
	json     []byte
	jsonErr  error
	cdfOnce  sync.Once
	cdf      *cdfDoc
	cdfErr   error
}

// resetCache publishes sn as the model's state with a cache of its own:
// the computations of the record before that no request waits for are
// stopped; with warm, the goals asked last of the record before are
// started for the new one (the ones at the latest event's time moving to
// the new latest event's), so that the controller's next poll finds them
// under way or done.
func (s *Server) resetCache(m *model, sn *modelState, warm bool) {
	c := &m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	old := m.state.Load()
	var asked []figKey
	for i := len(c.order) - 1; i >= 0 && warm && len(asked) < warmMax; i-- {
		asked = append(asked, c.order[i])
	}
	for _, e := range c.entries {
		if e.waiters == 0 {
			e.cancel()
		}
	}
	c.entries, c.order = map[figKey]*figEntry{}, nil
	m.state.Store(sn)
	if sn.deleted {
		return
	}
	for i := len(asked) - 1; i >= 0; i-- { // the most recently asked last, as they were
		k := figKey{gen: sn.gen, beta: asked[i].beta, now: asked[i].now}
		if old != nil && k.now == old.last {
			k.now = sn.last
		}
		if k.now < sn.last || c.entries[k] != nil {
			continue
		}
		s.startFigures(m, sn, k, true)
	}
}

// startFigures adds an entry for key to the cache (mu held) and starts
// its computation.
func (s *Server) startFigures(m *model, sn *modelState, key figKey, warm bool) *figEntry {
	c := &m.cache
	base := s.base
	var ctx context.Context
	var cancel context.CancelFunc
	if warm {
		ctx, cancel = context.WithTimeout(base, s.timeout) // no request bounds it
	} else {
		ctx, cancel = context.WithCancel(base) // the requests waiting bound it
	}
	e := &figEntry{key: key, done: make(chan struct{}), tracker: sn.tracker, events: len(sn.events), cancel: cancel, warm: warm}
	c.entries[key] = e
	c.order = append(c.order, key)
	if len(c.order) > cacheSize {
		evicted := c.entries[c.order[0]]
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
		if evicted.waiters == 0 {
			evicted.cancel()
		}
	}
	go func() {
		res, err := sn.tracker.Figures(ctx, key.beta, key.now)
		cancel()
		if err == nil {
			res.Model = m.name
		} else {
			c.mu.Lock()
			if c.entries[key] == e {
				delete(c.entries, key) // asked again, computed again
			}
			c.mu.Unlock()
		}
		e.res, e.err = res, err
		close(e.done)
		if s.computed != nil {
			s.computed(err)
		}
	}()
	return e
}

// touch moves key to the most recently asked end (mu held).
func (c *figCache) touch(key figKey) {
	for i, k := range c.order {
		if k == key {
			copy(c.order[i:], c.order[i+1:])
			c.order[len(c.order)-1] = key
			return
		}
	}
}

// figures are the model's figures for goal beta at now (nil: the latest
// event's time) for the record as it is when asked. It waits for them
// until ctx ends; then the computation stops if no other request waits
// for it. status and err are what to answer when they cannot be had.
func (s *Server) figures(ctx context.Context, m *model, beta float64, now *float64) (e *figEntry, status int, err error) {
	c := &m.cache
	c.mu.Lock()
	sn := m.state.Load()
	if sn.deleted {
		c.mu.Unlock()
		return nil, http.StatusNotFound, fmt.Errorf("no model %q", m.id)
	}
	t := sn.last
	if now != nil {
		t = *now
	}
	if t < sn.last {
		c.mu.Unlock()
		return nil, http.StatusBadRequest, fmt.Errorf("now=%g is before the record's latest event (%g)", t, sn.last)
	}
	key := figKey{gen: sn.gen, beta: beta, now: t}
	e = c.entries[key]
	if e == nil {
		e = s.startFigures(m, sn, key, false)
	} else {
		c.touch(key)
	}
	e.waiters++
	c.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
	}
	c.mu.Lock()
	e.waiters--
	if ctx.Err() != nil && e.waiters == 0 && !e.warm {
		select {
		case <-e.done:
		default:
			e.cancel() // no one waits for it any more
			if c.entries[key] == e {
				delete(c.entries, key)
			}
		}
	}
	c.mu.Unlock()
	select {
	case <-e.done:
	default:
		return nil, http.StatusServiceUnavailable, ctx.Err()
	}
	if e.err != nil {
		var re *observe.RangeError
		switch {
		case stopped(e.err):
			// A computation started ahead, stopped by the next record
			// while this request waited for it: the figures are asked
			// again by the next poll.
			return nil, http.StatusServiceUnavailable, fmt.Errorf("%s: the figures were stopped (%v): ask again", m.name, e.err)
		case errors.As(e.err, &re):
			return nil, http.StatusBadRequest, fmt.Errorf("%s: error: %v", m.name, e.err)
		case errors.Is(e.err, membudget.ErrOverBudget):
			return nil, http.StatusServiceUnavailable, fmt.Errorf("%s: error: %v", m.name, e.err)
		}
		// The analysis cannot be done: the command line's exit 1.
		return nil, http.StatusBadRequest, fmt.Errorf("%s: error: %v", m.name, e.err)
	}
	return e, http.StatusOK, nil
}

// figuresFailed answers a figures request that got none.
func (s *Server) figuresFailed(w http.ResponseWriter, ctx context.Context, status int, err error) {
	if ctx.Err() != nil && status == http.StatusServiceUnavailable {
		s.ended(w, ctx, "computing the figures", nil)
		return
	}
	fail(w, status, "%v", err)
}

// goalQuery reads a figures request: its query's beta= and now= (nil when
// not given) and its model; ok is false once an error has been answered.
func (s *Server) goalQuery(w http.ResponseWriter, r *http.Request) (beta, now *float64, m *model, ok bool) {
	q, ok := query(w, r, "beta", "now")
	if !ok {
		return nil, nil, nil, false
	}
	if beta, ok = seconds(w, q, "beta", true); !ok {
		return nil, nil, nil, false
	}
	if now, ok = seconds(w, q, "now", false); !ok {
		return nil, nil, nil, false
	}
	if m = s.model(w, r); m == nil {
		return nil, nil, nil, false
	}
	return beta, now, m, true
}

func (s *Server) robustness(w http.ResponseWriter, r *http.Request) {
	beta, now, m, ok := s.goalQuery(w, r)
	if !ok {
		return
	}
	if beta == nil {
		fail(w, http.StatusBadRequest, "beta= is required: the makespan goal in seconds")
		return
	}
	e, status, err := s.figures(r.Context(), m, *beta, now)
	if err != nil {
		s.figuresFailed(w, r.Context(), status, err)
		return
	}
	e.jsonOnce.Do(func() {
		// What 'pepa robustness --format json' prints for one model.
		var b bytes.Buffer
		e.jsonErr = render.WriteJSON(&b, render.Result(&models.Ranked{Result: e.res, Rank: 1}, false))
		e.json = b.Bytes()
	})
	if e.jsonErr != nil {
		fail(w, http.StatusInternalServerError, "encoding the figures: %v", e.jsonErr)
		return
	}
	w.Header().Set("X-Pepa-Events", strconv.Itoa(e.events))
	w.Header().Set("X-Pepa-Now", strconv.FormatFloat(e.key.now, 'g', -1, 64))
	sendBytes(w, http.StatusOK, e.json)
}

// cdfDoc is the page's view of a model: the figures and every machine's
// conditional CDF on an absolute time axis (seconds since the batch
// started, as the events' times).
type cdfDoc struct {
	ID               string       `json:"id"`
	Model            string       `json:"model"`
	Beta             float64      `json:"beta"`
	BetaDefault      bool         `json:"beta_default"` // beta was not given: E[makespan] rounded up
	Now              float64      `json:"now"`
	Events           int          `json:"events"`
	Robustness       any          `json:"robustness"`
	PAllByBeta       any          `json:"p_all_by_beta"`
	ExpectedMakespan any          `json:"expected_makespan"`
	TMax             float64      `json:"t_max"`
	Machines         []cdfMachine `json:"machines"`
}

// cdfMachine is one machine's curve: P(F <= t | record) at times t (0
// before now for a running machine, a step at its time for a finished
// one); empty when it was not computed (Note says why).
type cdfMachine struct {
	Name       string       `json:"name"`
	PByBeta    any          `json:"p_by_beta"`
	Mean       any          `json:"mean"`
	Q99        any          `json:"q99"`
	FinishedAt any          `json:"finished_at"`
	Bottleneck bool         `json:"bottleneck"`
	Note       string       `json:"note,omitempty"`
	Points     [][2]float64 `json:"points"`
}

func (s *Server) cdf(w http.ResponseWriter, r *http.Request) {
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
			s.figuresFailed(w, r.Context(), status, err)
			return
		}
		b := defaultBeta(e.res.ExpectedMakespan, e.key.now)
		beta = &b
	}
	e, status, err := s.figures(r.Context(), m, *beta, now)
	if err != nil {
		s.figuresFailed(w, r.Context(), status, err)
		return
	}
	e.cdfOnce.Do(func() { e.cdf, e.cdfErr = cdfOf(m.id, e) })
	if e.cdfErr != nil {
		fail(w, http.StatusInternalServerError, "sampling the CDFs: %v", e.cdfErr)
		return
	}
	doc := *e.cdf
	doc.BetaDefault = defaulted
	sendJSON(w, http.StatusOK, &doc)
}

// defaultBeta is x rounded up to two significant digits (past now), at
// most MaxSeconds.
func defaultBeta(x, now float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		x = now + 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-1)
	b := math.Ceil(x/p) * p
	if b = math.Round(b*1e9) / 1e9; b <= 0 {
		b = 1
	}
	return math.Min(b, MaxSeconds)
}

// cdfOf samples every machine's conditional CDF. A running machine's
// distribution counts from now (observe.Tracker.Figures); its points are
// put on the absolute axis. A finished machine is one the record
// finished (observe.Tracker.FinishedAt).
func cdfOf(id string, e *figEntry) (*cdfDoc, error) {
	r := e.res
	now := e.key.now
	doc := &cdfDoc{ID: id, Model: r.Model, Beta: r.Beta, Now: now, Events: e.events, Robustness: render.Float(r.Robustness),
		PAllByBeta: render.Float(r.PAllByBeta), ExpectedMakespan: render.Float(r.ExpectedMakespan)}
	tmax := math.Max(r.Beta*1.25, now*1.05)
	finished := make([]float64, len(r.Machines))
	bottleneck := r.Bottleneck()
	for i := range r.Machines {
		mr := &r.Machines[i]
		finished[i] = math.NaN()
		if at, ok := e.tracker.FinishedAt(mr.Name); ok {
			finished[i] = at
		}
		for _, x := range []float64{mr.Quantile, finished[i]} {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				tmax = math.Max(tmax, x*1.05)
			}
		}
	}
	doc.TMax = tmax
	for i := range r.Machines {
		mr := &r.Machines[i]
		cm := cdfMachine{Name: mr.Name, PByBeta: render.Float(mr.PByBeta), Mean: render.Float(mr.Mean), Q99: render.Float(mr.Quantile),
			FinishedAt: render.Float(finished[i]), Bottleneck: i == bottleneck, Note: mr.Note, Points: [][2]float64{}}
		switch at := finished[i]; {
		case !math.IsNaN(at):
			cm.Points = append(cm.Points, [2]float64{0, 0}, [2]float64{at, 0}, [2]float64{at, 1}, [2]float64{tmax, 1})
		default:
			if v, err := mr.CDF(0); err != nil || math.IsNaN(v) {
				break // not computed (the note says why)
			}
			if now > 0 {
				cm.Points = append(cm.Points, [2]float64{0, 0})
			}
			for k := 0; k <= cdfPoints; k++ {
				t := now + (tmax-now)*float64(k)/cdfPoints
				v, err := mr.CDF(t - now)
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
