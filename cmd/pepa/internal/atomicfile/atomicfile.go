package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Options say how a file is written.
type Options struct {
	// Perm is a new file's permissions (an existing file keeps its own).
	Perm os.FileMode
	// Durable fsyncs the file before the rename and its directory after.
	Durable bool
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte, opt Options) error {
	return Write(path, opt, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes what write produces (streamed, buffered) to a temporary
// file beside path and renames it over path. Errors name the path.
func Write(path string, opt Options, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	mode := opt.Perm
	if st, statErr := os.Stat(path); statErr == nil {
		mode = st.Mode().Perm()
	}
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if opt.Durable {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if opt.Durable {
		return SyncDir(dir)
	}
	return nil
}

// SyncDir fsyncs a directory, so that the entries made, renamed or
// removed in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
