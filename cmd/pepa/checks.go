package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pepa/models/plot"
)

// checker checks a verb's flags in one place: the first check that fails
// prints the usage error (pepa VERB: MESSAGE, and where the usage is) and
// sets code to exitUsage; later checks do nothing. code is -1 while every
// check has passed.
type checker struct {
	e    *env
	verb string
	code int
	done bool
}

// require fails with the message unless ok.
func (c *checker) require(ok bool, format string, args ...any) {
	if c.done || ok {
		return
	}
	c.done = true
	c.code = usageError(c.e, c.verb, format, args...)
}

// failed reports whether a check has failed (code is then the exit code).
func (c *checker) failed() bool { return c.done }

// positiveSeconds checks a time in seconds: positive and finite (or 0
// when not required and not given).
func (c *checker) positiveSeconds(flag string, v float64, required bool) {
	switch {
	case required && v == 0:
		c.require(false, "%s is required", flag)
	case v == 0 && !required:
	default:
		c.require(v > 0 && !math.IsInf(v, 0), "%s must be a positive number of seconds", flag)
	}
}

// oneOf checks a flag's value against its choices.
func (c *checker) oneOf(flag, v string, choices ...string) {
	for _, x := range choices {
		if v == x {
			return
		}
	}
	c.require(false, "%s must be %s", flag, orList(choices))
}

// epsilon checks a bound on truncation errors.
func (c *checker) epsilon(v float64) {
	c.require(v > 0 && v < 0.1, "--epsilon must be in (0, 0.1)")
}

// names splits a comma-separated list of names, each at most once.
func (c *checker) names(flag, list string) []string {
	out := splitList(list)
	seen := map[string]bool{}
	for _, n := range out {
		c.require(!seen[n], "%s names %s twice", flag, n)
		seen[n] = true
	}
	return out
}

// probabilities reads a comma-separated list of probabilities in (0, 1).
func (c *checker) probabilities(flag, list string) []float64 {
	ps, err := parseFloats(list)
	c.require(err == nil, "%s: %v", flag, err)
	for _, p := range ps {
		c.require(p > 0 && p < 1, "%s: %g is not a probability in (0, 1)", flag, p)
	}
	return ps
}

// grid reads --times START:STOP:STEP and --at t1,t2 into one sorted list.
func (c *checker) grid(times, at string) []float64 {
	g, err := parseGrid(times, at)
	c.require(err == nil, "%v", err)
	return g
}

// plot checks a --plot file name and returns its format ("": none).
func (c *checker) plot(path string) string {
	if path == "" {
		return ""
	}
	f, err := plot.PlotFormat(path)
	c.require(err == nil, "--plot: %v", err)
	return f
}

// sim checks the stopping and confidence flags of a simulation.
func (c *checker) sim(f *simFlags) {
	c.require(f.confidence > 0 && f.confidence < 1, "--confidence must be in (0, 1)")
	c.require(!(f.precision < 0 || math.IsNaN(f.precision)), "--precision must not be negative")
	c.require(f.replications >= 0, "--replications must not be negative")
	c.require(f.budget >= 0, "--budget must not be negative")
	c.require(f.workers >= 0, "--workers must not be negative")
}

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, x)
	}
	return out, nil
}
