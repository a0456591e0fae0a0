// Package lang is the front end for the PEPA dialect of this project
// (docs/language.md): scanner, parser, syntax tree, static checker
// and printer. It knows nothing of Markov chains.
//
// # Pipeline
//
// Parse scans the source, cuts it into statements at ';' and parses each
// statement with a participle grammar (grammar.go) into a typed syntax tree
// (ast.go) in which every node carries its position. Check resolves names,
// evaluates rate expressions and runs the static checks; Load does both.
// Format prints a tree in canonical layout with its comments.
//
// # Invariants
//
//   - No input panics, hangs or exhausts memory. Bracket nesting is bounded
//     (MaxNesting) before the recursive-descent parser runs, and every other
//     repetition (a + b + c, - - x, prefixes (a, r).(b, s).P, cooperation
//     chains) is parsed as a list, not by recursion.
//   - Every error is reported, not only the first, and each cause once: a
//     lexical error does not stop the scanner, a syntax error spoils only its
//     own statement (at most one lexical error a statement), the names a
//     statement that failed to parse would define are not reported again as
//     undefined, an undefined or malformed name is reported at its first use
//     only, and a statement's syntax error is put into words once every
//     statement is parsed (recover.go), so that it can be blamed on the
//     definition that caused it or named as another tool's extension.
//   - Diagnostics have the form FILE:LINE:COL: error|warning: MESSAGE, are
//     sorted by position, and columns count bytes from 1 (after a UTF-8
//     byte-order mark, which is accepted at the start of a file). A file
//     with syntax errors gets no checker warnings: the part that did not
//     parse may hold the use of an "unused" definition.
//   - Static checks report errors only where they are certain. A passive
//     activity is an error when it is certainly enabled at the top level in
//     a reachable state (reached by moves nothing can block, see
//     passiveCheck), a warning when every activity of its action reaching
//     the top is passive but reachability is not certain, and otherwise
//     left to the derivation, which decides on the reachable states
//     (semantics.md section 1).
//   - Parse(Format(f)) equals f up to positions and comments (Equal), and
//     Format is idempotent.
//   - A Model is handed out only when there are no errors; its invariants are
//     listed on the type.
//
// # Speed
//
// Participle parses by reflection, about 10 µs per short statement. Mapping
// models repeat a few statement shapes tens of thousands of times, so each
// shape is parsed once and its tree re-instantiated with the tokens of later
// statements of the same shape (shape.go); statements are parsed on all
// cores. A 1.3 MB model of 10,000 applications on 1,000 machines parses and
// checks in well under a second (BenchmarkLoadMapping10k).
package lang
