package sweep

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"pepa/ctmc"
)

// ChainCache derives each model of a sweep once. Rates change from point
// to point, the chain's structure does not: the first point that asks for
// a model's chain derives it, and every other point gets ctmc.Rerate of
// that chain with its own structure (shared states and transitions, its
// own rates: exactly what deriving it gives), or derives its own when its
// values change the structure (ctmc.ErrStructureChanged). Safe for
// concurrent use; the chains it returns may be released (their fields
// set to nil) by their users without touching the one it keeps.
type ChainCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry

	derived, rerated, changed atomic.Int64
	deriveTime, rerateTime    atomic.Int64 // nanoseconds
}

type cacheEntry struct {
	once sync.Once
	base *ctmc.Chain
	err  error
}

// CacheStats counts what a ChainCache did.
type CacheStats struct {
	Derived int // chains derived as the base of a model
	Rerated int // chains rerated from a base
	Changed int // chains derived again: the values changed the structure
	// DeriveTime and RerateTime are the time the derivations (of bases and
	// of changed structures) and the reratings took, in total.
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
	mine := false
	e.once.Do(func() {
		mine = true
		e.base, e.err = timed(&cc.derived, &cc.deriveTime, func() (*ctmc.Chain, error) { return derive(s) })
	})
	switch {
	case mine && e.err != nil:
		return nil, e.err
	case mine:
		cp := *e.base // the caller may release its copy's arrays
		return &cp, nil
	case e.err != nil:
		return derive(s) // the first point failed: this one fails (or not) on its own
	}
	c, err := timed(&cc.rerated, &cc.rerateTime, func() (*ctmc.Chain, error) { return ctmc.Rerate(ctx, e.base, s) })
	if errors.Is(err, ctmc.ErrStructureChanged) {
		return timed(&cc.changed, &cc.deriveTime, func() (*ctmc.Chain, error) { return derive(s) })
	}
	return c, err
}

// Stats says what the cache did so far.
func (cc *ChainCache) Stats() CacheStats {
	return CacheStats{Derived: int(cc.derived.Load()), Rerated: int(cc.rerated.Load()), Changed: int(cc.changed.Load()),
		DeriveTime: time.Duration(cc.deriveTime.Load()), RerateTime: time.Duration(cc.rerateTime.Load())}
}
