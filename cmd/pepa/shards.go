package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"pepa/ctmc/shard"
	"pepa/ctmc/simulate"
)

// shardUsage is the --shard flag's help.
const shardUsage = "run only shard `K/N` (K from 1) of the run and write a shard file (-o) for 'pepa merge', which prints what the whole run prints"

// shardCommand is a run's arguments in canonical form for a shard header:
// every flag set, in name order, as --name=value, except those in skip
// (they do not change the results), then the other arguments as given.
func shardCommand(fs *flag.FlagSet, skip map[string]bool, rest []string) []string {
	out := []string{}
	fs.Visit(func(f *flag.Flag) {
		if !skip[f.Name] {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return append(out, rest...)
}

// writeShard writes a shard file to -o (atomically) or standard output,
// and says on standard error what it holds.
func writeShard(e *env, verb, out string, h shard.Header, data any) int {
	fmt.Fprintf(e.stderr, "pepa %s: shard %d/%d: %s %d to %d of %d\n", verb, h.Shard, h.Shards, h.Units, h.First, h.First+h.Count-1, h.Total)
	if err := writeOutput(e, out, func(w io.Writer) error { return shard.Write(w, h, data) }); err != nil {
		fmt.Fprintf(e.stderr, "pepa %s: %v\n", verb, err)
		return exitInvalid
	}
	return exitOK
}

// simShard is the data of a simulate shard file: what the output names
// (model, seed, confidence, the passage) and the record of its range.
type simShard struct {
	Model      string                     `json:"model"`
	Seed       uint64                     `json:"seed"`
	Confidence float64                    `json:"confidence"`
	What       string                     `json:"what,omitempty"`
	Robustness *simulate.RobustnessRecord `json:"robustness,omitempty"`
	Passage    *simulate.PassageRecord    `json:"passage,omitempty"`
	Steady     *simulate.SteadyRecord     `json:"steady,omitempty"`
}

// readShards reads shard files.
func readShards(e *env, names []string) ([]*shard.File, int) {
	var files []*shard.File
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return nil, exitUsage
		}
		sf, err := shard.Read(name, f)
		f.Close()
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa merge: %v\n", err)
			return nil, exitInvalid
		}
		files = append(files, sf)
	}
	return files, -1
}
