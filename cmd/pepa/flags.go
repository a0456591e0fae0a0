package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags makes a flag set for a verb whose --help prints the synopsis,
// the flags and the examples.
func newFlags(e *env, name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := e.stdout
		fmt.Fprintf(w, "Usage: pepa %s\n\n", synopsis)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s", examples)
			if !strings.HasSuffix(examples, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
	return fs
}

// parseFlags parses args; it returns a non-negative exit code if the verb
// should stop (help was printed, or the flags were bad). Flags may come
// after the file names, as users of other compilers expect.
func parseFlags(e *env, fs *flag.FlagSet, args []string) ([]string, int) {
	var files []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK // the flag package has printed the usage
		}
		if err != nil {
			return nil, usageError(e, fs.Name(), "%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return files, -1
		}
		if args[0] == "--" {
			return append(files, args[1:]...), -1
		}
		files = append(files, args[0])
		args = args[1:]
	}
}
