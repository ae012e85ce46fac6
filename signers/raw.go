package signers

import (
	"github.com/cometbft/cometbft/crypto"
)

// KeySigner is a signing backend at its rawest: a key that signs bytes.
// It knows nothing of consensus; Guarded turns it into a Signer that
// applies the double-sign rules and persists the high-water mark before a
// signature leaves. Every backend (local key, encrypted key file,
// simulated device, HSM, Ledger) is a KeySigner.
type KeySigner interface {
	PubKey() crypto.PubKey
	// Sign signs msg (CometBFT sign bytes). kind is the phase the bytes
	// are for (proposal, prevote, precommit) or "bytes" for anything else
	// (vote extensions, SignBytes); a device model may price them apart.
	Sign(kind string, msg []byte) ([]byte, error)
}

// KindBytes marks a signature that is not a consensus phase.
const KindBytes = "bytes"

// PrivKeySigner signs with an in-memory private key (ed25519 or secp256k1).
type PrivKeySigner struct {
	Key crypto.PrivKey
}

var _ KeySigner = PrivKeySigner{}

func (p PrivKeySigner) PubKey() crypto.PubKey { return p.Key.PubKey() }

func (p PrivKeySigner) Sign(_ string, msg []byte) ([]byte, error) { return p.Key.Sign(msg) }
