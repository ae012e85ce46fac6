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
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

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
	statuses   int    // /status calls answered
	txs        [][]byte
}

func (f *fakeRPC) received() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.txs)
}

func (f *fakeRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/status" {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.statuses++
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

// driveLoad advances clk by a millisecond whenever the load waits on it,
// until g is done: the load's schedule is in whole milliseconds, so each
// wait ends exactly when it is due.
func driveLoad(t *testing.T, clk *clockwork.FakeClock, g *loadGen) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-g.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	for clk.BlockUntilContext(ctx, 1) == nil {
		clk.Advance(time.Millisecond)
	}
	select {
	case <-g.done:
	default:
		t.Fatal("the load did not end after its duration")
	}
}

// TestLoadGenerator sends to fake nodes, paced on a fake clock: one
// accepts, one refuses with a CheckTx code, one with a JSON-RPC error,
// one is gone, one is down by a fault (skipped by to: all). Nothing is
// sent while a node catches up; then exactly the rate times the duration.
func TestLoadGenerator(t *testing.T) {
	ok, code, full := &fakeRPC{}, &fakeRPC{code: 1}, &fakeRPC{rpcError: "mempool is full", catchingUp: true}
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
	clk := clockwork.NewFakeClock()
	g := startLoad(ctx, clk, lp, 1, targets, down, emit, live)
	// The generator asked full, which is catching up, and waits to ask
	// again: nothing was sent.
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the load never waited for a node catching up")
	}
	full.mu.Lock()
	asked := full.statuses
	full.catchingUp = false
	full.mu.Unlock()
	if asked == 0 {
		t.Fatal("the load waited without asking the nodes whether they catch up")
	}
	mu.Lock()
	sentEarly := len(evs)
	mu.Unlock()
	if n := ok.received() + code.received() + full.received(); n > 0 || sentEarly > 0 {
		t.Fatalf("%d transactions sent (%d events) while a node was catching up", n, sentEarly)
	}
	driveLoad(t, clk, g)
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
	}
	// 200/s for 200 ms: 40 transactions, the first at once, round robin
	// over the four that run (ok takes down's turns too).
	if n := len(evs); n != 40 {
		t.Errorf("%d tx events, want 40", n)
	}
	for node, want := range map[string]struct {
		result string
		n      int
	}{"ok": {eventlog.TxAccepted, 16}, "code": {eventlog.TxRejected, 8}, "full": {eventlog.TxRejected, 8}, "gone": {eventlog.TxFailed, 8}} {
		if got := byNode[node]; len(got) != 1 || got[want.result] != want.n {
			t.Errorf("%s: results %v, want %d %s", node, got, want.n, want.result)
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
	g = startLoad(ctx, clk, lp, 1, targets, down, emit, live)
	driveLoad(t, clk, g)
	g.stop()
	if len(evs) != 40 {
		t.Fatalf("to: down sent %d, want 40", len(evs))
	}
	for _, e := range evs {
		if e.Node != "down" || e.Result != eventlog.TxAccepted {
			t.Fatalf("to: down: %+v", e)
		}
	}
}

// TestLoadStartsAfterLiveAndStart: nothing is sent before the chain is
// live, nor during load.start after it; then the first at once.
func TestLoadStartsAfterLiveAndStart(t *testing.T) {
	node := &fakeRPC{}
	srv := httptest.NewServer(node)
	t.Cleanup(srv.Close)
	targets := []loadTarget{{name: "v", node: &fakeNode{name: "v", rpc: srv.URL}}}
	var isLive atomic.Bool
	sent := make(chan eventlog.Event, 16)
	lp := scenarios.LoadPlan{Rate: 10, Size: 64, To: scenarios.LoadToAll, Start: time.Second, Duration: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := clockwork.NewFakeClock()
	g := startLoad(ctx, clk, lp, 1, targets, func(string) bool { return false }, func(e eventlog.Event) { sent <- e }, isLive.Load)
	// Not live: it looks again every liveEvery, for as long as it takes.
	for range 10 {
		if err := clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(liveEvery)
	}
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	isLive.Store(true)
	clk.Advance(liveEvery)
	// Live now: it waits load.start, the one timer left.
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(lp.Start - time.Nanosecond)
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := node.received(); n > 0 {
		t.Fatalf("%d sent before load.start was over", n)
	}
	clk.Advance(time.Nanosecond)
	// 10/s for 100 ms: the first at once, the second would be due at the end.
	select {
	case <-g.done:
	case <-ctx.Done():
		t.Fatal("the load did not end")
	}
	g.stop()
	if n := node.received(); n != 1 || len(sent) != 1 {
		t.Errorf("%d sent (%d events), want the first one", n, len(sent))
	}
}

// loadYAML: a real 4-validator network with 100 tx/s of 256 B.
const loadYAML = `
name: load-accounting
chain:
  timeouts: {propose: 500ms, prevote: 200ms, precommit: 200ms, commit: 200ms}
run: {heights: 6, max_duration: 2m}
validators:
  - {name: v, count: 4}
load: {rate: 100/s, size: 256B}
expect:
  - {metric: txs_committed, min: 1}
`

// TestRunLoadAccounting runs loadYAML and checks the accounting: every
// submission is accepted, rejected or failed, each not accepted with its
// reason, committed <= accepted, blocks carry the load, and valnet report
// rebuilds the same summary from events.jsonl. Whether a healthy network
// refuses none is the host's to say: TestIntegLoadNoFailures.
func TestRunLoadAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	plan := parse(t, loadYAML)
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
	if l.Sent == 0 || l.Accepted == 0 || l.Committed == 0 {
		t.Errorf("a network with 100/s committed none: %+v", *l)
	}
	events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	txEvents := 0
	for _, e := range events {
		if e.Kind != eventlog.KindTx {
			continue
		}
		txEvents++
		if (e.Result == eventlog.TxAccepted) != (e.Error == "") || e.Result == "" {
			t.Errorf("tx %s: result %q with error %q, want accepted or a reason", e.Tx, e.Result, e.Error)
		}
	}
	if txEvents != l.Sent {
		t.Errorf("%d tx events, the summary counts %d sent", txEvents, l.Sent)
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
