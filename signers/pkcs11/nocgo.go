//go:build !cgo

package pkcs11

import "github.com/cometbft/cometbft/crypto"

// Available says whether this build can talk to PKCS#11 modules: not
// without cgo.
const Available = false

// Signer is never opened in a build without cgo.
type Signer struct{}

// Open returns ErrUnavailable.
func Open(Config) (*Signer, error) { return nil, ErrUnavailable }

func (*Signer) PubKey() crypto.PubKey               { return nil }
func (*Signer) Sign(string, []byte) ([]byte, error) { return nil, ErrUnavailable }
func (*Signer) Close() error                        { return nil }

// Provision returns ErrUnavailable.
func Provision(dir, tokenLabel, keyLabel string) (Config, error) {
	return Config{}, ErrUnavailable
}

// ProvisionModule returns ErrUnavailable.
func ProvisionModule(module, dir, tokenLabel, keyLabel string) (Config, error) {
	return Config{}, ErrUnavailable
}

// Keygen returns ErrUnavailable.
func Keygen(Config) (crypto.PubKey, error) { return nil, ErrUnavailable }

// List returns ErrUnavailable.
func List(module, token string, pin []byte) ([]SlotInfo, error) { return nil, ErrUnavailable }
