package main

import (
	"os"
	"testing"
)

// runAsPepa, set in the environment, makes the test binary run as pepa
// itself (its arguments are pepa's): the memory harness (memcaps_test.go)
// runs the verbs in child processes under limits this way, with no build.
const runAsPepa = "PEPA_TEST_RUN_AS_PEPA"

func TestMain(m *testing.M) {
	if os.Getenv(runAsPepa) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}
