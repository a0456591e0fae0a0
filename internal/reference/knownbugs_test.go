package reference_test

// Known real-solver bugs, each being fixed on another branch. knownBug names
// the bug that explains a disagreement, or returns "". The lead deletes an
// entry when its fix lands; the differential test then fails if the bug is
// still there. Each entry was reduced by hand to a small model (report of
// branch refsem).
const (
	bugTargetSelfLoop = "passage: uniformization rate leaves target self-loops out (branch passage)"
	bugStiffSteady    = "ctmc: steady state inaccurate or unconverged on stiff chains (branch steady)"
	bugTransient      = "ctmc: chains with transient states draining into one closed class refused (branch steady)"
	bugStiffMean      = "passage: mean passage time does not converge on stiff chains (branch passage)"
	bugTermIdentity   = "ctmc: local derivatives not identified by term, issue 13 (branch derive)"
)

func knownBug(d disagreement) string {
	f := d.Facts
	switch d.Kind {
	case "passage-cdf":
		if f.TargetSelfLoop {
			return bugTargetSelfLoop
		}
	case "steady-refused", "plugin-steady-error":
		if f.Transient {
			return bugTransient
		}
		if f.Stiff {
			return bugStiffSteady
		}
	case "throughput":
		if f.Stiff {
			return bugStiffSteady
		}
	case "passage-mean-error":
		if f.Stiff {
			return bugStiffMean
		}
	}
	// Plug-in weights are the steady state: on a stiff chain they inherit
	// its error (seed 172: CDF 6e-9 and mean 8e-8 off the closed form,
	// which the reference matches to 1e-15).
	if f.Stiff && f.PassageKind == "plugin" && (d.Kind == "passage-cdf" || d.Kind == "passage-mean") {
		return bugStiffSteady
	}
	// Plug-in passages and state targets depend on which states the chain
	// has (sources and targets are sets of states).
	if f.TermMismatch && (f.PassageKind == "plugin" || f.PassageKind == "initial-states") {
		return bugTermIdentity
	}
	return ""
}
