package signers

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
)

// The files of a standalone signer: the validator key it serves (never
// created), its double-sign state beside it, and its SecretConnection
// identity (created when missing).

// Default file names of a standalone signer.
const (
	DefaultServeStateName    = "valnet_signer_state.json"
	DefaultServeIdentityName = "valnet_signer_identity.json"
)

// DefaultStateFile is the state file of a signer with no state file set:
// valnet_signer_state.json beside the key file, apart from the node's
// data/priv_validator_state.json.
func DefaultStateFile(keyFile string) string {
	return filepath.Join(filepath.Dir(keyFile), DefaultServeStateName)
}

// DefaultIdentityFile is the identity key of a signer with none set.
func DefaultIdentityFile(stateFile string) string {
	return filepath.Join(filepath.Dir(stateFile), DefaultServeIdentityName)
}

// LoadPrivValidatorKey reads the private key of a CometBFT
// priv_validator_key.json (ed25519 or secp256k1).
func LoadPrivValidatorKey(path string) (crypto.PrivKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file %s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("-----BEGIN")) {
		return nil, fmt.Errorf("key file %s is an armored (encrypted) key file: use type keyfile", path)
	}
	var k privval.FilePVKey
	if err := cmtjson.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("key file %s is not a CometBFT priv_validator_key.json: %v", path, err)
	}
	if k.PrivKey == nil {
		return nil, fmt.Errorf("key file %s has no priv_key", path)
	}
	if k.PubKey != nil && !bytes.Equal(k.PubKey.Bytes(), k.PrivKey.PubKey().Bytes()) {
		return nil, fmt.Errorf("key file %s: pub_key does not belong to priv_key", path)
	}
	return k.PrivKey, nil
}

// identityFile is CometBFT's node_key.json format.
type identityFile struct {
	PrivKey crypto.PrivKey `json:"priv_key"`
}

// LoadOrGenIdentity reads the signer's SecretConnection identity from path,
// or generates one and saves it there (0600) if the file does not exist.
func LoadOrGenIdentity(path string) (key ed25519.PrivKey, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		key = ed25519.GenPrivKey()
		b, err := cmtjson.Marshal(identityFile{PrivKey: key})
		if err == nil {
			err = os.MkdirAll(filepath.Dir(path), 0o700)
		}
		if err == nil {
			err = writeNewFile(path, b)
		}
		if err != nil {
			return nil, false, fmt.Errorf("identity key %s: %w", path, err)
		}
		return key, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	var f identityFile
	if err := cmtjson.Unmarshal(data, &f); err != nil {
		return nil, false, fmt.Errorf("identity key %s is not a node_key.json-style file: %v", path, err)
	}
	k, ok := f.PrivKey.(ed25519.PrivKey)
	if !ok {
		return nil, false, fmt.Errorf("identity key %s: want an ed25519 key (SecretConnection needs one)", path)
	}
	return k, false, nil
}

// keyfileSpec is the Build spec of an existing armored key file: serve
// only uses a key file, where Build would create a missing one.
func keyfileSpec(path, mode string, passphrase []byte) (*KeyfileSpec, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file %s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, fmt.Errorf("key file %s looks like a priv_validator_key.json: use type local (or simulated), or give the armored key file", path)
	}
	if mode == "" {
		mode = ModeEverySign
	}
	return &KeyfileSpec{Path: path, Mode: mode, Passphrase: passphrase}, nil
}
