// Package plot draws the figures: a ranking's robustness figure (Figure,
// NewFigure, WritePlot: one CDF panel per model and a scatter of the
// ranking) and the Pareto front of robustness against energy
// (NewParetoFigure, WriteParetoPlot), in plot.go and plot_pareto.go; and a
// sweep's figures (sweep.go: SweepLines, one line per measure against one
// parameter with the crossings marked; SweepHeat, a heat map per measure
// over two).
//
// Invariants: every CDF panel of a ranking shares one time range; all text
// is one embedded typeface at fixed point sizes, so PNG, SVG and PDF look
// alike; legends are drawn beside the axes, never over them. Drawing
// computes nothing the figures' packages have not: the bottleneck a panel
// marks is the Result's.
//
// Dependencies: models, models/spec, models/optimize, ctmc/sweep,
// gonum/plot.
package plot
