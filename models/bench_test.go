package models

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testchain"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
	"pepa/passage"
)

func benchEndToEnd(b *testing.B, apps, machines int) {
	src := []byte(testmodels.Mapping(apps, machines, 8))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, diags := lang.Load("big.pepa", src)
		if diags.HasErrors() {
			b.Fatal(diags.Err())
		}
		s, err := ctmc.Compile(m, ctmc.DefaultOptions)
		if err != nil {
			b.Fatal(err)
		}
		r, err := AnalyzeGroups(context.Background(), s, Options{Question: Question{Beta: 25}})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Machines) != machines || !(r.Robustness > 0 && r.Robustness < 1) {
			b.Fatalf("%d machines, robustness %g", len(r.Machines), r.Robustness)
		}
		if i == 0 {
			b.ReportMetric(r.Robustness, "robustness")
			b.ReportMetric(r.PAllByBeta, "p_all")
		}
	}
}

// BenchmarkEndToEnd10kx1k: 10,000 applications on 1,000 machines (about
// 1.3 MB of PEPA): parse, check, compile, every machine's CDF, robustness,
// joint probability and expected makespan.
func BenchmarkEndToEnd10kx1k(b *testing.B) { benchEndToEnd(b, 10000, 1000) }

// BenchmarkEndToEnd100kx10k: 100,000 applications on 10,000 machines.
func BenchmarkEndToEnd100kx10k(b *testing.B) { benchEndToEnd(b, 100000, 10000) }

// BenchmarkStiffNetwork: one group of four machines on one network
// (testNetworked, 12 applications, finished machines stopped,
// 4,096 states) with the network's rates (each transfer's request and the
// sending) multiplied by 1, 1,000 and 1,000,000: q t grows with them, the
// Laplace engine's cost does not (the ratio of the sub-benchmarks' times,
// and their solves, show it; auto as robustness runs it, and Laplace
// forced).
func BenchmarkStiffNetwork(b *testing.B) {
	for _, scale := range []float64{1, 1e3, 1e6} {
		src := testmodels.Networked(12, 4, [][]int{{1, 2, 3, 4}}, 0.4*scale)
		src = strings.ReplaceAll(src, ", 2.0).", fmt.Sprintf(", %g).", 2*scale))
		s := testchain.Structure(b, src)
		engines := []string{passage.EngineAuto, passage.EngineLaplace}
		if scale == 1 {
			// Uniformization only where its q t allows: 1,000 times the
			// rates is 1,000 times its steps.
			engines = append(engines, passage.EngineUniformization)
		}
		for _, engine := range engines {
			b.Run(fmt.Sprintf("scale=%g/%s", scale, engine), func(b *testing.B) {
				var res *Result
				for i := 0; i < b.N; i++ {
					var err error
					if res, err = AnalyzeGroups(context.Background(), s, Options{Question: Question{Beta: 30, Transient: engine}}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(res.States), "states")
			})
		}
	}
}
