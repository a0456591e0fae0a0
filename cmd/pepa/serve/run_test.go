package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunSetup: Run names the setting at fault (a token file it cannot
// create, an address it cannot listen on) and otherwise serves until its
// context ends, having created the token file it was told to use.
func TestRunSetup(t *testing.T) {
	dir := t.TempDir()
	var log []string
	logf := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	cfg := Config{Dir: filepath.Join(dir, "state"), Logf: logf}
	var se *SetupError
	err := Run(context.Background(), RunConfig{Config: cfg, TokenFile: filepath.Join(dir, "missing", "token"), Listen: "127.0.0.1:0"})
	if !errors.As(err, &se) || se.Setting != "token-file" {
		t.Errorf("a token file in a missing directory: %v", err)
	}
	token := filepath.Join(dir, "token")
	err = Run(context.Background(), RunConfig{Config: cfg, TokenFile: token, Listen: "127.0.0.1:-1"})
	if !errors.As(err, &se) || se.Setting != "listen" {
		t.Errorf("port -1: %v", err)
	}
	if b, err := os.ReadFile(token); err != nil || len(strings.TrimSpace(string(b))) < MinTokenBytes {
		t.Errorf("the token file: %q, %v", b, err)
	}
	if len(log) == 0 || !strings.Contains(log[0], "created "+token) {
		t.Errorf("log %q: want the token file's creation first", log)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, RunConfig{Config: cfg, TokenFile: token, Listen: "127.0.0.1:0"}); err != nil {
		t.Errorf("serving until a cancelled context ends: %v", err)
	}
}
