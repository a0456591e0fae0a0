package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags makes a flag set for a verb whose usage (synopsis, flags,
// examples) goes to standard output for --help (exit 0) and to standard
// error after a bad flag (exit 2), so that standard output only ever
// carries results. The flag set's output stays discarded except while
// parseFlags prints the usage to the chosen stream.
func newFlags(e *env, name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: pepa %s\n\n", synopsis)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s", examples)
			if !strings.HasSuffix(examples, "\n") {
				fmt.Fprintln(w)
			}
		}
		fmt.Fprint(w, docsPointer)
	}
	return fs
}

// docsPointer ends every usage: where the contract is written down.
const docsPointer = `
Examples run as written from the repository root (files under testdata/).
The command line is documented in docs/cli.md, the model language in
docs/language.md, and the meaning of every number in docs/semantics.md.
`

// printUsage prints fs's usage to w.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	fs.Usage()
	fs.SetOutput(io.Discard)
}

// parseFlags parses args; it returns a non-negative exit code if the verb
// should stop (help was printed, or the flags were bad). Flags may come
// after the file names, as users of other compilers expect.
func parseFlags(e *env, fs *flag.FlagSet, args []string) ([]string, int) {
	var files []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, e.stdout)
			return nil, exitOK
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "pepa %s: %v\n", fs.Name(), err)
			printUsage(fs, e.stderr)
			return nil, exitUsage
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
