// Package coverage checks confidence intervals against exact values, for
// the simulation tests: how often the exact values fall outside, against
// the binomial bound the intervals' level gives, and that the intervals are
// not wider than their level needs (a floor on the misses, a bound on
// binomial intervals' widths).
package coverage
