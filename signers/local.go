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

// ensureKeyFile writes key as CometBFT's priv_validator_key.json when the
// file does not exist, so the validator's home works with a stock cometbft
// binary too; when it exists, it must hold key: a home prepared for
// another seed or validator is refused, not overwritten.
func ensureKeyFile(key crypto.PrivKey, keyFile string) error {
	if keyFile == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		return fmt.Errorf("local signer: %w", err)
	}
	if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
		return saveKey(privval.NewFilePV(key, keyFile, ""))
	}
	var stored privval.FilePVKey
	if err := readJSON(keyFile, &stored); err != nil {
		return fmt.Errorf("local signer: key file: %w", err)
	}
	if stored.PrivKey == nil || !bytes.Equal(stored.PrivKey.Bytes(), key.Bytes()) {
		return fmt.Errorf("local signer: %s holds a different key than this scenario and seed give; use a fresh --out directory", keyFile)
	}
	return nil
}

// saveKey turns FilePV's panic on a failed write into an error.
func saveKey(pv *privval.FilePV) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("local signer: write key file: %v", r)
		}
	}()
	pv.Key.Save()
	return nil
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
