package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The examples in every verb's --help and in the README run as written,
// from the root of a copy of the repository, with the pepa built from that
// copy first on PATH. Verbs are taken from the verb table, so a new verb's
// examples are run without touching this file. Slurm's sbatch and GNU
// parallel are replaced by local stand-ins (below) that run the same
// command lines, the --wrap script under dash as sbatch's /bin/sh would.

// examplesEnv builds pepa from the repository once, into a temporary bin/
// with the stand-ins beside it, and returns an environment with bin/ first
// on PATH.
func examplesEnv(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the command and runs every example; not with -short")
	}
	for _, tool := range []string{"sh", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the examples need %s: %v", tool, err)
		}
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(bin, "pepa"), "./cmd/pepa")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for name, script := range standIns {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// repoCopy copies the repository (without .git and outputs) into a
// temporary directory and returns the copy's root, so that examples that
// write files write them there.
func repoCopy(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "repo")
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || rel == "out" || rel == filepath.Join("testdata", "out") || rel == filepath.Join("examples", "study", "out")) {
			return filepath.SkipDir
		}
		target := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || d.Name() == ".git" { // a worktree's .git is a file
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestExamples runs the examples of every --help and of the README, and the
// batch Makefile, each in its own copy of the repository, with one build of
// pepa.
func TestExamples(t *testing.T) {
	env := examplesEnv(t)
	t.Run("help", func(t *testing.T) { testHelpExamples(t, repoCopy(t), env) })
	t.Run("readme", func(t *testing.T) { testReadmeExamples(t, repoCopy(t), env) })
	t.Run("makefile", func(t *testing.T) { testMakefileTracksBeta(t, repoCopy(t), env) })
}

// standIns replace programs the README's batch recipes call that a test
// machine lacks (and must not call for real).
var standIns = map[string]string{
	// sbatch --array=A-B --wrap SCRIPT: runs SCRIPT once per task, with
	// SLURM_ARRAY_TASK_ID set, under dash when there is one (the strictest
	// common /bin/sh), else sh.
	"sbatch": `#!/bin/sh
set -e
array=0-0; wrap=
while [ $# -gt 0 ]; do
  case $1 in
    --array=*) array=${1#--array=} ;;
    --wrap=*) wrap=${1#--wrap=} ;;
    --wrap) shift; wrap=$1 ;;
  esac
  shift
done
shell=sh; if command -v dash >/dev/null 2>&1; then shell=dash; fi
i=${array%-*}
while [ "$i" -le "${array#*-}" ]; do
  SLURM_ARRAY_TASK_ID=$i $shell -c "$wrap"
  i=$((i + 1))
done
`,
	// parallel [-S HOSTS] [--wd DIR] COMMAND... ::: ARG...: runs COMMAND
	// here once per ARG, {} replaced by it.
	"parallel": `#!/bin/sh
set -e
cmd=
while [ $# -gt 0 ]; do
  case $1 in
    -S|--wd) shift ;;
    :::) shift; break ;;
    *) cmd="$cmd $1" ;;
  esac
  shift
done
for a in "$@"; do
  sh -c "$(printf '%s' "$cmd" | sed "s/{}/$a/g")"
done
`,
}

// runShell runs script with sh -e in dir and fails the test on a non-zero
// exit.
func runShell(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	// A process the script leaves behind (a server it started) must not
	// keep the test waiting on its output.
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s\n%v\nstdout:\n%s\nstderr:\n%s", script, err, out.String(), errb.String())
	}
	return out.String()
}

// helpExamples extracts the command lines of a --help text: the lines of
// its Examples section that start with "pepa ", up to the first run of two
// or more spaces (where the description starts).
func helpExamples(help string) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Examples") {
			in = true
			continue
		}
		trimmed := strings.TrimSpace(line)
		if !in || !strings.HasPrefix(trimmed, "pepa ") {
			continue
		}
		out = append(out, strings.TrimSpace(descriptionGap.Split(trimmed, 2)[0]))
	}
	return out
}

var descriptionGap = regexp.MustCompile(`\s{2,}`)

func testHelpExamples(t *testing.T, root string, env []string) {
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, verb := range names {
		code, help, _ := runPepa(t, "", verb, "--help")
		if code != exitOK {
			t.Fatalf("pepa %s --help: exit %d", verb, code)
		}
		examples := helpExamples(help)
		if len(examples) == 0 {
			t.Errorf("pepa %s --help has no example", verb)
		}
		t.Run(verb, func(t *testing.T) {
			// In order: an example may use what an earlier one wrote.
			for _, ex := range examples {
				t.Logf("+ %s", ex)
				runShell(t, root, env, ex)
			}
		})
	}
}

// readmeBlocks returns the README's sh code blocks, each as one script.
func readmeBlocks(t *testing.T, readme string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		t.Fatal("README: unterminated code block")
	}
	return blocks
}

func testReadmeExamples(t *testing.T, root string, env []string) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(readme))
	if len(blocks) < 5 {
		t.Fatalf("README: %d sh blocks; the extraction is broken", len(blocks))
	}
	ran := 0
	for i, block := range blocks {
		// go test lines would run this test again (and the benchmarks);
		// they are what CI runs anyway.
		var lines []string
		for _, l := range strings.Split(block, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "go test") {
				lines = append(lines, l)
			}
		}
		script := strings.TrimSpace(strings.Join(lines, "\n"))
		if script == "" {
			continue
		}
		t.Logf("block %d:\n%s", i, script)
		out := runShell(t, root, env, script)
		ran++
		if i == 0 {
			// The quick start prints the ranking the README shows after it.
			if want := readmeOutputAfter(string(readme), block); want != "" && strings.TrimSpace(out) != strings.TrimSpace(want) {
				t.Errorf("quick start prints\n%s\nthe README shows\n%s", out, want)
			}
		}
	}
	if ran < 5 {
		t.Errorf("only %d README blocks ran", ran)
	}
	// The batch recipe's summary is complete: a header and one row per
	// mapping, for the goal the Makefile recorded.
	sum, err := os.ReadFile(filepath.Join(root, "testdata", "out", "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(strings.TrimSpace(string(sum)), "\n"); rows != 3 {
		t.Errorf("summary.csv has %d rows, want 3:\n%s", rows, sum)
	}
}

// readmeOutputAfter is the first plain ``` block after the given sh block.
func readmeOutputAfter(readme, block string) string {
	i := strings.Index(readme, block)
	if i < 0 {
		return ""
	}
	rest := readme[i+len(block):]
	rest = rest[strings.Index(rest, "```")+3:] // the sh block's end
	j := strings.Index(rest, "\n```\n")
	if j < 0 {
		return ""
	}
	rest = rest[j+5:]
	k := strings.Index(rest, "\n```")
	if k < 0 {
		return ""
	}
	return rest[:k]
}

// testMakefileTracksBeta: a new BETA redoes every row, the same BETA
// nothing, and the summary carries the goal it was computed for. The pepa
// already built is copied to where the Makefile builds its own (newer than
// the sources, so make keeps it); the README's recipe runs the build rule.
func testMakefileTracksBeta(t *testing.T, root string, env []string) {
	betaColumn := func() string {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "out", "summary.csv"))
		if err != nil {
			t.Fatal(err)
		}
		var col []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
			f := strings.Split(l, ",")
			col = append(col, f[len(f)-1])
		}
		return strings.Join(col, " ")
	}
	runShell(t, root, env, `mkdir -p testdata/out && cp "$(command -v pepa)" testdata/out/pepa`)
	runShell(t, root, env, "make -C testdata BETA=40")
	if got := betaColumn(); got != "40 40 40" {
		t.Fatalf("BETA=40: summary's beta column %q", got)
	}
	out := runShell(t, root, env, "make -C testdata BETA=40")
	if strings.Contains(out, "robustness") {
		t.Errorf("the same BETA redid rows:\n%s", out)
	}
	runShell(t, root, env, "make -C testdata BETA=35")
	if got := betaColumn(); got != "35 35 35" {
		t.Fatalf("BETA=35 after 40: summary's beta column %q", got)
	}
}

// TestSlurmWrapIsPortable: the README's sbatch --wrap script parses under
// sh and dash (sbatch runs it with /bin/sh, which is dash on Debian and
// Ubuntu: no bash arrays).
func TestSlurmWrapIsPortable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`sbatch [^\n]*--wrap '([^']*)'`).FindAllStringSubmatch(string(readme), -1)
	if len(m) == 0 {
		t.Fatal("README has no sbatch --wrap '...' line")
	}
	for _, shell := range []string{"sh", "dash"} {
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("%s: not installed, skipped", shell)
			continue
		}
		for _, w := range m {
			cmd := exec.Command(shell, "-n", "-c", w[1])
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("%s -n rejects the --wrap script %q: %v\n%s", shell, w[1], err, errb.String())
			}
		}
	}
	// The check can fail: the bash-array form it replaced does not parse.
	if _, err := exec.LookPath("dash"); err == nil {
		cmd := exec.Command("dash", "-n", "-c", `m=(a b); echo "${m[$SLURM_ARRAY_TASK_ID]}"`)
		cmd.Stderr = io.Discard
		if cmd.Run() == nil {
			t.Error("dash -n accepts a bash array: the check above proves nothing")
		}
	}
}
