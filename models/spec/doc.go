// Package spec reads mapping specifications (semantics.md section 4) and
// writes the mapping models they describe. It holds: spec.go (Spec, the
// JWCC file; Instance, the specification resolved; LoadSpec, ParseSpec and
// SpecError), gen.go (Generate, WriteSpec, and machineMoves: a combined
// machine's states described once, for gen and for the chains optimize
// builds), ownshare.go (owners and pools of users), shared.go (shared
// resources: networks, file servers), etccsv.go and etcspec.go (ETC
// matrices from CSV files or drawn by package etc), energyspec.go (power),
// named.go (what the resolvers share about things given by name: a
// section of named objects, a value per machine or per application as a
// list or an object), rules.go (mappings given by rule) and heuristics.go
// (the heuristics of Braun et al. 2001 that a rule names and optimize
// starts from).
//
// Invariants: specifications are JWCC; every error a specification gets
// has its file, line, column and field path (SpecError). Generate writes
// lang.Format's canonical layout, in time linear in the model. A
// specification's ETC matrix may be drawn (etc_generate, package etc: the
// same bits on every machine) and its mappings given by rule (a heuristic,
// as optimize runs it, or random mappings uniform among those with at
// least k applications per machine, each from its own stream of the
// seed). Shared resources are components the machines that stage input
// through them cooperate with (a request and a transfer before each
// application with data), so those machines form a group. Owner embeds
// models.Owner, the workload a model's pepa:owner pragma carries, and adds
// how the owner's jobs use the resources.
//
// Dependencies: lang, ctmc, models (the pragma's Owner, machine names),
// models/energy, models/etc; never models/optimize or models/plot.
package spec
