//go:build !unix

package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const lockFile = "serve.lock"

// lockDir, without flock: the lock is the file, created exclusively and
// removed at close; a server killed leaves it, to be removed by hand.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		holder, _ := os.ReadFile(path)
		return nil, fmt.Errorf("state directory %s is in use by another pepa serve (pid %s, holding %s; remove it if that process is gone): one server per state directory",
			dir, strings.TrimSpace(string(holder)), path)
	}
	if err != nil {
		return nil, fmt.Errorf("locking the state directory: %w", err)
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
