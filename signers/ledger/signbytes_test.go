package ledger

import (
	"github.com/valnet/valnet/internal/signbytes"

	"testing"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"
)

func TestParseSignBytes(t *testing.T) {
	for _, tc := range []struct {
		step signbytes.Step
		h, r int64
	}{
		{signbytes.StepProposal, 1, 0}, {signbytes.StepPrevote, 7, 0}, {signbytes.StepPrecommit, 7, 3},
		{signbytes.StepProposal, 1 << 40, 2}, {signbytes.StepPrevote, 123456789, 1000},
	} {
		b := signBytes(t, tc.step, tc.h, tc.r)
		got, err := signbytes.Parse(b)
		want := signbytes.VoteState{Height: tc.h, Round: tc.r, Step: tc.step}
		if err != nil || got != want {
			t.Errorf("%v: got %v, %v", want, got, err)
		}
	}
	// A proposal with a POL round, and a nil precommit (no block ID).
	pol := types.ProposalSignBytes(testChainID, &cmtproto.Proposal{
		Type: cmtproto.ProposalType, Height: 5, Round: 2, PolRound: 1, BlockID: testBlockID(), Timestamp: testTime,
	})
	nilVote := types.VoteSignBytes(testChainID, &cmtproto.Vote{
		Type: cmtproto.PrecommitType, Height: 5, Round: 2, Timestamp: testTime,
	})
	for name, tc := range map[string]struct {
		b    []byte
		want signbytes.VoteState
	}{
		"pol proposal":  {pol, signbytes.VoteState{Height: 5, Round: 2, Step: signbytes.StepProposal}},
		"nil precommit": {nilVote, signbytes.VoteState{Height: 5, Round: 2, Step: signbytes.StepPrecommit}},
	} {
		if got, err := signbytes.Parse(tc.b); err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v", name, got, err)
		}
	}
}

func TestParseSignBytesRejects(t *testing.T) {
	vote := signBytes(t, signbytes.StepPrevote, 10, 0)
	ext := types.VoteExtensionSignBytes(testChainID, &cmtproto.Vote{
		Type: cmtproto.PrecommitType, Height: 10, Round: 0, Extension: []byte("ext"),
	})
	// Amino-era sign bytes as the historical app and tmkms tests build them
	// (length byte, then type/height/round fields with other tags).
	amino := []byte{0x1f, 0x08, 0x01, 0x11, 0x05, 0, 0, 0, 0, 0, 0, 0, 0x19, 0, 0, 0, 0, 0, 0, 0, 0,
		0x22, 0x0b, 0x08, 0x80, 0x92, 0xb8, 0xc3, 0x98, 0xfe, 0xff, 0xff, 0xff, 0x01}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"garbage":        []byte("hello ledger, please sign this"),
		"truncated":      vote[:len(vote)-3],
		"trailing":       append(append([]byte(nil), vote...), 0),
		"no prefix":      vote[1:],
		"vote extension": ext,
		"amino":          amino,
		"zero height":    types.VoteSignBytes(testChainID, &cmtproto.Vote{Type: cmtproto.PrevoteType, Round: 0}),
		"no chain id":    types.VoteSignBytes("", &cmtproto.Vote{Type: cmtproto.PrevoteType, Height: 3}),
		"unknown type":   types.VoteSignBytes(testChainID, &cmtproto.Vote{Type: 7, Height: 3}),
	} {
		if got, err := signbytes.Parse(b); err == nil {
			t.Errorf("%s: parsed as %v", name, got)
		}
	}
}

func TestVoteStateAfter(t *testing.T) {
	last := signbytes.VoteState{Height: 10, Round: 1, Step: signbytes.StepPrevote}
	for _, tc := range []struct {
		v    signbytes.VoteState
		want bool
	}{
		{signbytes.VoteState{Height: 11, Round: 0, Step: signbytes.StepProposal}, true},
		{signbytes.VoteState{Height: 10, Round: 2, Step: signbytes.StepProposal}, true},
		{signbytes.VoteState{Height: 10, Round: 1, Step: signbytes.StepPrecommit}, true},
		{signbytes.VoteState{Height: 10, Round: 1, Step: signbytes.StepPrevote}, false},
		{signbytes.VoteState{Height: 10, Round: 1, Step: signbytes.StepProposal}, false},
		{signbytes.VoteState{Height: 10, Round: 0, Step: signbytes.StepPrecommit}, false},
		{signbytes.VoteState{Height: 9, Round: 5, Step: signbytes.StepPrecommit}, false},
	} {
		if got := tc.v.After(last); got != tc.want {
			t.Errorf("%v after %v = %v", tc.v, last, got)
		}
	}
}
