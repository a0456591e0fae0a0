// Package render is the JSON of a robustness result, as 'pepa robustness
// --format json' prints it: the command line and 'pepa serve' both print
// it from here, so that the server's figures are the command line's byte
// for byte.
//
// Invariants: deterministic output (maps encode with sorted keys); NaN and
// infinities are null (Float), never an encoding error; an exact figure
// has no interval (Interval is nil).
package render
