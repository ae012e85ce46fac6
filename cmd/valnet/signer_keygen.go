package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cometbft/cometbft/privval"
	"github.com/spf13/cobra"

	"github.com/valnet/valnet/signers"
)

// newSignerKeygenCmd writes a fresh validator key for a signer of your
// own (signer serve, an external signer): never one of valnet's
// seed-derived keys, which belong to the run's validators.
func newSignerKeygenCmd() *cobra.Command {
	var keyType string
	cmd := &cobra.Command{
		Use:   "keygen FILE",
		Short: "Write a fresh validator key (priv_validator_key.json) for a signer of your own",
		Long: `keygen writes a new, random validator key in CometBFT's
priv_validator_key.json format (mode 0600) for valnet signer serve or any
external signer. A run's own validators have keys derived from run.seed and
their names: an external signer must not serve one of them (valnet refuses
a key that is also a validator's), so give it one from here.

Exit codes: 0 written, 2 the file exists or cannot be written.`,
		Example: `  valnet signer keygen kms/key.json
  valnet signer serve --node tcp://127.0.0.1:26659 --chain-id kms-chain --key-file kms/key.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := expandHome(args[0])
			if _, err := os.Stat(path); err == nil {
				return &exitError{exitBadInput, fmt.Errorf("%s exists: keygen never overwrites a key (a validator's key is its identity)", path)}
			} else if !errors.Is(err, os.ErrNotExist) {
				return &exitError{exitBadInput, err}
			}
			seed := make([]byte, 32)
			if _, err := rand.Read(seed); err != nil {
				return &exitError{exitBadInput, err}
			}
			key, err := signers.GenKey(keyType, seed)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return &exitError{exitBadInput, err}
			}
			// FilePV writes the key file (0600); its state file is not
			// wanted here: signer serve keeps its own beside the key.
			pv := privval.NewFilePV(key, path, os.DevNull)
			if err := saveKey(pv); err != nil {
				return &exitError{exitBadInput, fmt.Errorf("write %s: %w", path, err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s key, address %X\n", path, key.Type(), key.PubKey().Address())
			return nil
		},
	}
	cmd.Flags().StringVar(&keyType, "key-type", signers.KeyTypeEd25519, "ed25519 or secp256k1")
	return cmd
}

// saveKey is FilePV's key save, which panics on an I/O error.
func saveKey(pv *privval.FilePV) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	pv.Key.Save()
	return nil
}
