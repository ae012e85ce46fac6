package nettest

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"
)

// Validators are n validators named v0..v<n-1> as the runner lays them
// out: keys derived from the chain ID and the name (the same every run),
// power 10 each, and a genesis that names them.
type Validators struct {
	Names    []string
	Keys     []ed25519.PrivKey // consensus keys
	NodeKeys []*p2p.NodeKey
	Genesis  *types.GenesisDoc
	// ByAddress maps validator addresses (upper-case hex) to names: what
	// nodes.Spec.Names wants.
	ByAddress map[string]string
}

func NewValidators(t testing.TB, chainID string, n int) *Validators {
	t.Helper()
	v := &Validators{ByAddress: map[string]string{}, Genesis: &types.GenesisDoc{
		GenesisTime: time.Now().UTC().Round(time.Millisecond), ChainID: chainID,
		InitialHeight: 1, ConsensusParams: types.DefaultConsensusParams(),
	}}
	for i := range n {
		name := fmt.Sprintf("v%d", i)
		key := ed25519.GenPrivKeyFromSecret([]byte(chainID + "/" + name))
		v.Names = append(v.Names, name)
		v.Keys = append(v.Keys, key)
		v.NodeKeys = append(v.NodeKeys, &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret([]byte(chainID + "/p2p/" + name))})
		v.Genesis.Validators = append(v.Genesis.Validators, types.GenesisValidator{PubKey: key.PubKey(), Power: 10, Name: name})
		v.ByAddress[strings.ToUpper(hex.EncodeToString(key.PubKey().Address()))] = name
	}
	if err := v.Genesis.ValidateAndComplete(); err != nil {
		t.Fatal(err)
	}
	return v
}

// Peers is validator i's persistent_peers: every other validator j as
// <node ID>@addr(j).
func (v *Validators) Peers(i int, addr func(j int) string) string {
	var peers []string
	for j := range v.Names {
		if j != i {
			peers = append(peers, string(v.NodeKeys[j].ID())+"@"+addr(j))
		}
	}
	return strings.Join(peers, ",")
}

// FilePV saves validator i's key as a FilePV in keyFile and stateFile.
func (v *Validators) FilePV(i int, keyFile, stateFile string) *privval.FilePV {
	pv := privval.NewFilePV(v.Keys[i], keyFile, stateFile)
	pv.Save()
	return pv
}

// FastConsensus sets consensus timeouts short enough for a test network
// on one machine to make a block every few hundred milliseconds.
func FastConsensus(c *cfg.Config) {
	c.Consensus.TimeoutPropose = 400 * time.Millisecond
	c.Consensus.TimeoutProposeDelta = 100 * time.Millisecond
	c.Consensus.TimeoutPrevote = 100 * time.Millisecond
	c.Consensus.TimeoutPrevoteDelta = 50 * time.Millisecond
	c.Consensus.TimeoutPrecommit = 100 * time.Millisecond
	c.Consensus.TimeoutPrecommitDelta = 50 * time.Millisecond
	c.Consensus.TimeoutCommit = 150 * time.Millisecond
}
