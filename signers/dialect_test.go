package signers

import (
	"bytes"
	"net"
	"path/filepath"
	"testing"
	"time"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	pvbeta2 "github.com/cometbft/cometbft/api/cometbft/privval/v1beta2"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	cryptoenc "github.com/cometbft/cometbft/crypto/encoding"
	"github.com/cometbft/cometbft/crypto/secp256k1"
	"github.com/cometbft/cometbft/libs/protoio"
	"github.com/cometbft/cometbft/types"
)

func marshal(t *testing.T, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each layout's PubKeyResponse reaches valnet's v1 code in v1's layout,
// and valnet's answer reaches a peer in the peer's: for every key type
// and for error answers, decoded with the peer's own generated types
// (CometBFT's v1beta2 is tendermint.privval's layout, v0.34-v0.40).
func TestDialectPubKeyResponse(t *testing.T) {
	for _, pub := range []crypto.PubKey{testKey().PubKey(), secp256k1.GenPrivKeySecp256k1([]byte("k")).PubKey()} {
		pk, err := cryptoenc.PubKeyToProto(pub)
		if err != nil {
			t.Fatal(err)
		}
		old := marshal(t, &pvbeta2.Message{Sum: &pvbeta2.Message_PubKeyResponse{PubKeyResponse: &pvbeta2.PubKeyResponse{PubKey: pk}}})
		v1 := marshal(t, &privvalproto.Message{Sum: &privvalproto.Message_PubKeyResponse{PubKeyResponse: &privvalproto.PubKeyResponse{
			PubKeyType: pub.Type(), PubKeyBytes: pub.Bytes()}}})

		// Read: both reach v1's decoder with the key.
		for _, tc := range []struct {
			name string
			in   []byte
			saw  Dialect
		}{{"v0.38", old, DialectV038}, {"v1", v1, DialectV1}, {"auto", frameFromV1(v1, DialectAuto), DialectAuto}} {
			got, saw := frameToV1(tc.in)
			if saw != tc.saw {
				t.Errorf("%s %s: saw %q, want %q", pub.Type(), tc.name, saw, tc.saw)
			}
			var m privvalproto.Message
			if err := m.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			r := m.GetPubKeyResponse()
			if r == nil || r.PubKeyType != pub.Type() || !bytes.Equal(r.PubKeyBytes, pub.Bytes()) {
				t.Errorf("%s %s: v1 reads %+v", pub.Type(), tc.name, r)
			}
		}

		// Written: each peer decodes its own layout.
		for _, d := range []Dialect{DialectV038, DialectAuto} {
			var m pvbeta2.Message
			if err := m.Unmarshal(frameFromV1(v1, d)); err != nil {
				t.Fatal(err)
			}
			got, err := cryptoenc.PubKeyFromProto(m.GetPubKeyResponse().PubKey)
			if err != nil || !bytes.Equal(got.Bytes(), (pub).Bytes()) {
				t.Errorf("%s as %s: a v0.38 peer reads %v (%v)", pub.Type(), d, got, err)
			}
		}
		for _, d := range []Dialect{DialectV1, DialectAuto} {
			var m privvalproto.Message
			if err := m.Unmarshal(frameFromV1(v1, d)); err != nil {
				t.Fatal(err)
			}
			if r := m.GetPubKeyResponse(); !bytes.Equal(r.PubKeyBytes, pub.Bytes()) {
				t.Errorf("%s as %s: a v1 peer reads %+v", pub.Type(), d, r)
			}
		}
	}
	// An error answer is the same in both and passes as it is.
	e := marshal(t, &privvalproto.Message{Sum: &privvalproto.Message_PubKeyResponse{PubKeyResponse: &privvalproto.PubKeyResponse{
		Error: &privvalproto.RemoteSignerError{Code: 1, Description: "no"}}}})
	for _, d := range Dialects {
		if got := frameFromV1(e, d); !bytes.Equal(got, e) {
			t.Errorf("error answer as %s changed", d)
		}
	}
	if got, saw := frameToV1(e); !bytes.Equal(got, e) || saw != "" {
		t.Errorf("error answer read: changed or saw %q", saw)
	}
	// Other frames pass byte for byte.
	ping := marshal(t, &privvalproto.Message{Sum: &privvalproto.Message_PingRequest{PingRequest: &privvalproto.PingRequest{}}})
	if got, _ := frameToV1(ping); !bytes.Equal(got, ping) {
		t.Error("ping changed")
	}
}

// The conn splits and joins frames however the bytes arrive: one byte at
// a time, or several frames in one write.
func TestDialectConnFraming(t *testing.T) {
	pub := testKey().PubKey()
	v1 := marshal(t, &privvalproto.Message{Sum: &privvalproto.Message_PubKeyResponse{PubKeyResponse: &privvalproto.PubKeyResponse{
		PubKeyType: pub.Type(), PubKeyBytes: pub.Bytes()}}})
	ping := marshal(t, &privvalproto.Message{Sum: &privvalproto.Message_PingResponse{PingResponse: &privvalproto.PingResponse{}}})
	var stream []byte
	stream = appendFrame(stream, ping)
	stream = appendFrame(stream, v1)
	stream = appendFrame(stream, ping)

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := newDialectConn(a, DialectV038)
	go func() {
		for i := range stream { // one byte per write
			if _, err := w.Write(stream[i : i+1]); err != nil {
				return
			}
		}
	}()
	r := protoio.NewDelimitedReader(b, 1<<16)
	var first, second, third pvbeta2.Message
	for _, m := range []*pvbeta2.Message{&first, &second, &third} {
		if _, err := r.ReadMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if first.GetPingResponse() == nil || third.GetPingResponse() == nil {
		t.Fatalf("pings lost: %v %v", first, third)
	}
	if got, err := cryptoenc.PubKeyFromProto(second.GetPubKeyResponse().PubKey); err != nil || !bytes.Equal(got.Bytes(), (pub).Bytes()) {
		t.Fatalf("v0.38 peer read %v (%v)", got, err)
	}
}

// serveV038 answers privval requests in tendermint.privval's layout, as a
// v0.38 KMS does; sparse answers as horcrux does (only timestamp and the
// signatures set).
func serveV038(t *testing.T, conn net.Conn, key PrivKeySigner, sparse bool) {
	t.Helper()
	r := protoio.NewDelimitedReader(conn, 10*1024)
	w := protoio.NewDelimitedWriter(conn)
	for {
		var req pvbeta2.Message
		if _, err := r.ReadMsg(&req); err != nil {
			return
		}
		var res pvbeta2.Message
		switch q := req.Sum.(type) {
		case *pvbeta2.Message_PingRequest:
			res.Sum = &pvbeta2.Message_PingResponse{PingResponse: &pvbeta2.PingResponse{}}
		case *pvbeta2.Message_PubKeyRequest:
			pk, _ := cryptoenc.PubKeyToProto(key.Key.PubKey())
			res.Sum = &pvbeta2.Message_PubKeyResponse{PubKeyResponse: &pvbeta2.PubKeyResponse{PubKey: pk}}
		case *pvbeta2.Message_SignVoteRequest:
			v := *q.SignVoteRequest.Vote
			v.Signature, _ = key.Key.Sign(types.VoteSignBytes(q.SignVoteRequest.ChainId, &v))
			if sparse {
				v = cmtproto.Vote{Timestamp: v.Timestamp, Signature: v.Signature}
			}
			res.Sum = &pvbeta2.Message_SignedVoteResponse{SignedVoteResponse: &pvbeta2.SignedVoteResponse{Vote: v}}
		case *pvbeta2.Message_SignProposalRequest:
			p := *q.SignProposalRequest.Proposal
			p.Signature, _ = key.Key.Sign(types.ProposalSignBytes(q.SignProposalRequest.ChainId, &p))
			if sparse {
				p = cmtproto.Proposal{Timestamp: p.Timestamp, Signature: p.Signature}
			}
			res.Sum = &pvbeta2.Message_SignedProposalResponse{SignedProposalResponse: &pvbeta2.SignedProposalResponse{Proposal: p}}
		}
		if _, err := w.WriteMsg(&res); err != nil {
			return
		}
	}
}

// A v0.38 signer (tmkms, horcrux) dials valnet's node end: its key is
// read, its sparse answers are taken as CometBFT takes them, every
// signature verifies, and the watch keeps its mark.
func TestListenerAcceptsAV038Signer(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "sparse"}[sparse]
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s.sock")
			client, err := ListenRemote(ClientConfig{Network: NetUnix, Address: sock, ChainID: chainID})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			key := PrivKeySigner{Key: testKey()}
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer c.Close()
				serveV038(t, c, key, sparse)
			}()
			if err := client.WaitForSigner(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			pub, err := client.GetPubKey()
			if err != nil {
				t.Fatalf("GetPubKey from a v0.38 signer: %v", err)
			}
			if !bytes.Equal(pub.Bytes(), key.Key.PubKey().Bytes()) {
				t.Fatal("wrong key")
			}
			if d := client.PeerDialect(); d != DialectV038 {
				t.Fatalf("peer dialect %q, want v0.38", d)
			}
			w, err := Watch(client, pub, filepath.Join(t.TempDir(), "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			v := vote(types.PrevoteType, 2, 0, 0xAA)
			if err := w.SignVote(chainID, v, false); err != nil {
				t.Fatal(err)
			}
			if v.Height != 2 || v.Type != types.PrevoteType {
				t.Fatalf("vote fields lost: %+v", v)
			}
			verifyVote(t, w, v)
			p := &cmtproto.Proposal{Type: types.ProposalType, Height: 3, Round: 0, PolRound: -1,
				BlockID:   cmtproto.BlockID{Hash: bytes.Repeat([]byte{0xAA}, 32), PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: bytes.Repeat([]byte{1}, 32)}},
				Timestamp: time.Now().UTC()}
			if err := w.SignProposal(chainID, p); err != nil {
				t.Fatal(err)
			}
			if p.Height != 3 || !pub.VerifySignature(types.ProposalSignBytes(chainID, p), p.Signature) {
				t.Fatalf("proposal lost its fields or its signature does not verify: %+v", p)
			}
			client.Close()
			<-done
		})
	}
}

// valnet's signer answers a v0.38 node in v0.38's layout (and in auto,
// in both): the node's own generated types read the key.
func TestServerAnswersInTheNodesDialect(t *testing.T) {
	for _, d := range []Dialect{DialectV038, DialectAuto, DialectV1} {
		t.Run(string(d), func(t *testing.T) {
			ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "n.sock"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			g := openGuard(t, PrivKeySigner{Key: testKey()}, filepath.Join(t.TempDir(), "state.json"))
			srv, err := ServeRemote(ServerConfig{Network: NetUnix, Address: ln.Addr().String(), ChainID: chainID, Signer: g, Dialect: d})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			w := protoio.NewDelimitedWriter(c)
			r := protoio.NewDelimitedReader(c, 10*1024)
			if _, err := w.WriteMsg(&pvbeta2.Message{Sum: &pvbeta2.Message_PubKeyRequest{PubKeyRequest: &pvbeta2.PubKeyRequest{ChainId: chainID}}}); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if d == DialectV1 {
				var m privvalproto.Message
				if _, err := r.ReadMsg(&m); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(m.GetPubKeyResponse().PubKeyBytes, testKey().PubKey().Bytes()) {
					t.Fatalf("v1 answer %+v", m.GetPubKeyResponse())
				}
				return
			}
			var m pvbeta2.Message
			if _, err := r.ReadMsg(&m); err != nil {
				t.Fatal(err)
			}
			got, err := cryptoenc.PubKeyFromProto(m.GetPubKeyResponse().PubKey)
			if err != nil || !bytes.Equal(got.Bytes(), (testKey().PubKey()).Bytes()) {
				t.Fatalf("the node reads %v (%v)", got, err)
			}
		})
	}
}

func TestParseDialect(t *testing.T) {
	for in, want := range map[string]Dialect{"": DialectAuto, "auto": DialectAuto, "v0.37": DialectV038, "0.38": DialectV038,
		"v0.40": DialectV038, "v0.34": DialectV038, "v1": DialectV1, "1.0": DialectV1} {
		if got, err := ParseDialect(in); err != nil || got != want {
			t.Errorf("ParseDialect(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDialect("v2"); err == nil {
		t.Error("v2 accepted")
	}
}
