package fluid

import (
	"testing"

	"pepa/lang"
)

// load checks a model's text and builds its fluid model.
func load(t testing.TB, src string) (*lang.Model, *Model) {
	t.Helper()
	m, diags := lang.Load("test.pepa", []byte(src))
	if m == nil {
		t.Fatalf("model does not load: %v", diags)
	}
	fm, err := Build(m)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return m, fm
}

// index is the population index of "Group:State".
func index(t testing.TB, fm *Model, name string) int {
	t.Helper()
	for i := 0; i < fm.Dim; i++ {
		if fm.StateName(i) == name {
			return i
		}
	}
	t.Fatalf("no population %s", name)
	return -1
}

// rk4 integrates dy/dt = f(y) from 0 to each of times with fixed steps
// of at most h: an integrator that shares nothing with the package's.
func rk4(f func(y, dy []float64), y0 []float64, times []float64, h float64) [][]float64 {
	n := len(y0)
	y := append([]float64(nil), y0...)
	k1, k2, k3, k4, tmp := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	var out [][]float64
	t := 0.0
	for _, tk := range times {
		for t < tk {
			step := h
			if t+step > tk {
				step = tk - t
			}
			f(y, k1)
			for i := range y {
				tmp[i] = y[i] + step/2*k1[i]
			}
			f(tmp, k2)
			for i := range y {
				tmp[i] = y[i] + step/2*k2[i]
			}
			f(tmp, k3)
			for i := range y {
				tmp[i] = y[i] + step*k3[i]
			}
			f(tmp, k4)
			for i := range y {
				y[i] += step / 6 * (k1[i] + 2*k2[i] + 2*k3[i] + k4[i])
			}
			t += step
		}
		out = append(out, append([]float64(nil), y...))
	}
	return out
}
