package main

import "pepa/internal/option"

// The libraries name their options by key ({MaxStates}, package option);
// pepa's messages name them by their flags, as they always have.
func init() {
	option.Spell(map[string]string{
		"MaxStates": "--max-states", "Machines": "--machines", "Semantics": "--semantics", "Cycling": "--cycling",
		"Flat": "--flat", "Sensitivity": "--sensitivity", "Simulate": "--simulate", "Transient": "--transient",
		"BusyPower": "--busy-power", "IdlePower": "--idle-power", "Replications": "--replications",
		"Mapping": "--mapping", "Dir": "--dir", "TargetActions": "--target-action", "SourceActions": "--source-action",
		"Mean": "--mean", "Precision": "--precision", "Budget": "--budget", "Vary": "--vary", "Shard": "--shard",
		"Memory": "--memory", "Method": "--method",
		"SimulateVerb": "'pepa simulate'", "SimulateRobustness": "'pepa simulate --beta'",
	})
}
