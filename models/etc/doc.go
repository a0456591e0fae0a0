// Package etc draws expected-time-to-compute (ETC) matrices by the methods
// of the heterogeneous-computing literature, for mapping studies on the
// field's own kind of instances:
//
//   - the range-based method of Braun et al., "A comparison of eleven
//     static heuristics for mapping a class of independent tasks onto
//     heterogeneous distributed computing systems", JPDC 61(6), 2001
//     (first in Ali et al. 2000, below): a task's baseline tau_i is uniform
//     on [1, task_range), and ETC[i][j] = tau_i x_ij with x_ij uniform on
//     [1, machine_range). Braun et al.'s twelve classes u_C_TTMM are the
//     shorthands: C is c (consistent), i (inconsistent) or s (semi- or
//     partially consistent), TT the task heterogeneity (hi: 3000, lo: 100),
//     MM the machine heterogeneity (hi: 1000, lo: 10);
//   - the coefficient-of-variation-based (CVB) method of Ali, Siegel,
//     Maheswaran, Hensgen and Ali, "Task execution time modeling for
//     heterogeneous computing systems", HCW 2000 (and Tamkang J. Sci. Eng.
//     3(3), 2000): with a_t = 1/task_cv^2 and a_m = 1/machine_cv^2, a
//     task's mean q_i is Gamma(shape a_t, scale mean/a_t), and ETC[i][j] is
//     Gamma(shape a_m, scale q_i/a_m), so the mean is mean, q's CV is
//     task_cv and a row's CV is machine_cv.
//
// Consistency (both methods, Ali et al. 2000): consistent sorts every row
// in increasing order (machine 1 is the fastest for every application,
// machine 2 the next, ...); partially consistent sorts the entries in the
// even columns (1st, 3rd, 5th, ... machine) of every row among themselves
// and leaves the odd columns as drawn; inconsistent leaves the matrix as
// drawn.
//
// # Invariants
//
//   - Same parameters and seed, same matrix, bit for bit, on every machine
//     and Go version: the generator is math/rand/v2's PCG (whose output for
//     a seed is fixed) read only through Uint64, and every transformation
//     after it is written here in float64 arithmetic whose results IEEE 754
//     fixes: +, -, *, /, math.Sqrt, Frexp, Ldexp, and a logarithm and an
//     exponential of this package's own (the library's have assembly
//     versions that may differ in the last bit between architectures).
//     Products are converted explicitly (float64(a*b)) so that no compiler
//     fuses them into a multiply-add.
//   - Every entry is positive and finite; a range-based entry lies in
//     [1, task_range * machine_range), and within a row in [tau_i,
//     tau_i * machine_range).
package etc
