// Package fluidplot draws a fluid analysis (package ctmc/fluid): the mean
// populations over time, one panel per group, the throughputs over time,
// and a tagged copy's passage-time CDF, in PNG, SVG or PDF with the
// project's figure style (the typeface and sizes of the project's
// plots). It only reads the analysis.
package fluidplot
