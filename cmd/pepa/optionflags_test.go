package main

import (
	"strings"
	"testing"
)

// TestLibraryErrorsNameFlags: the libraries name their options by key
// (package option); the messages pepa prints name the flags.
func TestLibraryErrorsNameFlags(t *testing.T) {
	const model = "../../testdata/mapping-a.pepa"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"robustness", "--beta", "45", "--machines", "M9", model}, `error: --machines: no component "M9"`},
		{[]string{"passage", "--target-action", "nosuch", "--at", "1", model}, "error: --target-action: unknown action nosuch"},
		{[]string{"simulate", "--target-action", "nosuch", "--at", "1", model}, "error: --target-action: unknown action nosuch"},
		{[]string{"sweep", "--vary", "r=1:0:1", "steady", model}, "--vary r: want START <= STOP and STEP > 0"},
	} {
		code, _, stderr := runPepa(t, "", c.args...)
		if code == exitOK || !strings.Contains(stderr, c.want) {
			t.Errorf("pepa %s: exit %d, stderr\n%s\nwant %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
