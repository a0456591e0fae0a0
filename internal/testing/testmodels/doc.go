// Package testmodels writes PEPA models for tests and benchmarks (with the
// closed forms some of them have). It imports nothing of the project, so
// every package's tests can use it.
package testmodels
