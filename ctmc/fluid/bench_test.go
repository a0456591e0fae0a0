package fluid

import (
	"context"
	"os"
	"testing"
)

// The hot paths on testdata/fluid/million.pepa (10^6 users, 10^3
// servers): one evaluation of the right-hand side, its Jacobian, the
// default time series, the steady state, and the tagged passage.

func millionModel(b *testing.B) *Model {
	src, err := os.ReadFile("../../testdata/fluid/million.pepa")
	if err != nil {
		b.Fatal(err)
	}
	_, fm := load(b, string(src))
	return fm
}

func BenchmarkDrift(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	e := fm.newEvaluator()
	x, dx := fm.Initial(), make([]float64, fm.Dim)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.run(x)
		e.drift(dx)
	}
}

func BenchmarkJacobian(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	e := fm.newEvaluator()
	x, j := fm.Initial(), make([]float64, fm.Dim*fm.Dim)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.run(x)
		e.jacobian(x, j)
	}
}

func BenchmarkMillionSeries(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	times := DefaultTimes(5000)
	for i := 0; i < b.N; i++ {
		if _, err := fm.Series(context.Background(), times, 1, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMillionSteady(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := fm.SteadyState(context.Background(), 1, Options{})
		if err != nil || !st.Settled {
			b.Fatal(err, st.Settled)
		}
	}
}

func BenchmarkMillionPassage(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	q := PassageQuery{Tag: "User", TargetActions: []string{"response"}, Times: DefaultTimes(5000)}
	for i := 0; i < b.N; i++ {
		if _, err := fm.Passage(context.Background(), q, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMillionSecondMoments(b *testing.B) {
	fm := millionModel(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fm.SteadyState(context.Background(), 2, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
