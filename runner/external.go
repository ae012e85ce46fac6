package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	cmtlog "github.com/cometbft/cometbft/libs/log"

	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// externalLabel is the signer label of an external signer: what it is,
// and where its signatures are timed (valnet cannot see inside it).
func externalLabel(ep *scenarios.ExternalPlan, relayed bool) string {
	where := "timed at the node, not inside the signer"
	if relayed {
		where = "timed at valnet's listener, which relays to the node's own process; not inside the signer"
	}
	return "external(" + ep.URL() + "; " + where + ")"
}

// openExternal listens at the external signer's address (the node's
// end of the link: in-process, the node's own listener; with the process
// backend, valnet's, which the node reaches through serveToNode) and waits
// for the signer to dial in, up to its wait or until ctx ends.
func (r *run) openExternal(ctx context.Context, vs *validatorSigner, m *member, ep *scenarios.ExternalPlan) (*signers.RemoteClient, error) {
	name := m.plan.Name
	logFile, err := vs.openLog(m)
	if err != nil {
		return nil, err
	}
	logger := cmtlog.NewTMLogger(cmtlog.NewSyncWriter(logFile)).With("side", "node", "signer", "external")
	cfg := signers.ClientConfig{Network: ep.Network, Address: ep.Address, ChainID: r.plan.ChainID, Logger: logger}
	nodeID := ""
	if ep.Network == signers.NetTCP {
		key := nodeSignerKey(r.seed, name)
		cfg.NodeKey = key
		nodeID = strings.ToLower(signers.IdentityOf(key.PubKey()))
		if ep.Identity != "" {
			cfg.AllowedIdentities = []string{ep.Identity}
		}
	}
	if m.plan.Signer.Link != nil {
		// The signer dials its address, where the fabric's proxy listens
		// and shapes the link to the node's own listener.
		cfg.Address = "127.0.0.1:0"
	}
	client, err := signers.ListenRemote(cfg)
	if err != nil {
		return nil, fmt.Errorf("external signer: %w", err)
	}
	if m.plan.Signer.Link != nil {
		if _, err := r.signerLinkRoute(m, client.Addr(), ep.Address); err != nil {
			_ = client.Close()
			return nil, err
		}
	}
	if w := r.opts.Status; w != nil {
		who := ""
		if nodeID != "" {
			who = fmt.Sprintf("; node ID %s (tmkms: addr = \"tcp://%s@%s\")", nodeID, nodeID, ep.Address)
		}
		fmt.Fprintf(w, "%s: waiting up to %v for your signer to dial %s (chain_id %s%s)\n", name, ep.Wait, ep.URL(), r.plan.ChainID, who)
	}
	if err := waitForSigner(ctx, client, ep.Wait); err != nil {
		dialled := client.Dialled()
		_ = client.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("external signer at %s: interrupted while waiting for it to dial in", ep.URL())
		}
		return nil, fmt.Errorf("external signer at %s did not connect within %v: %s", ep.URL(), ep.Wait, dialled)
	}
	return client, nil
}

// waitSlice is how often the wait for an external signer looks at ctx.
const waitSlice = 250 * time.Millisecond

var errWaitOver = errors.New("wait over")

// waitForSigner waits for c's signer until wait passes or ctx ends.
func waitForSigner(ctx context.Context, c *signers.RemoteClient, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errWaitOver
		}
		if err := c.WaitForSigner(min(left, waitSlice)); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// checkExternalAddress: the node must be able to listen where the
// external signer will dial (a port nobody holds, a socket path that does
// not exist yet, in a directory that does).
func checkExternalAddress(ep *scenarios.ExternalPlan) error {
	if ep.Network == signers.NetUnix {
		if _, err := os.Stat(ep.Address); err == nil {
			return fmt.Errorf("%s: %s exists; the node listens there and creates the socket (remove it if nothing uses it)", ep.URL(), ep.Address)
		}
		if err := checkDir(filepath.Dir(ep.Address)); err != nil {
			return fmt.Errorf("%s: %w", ep.URL(), err)
		}
		return nil
	}
	ln, err := net.Listen("tcp", ep.Address)
	if err != nil {
		return fmt.Errorf("the node cannot listen for the signer at %s: %w", ep.URL(), cause(err))
	}
	return ln.Close()
}

func checkDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("socket directory %s: %w", dir, cause(err))
	case !st.IsDir():
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	return nil
}
