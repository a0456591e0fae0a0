package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a new file gets Perm and the content; an existing one keeps
// its permissions and gets the new content; a failing writer leaves the
// target as it was and no temporary file; a durable write into a missing
// directory fails naming the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	for _, durable := range []bool{false, true} {
		os.Remove(path)
		if err := WriteFile(path, []byte("one\n"), Options{Perm: 0o600, Durable: durable}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != "one\n" {
			t.Errorf("durable %v: content %q", durable, b)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("durable %v: mode %v, want 0600", durable, st.Mode().Perm())
		}
		os.Chmod(path, 0o640)
		if err := WriteFile(path, []byte("two\n"), Options{Perm: 0o600, Durable: durable}); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
			t.Errorf("durable %v: an existing file's mode became %v", durable, st.Mode().Perm())
		}
		boom := errors.New("boom")
		err := Write(path, Options{Perm: 0o600, Durable: durable}, func(w io.Writer) error {
			io.WriteString(w, "partial")
			return boom
		})
		if !errors.Is(err, boom) {
			t.Errorf("durable %v: a failing writer: %v", durable, err)
		}
		if b, _ := os.ReadFile(path); string(b) != "two\n" {
			t.Errorf("durable %v: after a failed write the content is %q", durable, b)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("durable %v: %d entries left in the directory, want 1", durable, len(ents))
		}
	}
	missing := filepath.Join(dir, "no", "such", "f")
	if err := WriteFile(missing, nil, Options{Durable: true}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}
