package runner

import (
	"fmt"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
)

// Keys are derived from the run seed and the validator name, so the same
// scenario and seed always give the same validator addresses and node IDs,
// whatever the order validators start in.
func validatorKey(seed int64, name string) crypto.PrivKey {
	return ed25519.GenPrivKeyFromSecret([]byte(fmt.Sprintf("valnet/v1/seed=%d/validator=%s/consensus", seed, name)))
}

func nodeKey(seed int64, name string) *p2p.NodeKey {
	return &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret([]byte(fmt.Sprintf("valnet/v1/seed=%d/validator=%s/p2p", seed, name)))}
}
