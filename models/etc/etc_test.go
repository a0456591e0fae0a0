package etc

import (
	"math"
	"slices"
	"sort"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// rowStats returns the mean of every entry, the coefficient of variation of
// the row means, and the mean over rows of the row's own CV (sample
// standard deviation over the row's mean).
func rowStats(m [][]float64) (mean, rowMeanCV, withinCV float64) {
	var means []float64
	for _, row := range m {
		s := 0.0
		for _, x := range row {
			s += x
		}
		mu := s / float64(len(row))
		v := 0.0
		for _, x := range row {
			v += (x - mu) * (x - mu)
		}
		withinCV += math.Sqrt(v/float64(len(row)-1)) / mu
		means = append(means, mu)
		mean += mu
	}
	n := float64(len(m))
	mean /= n
	v := 0.0
	for _, mu := range means {
		v += (mu - mean) * (mu - mean)
	}
	return mean, math.Sqrt(v/(n-1)) / mean, withinCV / n
}

// TestCVBStatistics checks the moments the CVB method promises on 2,000 x
// 20 matrices: the mean; the CV of a row's mean, which carries the task
// draw and the average of M machine draws, sqrt(Vt^2 + (1 + Vt^2) Vm^2 / M)
// (Var(qZ) for independent q with CV Vt and Z with mean 1 and variance
// Vm^2/M); and the machine CV, the mean within-row CV. Each within 10%.
func TestCVBStatistics(t *testing.T) {
	const n, m = 2000, 20
	for _, c := range []struct{ mean, vt, vm float64 }{
		{10, 0.1, 0.1}, {10, 0.3, 0.3}, {1000, 0.6, 0.1}, {1000, 0.1, 0.6}, {5, 0.6, 0.6}, {100, 0.9, 0.3},
	} {
		for _, cons := range []string{Inconsistent, Consistent, PartiallyConsistent} {
			etc, err := Generate(Params{Method: CVB, Applications: n, Machines: m, Mean: c.mean, TaskCV: c.vt, MachineCV: c.vm, Consistency: cons, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			mean, rowCV, withinCV := rowStats(etc)
			wantRow := math.Sqrt(c.vt*c.vt + (1+c.vt*c.vt)*c.vm*c.vm/m)
			t.Logf("mean %g, Vt %g, Vm %g, %-20s: mean %.4g, row-mean CV %.4f (formula %.4f), machine CV %.4f", c.mean, c.vt, c.vm, cons, mean, rowCV, wantRow, withinCV)
			for _, chk := range []struct {
				what      string
				got, want float64
			}{{"mean", mean, c.mean}, {"row-mean CV", rowCV, wantRow}, {"machine CV", withinCV, c.vm}} {
				if math.Abs(chk.got/chk.want-1) > 0.10 {
					t.Errorf("mean %g, Vt %g, Vm %g, %s: %s %.4g, want %.4g within 10%%", c.mean, c.vt, c.vm, cons, chk.what, chk.got, chk.want)
				}
			}
		}
	}
}

// TestRangeBounds checks that range-based entries lie in [1, Rt Rm) and
// within a row in [tau, tau Rm): the largest over the smallest of a row is
// below Rm.
func TestRangeBounds(t *testing.T) {
	for _, class := range Classes() {
		p := Params{Class: class, Applications: 500, Machines: 16, Seed: 3}
		etc, err := Generate(p)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := p.Resolve()
		lo, hi := math.Inf(1), 0.0
		for i, row := range etc {
			rmin, rmax := slices.Min(row), slices.Max(row)
			if !(rmin >= 1 && rmax < r.TaskRange*r.MachineRange) {
				t.Fatalf("%s row %d: entries in [%g, %g], outside [1, %g)", class, i, rmin, rmax, r.TaskRange*r.MachineRange)
			}
			if rmax/rmin >= r.MachineRange {
				t.Fatalf("%s row %d: max/min = %g, not below the machine range %g", class, i, rmax/rmin, r.MachineRange)
			}
			lo, hi = min(lo, rmin), max(hi, rmax)
		}
		// The draws fill the range: 8,000 entries reach near both ends.
		if lo > r.TaskRange*r.MachineRange/100 || hi < 0.5*r.TaskRange*r.MachineRange {
			t.Errorf("%s: entries only span [%g, %g] of [1, %g)", class, lo, hi, r.TaskRange*r.MachineRange)
		}
	}
}

// TestConsistency checks the three consistencies on both methods.
func TestConsistency(t *testing.T) {
	for _, method := range []Params{
		{Method: CVB, Mean: 10, TaskCV: 0.5, MachineCV: 0.5},
		{Method: Range, TaskRange: 100, MachineRange: 10},
	} {
		for _, cons := range []string{Consistent, PartiallyConsistent, Inconsistent} {
			p := method
			p.Applications, p.Machines, p.Consistency, p.Seed = 2000, 9, cons, 11
			etc, err := Generate(p)
			if err != nil {
				t.Fatal(err)
			}
			sortedRows, sortedOdd := 0, 0
			for i, row := range etc {
				var even, odd []float64
				for j, x := range row {
					if j%2 == 0 {
						even = append(even, x)
					} else {
						odd = append(odd, x)
					}
				}
				if sort.Float64sAreSorted(row) {
					sortedRows++
				}
				if sort.Float64sAreSorted(odd) {
					sortedOdd++
				}
				switch cons {
				case Consistent:
					if !sort.Float64sAreSorted(row) {
						t.Fatalf("%s %s: row %d is not in increasing order: %v", p.Method, cons, i, row)
					}
				case PartiallyConsistent:
					if !sort.Float64sAreSorted(even) {
						t.Fatalf("%s %s: row %d's even columns are not in increasing order: %v", p.Method, cons, i, even)
					}
				}
			}
			// Unsorted parts stay as drawn: 4 odd columns are in order in
			// about 1/24 of the rows, 9 columns almost never.
			if cons != Consistent && sortedOdd > 2000/12 {
				t.Errorf("%s %s: the odd columns are sorted in %d of 2000 rows", p.Method, cons, sortedOdd)
			}
			if cons == Inconsistent && sortedRows > 5 {
				t.Errorf("%s inconsistent: %d of 2000 rows in increasing order", p.Method, sortedRows)
			}
		}
	}
}

// TestSeedsReproduce checks that a seed gives one matrix and another seed
// another, and pins a few entries: the same bits on every machine and Go
// version is the package's promise, and a change here breaks every study
// that relies on it.
func TestSeedsReproduce(t *testing.T) {
	for _, p := range []Params{
		{Method: CVB, Applications: 50, Machines: 7, Mean: 10, TaskCV: 0.3, MachineCV: 0.6, Seed: 42},
		{Method: CVB, Applications: 50, Machines: 7, Mean: 10, TaskCV: 2, MachineCV: 1.5, Seed: 42}, // shapes below 1
		{Class: "u_s_hilo", Applications: 50, Machines: 7, Seed: 42},
	} {
		a, err := Generate(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(p)
		if !slices.EqualFunc(a, b, slices.Equal) {
			t.Fatalf("%+v: two runs differ", p)
		}
		p.Seed++
		c, _ := Generate(p)
		if slices.EqualFunc(a, c, slices.Equal) {
			t.Fatalf("%+v: seeds %d and %d give one matrix", p, p.Seed-1, p.Seed)
		}
	}
	pinned := []struct {
		p    Params
		i, j int
		want float64
	}{
		{Params{Method: CVB, Applications: 3, Machines: 2, Mean: 10, TaskCV: 0.3, MachineCV: 0.6, Seed: 1}, 0, 0, 12.320849070181639},
		{Params{Method: CVB, Applications: 3, Machines: 2, Mean: 10, TaskCV: 0.3, MachineCV: 0.6, Seed: 1}, 2, 1, 11.430238684887593},
		{Params{Method: CVB, Applications: 3, Machines: 2, Mean: 10, TaskCV: 2, MachineCV: 1.5, Seed: 1}, 1, 1, 1.6550458549181957},
		{Params{Class: "u_c_hihi", Applications: 3, Machines: 2, Seed: 1}, 0, 1, 1.336289321254792e+06},
		{Params{Class: "u_i_lolo", Applications: 3, Machines: 2, Seed: 1}, 2, 0, 381.90649624794924},
	}
	for _, pin := range pinned {
		m, err := Generate(pin.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := m[pin.i][pin.j]; got != pin.want {
			t.Errorf("%s: [%d][%d] = %v, pinned %v", pin.p.Describe(), pin.i, pin.j, got, pin.want)
		}
	}
}

// TestClasses checks the twelve class names against Braun et al.'s table.
func TestClasses(t *testing.T) {
	if got := len(Classes()); got != 12 {
		t.Fatalf("%d classes", got)
	}
	for name, want := range map[string]class{
		"u_c_hihi": {3000, 1000, Consistent}, "u_i_hilo": {3000, 10, Inconsistent},
		"u_s_lohi": {100, 1000, PartiallyConsistent}, "u_c_lolo": {100, 10, Consistent},
	} {
		p, errs := Params{Class: name, Applications: 2, Machines: 2}.Resolve()
		if len(errs) > 0 || p.Method != Range || p.TaskRange != want.TaskRange || p.MachineRange != want.MachineRange || p.Consistency != want.Consistency {
			t.Errorf("%s: %+v %v", name, p, errs)
		}
	}
	for _, bad := range []Params{
		{Class: "u_x_hihi", Applications: 2, Machines: 2},
		{Class: "u_c_hihi.0", Applications: 2, Machines: 2},
		{Class: "u_c_hihi", Method: CVB, Applications: 2, Machines: 2},
		{Class: "u_c_hihi", TaskRange: 5, Applications: 2, Machines: 2},
		{Method: CVB, Mean: 1, TaskCV: 0.1, MachineCV: 0.1, TaskRange: 3, Applications: 2, Machines: 2},
		{Method: CVB, Mean: -1, TaskCV: 0.1, MachineCV: 0.1, Applications: 2, Machines: 2},
		{Method: Range, TaskRange: 0.5, MachineRange: 10, Applications: 2, Machines: 2},
		{Method: "normal", Applications: 2, Machines: 2},
		{Method: CVB, Mean: 1, TaskCV: 0.1, MachineCV: 0.1, Applications: 0, Machines: 2},
		{Method: CVB, Mean: 1, TaskCV: 0.1, MachineCV: 0.1, Applications: 2, Machines: 2, Consistency: "semi"},
	} {
		if _, errs := bad.Resolve(); len(errs) == 0 {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestDeterministicMath checks this package's logarithm and exponential
// against the library's.
func TestDeterministicMath(t *testing.T) {
	s := newStream(5)
	for k := 0; k < 100000; k++ {
		x := math.Ldexp(1+s.uniform(), s.intn(2000)-1000)
		if got, want := logDet(x), math.Log(x); math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) {
			t.Fatalf("logDet(%v) = %v, math.Log %v", x, got, want)
		}
		y := -700 * s.uniform() // normal results (Ldexp rounds subnormal ones)
		if got, want := expDet(y), math.Exp(y); math.Abs(got-want) > 4e-16*want {
			t.Fatalf("expDet(%v) = %v, math.Exp %v", y, got, want)
		}
	}
}

// TestSamplers checks the normal and gamma variates against their
// distribution functions (gonum) by the Kolmogorov-Smirnov statistic.
func TestSamplers(t *testing.T) {
	const n = 20000
	ks := func(name string, xs []float64, cdf func(float64) float64) {
		slices.Sort(xs)
		d := 0.0
		for i, x := range xs {
			f := cdf(x)
			d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
		}
		// The 0.999 quantile of sqrt(n) D is about 1.95.
		if d*math.Sqrt(n) > 1.95 {
			t.Errorf("%s: Kolmogorov-Smirnov sqrt(n) D = %.3f", name, d*math.Sqrt(n))
		}
	}
	s := newStream(9)
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = s.normal()
	}
	ks("normal", xs, distuv.UnitNormal.CDF)
	for _, shape := range []float64{0.25, 0.8, 1, 2.5, 30} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = s.gamma(shape, 3)
		}
		ks("gamma", xs, distuv.Gamma{Alpha: shape, Beta: 1.0 / 3}.CDF)
	}
}

func BenchmarkCVB2000x20(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(Params{Method: CVB, Applications: 2000, Machines: 20, Mean: 10, TaskCV: 0.3, MachineCV: 0.3, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
