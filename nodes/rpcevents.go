package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	cmtjson "github.com/cometbft/cometbft/libs/json"
	cmtpubsub "github.com/cometbft/cometbft/libs/pubsub"
	ctypes "github.com/cometbft/cometbft/rpc/core/types"
	"github.com/cometbft/cometbft/types"
	"github.com/gorilla/websocket"

	"github.com/valnet/valnet/results/eventlog"
)

// A user's binary is a black box: its consensus events come from its RPC
// websocket (/websocket, JSON-RPC "subscribe"), the interface every
// CometBFT node serves, and go through the same translator as in-process
// events.
//
// This is a small client of its own rather than CometBFT's WSEvents: that
// client keeps redialing in the background after Stop, and a redial that
// succeeds (the node restarted on its port) can send on its closed
// response channel and panic the runner. Here one goroutine owns the
// connection and ends with its context.

// rpcEventQueries are the subscriptions of one node; CometBFT allows 5
// per client by default (max_subscriptions_per_client).
var rpcEventQueries = []cmtpubsub.Query{
	types.EventQueryVote,
	types.EventQueryNewRound,
	types.EventQueryNewRoundStep,
	types.EventQueryCompleteProposal,
	types.EventQueryNewBlock,
}

// rpcRedialPause is the pause between attempts to (re)connect.
const rpcRedialPause = 200 * time.Millisecond

// streamRPCEvents forwards the node's events from its RPC websocket
// (rpc is http://host:port) to sink until ctx ends, reconnecting if the
// stream breaks; a break is reported as a node_error (events may be
// missing).
func streamRPCEvents(ctx context.Context, rpc string, tr *translator, sink eventlog.Sink) {
	url := "ws" + strings.TrimPrefix(rpc, "http") + "/websocket"
	for {
		subscribed, err := rpcEventSession(ctx, url, tr, sink)
		if ctx.Err() != nil {
			return
		}
		if subscribed {
			sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: tr.node,
				Error: fmt.Sprintf("RPC event stream broke (%v); reconnecting, events may be missing", err)})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rpcRedialPause):
		}
	}
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    string `json:"data"`
	} `json:"error"`
}

// rpcEventSession runs one websocket connection; subscribed says whether
// the subscriptions were sent (a later error is a broken stream).
func rpcEventSession(ctx context.Context, url string, tr *translator, sink eventlog.Sink) (subscribed bool, err error) {
	dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, _, err := dialer.DialContext(ctx, url, nil)
	if err != nil {
		return false, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		conn.Close() // ends a blocked read
	}()
	for i, q := range rpcEventQueries {
		req := map[string]any{"jsonrpc": "2.0", "id": i, "method": "subscribe",
			"params": map[string]string{"query": q.String()}}
		if err := conn.WriteJSON(req); err != nil {
			return false, err
		}
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return true, err
		}
		var msg rpcMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			return true, fmt.Errorf("bad message: %w", err)
		}
		if msg.Error != nil {
			return true, fmt.Errorf("RPC error %d: %s %s", msg.Error.Code, msg.Error.Message, msg.Error.Data)
		}
		if r := bytes.TrimSpace(msg.Result); len(r) == 0 || bytes.Equal(r, []byte("{}")) {
			continue // a subscription's acknowledgement
		}
		var ev ctypes.ResultEvent
		if err := cmtjson.Unmarshal(msg.Result, &ev); err != nil {
			sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: tr.node,
				Error: "RPC event: " + err.Error()})
			continue
		}
		if e, ok := tr.translate(ev.Data); ok {
			sink.Emit(e)
		}
	}
}

// WatchRPCEvents streams the events of spec's node, a user's binary, from
// its RPC websocket at rpc (http://host:port) to spec.Sink, reconnecting
// as streamRPCEvents does, until the returned stop is called (it waits
// for the stream to end). Backends that run a stock binary (process,
// docker) share it.
func WatchRPCEvents(rpc string, spec Spec) (stop func(), err error) {
	if spec.Sink == nil {
		return func() {}, nil
	}
	valSet, err := Validators(spec.Genesis)
	if err != nil {
		return nil, fmt.Errorf("node %s: genesis validators: %w", spec.Name, err)
	}
	tr := &translator{node: spec.Name, names: spec.Names, valSet: valSet}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		streamRPCEvents(ctx, rpc, tr, spec.Sink)
	}()
	return func() { cancel(); <-done }, nil
}
