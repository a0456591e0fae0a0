package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestPassageTargetSelfLoops: the passage to the first firing of a target
// action that labels self-loops, on every solution path. In each model the
// a-rates out of every state sum to lambda, so the first firing of a is
// Exp(lambda) and its mean 1/lambda.
func TestPassageTargetSelfLoops(t *testing.T) {
	cases := []struct {
		src    string
		lambda float64
	}{
		{"P = (a, 2.0).P; P\n", 2},
		{"A0 = (a, 0.5).A0 + (a, 1.0).A0; A0\n", 1.5},
		{"A0 = (a, 2.0).A0 + (a, 2.0).A0 + (c, 0.01).A0; A0[2][a]\n", 4},
		{"A0 = (a, 2.0).A0 + (c, 0.01).A0; B = (b, 1.0).B; A0[3] <> B\n", 6},
	}
	for _, tc := range cases {
		model := writeTemp(t, "selfloop.pepa", tc.src)
		for _, flags := range [][]string{nil, {"--flat"}, {"--aggregate=false"}, {"--flat", "--aggregate=false"}} {
			args := append([]string{"passage", "--format", "json", "--target-action", "a", "--at", "0.25,0.5,1,2", "--quantile", "0.5"}, flags...)
			code, out, stderr := runPepa(t, "", append(args, model)...)
			if code != exitOK {
				t.Fatalf("%s %v: exit %d: %s", tc.src, flags, code, stderr)
			}
			var res struct {
				Mean   *float64 `json:"mean"`
				Points []struct {
					T   float64 `json:"t"`
					CDF float64 `json:"cdf"`
				} `json:"points"`
				Quantiles []struct {
					P float64  `json:"p"`
					T *float64 `json:"t"`
				} `json:"quantiles"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			what := strings.TrimSpace(tc.src) + " " + strings.Join(flags, " ")
			for _, p := range res.Points {
				if want := 1 - math.Exp(-tc.lambda*p.T); math.Abs(p.CDF-want) > 1e-10 {
					t.Errorf("%s: F(%g) = %.12g, Exp(%g) gives %.12g", what, p.T, p.CDF, tc.lambda, want)
				}
			}
			if len(res.Points) != 4 {
				t.Errorf("%s: %d points", what, len(res.Points))
			}
			if res.Mean == nil || math.Abs(*res.Mean-1/tc.lambda) > 1e-10 {
				t.Errorf("%s: mean %v, want %g", what, res.Mean, 1/tc.lambda)
			}
			if len(res.Quantiles) != 1 || res.Quantiles[0].T == nil || math.Abs(*res.Quantiles[0].T-math.Ln2/tc.lambda) > 1e-8 {
				t.Errorf("%s: median %+v, want %g", what, res.Quantiles, math.Ln2/tc.lambda)
			}
		}
	}
}

// TestRobustnessOneApplication: a machine with one application (its
// completion a self-loop) finishes at Exp(r), flat and decomposed.
func TestRobustnessOneApplication(t *testing.T) {
	r, beta := 2.5, 1.0
	model := writeTemp(t, "one.pepa", "r = 2.5;\nA1 = (compute1, infty).A1;\nM = (compute1, r).M;\nA1 <compute1> M\n")
	for _, flags := range [][]string{nil, {"--flat"}, {"--aggregate=false"}, {"--semantics", "initial"}} {
		args := append([]string{"robustness", "--format", "json", "--beta", "1"}, flags...)
		code, out, stderr := runPepa(t, "", append(args, model)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", flags, code, stderr)
		}
		var res struct {
			Robustness float64 `json:"robustness"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if want := 1 - math.Exp(-r*beta); math.Abs(res.Robustness-want) > 1e-10 {
			t.Errorf("%v: robustness %.12g, want %.12g\n%s", flags, res.Robustness, want, out)
		}
	}
}

// TestPassageLongAndStiff: the 4-state model whose dead mass used to keep
// the series running past its cap (d fires with probability 0.5/300.5 at
// rate 300.5, then never), at t = 1e5 and 1e9; and a two-state chain with
// rates 1e19 and 1 (the first firing of b is Exp(1e19) + Exp(1)), which
// only the dense path can do.
func TestPassageLongAndStiff(t *testing.T) {
	four := writeTemp(t, "four.pepa", "A0 = (d, 0.5).A1 + (b, 300.0).A1; A1 = (f, 1.5).A0; B0 = (b, 1.0).B1; B1 = (a, 0.5).B0; B0 <f> A0\n")
	stiff := writeTemp(t, "stiff.pepa", "P = (a, 1e19).Q; Q = (b, 1.0).P; P\n")
	cases := []struct {
		file, action string
		cdf          func(float64) float64
	}{
		{four, "d", func(at float64) float64 { return 0.5 / 300.5 * (1 - math.Exp(-300.5*at)) }},
		{stiff, "b", func(at float64) float64 {
			l1, l2 := 1e19, 1.0
			return 1 - (l2*math.Exp(-l1*at)-l1*math.Exp(-l2*at))/(l2-l1)
		}},
	}
	for _, tc := range cases {
		code, out, stderr := runPepa(t, "", "passage", "--format", "json", "--target-action", tc.action, "--at", "1e-3,1,1e5,1e9", "--quantile", "0.001", tc.file)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.file, code, stderr)
		}
		var res struct {
			Points []struct {
				T   float64 `json:"t"`
				CDF float64 `json:"cdf"`
			} `json:"points"`
			Quantiles []struct {
				T *float64 `json:"t"`
			} `json:"quantiles"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Points {
			if want := tc.cdf(p.T); math.Abs(p.CDF-want) > 1e-10 {
				t.Errorf("%s: F(%g) = %.12g, want %.12g", tc.action, p.T, p.CDF, want)
			}
		}
		if len(res.Quantiles) != 1 || res.Quantiles[0].T == nil || math.Abs(tc.cdf(*res.Quantiles[0].T)-0.001) > 1e-9 {
			t.Errorf("%s: 0.001 quantile %+v", tc.action, res.Quantiles)
		}
	}
}
