// Package signers holds valnet's signing backends and the decorators wrapped
// around them (latency injection, instrumentation). A signer is a CometBFT
// types.PrivValidator; it knows nothing of nodes, runs or events: it reports
// what it did through a small Observer interface.
package signers

import (
	"encoding/hex"
	"fmt"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
)

// Signer is what a validator signs with. It is CometBFT's PrivValidator
// (GetPubKey, SignVote, SignProposal, SignBytes), named here so that the
// decorators below read as what they are.
type Signer = types.PrivValidator

// Closer is an optional ability: a signer that holds resources or sleeps
// (a latency model) is told to stop, so a node shutdown is never held up by
// a signature that is still waiting.
type Closer interface {
	Close() error
}

// Close closes s if it has the ability, else does nothing.
func Close(s Signer) error {
	if c, ok := s.(Closer); ok {
		return c.Close()
	}
	return nil
}

// VotePhase names the phase (internal/phase) of a vote.
func VotePhase(vote *cmtproto.Vote) string {
	switch vote.Type {
	case types.PrevoteType:
		return phase.Prevote
	case types.PrecommitType:
		return phase.Precommit
	default:
		return fmt.Sprintf("vote-type-%d", vote.Type)
	}
}

// blockIDHex is the hash a vote or proposal signs, "" for a nil vote.
func blockIDHex(id cmtproto.BlockID) string {
	if len(id.Hash) == 0 {
		return ""
	}
	return hex.EncodeToString(id.Hash)
}
