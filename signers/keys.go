package signers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/crypto/secp256k1"
	"github.com/cometbft/cometbft/types"
)

// Key types valnet can generate, store and sign with. The names are
// CometBFT's own (crypto KeyType), which are also the names consensus
// params list in Validator.PubKeyTypes.
const (
	KeyTypeEd25519   = ed25519.KeyType
	KeyTypeSecp256k1 = secp256k1.KeyType
)

// KeyTypes lists the supported key types, for error messages and flags.
var KeyTypes = []string{KeyTypeEd25519, KeyTypeSecp256k1}

func unknownKeyType(keyType string) error {
	return fmt.Errorf("unknown key type %q (allowed: %s)", keyType, strings.Join(KeyTypes, ", "))
}

// GenKey derives a private key of keyType from secret, deterministically:
// the same secret always gives the same key, so a scenario and its seed
// name a validator's key without storing it.
func GenKey(keyType string, secret []byte) (crypto.PrivKey, error) {
	if len(secret) == 0 {
		// Both generators would accept it and every caller would get the
		// same key: a bug upstream, not a key.
		return nil, errors.New("gen key: empty secret")
	}
	switch keyType {
	case KeyTypeEd25519:
		return ed25519.GenPrivKeyFromSecret(secret), nil
	case KeyTypeSecp256k1:
		return secp256k1.GenPrivKeySecp256k1(secret), nil
	default:
		return nil, fmt.Errorf("gen key: %w", unknownKeyType(keyType))
	}
}

// KeyTypeOf names the type of pub ("ed25519", "secp256k1"; CometBFT's
// name for any other type).
func KeyTypeOf(pub crypto.PubKey) string {
	return pub.Type()
}

// ABCIKeyType is the name consensus params use for keyType
// (ConsensusParams.Validator.PubKeyTypes): a chain whose params do not list
// a validator's key type rejects that validator.
func ABCIKeyType(keyType string) (string, error) {
	switch keyType {
	case KeyTypeEd25519:
		return types.ABCIPubKeyTypeEd25519, nil
	case KeyTypeSecp256k1:
		return types.ABCIPubKeyTypeSecp256k1, nil
	default:
		return "", unknownKeyType(keyType)
	}
}

// privKeyFromBytes rebuilds a private key of keyType from its raw bytes
// (PrivKey.Bytes()). The key aliases b: zeroing b zeroes the key.
func privKeyFromBytes(keyType string, b []byte) (crypto.PrivKey, error) {
	switch keyType {
	case KeyTypeEd25519:
		if len(b) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("ed25519 private key is %d bytes, want %d", len(b), ed25519.PrivateKeySize)
		}
		return ed25519.PrivKey(b), nil
	case KeyTypeSecp256k1:
		if len(b) != secp256k1.PrivKeySize {
			return nil, fmt.Errorf("secp256k1 private key is %d bytes, want %d", len(b), secp256k1.PrivKeySize)
		}
		return secp256k1.PrivKey(b), nil
	default:
		return nil, unknownKeyType(keyType)
	}
}

// pubKeyFromBytes rebuilds a public key of keyType from its raw bytes.
func pubKeyFromBytes(keyType string, b []byte) (crypto.PubKey, error) {
	switch keyType {
	case KeyTypeEd25519:
		if len(b) != ed25519.PubKeySize {
			return nil, fmt.Errorf("ed25519 public key is %d bytes, want %d", len(b), ed25519.PubKeySize)
		}
		return ed25519.PubKey(b), nil
	case KeyTypeSecp256k1:
		if len(b) != secp256k1.PubKeySize {
			return nil, fmt.Errorf("secp256k1 public key is %d bytes, want %d", len(b), secp256k1.PubKeySize)
		}
		return secp256k1.PubKey(b), nil
	default:
		return nil, unknownKeyType(keyType)
	}
}
