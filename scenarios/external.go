package scenarios

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/internal/signeraddr"
)

// DefaultExternalWait is how long a run waits for an external signer to
// dial in before it gives up (signer.wait).
const DefaultExternalWait = 60 * time.Second

// externalRefused are the signer keys that mean nothing for a signer valnet
// does not run, with why.
var externalRefused = []struct{ key, why string }{
	{"key_type", "the key type is the external signer's: the run reads its public key (GetPubKey)"},
	{"cpu_scale", "valnet does not sign for an external signer, so it cannot scale its signing time"},
	{"device", "valnet cannot queue an external signer on a device model; its own hardware is what it is"},
	{"via", "the address's scheme (tcp:// or unix://) is the transport of an external signer"},
}

// resolveExternal checks an external signer's keys: the address the node
// listens on, how long to wait, and the signer's identity (tcp).
func (d *decoder) resolveExternal(key string, rs *rawSigner) *ExternalPlan {
	ep := &ExternalPlan{Wait: DefaultExternalWait}
	for _, r := range externalRefused {
		if k := key + "." + r.key; d.written(k) {
			d.fail(d.keyPos(k), k, "not for type external: "+r.why)
		}
	}
	addrKey := key + ".address"
	switch {
	case rs.Address == nil && !d.failed(addrKey):
		d.fail(d.valuePos(key), addrKey, "required for type external: where the validator's node listens for your signer, tcp://127.0.0.1:26659 or unix:///path/to/socket (the signer dials it)")
	case rs.Address != nil:
		network, addr, err := signeraddr.Parse(*rs.Address)
		if err != nil {
			d.fail(d.valuePos(addrKey), addrKey, err.Error())
			break
		}
		if network == signeraddr.Unix {
			addr = d.filePath(addr)
		}
		ep.Network, ep.Address = network, addr
	}
	if rs.Wait != nil {
		k := key + ".wait"
		if *rs.Wait <= 0 {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0, got %v: how long the run waits for the signer to dial in (default %v)", *rs.Wait, DefaultExternalWait))
		} else {
			ep.Wait = *rs.Wait
		}
	}
	if rs.Identity != nil {
		k := key + ".identity"
		id, err := signeraddr.ParseIdentity(*rs.Identity)
		switch {
		case err != nil:
			d.fail(d.valuePos(k), k, err.Error())
		case ep.Network == signeraddr.Unix:
			d.fail(d.keyPos(k), k, "only with a tcp:// address: a unix socket has no SecretConnection, so there is no identity to pin")
		default:
			ep.Identity = id
		}
	}
	return ep
}

// externalBackends are the backends an external signer runs on: the node
// (inprocess) or valnet's relay to it (process) listens on the host.
var externalBackends = []string{backendInprocess, backendProcess}

// checkExternalShared refuses an external signer that cannot be: one
// address stands for one signer and one key (CometBFT refuses a key twice
// in a validator set), and the backend must be one that listens on the
// host.
func (d *decoder) checkExternalShared(k string, entry int, count int64, signer SignerPlan, backend string, addrs map[string]int) {
	ep := signer.External
	if ep == nil || ep.Address == "" {
		return
	}
	key := k + ".signer.address"
	if !contains(externalBackends, backend) && !d.failed("run.backend") {
		d.fail(d.valuePos(k+".signer.type"), k+".signer.type", fmt.Sprintf("type external runs on run.backend inprocess or process, not %s", backend)+externalBackendWhy(backend), externalBackends...)
		return
	}
	if count > 1 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("with count %d, every expanded validator would wait for the one signer at %s (one signer holds one validator key); write one entry per signer, each with its address", count, ep.URL()))
		return
	}
	if j, taken := addrs[ep.URL()]; taken {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s is already the address of validators[%d] (line %d); each external signer needs its own address", ep.URL(), j, d.valuePos(fmt.Sprintf("validators[%d]", j)).Line))
		return
	}
	addrs[ep.URL()] = entry
}

func externalBackendWhy(backend string) string {
	switch backend {
	case BackendSim:
		return " (the sim is a MODEL with no real signer to ask)"
	case backendDocker:
		return " (not supported yet: the node's listener would be inside a container)"
	}
	return ""
}
