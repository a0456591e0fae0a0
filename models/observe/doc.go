// Package observe computes a mapping's robustness figures from what a
// controller has seen of a running batch (semantics.md section 6): a
// record of completions (time, machine, action) up to now. The state of
// each machine is partly known (which application it is on) and partly
// hidden (the path it took, its owner, the network's queue); the figures
// are those of the chain started at now from the filtered distribution:
// between completions the chain runs on its unobserved transitions only,
// every state keeping its full exit rate (passage.Hidden); at a completion
// exactly the observed action's transitions by that machine are taken
// (passage.Observe); at now the unobserved part runs once more and the
// distribution is normalised.
//
// A Tracker keeps, per group of coupled machines (groups stay independent
// given the record), its chain (finished machines stopped, as
// models.AnalyzeGroups derives it) and its filtered distribution at its
// last completion, scaled to sum 1 (the record's likelihood is not
// needed, only where the mass is). Add filters one completion on its
// machine's group alone; Figures runs every group on to now and hands the
// distributions to AnalyzeGroups (models.Options.GroupStart), the machines
// whose cycle the record completes reported finished at their recorded
// time. Observed actions are the machines' actions that another component
// performs passively (their applications' compute actions, their requests
// and transfers on a resource); a machine's private actions (Erlang
// phases, an owner written into it) are hidden, like everything else.
//
// A Snapshot is the Tracker frozen at the record taken so far (the chains
// shared, the filtered state a few pointers a group): a server computes
// figures on one while the Tracker takes the next completions.
//
// Invariants: a record is in time order, at times >= 0, and up to now; a
// completion the model cannot produce from any state consistent with the
// record before it (probability 0) is an error naming it (its line in a
// file), and the Tracker is left as it was. The work is bounded: the
// filter runs at most passage.MaxHiddenSteps uniformization steps past a
// group's last completion (a later time or now is a RangeError naming the
// latest one taken), and every computation stops when its context ends.
package observe
