package signers

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/types"
	"os"
)

func TestProtoReconnect(t *testing.T) {
	cfg := ClientConfig{Network: NetTCP, Address: "127.0.0.1:0", ChainID: chainID,
		NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))}
	client, err := ListenRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := client.Addr()
	g := openGuard(t, PrivKeySigner{Key: testKey()}, filepath.Join(t.TempDir(), "state.json"))
	srv, err := ServeRemote(ServerConfig{Network: NetTCP, Address: addr, ChainID: chainID,
		IdentityKey: ed25519.GenPrivKeyFromSecret([]byte("id")), Signer: g, RedialForever: true,
		Logger: cmtlog.NewTMLogger(os.Stderr)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := client.SignVote(chainID, vote(types.PrevoteType, 1, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	client.Close()
	time.Sleep(500 * time.Millisecond)
	cfg.Address = addr
	client, err = ListenRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	start := time.Now()
	if err := client.SignVote(chainID, vote(types.PrevoteType, 2, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	t.Log("reconnected in", time.Since(start))
}
