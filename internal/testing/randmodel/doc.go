// Package randmodel writes small random PEPA models, as source text, for the
// differential tests of the solvers against internal/testing/reference. A seed
// determines the model.
//
// The models go where hand-written tests do not: choices with duplicate
// prefixes and with one action leading to different targets, self-loops,
// constant aliases (P = Q;), repeated anonymous continuations, cooperation
// with blocked and hidden actions, weighted passive partners, components
// passive on an action in one derivative and active in another, arrays with
// and without cooperation sets, stiff rates (1e-4 to 1e4), transient
// start-up phases, and chains that are reducible or deadlock. Mapping-shaped
// models (passive single-state applications, machines racing an ideal and a
// perturbed path through their compute actions) are a family of their own.
//
// Invariants: the text always parses; passive activities are only ever
// written on an action that the enclosing cooperation synchronises with an
// active-only partner (or blocks), so lang.Load accepts every model and no
// reachable state exposes a passive activity at the top level. The one
// deliberate exception is feature "mixed-array" (also a family of its own,
// one seed in thirty): an array of a component
// that is passive on an action in one derivative and active in another,
// which is invalid at run time (undefined apparent rate) as soon as two
// copies disagree, so that refusals are compared too. In general models the
// product of the components' local derivative counts is at most MaxProduct;
// mapping models have at most four applications on three machines; so
// chains stay small enough for dense methods. The coupled family writes
// mapping models whose machines come in groups of 1 to 4 that share a
// component of 2 to 4 local states (served passively, with weights, or
// actively) or cooperate on a barrier, with their names and cycle-closing
// actions in Model.Machines and Cycles, for the reference's stop rule.
//
// Profiles set the sizes: Small (Generate) as above, Medium (GenerateWith)
// general and mapping models whose products of local state counts reach the
// thousands, for the solvers' iterative paths; a seed gives the same text in
// a profile on every machine.
package randmodel
