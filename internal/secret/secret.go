// Package secret reads a signer's secret (a key file's passphrase, a
// token's PIN) from where a scenario says it is: an environment variable
// or a file. A scenario only names the place; the secret never goes in it.
package secret

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// Source names a secret and its two scenario keys, for messages.
type Source struct {
	What    string // "passphrase", "PIN"
	EnvKey  string // "passphrase_env"
	FileKey string // "passphrase_file"
}

// Read reads the secret from the environment variable env or from file
// (exactly one). A file others can read is refused, as ssh refuses a
// readable private key; a trailing newline in the file is not part of the
// secret; an empty secret is an error.
func (s Source) Read(env, file string) ([]byte, error) {
	switch {
	case env != "" && file != "":
		return nil, fmt.Errorf("%s: give %s or %s, not both", s.What, s.EnvKey, s.FileKey)
	case env != "":
		v := os.Getenv(env)
		if v == "" {
			return nil, fmt.Errorf("%s %s is not set", s.EnvKey, env)
		}
		return []byte(v), nil
	case file != "":
		st, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("%s file: %w", s.What, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("%s file %s is readable by others (chmod 600)", s.What, file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s file: %w", s.What, err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(b) == 0 {
			return nil, fmt.Errorf("%s file %s is empty", s.What, file)
		}
		return b, nil
	default:
		return nil, errors.New(s.What + ": give " + s.EnvKey + " or " + s.FileKey)
	}
}
