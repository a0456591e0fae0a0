// Package energy computes the energy figures of a mapping (semantics.md
// section 5): machine j draws its busy power b_j from t = 0 until it
// finishes (F_j) and its idle power i_j from then until the makespan
// M = max_j F_j, so a run's energy is
//
//	E = sum_j b_j F_j + i_j (M - F_j).
//
// This package holds the arithmetic on powers and finishing times: Power
// (checked), Expected, E[E] from the means (linearity: exact, whatever the
// dependence between machines), and OfRun, one run's energy. The
// distribution of E is computed in package models (energyfig.go), beside
// the groups' chains it needs: E is the reward accumulated until every
// machine has finished at rate rho(s) = sum_j (b_j if j runs in s, else
// i_j), so P(E <= B) is the passage into "every machine finished" of the
// chain whose rates in state s are divided by rho(s) (time there is
// energy); with every i_j = 0 the groups' energies are independent and
// add, and a sum of independent passage times is the passage of the chains
// run one after the other, whose size is the sum of theirs, not their
// product; and the joint figure counts, from finishing times drawn by
// simulation, the runs that meet both the makespan goal and the budget.
//
// Invariants: powers are finite and >= 0; the rate-divided chain needs rho > 0 in
// every state the passage can visit before it ends (a machine still
// running with busy power 0 and every idle power 0 would accumulate no
// energy while time passes: an error, not a division by zero).
package energy
