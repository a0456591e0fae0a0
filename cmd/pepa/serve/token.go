package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ReadToken reads the token file (its content, trimmed), or creates it
// (mode 0600) with a random token of 32 bytes in hex when it does not
// exist. A token shorter than MinTokenBytes is refused; warnings name a
// file others can read or write.
func ReadToken(path string) (token string, created bool, warnings []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", false, nil, err
		}
		token = hex.EncodeToString(raw[:])
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, nil, err
		}
		if _, err := f.WriteString(token + "\n"); err != nil {
			f.Close()
			return "", false, nil, err
		}
		if err := f.Close(); err != nil {
			return "", false, nil, err
		}
		return token, true, nil, nil
	}
	if err != nil {
		return "", false, nil, err
	}
	token = strings.TrimSpace(string(b))
	switch {
	case token == "":
		return "", false, nil, fmt.Errorf("%s is empty: a token is needed", path)
	case len(token) < MinTokenBytes:
		return "", false, nil, fmt.Errorf("%s holds a token of %d bytes: at least %d are needed (remove the file to have one made)", path, len(token), MinTokenBytes)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", false, nil, err
	}
	perm := st.Mode().Perm()
	if perm&0o022 != 0 {
		warnings = append(warnings, fmt.Sprintf("warning: %s is writable by others (mode %04o): whoever writes it chooses the token of the next start; chmod 600 it", path, perm))
	}
	if perm&0o044 != 0 {
		warnings = append(warnings, fmt.Sprintf("warning: %s is readable by others (mode %04o): chmod 600 it", path, perm))
	}
	return token, false, warnings, nil
}
