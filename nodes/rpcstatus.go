package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// StatusResult is the part of CometBFT's RPC /status that backends read to
// know a node is up (its ID) and how far it is (its height).
type StatusResult struct {
	Result struct {
		NodeInfo struct {
			ID string `json:"id"`
		} `json:"node_info"`
		SyncInfo struct {
			LatestBlockHeight string `json:"latest_block_height"`
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
