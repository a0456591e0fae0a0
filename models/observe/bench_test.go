package observe

import (
	"context"
	"fmt"
	"testing"

	"pepa/ctmc"
	"pepa/internal/testing/testmodels"
	"pepa/lang"
	"pepa/models"
)

// benchTracker is a tracker on the model text, with an empty record.
func benchTracker(b *testing.B, src string) (*Tracker, *lang.Model) {
	b.Helper()
	m, diags := lang.Load("b.pepa", []byte(src))
	if diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	tr, err := NewTracker(context.Background(), m, ctmc.DefaultOptions, models.Options{Question: models.Question{NoQuantile: true}})
	if err != nil {
		b.Fatal(err)
	}
	return tr, m
}

// BenchmarkTrackerAdd: one completion taken (its machine's group filtered
// from its last completion to the event, the others untouched), on the
// seed's 4-machine model and on 1,000 machines (12 applications each).
// Each iteration adds a machine's first completion (a fresh tracker, made
// outside the timer, once every machine has one).
func BenchmarkTrackerAdd(b *testing.B) {
	for _, tc := range []struct {
		name           string
		apps, machines int
	}{{"seed-4", 12, 4}, {"machines-1000", 12000, 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			src := testmodels.Mapping(tc.apps, tc.machines, 1)
			tr, _ := benchTracker(b, src)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m := i % tc.machines
				if i > 0 && m == 0 {
					b.StopTimer()
					tr, _ = benchTracker(b, src) // every machine's first completion taken: a fresh record
					b.StartTimer()
				}
				ev := Event{Time: float64(i) * 1e-3, Machine: fmt.Sprintf("M%d", m+1), Action: fmt.Sprintf("compute%d", m+1)}
				if err := tr.Add(ctx, ev, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTrackerFigures: the figures at now after one completion per
// machine (every group run on to now and solved), on the seed's model
// and on 1,000 machines.
func BenchmarkTrackerFigures(b *testing.B) {
	for _, tc := range []struct {
		name           string
		apps, machines int
	}{{"seed-4", 12, 4}, {"machines-1000", 12000, 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			tr, _ := benchTracker(b, testmodels.Mapping(tc.apps, tc.machines, 1))
			ctx := context.Background()
			for m := 0; m < tc.machines; m++ {
				if err := tr.Add(ctx, Event{Time: 1, Machine: fmt.Sprintf("M%d", m+1), Action: fmt.Sprintf("compute%d", m+1)}, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tr.Figures(ctx, 60, 2); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
