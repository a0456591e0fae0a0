package optimize

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"pepa/models/spec"
)

// BenchmarkOptimize1000x100: 1,000 applications on 100 machines with a
// 10 s budget; reports moves evaluated per second (over the whole run),
// the gain over the best heuristic, and the gap to the upper bound.
func BenchmarkOptimize1000x100(b *testing.B) {
	in := randomSpec(b, 1000, 100, 1000)
	for i := 0; i < b.N; i++ {
		res, err := Optimize(context.Background(), in, OptimizeOptions{Beta: 60, Budget: 10 * time.Second, Seed: 1, MakespanSlack: -1})
		if err != nil {
			b.Fatal(err)
		}
		bestH := math.Inf(-1)
		for _, h := range res.Heuristics {
			bestH = math.Max(bestH, h.Score)
		}
		b.ReportMetric(float64(res.Moves)/res.Elapsed.Seconds(), "moves/s")
		b.ReportMetric(res.Best.Score-bestH, "gain")
		b.ReportMetric(bestH, "best-heuristic")
		b.ReportMetric(res.Best.Score, "optimized")
		b.ReportMetric(res.Gap(), "gap")
		b.ReportMetric(float64(res.Evaluations), "machine-solves")
		b.ReportMetric(res.Elapsed.Seconds(), "seconds")
	}
}

// BenchmarkGen20000x50: parse a specification of 20,000 applications on
// 50 machines (a 1,000,000-entry ETC matrix, made here) and write its
// model; gen's whole work, linear in the size.
func BenchmarkGen20000x50(b *testing.B) {
	in := randomSpec(b, 20000, 50, 20000)
	var doc bytes.Buffer
	if err := in.WriteSpec(&doc, in.Mappings[0]); err != nil {
		b.Fatal(err)
	}
	src := doc.Bytes()
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in, err := spec.ParseSpec("big.json", src)
		if err != nil {
			b.Fatal(err)
		}
		var out countingWriter
		if err := in.Generate(&out, in.Mappings[0]); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.ReportMetric(float64(out), "model-bytes")
		}
	}
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
