package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// fakeRPC answers /status and broadcast_tx_sync as a node would, with
// knobs.
type fakeRPC struct {
	mu         sync.Mutex
	code       uint32 // CheckTx code to answer
	rpcError   string // a JSON-RPC error instead
	catchingUp bool   // /status says the node is in block sync
	txs        [][]byte
}

func (f *fakeRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/status" {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, _ = w.Write([]byte(`{"result":{"sync_info":{"catching_up":` + strconv.FormatBool(f.catchingUp) + `}}}`))
		return
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Tx string `json:"tx"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != "broadcast_tx_sync" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	tx, err := base64.StdEncoding.DecodeString(req.Params.Tx)
	if err != nil {
		http.Error(w, "bad tx", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txs = append(f.txs, tx)
	if f.rpcError != "" {
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Internal error","data":"` + f.rpcError + `"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"code":` + strconv.Itoa(int(f.code)) + `,"log":"bad","codespace":"","hash":"00"}}`))
}

// TestLoadGenerator sends to fake nodes: one accepts, one refuses with a
// CheckTx code, one with a JSON-RPC error, one is gone, one is down by a
// fault (skipped by to: all). Nothing is sent while a node catches up.
func TestLoadGenerator(t *testing.T) {
	ok, code, full := &fakeRPC{}, &fakeRPC{code: 1}, &fakeRPC{rpcError: "mempool is full", catchingUp: true}
	const syncFor = 100 * time.Millisecond
	synced := time.Now().Add(syncFor)
	time.AfterFunc(syncFor, func() {
		full.mu.Lock()
		full.catchingUp = false
		full.mu.Unlock()
	})
	var targets []loadTarget
	for _, f := range []struct {
		name string
		h    http.Handler
	}{{"ok", ok}, {"code", code}, {"full", full}, {"gone", nil}, {"down", ok}} {
		srv := httptest.NewServer(f.h)
		url := srv.URL
		if f.h == nil {
			srv.Close() // nothing listens there any more
		} else {
			t.Cleanup(srv.Close)
		}
		targets = append(targets, loadTarget{name: f.name, node: &fakeNode{name: f.name, rpc: url}})
	}
	var mu sync.Mutex
	var evs []eventlog.Event
	emit := func(e eventlog.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	}
	down := func(v string) bool { return v == "down" }
	lp := scenarios.LoadPlan{Rate: 200, Size: 64, To: scenarios.LoadToAll, Duration: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	live := func() bool { return true }
	g := startLoad(ctx, lp, 1, targets, down, emit, live)
	select {
	case <-g.done: // the duration is over
	case <-ctx.Done():
		t.Fatal("the load did not end after its duration")
	}
	g.stop()

	byNode := map[string]map[string]int{}
	for _, e := range evs {
		if byNode[e.Node] == nil {
			byNode[e.Node] = map[string]int{}
		}
		byNode[e.Node][e.Result]++
		if e.Kind != eventlog.KindTx || e.Tx == "" || e.Time.IsZero() {
			t.Errorf("incomplete tx event %+v", e)
		}
		if (e.Result == eventlog.TxAccepted) != (e.Error == "") {
			t.Errorf("result %s with error %q", e.Result, e.Error)
		}
		if e.Time.Before(synced) {
			t.Errorf("sent at %v, while a node was catching up (until %v)", e.Time, synced)
		}
	}
	// 200/s for 200 ms: 40 transactions, the first at once.
	if n := len(evs); n < 36 || n > 41 {
		t.Errorf("%d tx events, want about 40", n)
	}
	for node, want := range map[string]string{"ok": eventlog.TxAccepted, "code": eventlog.TxRejected, "full": eventlog.TxRejected, "gone": eventlog.TxFailed} {
		if got := byNode[node]; len(got) != 1 || got[want] == 0 {
			t.Errorf("%s: results %v, want only %s", node, got, want)
		}
	}
	if byNode["down"] != nil {
		t.Errorf("a node down got transactions: %v", byNode["down"])
	}
	ok.mu.Lock()
	for _, tx := range ok.txs {
		if len(tx) != 64 {
			t.Errorf("the node got a %d-byte tx, want 64", len(tx))
		}
	}
	ok.mu.Unlock()

	// to: one validator sends only there, down or not.
	evs = nil
	lp.To = "down"
	g = startLoad(ctx, lp, 1, targets, down, emit, live)
	<-g.done
	g.stop()
	if len(evs) == 0 {
		t.Fatal("to: down sent nothing")
	}
	for _, e := range evs {
		if e.Node != "down" || e.Result != eventlog.TxAccepted {
			t.Fatalf("to: down: %+v", e)
		}
	}
}

// TestRunLoadAccounting runs a real 4-validator network with a load and
// checks the accounting: every submission is accepted, rejected or failed,
// committed <= accepted, blocks carry the load, and valnet report
// rebuilds the same summary from events.jsonl.
func TestRunLoadAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	plan := parse(t, `
name: load-accounting
chain:
  timeouts: {propose: 500ms, prevote: 200ms, precommit: 200ms, commit: 200ms}
run: {heights: 6, max_duration: 2m}
validators:
  - {name: v, count: 4}
load: {rate: 100/s, size: 256B}
expect:
  - {metric: txs_committed, min: 1}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := Run(ctx, plan, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	l := s.Load
	if l == nil {
		t.Fatal("summary has no load")
	}
	t.Logf("load: %+v", *l)
	if !s.OK {
		t.Errorf("not ok: %+v", s.Expectations)
	}
	if l.Sent != l.Accepted+l.Rejected+l.Failed || l.Committed > l.Accepted || l.Pending != l.Accepted-l.Committed {
		t.Errorf("accounting does not add up: %+v", *l)
	}
	if l.Sent == 0 || l.Accepted == 0 || l.Committed == 0 || l.Rejected > 0 || l.Failed > 0 {
		t.Errorf("a healthy network with 100/s: %+v", *l)
	}
	if l.Rate != 100 || l.SizeBytes != 256 || l.To != scenarios.LoadToAll {
		t.Errorf("load as asked: %+v", *l)
	}
	if c := l.CommitLatencyMS; c.Count != l.Committed || c.P50 <= 0 || c.P50 > c.P95 || c.P95 > c.Max {
		t.Errorf("commit latency %+v for %d committed", c, l.Committed)
	}

	// heights.csv: the blocks carry at least the committed load.
	f, err := os.Open(filepath.Join(dir, HeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0][8:], ","); got != "txs,block_bytes" {
		t.Fatalf("heights.csv columns end in %q", got)
	}
	txs := 0
	for _, row := range rows[1:] {
		n, _ := strconv.Atoi(row[8])
		b, _ := strconv.Atoi(row[9])
		if b < n*256 {
			t.Errorf("height %s: %d txs of 256 B in a %d-byte block", row[0], n, b)
		}
		txs += n
	}
	if txs < l.Committed {
		t.Errorf("blocks carry %d txs, the load committed %d", txs, l.Committed)
	}

	// valnet report rebuilds summary.json exactly.
	before, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Report(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	if !bytes.Equal(before, after) {
		t.Errorf("valnet report wrote a different summary.json")
	}
}

// BenchmarkRecordTxEvent: what recording one tx event costs the recorder
// (encoding and buffering under its lock, the tracker): at 1000 tx/s the
// time per op times 1000 is the share of a core, and of the recorder's
// lock, that the load's events take from the nodes' event pumps.
func BenchmarkRecordTxEvent(b *testing.B) {
	w, err := eventlog.NewWriter(filepath.Join(b.TempDir(), EventsFile))
	if err != nil {
		b.Fatal(err)
	}
	rec := newRecorder(w)
	defer w.Close()
	e := eventlog.Event{Time: time.Now(), Kind: eventlog.KindTx, Node: "v-1", Tx: "0123456789abcdef",
		Result: eventlog.TxAccepted, LatencyMS: 1.234}
	b.ReportAllocs()
	for b.Loop() {
		rec.Emit(e)
	}
}
