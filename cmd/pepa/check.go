package main

import (
	"context"
	"fmt"

	"pepa/lang"
)

func runCheck(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "check", "check [flags] FILE...",
		`  pepa check testdata/pc-lan.pepa          parse and check one model
  pepa check testdata/*.pepa               check several; every error of every file is listed
  pepa check - < testdata/pc-lan.pepa      check standard input
`)
	quiet := fs.Bool("q", false, "do not print warnings")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	if len(files) == 0 {
		return usageError(e, "check", "no model file given")
	}
	status := exitOK
	for _, name := range files {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		src, err := readInput(e, name)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa check: %v\n", err)
			status = exitUsage
			continue
		}
		_, diags := lang.Load(displayName(name), src)
		printDiags(e, diags, *quiet)
		if diags.HasErrors() && status == exitOK {
			status = exitInvalid
		}
	}
	return status
}

func printDiags(e *env, diags lang.Diagnostics, quiet bool) {
	for _, d := range diags {
		if quiet && d.Severity == lang.Warning {
			continue
		}
		fmt.Fprintln(e.stderr, d.String())
	}
}
