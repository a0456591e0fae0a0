package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"pepa/ctmc"
)

// stageTimer collects how long each stage of an analysis took, for the
// --verbose timing line: no profiler needed to see where time goes. A nil
// timer records nothing.
type stageTimer struct {
	start, last time.Time
	parts       []string
}

func newStageTimer(on bool) *stageTimer {
	if !on {
		return nil
	}
	now := time.Now()
	return &stageTimer{start: now, last: now}
}

// mark ends the current stage: name took the time since the last mark.
// detail, if not empty, is added in parentheses.
func (t *stageTimer) mark(name, detail string) {
	if t == nil {
		return
	}
	now := time.Now()
	s := fmt.Sprintf("%s %.3f s", name, now.Sub(t.last).Seconds())
	if detail != "" {
		s += " (" + detail + ")"
	}
	t.parts = append(t.parts, s)
	t.last = now
}

// print writes the stages on one line, with the total.
func (t *stageTimer) print(w io.Writer, verb, model string) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "pepa %s: %s: stages: %s; total %.3f s\n", verb, model, strings.Join(t.parts, ", "), time.Since(t.start).Seconds())
}

// derivedDetail describes a derived chain for the derive stage: its size
// and the exploration's speed.
func derivedDetail(c *ctmc.Chain, t *stageTimer) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%d states, %d transitions, %.0f states/s", c.N, c.NumTransitions(), float64(c.N)/time.Since(t.last).Seconds())
}
