// Package testchain loads models into compiled structures and derived
// chains for the tests of the packages above ctmc.
package testchain
