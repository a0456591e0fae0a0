package models

import (
	"context"
	"runtime"
	"sync"
)

// ownRateRatio is how far below the shared uniformization rate a
// machine's own may be before it solves with its own.
const ownRateRatio = 8

// parallel runs f(0..n-1) on all cores; the first error wins.
func Parallel(ctx context.Context, n int, f func(int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := ctx.Err(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}
