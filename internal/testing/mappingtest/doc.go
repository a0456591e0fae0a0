// Package mappingtest holds what the tests of models/spec and
// models/optimize share about mapping models: a random specification (as
// JSON: the package cannot import models/spec, whose own tests use it), a
// generated model read back with its pragmas, and the analysis by groups
// of coupled machines. Imported by tests only.
package mappingtest
