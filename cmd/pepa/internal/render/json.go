package render

import (
	"encoding/json"
	"io"
	"math"

	"pepa/models"
	"pepa/passage"
)

// WriteJSON writes v as the command line prints JSON: indented by two
// spaces, keys sorted, a newline at the end.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Float maps NaN and infinities to null.
func Float(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// Interval is [lo, hi], or nil for an exact figure.
func Interval(lo, hi float64) any {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return nil
	}
	return []any{Float(lo), Float(hi)}
}

// Energy is a mapping's "energy" key (semantics.md section 5).
func Energy(e *models.EnergyResult) map[string]any {
	power := map[string]any{}
	for j, m := range e.Machines {
		power[m] = map[string]any{"busy": e.Busy[j], "idle": e.Idle[j]}
	}
	out := map[string]any{"expected": Float(e.Expected), "expected_error": Float(e.ExpectedError), "expected_simulated": e.ExpectedSimulated,
		"budget": Float(e.Budget), "p_by_budget": Float(e.PByBudget),
		"p_all_by_beta_within_budget": Float(e.PAllWithinBudget), "how": e.How, "power": power}
	if e.Confidence > 0 {
		out["p_by_budget_ci"] = Interval(e.PByBudgetLo, e.PByBudgetHi)
		out["p_all_by_beta_within_budget_ci"] = Interval(e.PAllWithinBudgetLo, e.PAllWithinBudgetHi)
		out["confidence"] = e.Confidence
	}
	return out
}

// Result is one mapping's figures as 'pepa robustness --format json'
// prints them (with its rank and group in a ranking).
func Result(r *models.Ranked, ranking bool) map[string]any {
	var ms []map[string]any
	for _, m := range r.Machines {
		mj := map[string]any{
			"name": m.Name, "applications": m.Applications,
			"first_actions": m.FirstActions, "last_actions": m.LastActions,
			"p_by_beta": Float(m.PByBeta), "mean": Float(m.Mean), "q99": Float(m.Quantile),
		}
		if m.Note != "" {
			mj["note"] = m.Note
		}
		if iv := Interval(m.PByBetaLo, m.PByBetaHi); iv != nil {
			mj["p_by_beta_ci"] = iv
			mj["mean_ci"] = Interval(m.MeanLo, m.MeanHi)
			mj["q99_ci"] = Interval(m.QuantileLo, m.QuantileHi)
		}
		if !math.IsNaN(m.Availability) {
			mj["availability"] = m.Availability
			mj["slowdown"] = m.Slowdown
		}
		if sv := m.Sensitivity; sv != nil {
			var rates []map[string]any
			for _, rs := range sv.Rates {
				rates = append(rates, map[string]any{"rate": rs.Rate, "value": rs.Value, "derivative": rs.Derivative,
					"elasticity": rs.Elasticity, "application": rs.Application})
			}
			mj["sensitivity"] = map[string]any{"radius": Float(sv.Radius), "level": sv.Level, "rates": rates}
		}
		ms = append(ms, mj)
	}
	out := map[string]any{
		"model": r.Model, "beta": r.Beta, "semantics": string(r.Semantics), "states": r.States,
		"product_states": Float(r.ProductStates),
		"solved":         r.Solved, "solved_why": r.Why, "machines": ms,
		"robustness": Float(r.Robustness), "p_all_by_beta": Float(r.PAllByBeta),
		"expected_makespan": Float(r.ExpectedMakespan), "expected_makespan_error": Float(r.MakespanError),
		"independent": r.Independent, "joint": r.Joint,
	}
	if len(r.Warnings) > 0 {
		out["warnings"] = r.Warnings
	}
	if r.Energy != nil {
		out["energy"] = Energy(r.Energy)
	}
	if r.Epsilon > 0 {
		out["epsilon"] = r.Epsilon
	}
	if iv := Interval(r.PAllLo, r.PAllHi); iv != nil && r.Confidence > 0 {
		out["p_all_by_beta_ci"] = iv
		out["expected_makespan_ci"] = Interval(r.MakespanLo, r.MakespanHi)
		out["confidence"] = r.Confidence
	}
	if len(r.Groups) > 0 {
		var gs []map[string]any
		for _, g := range r.Groups {
			gj := map[string]any{"machines": g.Machines, "components": g.Components, "states": g.States,
				"solved": g.Solved, "why": g.Why, "p_all_by_beta": Float(g.PAllByBeta), "expected_finish": Float(g.Mean)}
			if iv := Interval(g.PAllLo, g.PAllHi); iv != nil {
				gj["p_all_by_beta_ci"] = iv
			}
			if g.Transient == passage.EngineLaplace {
				gj["transient"] = map[string]any{"engine": g.Transient, "why": g.TransientWhy}
			}
			gs = append(gs, gj)
		}
		out["groups"] = gs
	}
	if ranking {
		out["rank"] = r.Rank
		out["group"] = r.Group
	}
	return out
}
