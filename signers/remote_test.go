package signers

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	p2pconn "github.com/cometbft/cometbft/p2p/conn"
	"github.com/cometbft/cometbft/types"
)

// remotePair starts a node-side client and a signer-side server for net.
func remotePair(t *testing.T, network string, allowed ...ed25519.PrivKey) (*RemoteClient, *RemoteServer, *Guarded) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == NetUnix {
		addr = filepath.Join(t.TempDir(), "signer.sock")
	}
	identity := ed25519.GenPrivKeyFromSecret([]byte("signer-identity"))
	cfg := ClientConfig{Network: network, Address: addr, ChainID: chainID,
		NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))}
	for _, k := range allowed {
		cfg.AllowedSigners = append(cfg.AllowedSigners, k.PubKey())
	}
	client, err := ListenRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	g := openGuard(t, PrivKeySigner{Key: testKey()}, filepath.Join(t.TempDir(), "state.json"))
	srv, err := ServeRemote(ServerConfig{Network: network, Address: client.Addr(), ChainID: chainID,
		IdentityKey: identity, Signer: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return client, srv, g
}

func TestRemoteSignerEndToEnd(t *testing.T) {
	for _, network := range []string{NetTCP, NetUnix} {
		t.Run(network, func(t *testing.T) {
			client, srv, _ := remotePair(t, network, ed25519.GenPrivKeyFromSecret([]byte("signer-identity")))
			if err := client.WaitForSigner(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			pub, err := client.GetPubKey()
			if err != nil {
				t.Fatal(err)
			}
			if pub.Address().String() != testKey().PubKey().Address().String() {
				t.Fatal("remote public key is not the backend's")
			}
			v := vote(types.PrevoteType, 3, 0, 0xAA)
			if err := client.SignVote(chainID, v, false); err != nil {
				t.Fatal(err)
			}
			verifyVote(t, client, v)
			// The guard on the signer side refuses conflicting data, and
			// the refusal reaches the node as an error (not a retry loop).
			if err := client.SignVote(chainID, vote(types.PrevoteType, 3, 0, 0xBB), false); err == nil {
				t.Fatal("conflicting vote signed over the wire")
			}
			// A restarted signer process: the node reconnects, the
			// high-water mark holds.
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			p := vote(types.PrecommitType, 3, 0, 0xAA)
			if err := client.SignVote(chainID, p, false); err != nil {
				t.Fatal(fmt.Errorf("after signer restart: %w", err))
			}
			verifyVote(t, client, p)
		})
	}
}

func TestRemoteRefusesAnUnexpectedSignerIdentity(t *testing.T) {
	expected := ed25519.GenPrivKeyFromSecret([]byte("someone-else"))
	client, _, _ := remotePair(t, NetTCP, expected)
	// Once the node has refused the signer, it can never connect: the
	// wait fails, and says why.
	eventually(t, "the node to refuse the signer", func() bool { return client.Refused() != nil })
	err := client.WaitForSigner(100 * time.Millisecond)
	if err == nil {
		t.Fatal("node accepted a signer whose identity it does not expect")
	}
	got := ed25519.GenPrivKeyFromSecret([]byte("signer-identity")).PubKey()
	want := fmt.Sprintf("refused the signer: its SecretConnection identity is %X, expected %X", got.Address(), expected.PubKey().Address())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err %q, want it to say %q", err, want)
	}
}

// The signer side pins the node: a node with another SecretConnection key
// gets no connection (so no request is ever answered); the right one signs.
func TestRemoteSignerRefusesAnUnexpectedNode(t *testing.T) {
	nodeKey := ed25519.GenPrivKeyFromSecret([]byte("node"))
	signerKey := ed25519.GenPrivKeyFromSecret([]byte("signer-identity"))
	for _, tc := range []struct {
		name   string
		expect ed25519.PrivKey
		ok     bool
	}{
		{"the expected node", nodeKey, true},
		{"another node", ed25519.GenPrivKeyFromSecret([]byte("impostor")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := ListenRemote(ClientConfig{Network: NetTCP, Address: "127.0.0.1:0", ChainID: chainID,
				NodeKey: nodeKey, AllowedSigners: []crypto.PubKey{signerKey.PubKey()}})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			g := openGuard(t, PrivKeySigner{Key: testKey()}, filepath.Join(t.TempDir(), "state.json"))
			srv, err := ServeRemote(ServerConfig{Network: NetTCP, Address: client.Addr(), ChainID: chainID,
				IdentityKey: signerKey, ExpectedNode: tc.expect.PubKey(), Signer: g})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			err = client.WaitForSigner(2 * time.Second)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				v := vote(types.PrevoteType, 1, 0, 0xAA)
				if err := client.SignVote(chainID, v, false); err != nil {
					t.Fatal(err)
				}
				verifyVote(t, client, v)
				if srv.Refused() != nil {
					t.Errorf("refused: %v", srv.Refused())
				}
				return
			}
			// The node's listener accepts the handshake before the signer
			// hangs up: what counts is that the signer refused and never
			// answered.
			eventually(t, "the signer to refuse the node", func() bool { return srv.Refused() != nil })
			want := fmt.Sprintf("refused the node: its SecretConnection identity is %X, expected %X", nodeKey.PubKey().Address(), tc.expect.PubKey().Address())
			if r := srv.Refused(); r == nil || r.Error() != want {
				t.Fatalf("signer's refusal %v, want %q", r, want)
			}
			if h, _, _ := g.LastSigned(); h != 0 {
				t.Errorf("the guard signed h=%d for a refused node", h)
			}
		})
	}
}

// BenchmarkRemoteTransport measures the remote-signer hop alone: the same
// in-memory signer (no state file, so no fsync hides the hop) called
// directly and over tcp and unix. The transport overhead is the
// difference between the direct and the remote ns/op.
func BenchmarkRemoteTransport(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		pv := types.NewMockPV()
		h := int64(1)
		for b.Loop() {
			if err := pv.SignVote(chainID, vote(types.PrevoteType, h, 0, 1), false); err != nil {
				b.Fatal(err)
			}
			h++
		}
	})
	for _, network := range []string{NetTCP, NetUnix} {
		b.Run(network, func(b *testing.B) {
			addr := "127.0.0.1:0"
			if network == NetUnix {
				addr = filepath.Join(b.TempDir(), "s.sock")
			}
			client, err := ListenRemote(ClientConfig{Network: network, Address: addr, ChainID: chainID,
				NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			srv, err := ServeRemote(ServerConfig{Network: network, Address: client.Addr(), ChainID: chainID,
				IdentityKey: ed25519.GenPrivKeyFromSecret([]byte("id")), Signer: types.NewMockPV()})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Stop()
			if err := client.WaitForSigner(10 * time.Second); err != nil {
				b.Fatal(err)
			}
			h := int64(1)
			for b.Loop() {
				if err := client.SignVote(chainID, vote(types.PrevoteType, h, 0, 1), false); err != nil {
					b.Fatal(err)
				}
				h++
			}
		})
	}
}

// What dialled is said when no signer connected: nothing, or connections
// that are not SecretConnection.
func TestRemoteClientSaysWhatDialled(t *testing.T) {
	client, err := ListenRemote(ClientConfig{Network: NetTCP, Address: "127.0.0.1:0", ChainID: chainID,
		NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.WaitForSigner(200 * time.Millisecond); err == nil {
		t.Fatal("connected with nobody dialling")
	}
	if got := client.Dialled(); got != "nothing dialled in" {
		t.Fatalf("Dialled() = %q", got)
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", client.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(strings.Repeat("GET / HTTP/1.0\r\n\r\n", 8)))
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(client.Dialled(), "2 connection(s) came but failed the SecretConnection handshake") {
		if time.Now().After(deadline) {
			t.Fatalf("Dialled() = %q", client.Dialled())
		}
		_ = client.WaitForSigner(100 * time.Millisecond)
	}
}

// pinnedDial refuses every connection from an unexpected node and says
// each refused identity once, however often it redials; every refusal is
// counted.
func TestPinnedDialSaysEachRefusalOnce(t *testing.T) {
	signer := ed25519.GenPrivKeyFromSecret([]byte("signer-identity"))
	node := ed25519.GenPrivKeyFromSecret([]byte("node"))
	nodeKey := ed25519.GenPrivKeyFromSecret([]byte("impostor")) // who answers the dial
	// dial makes a SecretConnection to a "node" holding nodeKey.
	dial := func() (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			if sc, err := p2pconn.MakeSecretConnection(b, nodeKey); err == nil {
				_, _ = sc.Read(make([]byte, 1)) // until the signer hangs up
			}
			b.Close()
		}()
		sc, err := p2pconn.MakeSecretConnection(a, signer)
		if err != nil {
			return nil, err
		}
		return sc, nil
	}
	var refused refusals
	var said []string
	pinned := pinnedDial(dial, []string{IdentityOf(node.PubKey())}, &refused, func(err error) { said = append(said, err.Error()) })
	for i := range 3 {
		c, err := pinned()
		var idErr *IdentityError
		if !errors.As(err, &idErr) || c != nil || idErr.Got != IdentityOf(nodeKey.PubKey()) {
			t.Fatalf("dial %d: conn %v, err %v; want a refusal of %s", i+1, c, err, IdentityOf(nodeKey.PubKey()))
		}
	}
	if refused.count() != 3 || len(said) != 1 {
		t.Errorf("%d refusals, said %q; want 3 refusals said once", refused.count(), said)
	}
	// The expected node is let through.
	nodeKey = node
	c, err := pinned()
	if err != nil {
		t.Fatalf("the expected node: %v", err)
	}
	c.Close()
}
