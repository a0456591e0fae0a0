//go:build unix

package serve

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile is the state directory's lock: flocked by the server holding
// the directory, and naming its pid for the next one to report.
const lockFile = "serve.lock"

// lockDir takes the state directory's lock, or says which process holds
// it. The lock is the flock, not the file: a server killed leaves the
// file, and the next one takes it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 64))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown (starting)"
			}
			return nil, fmt.Errorf("state directory %s is in use by another pepa serve (pid %s, holding %s): one server per state directory", dir, pid, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// unlockDir releases the lock (closing the file releases the flock).
func unlockDir(f *os.File) { f.Close() }
