package models

import (
	"context"
	"testing"
	"time"
)

func TestTmpExactLimit(t *testing.T) {
	for _, nm := range [][2]int{{12, 4}, {14, 3}, {14, 4}, {15, 4}, {16, 3}, {16, 4}, {17, 3}} {
		in := randomSmallSpec(t, nm[0], nm[1], false, 77)
		res, err := Optimize(context.Background(), in, OptimizeOptions{Beta: 4 * float64(nm[0]) / float64(nm[1]), MakespanSlack: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d apps x %d machines: %s, exact %v, %v, %d solves", nm[0], nm[1], res.Stopped, res.Exact, res.Elapsed.Round(time.Millisecond), res.Evaluations)
	}
}
