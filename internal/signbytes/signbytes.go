// Package signbytes reads what a signer must know of CometBFT v1 sign
// bytes: the height, round and step they are for. The Ledger device model
// and the threshold model's cosigners keep their high-water marks by it,
// as the Ledger app and horcrux's cosigners (UnpackHRST) do.
package signbytes

import (
	"encoding/binary"
	"errors"
	"fmt"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"

	"github.com/valnet/valnet/internal/phase"
)

// Step orders the phases of one round:
// proposal < prevote < precommit.
type Step int

const (
	StepProposal  Step = 1
	StepPrevote   Step = 2
	StepPrecommit Step = 3
)

func (s Step) String() string {
	switch s {
	case StepProposal:
		return "proposal"
	case StepPrevote:
		return "prevote"
	case StepPrecommit:
		return "precommit"
	}
	return fmt.Sprintf("step(%d)", int(s))
}

// VoteState is the height, round and step of sign bytes.
type VoteState struct {
	Height int64
	Round  int64
	Step   Step
}

func (v VoteState) String() string {
	return fmt.Sprintf("%d/%d/%s", v.Height, v.Round, v.Step)
}

// After reports whether v may be signed after last: higher height, same
// height and higher round, or same height and round and a later step.
func (v VoteState) After(last VoteState) bool {
	switch {
	case v.Height != last.Height:
		return v.Height > last.Height
	case v.Round != last.Round:
		return v.Round > last.Round
	default:
		return v.Step > last.Step
	}
}

// Parse reads the vote state of
// CometBFT v1 sign bytes: a uvarint length prefix then a CanonicalVote or
// CanonicalProposal, as types.VoteSignBytes / ProposalSignBytes write them.
func Parse(b []byte) (VoteState, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return VoteState{}, errors.New("no length prefix")
	}
	body := b[k:]
	if n != uint64(len(body)) {
		return VoteState{}, fmt.Errorf("length prefix %d, body %d bytes", n, len(body))
	}
	// The two messages share fields 1-3 (type, sfixed64 height, sfixed64
	// round) but differ after; the type field says which one it really is.
	var v cmtproto.CanonicalVote
	if err := v.Unmarshal(body); err == nil {
		switch v.Type {
		case cmtproto.PrevoteType:
			return checkState(VoteState{v.Height, v.Round, StepPrevote}, v.ChainID)
		case cmtproto.PrecommitType:
			return checkState(VoteState{v.Height, v.Round, StepPrecommit}, v.ChainID)
		}
	}
	var p cmtproto.CanonicalProposal
	if err := p.Unmarshal(body); err != nil {
		return VoteState{}, fmt.Errorf("neither canonical vote nor proposal: %w", err)
	}
	if p.Type != cmtproto.ProposalType {
		return VoteState{}, fmt.Errorf("message type %d is not a vote or proposal", p.Type)
	}
	return checkState(VoteState{p.Height, p.Round, StepProposal}, p.ChainID)
}

func checkState(v VoteState, chainID string) (VoteState, error) {
	if v.Height <= 0 || v.Round < 0 || chainID == "" {
		return VoteState{}, fmt.Errorf("implausible vote %s chain %q", v, chainID)
	}
	return v, nil
}

// The phases' step order is FilePV's (privval/file.go: stepPropose 1,
// stepPrevote 2, stepPrecommit 3), the one every double-sign rule of
// valnet uses: the guard (FilePV itself), the node-side watch, the Ledger
// model, the threshold cosigners and the sim.

// StepOf is the step of a phase (internal/phase's names); 0 for another.
func StepOf(ph string) Step {
	switch ph {
	case phase.Proposal:
		return StepProposal
	case phase.Prevote:
		return StepPrevote
	case phase.Precommit:
		return StepPrecommit
	}
	return 0
}

// Int8 is the step as privval.FilePV's LastSignState keeps it.
func (s Step) Int8() int8 { return int8(s) }

// Cmp orders v against last: -1 a regression (refused), 0 the same
// height, round and step (only what was signed there may be signed again),
// 1 after it.
func (v VoteState) Cmp(last VoteState) int {
	switch {
	case v == last:
		return 0
	case v.After(last):
		return 1
	}
	return -1
}
