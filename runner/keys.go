package runner

import (
	"fmt"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"

	"github.com/valnet/valnet/signers"
)

// Keys are derived from the run seed and the validator name, so the same
// scenario and seed always give the same validator addresses and node IDs,
// whatever the order validators start in.
func secret(seed int64, name, purpose string) []byte {
	return []byte(fmt.Sprintf("valnet/v1/seed=%d/validator=%s/%s", seed, name, purpose))
}

// validatorKey is the consensus key of a validator, of keyType.
func validatorKey(seed int64, name, keyType string) (crypto.PrivKey, error) {
	if keyType == "" {
		keyType = signers.KeyTypeEd25519
	}
	return signers.GenKey(keyType, secret(seed, name, "consensus"))
}

func nodeKey(seed int64, name string) *p2p.NodeKey {
	return &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret(secret(seed, name, "p2p"))}
}

// signerIdentity is the remote signer's SecretConnection key; the node
// accepts only this identity.
func signerIdentity(seed int64, name string) ed25519.PrivKey {
	return ed25519.GenPrivKeyFromSecret(secret(seed, name, "signer-identity"))
}

// nodeSignerKey is the node's SecretConnection key on its signer listener.
func nodeSignerKey(seed int64, name string) ed25519.PrivKey {
	return ed25519.GenPrivKeyFromSecret(secret(seed, name, "signer-listener"))
}
