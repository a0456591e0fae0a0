package sweep

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"pepa/ctmc"
)

// ChainCache derives each model of a sweep once. Rates change from point
// to point, the chain's structure does not: the first point that asks for
// a model's chain derives it, and every other point gets ctmc.Rerate of
// that chain with its own structure (shared states and transitions, its
// own rates: exactly what deriving it gives). A point whose values change
// the structure (ctmc.ErrStructureChanged: they make two local derivatives
// one, or one two) derives its own chain, which is kept beside the first
// (up to maxBases per model) for the points of its structure. Safe for
// concurrent use; the chains it returns may be released (their fields set
// to nil) by their users without touching those it keeps.
type ChainCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry

	derived, rerated, changed atomic.Int64
	deriveTime, rerateTime    atomic.Int64 // nanoseconds
}

// maxBases bounds the chains kept per model (their memory).
const maxBases = 4

type cacheEntry struct {
	once  sync.Once
	err   error // the first derivation's
	mu    sync.Mutex
	bases []*ctmc.Chain
}

// CacheStats counts what a ChainCache did.
type CacheStats struct {
	Derived int // chains derived first, one per model
	Rerated int // chains rerated from a kept one
	Changed int // chains derived again: the values changed the structure
	// DeriveTime and RerateTime are the time the derivations (first and
	// again) and the reratings took, in total.
	DeriveTime, RerateTime time.Duration
}

// Chain returns the chain of s, the structure of model key at one point;
// derive derives a structure's chain (with the caller's limits).
func (cc *ChainCache) Chain(ctx context.Context, key string, s *ctmc.Structure, derive func(*ctmc.Structure) (*ctmc.Chain, error)) (*ctmc.Chain, error) {
	cc.mu.Lock()
	if cc.entries == nil {
		cc.entries = map[string]*cacheEntry{}
	}
	e, ok := cc.entries[key]
	if !ok {
		e = &cacheEntry{}
		cc.entries[key] = e
	}
	cc.mu.Unlock()
	timed := func(n, t *atomic.Int64, f func() (*ctmc.Chain, error)) (*ctmc.Chain, error) {
		start := time.Now()
		c, err := f()
		t.Add(int64(time.Since(start)))
		if err == nil {
			n.Add(1)
		}
		return c, err
	}
	// copyOf is a chain the caller may release: a copy of the kept one's
	// fields, sharing its arrays.
	copyOf := func(c *ctmc.Chain) *ctmc.Chain { cp := *c; return &cp }
	var first *ctmc.Chain // derived here, by the first point
	mine := false
	e.once.Do(func() {
		mine = true
		if first, e.err = timed(&cc.derived, &cc.deriveTime, func() (*ctmc.Chain, error) { return derive(s) }); e.err == nil {
			e.mu.Lock()
			e.bases = []*ctmc.Chain{first}
			e.mu.Unlock()
		}
	})
	switch {
	case mine && e.err != nil:
		return nil, e.err
	case mine:
		return copyOf(first), nil
	case e.err != nil:
		return derive(s) // the first point failed: this one fails (or not) on its own
	}
	e.mu.Lock()
	bases := slices.Clone(e.bases)
	e.mu.Unlock()
	for _, b := range bases {
		c, err := timed(&cc.rerated, &cc.rerateTime, func() (*ctmc.Chain, error) { return ctmc.Rerate(ctx, b, s) })
		if !errors.Is(err, ctmc.ErrStructureChanged) {
			return c, err
		}
	}
	c, err := timed(&cc.changed, &cc.deriveTime, func() (*ctmc.Chain, error) { return derive(s) })
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.bases) < maxBases {
		e.bases = append(e.bases, c)
		return copyOf(c), nil
	}
	return c, nil
}

// Stats says what the cache did so far.
func (cc *ChainCache) Stats() CacheStats {
	return CacheStats{Derived: int(cc.derived.Load()), Rerated: int(cc.rerated.Load()), Changed: int(cc.changed.Load()),
		DeriveTime: time.Duration(cc.deriveTime.Load()), RerateTime: time.Duration(cc.rerateTime.Load())}
}
