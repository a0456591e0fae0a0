package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"pepa/models/spec"
)

func runGen(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "gen", "gen SPEC [-o FILE | --dir DIR] [--mapping NAME] [--etc-out FILE.csv]",
		`  pepa gen testdata/spec-example.json --mapping paired -o paired.pepa
        write one mapping of a specification as a PEPA model
  pepa gen testdata/spec-example.json --dir out/models
        write every mapping, as out/models/NAME.pepa
  pepa gen testdata/spec-shared.json --mapping round-robin
        machines that stage input over a shared network: a coupled model, on standard output
  pepa gen testdata/spec-lab.json --mapping pairs
        a lab: desktops shared with a pool of users, all reading input from one file server
  pepa gen testdata/spec-pandas.json --mapping split
        an ETC file as pandas' to_csv() writes it: it names the applications and machines
  pepa gen testdata/spec-generated.json --etc-out etc.csv
        write the ETC matrix a specification uses (drawn by etc_generate), in the form etc_csv reads
The specification format is documented, field by field, in testdata/spec-example.json
(owners, and owners with resources: testdata/spec-owners.json; shared resources:
testdata/spec-shared.json; pools of users over desktops: testdata/spec-lab.json).
`)
	out := fs.String("o", "", "write the model to `FILE` (atomically) instead of standard output")
	dir := fs.String("dir", "", "write every mapping to `DIR`/NAME.pepa")
	mapping := fs.String("mapping", "", "the mapping to write, by name")
	etcOut := fs.String("etc-out", "", "write the ETC matrix the specification uses to `FILE`.csv (atomically; the form etc_csv reads); alone, no model is written")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	if len(files) != 1 {
		return usageError(e, "gen", "need exactly one specification file")
	}
	if *dir != "" && (*out != "" || *mapping != "") {
		return usageError(e, "gen", "--dir writes every mapping; it cannot be combined with -o or --mapping")
	}
	in, code := loadSpec(e, "gen", files[0])
	if code >= 0 {
		return code
	}
	// With --etc-out alone, only the matrix is written.
	models := *etcOut == "" || *dir != "" || *out != "" || *mapping != ""
	if models {
		if err := in.RequireMappings(); err != nil {
			fmt.Fprintln(e.stderr, err)
			return exitInvalid
		}
	}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			fmt.Fprintf(e.stderr, "pepa gen: %v\n", err)
			return exitInvalid
		}
	}
	if *etcOut != "" {
		if err := writeFileAtomicFunc(*etcOut, in.WriteETC); err != nil {
			fmt.Fprintf(e.stderr, "pepa gen: %v\n", err)
			return exitInvalid
		}
	}
	if !models {
		return exitOK
	}
	if *dir != "" {
		for _, m := range in.Mappings {
			if ctx.Err() != nil {
				return exitInterrupted
			}
			path := filepath.Join(*dir, m.Name+".pepa")
			if err := writeFileAtomicFunc(path, func(w io.Writer) error { return in.Generate(w, m) }); err != nil {
				fmt.Fprintf(e.stderr, "pepa gen: %v\n", err)
				return exitInvalid
			}
		}
		return exitOK
	}
	m, err := in.Mapping(*mapping)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: error: %v\n", files[0], err)
		return exitInvalid
	}
	if err := writeOutput(e, *out, func(w io.Writer) error { return in.Generate(w, m) }); err != nil {
		fmt.Fprintf(e.stderr, "pepa gen: %v\n", err)
		return exitInvalid
	}
	return exitOK
}

// loadSpec reads and validates a mapping specification, printing its
// problems; it returns a non-negative exit code on failure.
func loadSpec(e *env, verb, path string) (*spec.Instance, int) {
	in, err := spec.LoadSpec(path)
	if err == nil {
		return in, -1
	}
	var se spec.SpecErrors
	if errors.As(err, &se) {
		for _, x := range se {
			fmt.Fprintln(e.stderr, x.Error())
		}
		return nil, exitInvalid
	}
	fmt.Fprintf(e.stderr, "pepa %s: %v\n", verb, err)
	if os.IsNotExist(err) {
		return nil, exitUsage
	}
	return nil, exitInvalid
}
