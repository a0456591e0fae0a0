package main

import (
	"bytes"
	"context"
	"fmt"

	"pepa/lang"
)

func runFmt(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "fmt", "fmt [-w | -l] FILE...",
		`  pepa fmt testdata/pc-lan.pepa > lan.pepa      print a model in canonical layout
  pepa fmt -l testdata/*.pepa                   list the files whose layout is not canonical
  pepa fmt -w lan.pepa                          rewrite files in place (atomically; untouched on error)
`)
	write := fs.Bool("w", false, "write the result back to each file instead of printing it")
	list := fs.Bool("l", false, "list the files whose layout differs from canonical, print nothing else")
	files, code := parseFlags(e, fs, args)
	if code >= 0 {
		return code
	}
	if len(files) == 0 {
		return usageError(e, "fmt", "no model file given")
	}
	if *write && *list {
		return usageError(e, "fmt", "-w and -l cannot be used together")
	}
	status := exitOK
	for _, name := range files {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		if *write && name == "-" {
			return usageError(e, "fmt", "-w cannot rewrite standard input")
		}
		src, err := readInput(e, name)
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa fmt: %v\n", err)
			status = exitUsage
			continue
		}
		f, diags := lang.Parse(displayName(name), src)
		if diags.HasErrors() {
			printDiags(e, diags, false)
			if status == exitOK {
				status = exitInvalid
			}
			continue
		}
		out := lang.Format(f)
		switch {
		case *list:
			if !bytes.Equal(out, src) {
				fmt.Fprintln(e.stdout, name)
			}
		case *write:
			if bytes.Equal(out, src) {
				continue
			}
			if err := writeFileAtomic(name, out); err != nil {
				fmt.Fprintf(e.stderr, "pepa fmt: %v\n", err)
				status = exitInvalid
			}
		default:
			e.stdout.Write(out)
		}
	}
	return status
}
