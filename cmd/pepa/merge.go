package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"pepa/ctmc/shard"
	"pepa/ctmc/simulate"
	"pepa/ctmc/sweep"
)

func runMerge(_ context.Context, e *env, args []string) int {
	fs := newFlags(e, "merge", "merge [--format F] [-o FILE] SHARD...",
		`  pepa simulate --beta 30 --replications 4000 --shard 1/2 -o paired-1.shard testdata/cluster/paired.pepa
  pepa simulate --beta 30 --replications 4000 --shard 2/2 -o paired-2.shard testdata/cluster/paired.pepa
        the two halves of a run, as two Slurm array tasks or make targets write them
  pepa merge paired-1.shard paired-2.shard
        prints what 'pepa simulate --beta 30 --replications 4000 testdata/cluster/paired.pepa' prints
  pepa sweep --vary 'r3=0.1:0.5:0.05' --shard 1/2 -o sweep-1.shard robustness --beta 30 testdata/cluster/paired.pepa testdata/cluster/uneven.pepa
  pepa sweep --vary 'r3=0.1:0.5:0.05' --shard 2/2 -o sweep-2.shard robustness --beta 30 testdata/cluster/paired.pepa testdata/cluster/uneven.pepa
  pepa merge --format csv sweep-1.shard sweep-2.shard
        the sweep's points in two shards, merged: its CSV, crossings as the whole sweep finds them

The shard files of one run of 'pepa simulate --shard K/N' or 'pepa sweep
--shard K/N', in any order, each once; merge refuses files that are not
all the shards of one run (another command, model content or shard
count, a shard missing or given twice) and prints exactly what the run
without --shard prints, in the format the shards were run with unless
--format says otherwise.
`)
	format := fs.String("format", "", "output format: text, json or csv (default: the one the shards were run with)")
	out := fs.String("o", "", "write the result to `FILE` (atomically) instead of standard output")
	columns := fs.String("columns", "", "sweep: comma-separated substrings of the measures to keep (default: the one the shards were run with)")
	plotPath := fs.String("plot", "", "sweep: draw the measures to `FILE`.png or .svg, as sweep --plot does")
	names, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	if len(names) == 0 {
		return usageError(e, "merge", "no shard file given")
	}
	if *format != "" && *format != "text" && *format != "json" && *format != "csv" {
		return usageError(e, "merge", "unknown --format %q (want text, json or csv)", *format)
	}
	files, code := readShards(e, names)
	if code >= 0 {
		return code
	}
	files, err := shard.Check(files)
	if err != nil {
		fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
		return exitInvalid
	}
	render := func(key, flagValue, fallback string) (string, error) {
		return shardRender(files, key, flagValue, fallback)
	}
	if *format, err = render("format", *format, "text"); err != nil {
		fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
		return exitUsage
	}
	switch files[0].Verb {
	case "simulate":
		if *columns != "" || *plotPath != "" {
			return usageError(e, "merge", "--columns and --plot are for sweeps")
		}
		write, err := mergeSimulate(files, *format)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return exitInvalid
		}
		if err := writeOutput(e, *out, write); err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return exitInvalid
		}
		return exitOK
	case "sweep":
		if *columns, err = render("columns", *columns, ""); err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return exitUsage
		}
		if *plotPath != "" {
			if code := checkSweepPlot(e, "merge", *plotPath); code >= 0 {
				return code
			}
		}
		res, err := mergeSweep(files)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return exitInvalid
		}
		return writeSweep(e, res, *format, *columns, *plotPath, *out)
	}
	fmt.Fprintf(e.stderr, "pepa merge: %s: shards of pepa %s cannot be merged by this pepa\n", files[0].Name, files[0].Verb)
	return exitInvalid
}

// shardRender is how merge shows the shards: the flag's value if given,
// else the setting the shards were run with (which must be one), else
// fallback.
func shardRender(files []*shard.File, key, flagValue, fallback string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	v := files[0].Render[key]
	for _, f := range files[1:] {
		if f.Render[key] != v {
			return "", fmt.Errorf("the shards were run with different --%s (%s: %q, %s: %q): give merge --%s", key, files[0].Name, v, f.Name, f.Render[key], key)
		}
	}
	if v == "" {
		return fallback, nil
	}
	return v, nil
}

// mergeSweep reads each sweep shard's result and merges them into the
// whole sweep's (sweep.Merge).
func mergeSweep(files []*shard.File) (*sweep.Result, error) {
	var parts []*sweep.Result
	for _, f := range files {
		var r sweep.Result
		if err := json.Unmarshal(f.Data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		parts = append(parts, &r)
	}
	return sweep.Merge(parts)
}

// mergeSimulate combines simulate shards and returns the writer of what
// the whole run prints.
func mergeSimulate(files []*shard.File, format string) (func(w io.Writer) error, error) {
	var parts []simShard
	for _, f := range files {
		var d simShard
		if err := json.Unmarshal(f.Data, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if d.kind() == "" || len(parts) > 0 && d.kind() != parts[0].kind() {
			return nil, fmt.Errorf("%s holds another kind of simulation than %s", f.Name, files[0].Name)
		}
		parts = append(parts, d)
	}
	p0 := parts[0]
	sim := simInfo{Model: p0.Model, Seed: p0.Seed, Confidence: p0.Confidence}
	switch {
	case p0.Robustness != nil:
		var recs []*simulate.RobustnessRecord
		for _, p := range parts {
			recs = append(recs, p.Robustness)
		}
		r, err := simulate.CombineRobustness(recs)
		if err != nil {
			return nil, err
		}
		sim.set(r.Stats)
		return func(w io.Writer) error { return writeSimRobustness(w, format, sim, r, nil) }, nil
	case p0.Passage != nil:
		var recs []*simulate.PassageRecord
		for _, p := range parts {
			recs = append(recs, p.Passage)
		}
		r, err := simulate.CombinePassage(recs)
		if err != nil {
			return nil, err
		}
		sim.set(r.Stats)
		return func(w io.Writer) error { return writeSimPassage(w, format, sim, p0.What, r) }, nil
	case p0.Steady != nil:
		var recs []*simulate.SteadyRecord
		for _, p := range parts {
			recs = append(recs, p.Steady)
		}
		r, err := simulate.CombineSteady(recs)
		if err != nil {
			return nil, err
		}
		sim.set(r.Stats)
		return func(w io.Writer) error { return writeSimSteady(w, format, sim, r) }, nil
	}
	return nil, errors.New("the shards hold no simulation record")
}

// kind is the estimate a simulate shard holds a record of ("" for none).
func (d simShard) kind() string {
	switch {
	case d.Robustness != nil && d.Passage == nil && d.Steady == nil:
		return "robustness"
	case d.Passage != nil && d.Robustness == nil && d.Steady == nil:
		return "passage"
	case d.Steady != nil && d.Robustness == nil && d.Passage == nil:
		return "steady"
	}
	return ""
}
