package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"pepa/passage"
)

// passagePoint and passageQuantile are a passage's rows in JSON.
type passagePoint struct {
	T   float64  `json:"t"`
	CDF float64  `json:"cdf"`
	PDF *float64 `json:"pdf,omitempty"`
}

type passageQuantile struct {
	P float64  `json:"p"`
	T *float64 `json:"t"` // null: the target is reached with a smaller probability
}

// passageDoc is what --format json prints of a passage.
type passageDoc struct {
	Model         string   `json:"model"`
	Semantics     string   `json:"semantics"`
	Solved        string   `json:"solved"`
	SolvedWhy     string   `json:"solved_why"`
	SourceActions []string `json:"source_actions"`
	TargetActions []string `json:"target_actions"`
	Target        string   `json:"target,omitempty"`
	States        int      `json:"states"`
	Epsilon       float64  `json:"epsilon"`
	Q             float64  `json:"uniformization_rate"`
	Iterations    int      `json:"iterations"`
	Method        string   `json:"method"`
	Reachable     bool     `json:"reachable"`
	Mean          *float64 `json:"mean"`
	// MeanUnavailable says why the mean is null although the passage
	// ends: it could not be computed (the CDF is exact).
	MeanUnavailable string `json:"mean_unavailable,omitempty"`
	// Transient says why the Laplace engine solved the passage (absent:
	// uniformization).
	Transient string            `json:"transient,omitempty"`
	Points    []passagePoint    `json:"points"`
	Quantiles []passageQuantile `json:"quantiles,omitempty"`
}

func (a *passageCmd) document(result any) any {
	an := result.(*passage.Analysis)
	d := &passageDoc{Model: displayName(a.files[0]), Semantics: string(an.Semantics), Solved: an.Solved, SolvedWhy: an.SolvedWhy,
		SourceActions: nonNil(a.query.SourceActions), TargetActions: nonNil(a.query.TargetActions), Target: a.query.Target,
		States: an.Chain.N}
	if r := an.Result; r != nil {
		d.Epsilon, d.Q, d.Iterations, d.Method, d.Reachable = r.Epsilon, r.Q, r.Iterations(), r.Method, r.Reachable
	} else {
		// The Laplace engine: its estimated accuracy, its solves.
		ld := an.Distribution.(*passage.LaplaceDistribution)
		d.Epsilon, d.Iterations, d.Method = ld.Accuracy(), ld.Engine.Solves(), passage.EngineLaplace
		d.Q = passage.UniformizationRate(an.Chain, []passage.Problem{an.Problem})
		d.Reachable = ld.Engine.Limit(0) > 0
		d.Transient = an.EngineWhy
	}
	if !math.IsInf(an.Mean, 1) && !math.IsNaN(an.Mean) {
		mean := an.Mean
		d.Mean = &mean
	}
	switch {
	case an.MeanErr != nil:
		d.MeanUnavailable = an.MeanErr.Error()
	case an.MeanFrom == "not asked":
		d.MeanUnavailable = "not asked (--mean=false)"
	}
	for _, p := range an.Points {
		pt := passagePoint{T: p.T, CDF: p.CDF}
		if a.query.PDF {
			pdf := p.PDF
			pt.PDF = &pdf
		}
		d.Points = append(d.Points, pt)
	}
	for _, q := range an.Quantiles {
		qp := passageQuantile{P: q.P}
		if !math.IsInf(q.T, 1) {
			t := q.T
			qp.T = &t
		}
		d.Quantiles = append(d.Quantiles, qp)
	}
	return d
}

func (a *passageCmd) render(e *env, result any) int {
	an := result.(*passage.Analysis)
	name := displayName(a.files[0])
	a.timer().print(e.stderr, "passage", name)
	if a.o.verbose && an.Engine != "" {
		fmt.Fprintf(e.stderr, "pepa passage: %s: transient engine: %s: %s\n", name, an.Engine, an.EngineWhy)
	}
	d := a.document(an).(*passageDoc)
	if !d.Reachable {
		fmt.Fprintf(e.stderr, "%s: warning: the target cannot be reached from the start: every CDF value is 0\n", name)
	}
	if r := an.Result; r != nil && r.Epsilon > a.eps {
		fmt.Fprintf(e.stderr, "%s: warning: --epsilon %g is below what float64 can keep over %d steps; every CDF value is within %.2g instead\n", name, a.eps, r.Iterations(), r.Epsilon)
	} else if r == nil && d.Epsilon > a.eps {
		fmt.Fprintf(e.stderr, "%s: warning: --epsilon %g is below what the Laplace inversion keeps in float64; every CDF value is within an estimated %.2g instead\n", name, a.eps, d.Epsilon)
	}
	if an.MeanErr != nil {
		fmt.Fprintf(e.stderr, "%s: warning: %v\n", name, an.MeanErr)
	}
	err := writeOutput(e, a.o.out, func(w io.Writer) error {
		switch a.o.format {
		case "json":
			return writeJSON(w, d)
		case "csv":
			return passageCSV(w, d, a.query.PDF)
		}
		return a.text(w, an, d)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa passage: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// passageCSV is the CDF (and density) grid as CSV.
func passageCSV(w io.Writer, d *passageDoc, pdf bool) error {
	if len(d.Points) == 0 {
		return nil
	}
	if pdf {
		fmt.Fprintln(w, "t,cdf,pdf")
	} else {
		fmt.Fprintln(w, "t,cdf")
	}
	for _, p := range d.Points {
		if p.PDF != nil {
			fmt.Fprintf(w, "%s,%s,%s\n", fmtFloat(p.T), fmtFloat(p.CDF), fmtFloat(*p.PDF))
		} else {
			fmt.Fprintf(w, "%s,%s\n", fmtFloat(p.T), fmtFloat(p.CDF))
		}
	}
	return nil
}

// text is the passage as a table, with what it is, its mean and its
// accuracy.
func (a *passageCmd) text(w io.Writer, an *passage.Analysis, d *passageDoc) error {
	r := an.Result
	fmt.Fprintf(w, "model:      %s (%d states, solved %s: %s)\n", d.Model, d.States, an.Solved, an.SolvedWhy)
	switch {
	case a.query.Target != "":
		fmt.Fprintf(w, "passage:    from the initial state into states where %s\n", a.query.Target)
	case an.Semantics == passage.Plugin:
		fmt.Fprintf(w, "passage:    plug-in semantics, from states entered by %s to states entered by %s\n", a.source, a.target)
	default:
		fmt.Fprintf(w, "passage:    from the initial state to the first firing of %s\n", a.target)
	}
	switch {
	case d.Mean != nil:
		fmt.Fprintf(w, "mean:       %.10g\n", an.Mean)
	case an.MeanFrom == "not asked":
		fmt.Fprintf(w, "mean:       not asked (--mean=false)\n")
	case an.MeanErr != nil:
		fmt.Fprintf(w, "mean:       unavailable (%v)\n", an.MeanErr)
	default:
		fmt.Fprintf(w, "mean:       infinite (the passage may never end)\n")
	}
	switch {
	case r == nil:
		fmt.Fprintf(w, "accuracy:   every CDF value within an estimated %.2g of the exact one (Laplace-transform inversion, %d solves: %s)\n\n", d.Epsilon, d.Iterations, an.EngineWhy)
	case r.Method == "uniformization":
		fmt.Fprintf(w, "accuracy:   every CDF value within %.2g of the exact one (uniformization, q = %.6g, %d steps)\n\n", r.Epsilon, r.Q, r.Iterations())
	default:
		fmt.Fprintf(w, "accuracy:   every CDF value within %.2g of the exact one (%s: the series would need more than %d steps at q = %.6g)\n\n", r.Epsilon, r.Method, passage.DenseSwitchSteps, r.Q)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	if a.query.PDF {
		fmt.Fprintln(tw, "t\tcdf\tpdf\t")
	} else {
		fmt.Fprintln(tw, "t\tcdf\t")
	}
	for _, p := range d.Points {
		if p.PDF != nil {
			fmt.Fprintf(tw, "%g\t%.10f\t%.10g\t\n", p.T, p.CDF, *p.PDF)
		} else {
			fmt.Fprintf(tw, "%g\t%.10f\t\n", p.T, p.CDF)
		}
	}
	tw.Flush()
	if len(d.Quantiles) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "quantile\tt\t")
		for _, q := range d.Quantiles {
			if q.T == nil {
				fmt.Fprintf(tw, "%g\tinfinite\t\n", q.P)
			} else {
				fmt.Fprintf(tw, "%g\t%.10g\t\n", q.P, *q.T)
			}
		}
		tw.Flush()
	}
	return nil
}
