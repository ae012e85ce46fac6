package runner

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/scenarios"
)

// member is one validator of the network as the runner plans it: keys,
// ports and home, before anything runs.
type member struct {
	plan    scenarios.ValidatorPlan
	key     crypto.PrivKey
	nodeKey *p2p.NodeKey
	address string // upper-case hex, as CometBFT prints it
	config  *cfg.Config
	ports   []int
	// flavor is what runs its node (valnet's own, or a binary of some
	// CometBFT line).
	flavor *nodes.Flavor
	// peer is set for a node that is not a validator (peernodes.go); plan
	// then holds only its name and node.
	peer *scenarios.PeerNodePlan
}

// binary is the validator's own node binary (node.binary, else
// run.binary); empty: valnet's node.
func (m *member) binary(p *scenarios.Plan) string {
	return m.plan.Node.Binary
}

// layoutNetwork derives every validator's keys, home and config.
func layoutNetwork(p *scenarios.Plan, seed int64, outDir string, fl flavors) ([]*member, error) {
	members := make([]*member, 0, len(p.Validators))
	for _, v := range p.Validators {
		key, err := validatorKey(seed, v.Name, v.Signer.KeyType)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", v.Name, err)
		}
		m := &member{plan: v, key: key, nodeKey: nodeKey(seed, v.Name), flavor: fl[v.Name]}
		if m.flavor == nil {
			m.flavor = nodes.OwnFlavor()
		}
		m.config = nodes.NewConfig(filepath.Join(outDir, NodesDir, v.Name))
		applyTimeouts(m.config, p.Timeouts)
		if m.flavor.Own() {
			if err := nodes.ApplyConfig(m.config, configSettings(v.Node)); err != nil {
				return nil, fmt.Errorf("validator %s: %w", v.Name, err)
			}
		}
		members = append(members, m)
	}
	return members, nil
}

// makeGenesis builds the genesis every validator shares from the public
// keys their signers really hold (a user's key file may hold its own key),
// and allows every key type in use.
func makeGenesis(p *scenarios.Plan, members []*member, pubs []crypto.PubKey) (*types.GenesisDoc, error) {
	gen := &types.GenesisDoc{
		GenesisTime:     time.Now().UTC().Round(time.Millisecond),
		ChainID:         p.ChainID,
		InitialHeight:   1,
		ConsensusParams: types.DefaultConsensusParams(),
	}
	if err := checkDistinctKeys(members, pubs); err != nil {
		return nil, err
	}
	var keyTypes []string
	for i, m := range members {
		pub := pubs[i]
		m.address = strings.ToUpper(hex.EncodeToString(pub.Address()))
		gen.Validators = append(gen.Validators, types.GenesisValidator{
			Address: pub.Address(), PubKey: pub, Power: m.plan.Power, Name: m.plan.Name,
		})
		if !slices.Contains(keyTypes, pub.Type()) {
			keyTypes = append(keyTypes, pub.Type())
		}
	}
	slices.Sort(keyTypes)
	gen.ConsensusParams.Validator.PubKeyTypes = keyTypes
	// CometBFT v1's place for it; a v0.38 home gets it under abci
	// (nodes.Flavor).
	gen.ConsensusParams.Feature.VoteExtensionsEnableHeight = p.VoteExtensionsEnableHeight
	if err := gen.ValidateAndComplete(); err != nil {
		return nil, fmt.Errorf("genesis: %w", err)
	}
	return gen, nil
}

func applyTimeouts(c *cfg.Config, t scenarios.Timeouts) {
	c.Consensus.TimeoutPropose = t.Propose
	c.Consensus.TimeoutProposeDelta = t.ProposeDelta
	c.Consensus.TimeoutPrevote = t.Prevote
	c.Consensus.TimeoutPrevoteDelta = t.PrevoteDelta
	c.Consensus.TimeoutPrecommit = t.Precommit
	c.Consensus.TimeoutPrecommitDelta = t.PrecommitDelta
	c.Consensus.TimeoutCommit = t.Commit
}

// assignPorts gives every member fresh loopback p2p and RPC ports and its
// persistent peers by the scenario's topology (default: a full mesh). With
// the link fabric, a node dials each peer through that pair's proxy.
func (r *run) assignPorts() error {
	all := r.allMembers()
	for _, m := range all {
		if r.addresser != nil {
			// The backend's addresses (a container's own IP and ports).
			r.addresser.ConfigureListen(m.config)
			continue
		}
		releasePorts(m)
		p2pPort, err := nodes.FreePort()
		if err != nil {
			return err
		}
		rpcPort, err := nodes.FreePort()
		if err != nil {
			nodes.ReleasePort(p2pPort)
			return err
		}
		m.ports = []int{p2pPort, rpcPort}
		m.config.P2P.ListenAddress = fmt.Sprintf("tcp://127.0.0.1:%d", p2pPort)
		m.config.RPC.ListenAddress = fmt.Sprintf("tcp://127.0.0.1:%d", rpcPort)
	}
	byName := map[string]*member{}
	ids := map[string]string{}
	sentried := map[string]bool{}
	for _, m := range all {
		byName[m.plan.Name], ids[m.plan.Name] = m, nodes.NodeID(m.nodeKey)
		if m.peer != nil && m.peer.Role == scenarios.RoleSentry {
			sentried[m.peer.SentryOf] = true
		}
	}
	peers, err := r.plan.Layout(r.seed)
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	addrOf := func(from, to string) (string, error) {
		o := byName[to]
		addr := strings.TrimPrefix(o.config.P2P.ListenAddress, "tcp://")
		if r.addresser != nil {
			addr = r.addresser.PeerAddr(to)
		}
		if r.fabric != nil {
			var err error
			if addr, err = r.fabric.Route(from, to, addr); err != nil {
				return "", err
			}
		}
		return ids[to] + "@" + addr, nil
	}
	seeds := r.plan.HasSeeds()
	for _, m := range all {
		var list, seedAddrs []string
		for _, name := range peers[m.plan.Name] {
			// With seeds, PEX finds the public peers; only a validator's
			// links to its sentries are persistent.
			if seeds && !sentried[m.plan.Name] {
				continue
			}
			a, err := addrOf(m.plan.Name, name)
			if err != nil {
				return err
			}
			list = append(list, a)
		}
		if seeds {
			for _, o := range all {
				if o.peer != nil && o.peer.Role == scenarios.RoleSeed && o != m {
					a, err := addrOf(m.plan.Name, o.plan.Name)
					if err != nil {
						return err
					}
					seedAddrs = append(seedAddrs, a)
				}
			}
		}
		m.config.P2P.PersistentPeers = strings.Join(list, ",")
		configurePeering(m.config, m, r.plan, ids, seedAddrs, sentried[m.plan.Name])
	}
	return nil
}

// allMembers are the validators, then the other nodes.
func (r *run) allMembers() []*member {
	return append(append([]*member(nil), r.members...), r.others...)
}

func releasePorts(m *member) {
	for _, p := range m.ports {
		nodes.ReleasePort(p)
	}
	m.ports = nil
}

// checkDistinctKeys refuses two validators with one key before the
// genesis: CometBFT's validator set panics on it. An external signer
// serving a key valnet derived for another validator (keys derive from
// run.seed and the name: an earlier run's priv_validator_key.json) is the
// usual way to get there, and the message says so.
func checkDistinctKeys(members []*member, pubs []crypto.PubKey) error {
	seen := map[string]int{}
	for i, pub := range pubs {
		addr := string(pub.Address())
		j, dup := seen[addr]
		if !dup {
			seen[addr] = i
			continue
		}
		a, b := members[j].plan, members[i].plan
		ext, other := b, a
		if a.Signer.Type == scenarios.SignerExternal {
			ext, other = a, b
		}
		if ext.Signer.Type == scenarios.SignerExternal {
			return fmt.Errorf("validator %s: the external signer's key (address %X) is also %s's key: keys of valnet's signers derive from the run's seed and the validator's name, so a priv_validator_key.json of an earlier run with this seed is %s's; give the external signer a key of its own (valnet signer keygen, or cometbft init)",
				ext.Name, pub.Address(), other.Name, other.Name)
		}
		return fmt.Errorf("validators %s and %s sign with one key (address %X): CometBFT refuses a validator set with a key twice", a.Name, b.Name, pub.Address())
	}
	return nil
}
