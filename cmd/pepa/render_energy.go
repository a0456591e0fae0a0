package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"pepa/models"
)

// energyText prints a mapping's energy figures under its makespan ones.
func energyText(w io.Writer, r *models.Ranked) {
	e := r.Energy
	if e == nil {
		return
	}
	var parts []string
	for j, m := range e.Machines {
		parts = append(parts, fmt.Sprintf("%s %g/%g", m, e.Busy[j], e.Idle[j]))
	}
	fmt.Fprintf(w, "\npower (W, busy/idle):            %s\n", strings.Join(limitNames(parts, 12), ", "))
	if e.ExpectedSimulated {
		fmt.Fprintf(w, "expected energy E[E]:            %s J  (%g%% interval)\n", textInterval(e.Expected, e.Expected-e.ExpectedError, e.Expected+e.ExpectedError, "%.2f"), 100*e.Confidence)
	} else {
		fmt.Fprintf(w, "expected energy E[E]:            %s J  (error <= %.2g)\n", textFloat(e.Expected, "%.6f"), e.ExpectedError)
	}
	if math.IsNaN(e.Budget) {
		return
	}
	fmt.Fprintf(w, "P(E <= %g):%s%s\n", e.Budget, pad(len(fmt.Sprintf("P(E <= %g):", e.Budget)), 33), energyProb(e.PByBudget, e.PByBudgetLo, e.PByBudgetHi, e.Confidence))
	label := fmt.Sprintf("P(max_j F_j <= %g and E <= %g):", r.Beta, e.Budget)
	fmt.Fprintf(w, "%s%s%s\n", label, pad(len(label), 33), energyProb(e.PAllWithinBudget, e.PAllWithinBudgetLo, e.PAllWithinBudgetHi, e.Confidence))
	fmt.Fprintf(w, "energy figures:                  %s\n", e.How)
}

// energyProb is an exact probability, or an estimate with its interval.
func energyProb(v, lo, hi, confidence float64) string {
	if confidence > 0 && lo != hi {
		return textInterval(v, lo, hi, "%.6f")
	}
	return textFloat(v, "%.10f")
}

func pad(used, width int) string {
	if used >= width {
		return " "
	}
	return strings.Repeat(" ", width-used)
}

// hasEnergy reports whether some mapping has energy figures, and a budget.
func hasEnergy(ranked []*models.Ranked) (energy, budget bool) {
	for _, r := range ranked {
		if r.Energy != nil {
			energy = true
			budget = budget || !math.IsNaN(r.Energy.Budget)
		}
	}
	return energy, budget
}

// energyColumns are a ranking's energy cells: E[E], and with a budget
// P(E <= B) and the joint figure ("" for a mapping without them).
func energyColumns(r *models.Ranked, budget bool, f func(float64) string) []string {
	if r.Energy == nil {
		if budget {
			return []string{"", "", ""}
		}
		return []string{""}
	}
	out := []string{f(r.Energy.Expected)}
	if budget {
		out = append(out, f(r.Energy.PByBudget), f(r.Energy.PAllWithinBudget))
	}
	return out
}

// energyCSV is the energy columns of a ranking's or a summary's CSV: the
// header's suffix, and each row's cells ("" when no mapping has energy
// figures).
func energyCSV(ranked []*models.Ranked) (string, func(*models.Ranked) string) {
	energy, budget := hasEnergy(ranked)
	if !energy {
		return "", func(*models.Ranked) string { return "" }
	}
	head := ",expected_energy"
	if budget {
		head += ",p_by_budget,p_all_by_beta_within_budget"
	}
	return head, func(r *models.Ranked) string { return "," + strings.Join(energyColumns(r, budget, csvFloat), ",") }
}
