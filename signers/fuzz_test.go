package signers

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/libs/protoio"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"
)

// frames writes msgs as a node sends them: each a varint-delimited
// privval Message.
func frames(msgs ...*privvalproto.Message) []byte {
	var b bytes.Buffer
	w := protoio.NewDelimitedWriter(&b)
	for _, m := range msgs {
		if _, err := w.WriteMsg(m); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func signVoteReq(v *cmtproto.Vote, chain string) *privvalproto.Message {
	return &privvalproto.Message{Sum: &privvalproto.Message_SignVoteRequest{SignVoteRequest: &privvalproto.SignVoteRequest{Vote: v, ChainId: chain}}}
}

func signProposalReq(p *cmtproto.Proposal, chain string) *privvalproto.Message {
	return &privvalproto.Message{Sum: &privvalproto.Message_SignProposalRequest{SignProposalRequest: &privvalproto.SignProposalRequest{Proposal: p, ChainId: chain}}}
}

// signedHRS is one signature the signer returned: its height, round and
// step (FilePV's: 1 propose, 2 prevote, 3 precommit) and the bytes signed.
type signedHRS struct {
	h     int64
	r     int32
	step  int8
	bytes []byte
}

// FuzzServeFrames is a node that sends valnet signer serve arbitrary bytes
// on its privval connection (unix socket): the signer must not panic or
// hang (it answers and drops the connection once the node closes its end),
// every signature it returns must verify, and it must never sign what its
// double-sign guard must refuse: a height/round/step below one it signed,
// or the same height/round/step with different bytes (FilePV's rules).
func FuzzServeFrames(f *testing.F) {
	t0 := time.Unix(1700000000, 0).UTC()
	pv1, pc1 := vote(types.PrevoteType, 1, 0, 0xAA), vote(types.PrecommitType, 1, 0, 0xAA)
	other := vote(types.PrevoteType, 1, 0, 0xBB)
	later := vote(types.PrevoteType, 1, 0, 0xAA)
	later.Timestamp = t0.Add(time.Second)
	ping := &privvalproto.Message{Sum: &privvalproto.Message_PingRequest{PingRequest: &privvalproto.PingRequest{}}}
	pub := &privvalproto.Message{Sum: &privvalproto.Message_PubKeyRequest{PubKeyRequest: &privvalproto.PubKeyRequest{ChainId: chainID}}}
	for _, seed := range [][]byte{
		frames(pub, ping),
		frames(signProposalReq(proposal(1, 0, 0xAA, t0), chainID), signVoteReq(pv1, chainID), signVoteReq(pc1, chainID)),
		frames(signVoteReq(pv1, chainID), signVoteReq(other, chainID)),                               // conflicting
		frames(signVoteReq(pv1, chainID), signVoteReq(later, chainID)),                               // same vote, later time
		frames(signVoteReq(vote(types.PrevoteType, 5, 0, 0xAA), chainID), signVoteReq(pv1, chainID)), // regression
		frames(signVoteReq(pv1, "another-chain"), pub),
		frames(signVoteReq(nil, chainID), signProposalReq(nil, chainID)),
		frames(signVoteReq(&cmtproto.Vote{Type: types.ProposalType, Height: 2}, chainID)),
		frames(&privvalproto.Message{}),
		{0xff, 0xff, 0xff, 0xff, 0x0f},
		nil,
	} {
		f.Add(seed)
	}
	keyFile := filepath.Join(f.TempDir(), "priv_validator_key.json")
	if err := saveKey(privval.NewFilePV(testKey(), keyFile, "")); err != nil {
		f.Fatal(err)
	}
	pubKey := testKey().PubKey()
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSigned(t, pubKey, serveFrames(t, keyFile, data))
	})
}

// serveFrames starts valnet signer serve (a fresh state file) for a node
// listening on a unix socket, sends it data once it connects, closes the
// node's end and returns the signer's replies, failing t if the signer
// does not drop the connection in time.
func serveFrames(t *testing.T, keyFile string, data []byte) []*privvalproto.Message {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "pv.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := StartServe(ServeConfig{Node: "unix://" + sock, ChainID: chainID, KeyFile: keyFile,
		StateFile: filepath.Join(dir, "state.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the signer did not dial: %v", err)
	}
	defer c.Close()
	ln.Close() // one connection per input
	replies := make(chan []*privvalproto.Message, 1)
	go func() {
		var got []*privvalproto.Message
		r := protoio.NewDelimitedReader(c, 1<<20)
		for {
			var m privvalproto.Message
			if _, err := r.ReadMsg(&m); err != nil {
				break
			}
			got = append(got, &m)
		}
		replies <- got
	}()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatalf("writing the frames: %v", err)
	}
	c.(*net.UnixConn).CloseWrite()
	select {
	case got := <-replies:
		return got
	case <-time.After(15 * time.Second):
		t.Fatalf("the signer neither answered nor dropped the connection within 15s of the node closing its end")
		return nil
	}
}

// Found by FuzzServeFrames: a sign request without its vote (or proposal)
// made CometBFT's request handler dereference nil, and the panic killed
// valnet signer serve. It is refused, and the signer signs on.
func TestServeRefusesASignRequestWithoutAVote(t *testing.T) {
	keyFile := writePrivValidatorKey(t, t.TempDir())
	got := serveFrames(t, keyFile, frames(signVoteReq(nil, chainID), signProposalReq(nil, chainID),
		signVoteReq(vote(types.PrevoteType, 1, 0, 0xAA), chainID)))
	if len(got) != 3 {
		t.Fatalf("%d replies, want 3: %v", len(got), got)
	}
	if e := got[0].GetSignedVoteResponse().GetError(); e == nil || e.Description != "the sign request carries no vote" {
		t.Errorf("reply to a request without a vote: %v", got[0])
	}
	if e := got[1].GetSignedProposalResponse().GetError(); e == nil || e.Description != "the sign request carries no proposal" {
		t.Errorf("reply to a request without a proposal: %v", got[1])
	}
	r := got[2].GetSignedVoteResponse()
	if r == nil || r.Error != nil || len(r.Vote.Signature) == 0 {
		t.Fatalf("the vote after them was not signed: %v", got[2])
	}
	checkSigned(t, testKey().PubKey(), got)
}

// The fuzz target's check is not vacuous: a conflicting vote is refused
// (the guard), and checkSigned would see it if it were not.
func TestServeFramesGuardRefusesConflict(t *testing.T) {
	keyFile := writePrivValidatorKey(t, t.TempDir())
	got := serveFrames(t, keyFile, frames(signVoteReq(vote(types.PrevoteType, 2, 0, 0xAA), chainID),
		signVoteReq(vote(types.PrevoteType, 2, 0, 0xBB), chainID), signVoteReq(vote(types.PrevoteType, 1, 0, 0xAA), chainID)))
	if len(got) != 3 || got[0].GetSignedVoteResponse().GetError() != nil ||
		got[1].GetSignedVoteResponse().GetError() == nil || got[2].GetSignedVoteResponse().GetError() == nil {
		t.Fatalf("replies %v: want the first signed, the conflict and the regression refused", got)
	}
	checkSigned(t, testKey().PubKey(), got)
}

// checkSigned holds the signatures among replies to FilePV's rules.
func checkSigned(t *testing.T, pub crypto.PubKey, replies []*privvalproto.Message) {
	t.Helper()
	var signed []signedHRS
	for _, m := range replies {
		switch r := m.Sum.(type) {
		case *privvalproto.Message_SignedVoteResponse:
			if r.SignedVoteResponse.Error != nil {
				continue
			}
			v := r.SignedVoteResponse.Vote
			step := int8(0)
			switch v.Type {
			case types.PrevoteType:
				step = 2
			case types.PrecommitType:
				step = 3
			default:
				t.Fatalf("signed a vote of type %v", v.Type)
			}
			sb := types.VoteSignBytes(chainID, &v)
			if !pub.VerifySignature(sb, v.Signature) {
				t.Fatalf("the signature of vote %v does not verify", v)
			}
			signed = append(signed, signedHRS{v.Height, v.Round, step, sb})
		case *privvalproto.Message_SignedProposalResponse:
			if r.SignedProposalResponse.Error != nil {
				continue
			}
			p := r.SignedProposalResponse.Proposal
			sb := types.ProposalSignBytes(chainID, &p)
			if !pub.VerifySignature(sb, p.Signature) {
				t.Fatalf("the signature of proposal %v does not verify", p)
			}
			signed = append(signed, signedHRS{p.Height, p.Round, 1, sb})
		}
	}
	for i := 1; i < len(signed); i++ {
		a, b := signed[i-1], signed[i]
		hrs := func(s signedHRS) string { return fmt.Sprintf("h=%d r=%d step=%d", s.h, s.r, s.step) }
		switch {
		case b.h < a.h || b.h == a.h && (b.r < a.r || b.r == a.r && b.step < a.step):
			t.Fatalf("signed %s after %s: a regression", hrs(b), hrs(a))
		case b.h == a.h && b.r == a.r && b.step == a.step && !bytes.Equal(a.bytes, b.bytes):
			t.Fatalf("signed %s twice with different bytes: a double sign", hrs(b))
		}
	}
}
