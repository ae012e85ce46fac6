package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// StatusResult is the part of CometBFT's RPC /status that backends read to
// know a node is up (its ID) and how far it is (its height), and that the
// load generator reads to know a node takes transactions.
type StatusResult struct {
	Result struct {
		NodeInfo struct {
			ID string `json:"id"`
		} `json:"node_info"`
		SyncInfo struct {
			LatestBlockHeight string `json:"latest_block_height"`
			// CatchingUp: the node is still syncing blocks, not yet in
			// consensus (it refuses transactions then).
			CatchingUp bool `json:"catching_up"`
		} `json:"sync_info"`
	} `json:"result"`
}

// RPCStatus asks the node at rpc (http://host:port) for /status.
func RPCStatus(ctx context.Context, client *http.Client, rpc string) (*StatusResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rpc+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/status: %s", resp.Status)
	}
	var st StatusResult
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Height is the block height st reports.
func (st *StatusResult) Height() (int64, bool) {
	h, err := strconv.ParseInt(st.Result.SyncInfo.LatestBlockHeight, 10, 64)
	return h, err == nil
}

// LastHeight is the height a node's RPC /status last reported: while the
// node cannot answer (killed, paused) it is the last height it said.
type LastHeight struct{ h atomic.Int64 }

// Update records an answer of /status (st, or the error of asking) and
// returns the last height.
func (l *LastHeight) Update(st *StatusResult, err error) int64 {
	if err == nil {
		if h, ok := st.Height(); ok {
			l.h.Store(h)
		}
	}
	return l.h.Load()
}

// WaitStatus polls status every 100 ms until the node answers as nodeID
// (not some other process that took the port) and returns its answer.
// Between polls gone is asked whether the node has exited; its error ends
// the wait. When ctx ends, the error is ctx's.
func WaitStatus(ctx context.Context, status func(context.Context) (*StatusResult, error), nodeID string, gone func() error) (*StatusResult, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := status(ctx)
		if err == nil && st.Result.NodeInfo.ID == nodeID {
			return st, nil
		}
		if err := gone(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// RemoveStaleSocket removes the unix socket file at path when nobody
// listens on it any more: a killed node leaves its signer listener's
// socket behind, and CometBFT's listener cannot bind over it.
func RemoveStaleSocket(path string) {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close() // somebody listens: not ours to remove
		return
	}
	_ = os.Remove(path)
}
