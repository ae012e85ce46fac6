package signers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cometbft/cometbft/crypto"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
)

// Local is the software signer: CometBFT's own FilePV, with its key file and
// its persisted last-sign state (height/round/step, sign bytes, signature).
// FilePV refuses to sign a regression or conflicting data at the same
// height/round/step, and saves the state atomically before a signature is
// returned, so a local validator never double signs, even across restarts.
type Local struct {
	*privval.FilePV
}

var _ Signer = (*Local)(nil)

// OpenLocal loads the FilePV at keyFile/stateFile, or creates both from key
// when the key file does not exist yet. When it exists, its key must be key:
// a home prepared for another seed or validator is refused, not overwritten.
func OpenLocal(key crypto.PrivKey, keyFile, stateFile string) (*Local, error) {
	for _, dir := range []string{filepath.Dir(keyFile), filepath.Dir(stateFile)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("local signer: %w", err)
		}
	}
	if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
		pv := privval.NewFilePV(key, keyFile, stateFile)
		pv.Save()
		return &Local{FilePV: pv}, nil
	}
	// privval.LoadFilePV exits the process on a bad file; check both files
	// first so a damaged home is an error, not an exit.
	var stored privval.FilePVKey
	if err := readJSON(keyFile, &stored); err != nil {
		return nil, fmt.Errorf("local signer: key file: %w", err)
	}
	if stored.PrivKey == nil || !bytes.Equal(stored.PrivKey.Bytes(), key.Bytes()) {
		return nil, fmt.Errorf("local signer: %s holds a different key than this scenario and seed give; use a fresh --out directory", keyFile)
	}
	var state privval.FilePVLastSignState
	if err := readJSON(stateFile, &state); err != nil {
		return nil, fmt.Errorf("local signer: state file: %w", err)
	}
	return &Local{FilePV: privval.LoadFilePV(keyFile, stateFile)}, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := cmtjson.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
