package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// monitor watches a running soak: it follows events.jsonl as the runner
// writes it (the run-wide double-sign detector, results.Summarizer; fault
// and block events), asks every node's RPC for the hashes of the blocks
// it committed, and samples this process's heap and goroutines. Nothing
// of it runs inside the runner: it reads what any reader of a run sees.
type monitor struct {
	events string // events.jsonl
	off    int64
	part   []byte // a line not yet ended by its newline
	z      *results.Summarizer
	http   *http.Client
	tr     *http.Transport

	scheduled   int
	resumeBound time.Duration

	rpc    map[string]string // node -> RPC base URL (node_up)
	next   map[string]int64  // node -> next height to ask for
	tip    map[string]int64  // node -> its last height (RPC)
	rpcErr map[string]string // node -> why its last answer failed
	blocks map[int64]seen    // height -> the first hash seen
	forks  []Fork
	checks int // (node, height) hashes compared

	committed  int64 // highest block event
	started    int   // fault start and instant events (one per scheduled fault)
	open       int   // fault windows open
	injected   map[Family]int
	skipped    map[Family][]string // not applied: detail
	quiet      *quietPoint         // the chain's resumption being awaited
	resumes    []time.Duration     // measured at each quiet point
	unmeasured int                 // quiet points a new fault ended before a block came
	final      *Final

	doubleSigns []results.DoubleSign
	violations  []string

	t0      time.Time
	samples []Sample
}

// seen is one height's hash and the source that reported it first.
type seen struct{ hash, by string }

// Fork is two sources that committed different blocks at one height.
type Fork struct {
	Height int64  `json:"height"`
	A      string `json:"a"`
	HashA  string `json:"hash_a"`
	B      string `json:"b"`
	HashB  string `json:"hash_b"`
}

// quietPoint is a moment no fault was open any more.
type quietPoint struct {
	at     time.Time
	height int64
	final  bool
}

// Final is the chain after the last fault: when it committed again and
// when every node had caught up.
type Final struct {
	At            time.Time `json:"at"`
	Height        int64     `json:"height"` // committed when the last fault ended
	ChainResumedS *float64  `json:"chain_resumed_s"`
	AllNodesS     *float64  `json:"all_nodes_caught_up_s"`
	NodesBehind   []string  `json:"nodes_behind,omitempty"`
	BoundS        float64   `json:"bound_s"`
	Unjudged      string    `json:"unjudged,omitempty"`
}

// Sample is one reading of this process.
type Sample struct {
	T          float64 `json:"t_s"` // since the soak started
	HeapMB     float64 `json:"heap_live_mb"`
	Goroutines int     `json:"goroutines"`
	// Upstream: of Goroutines, CometBFT v1.0.1's own leak (run.go
	// upstreamLeak), which grows by two per stopped node.
	Upstream int `json:"upstream_cometbft"`
}

func newMonitor(events string, scheduled int, bound time.Duration) *monitor {
	// No keep-alive: a connection kept to a node that was stopped is
	// still answered by its RPC server (CometBFT closes the listener, not
	// the connections), with the stopped node's heights.
	tr := &http.Transport{DisableKeepAlives: true}
	return &monitor{events: events, z: results.NewSummarizer(), tr: tr, http: &http.Client{Transport: tr, Timeout: 2 * time.Second},
		scheduled: scheduled, resumeBound: bound, rpc: map[string]string{}, next: map[string]int64{}, tip: map[string]int64{}, rpcErr: map[string]string{},
		blocks: map[int64]seen{}, injected: map[Family]int{}, skipped: map[Family][]string{}, t0: time.Now()}
}

// close drops the monitor's idle RPC connections.
func (m *monitor) close() { m.tr.CloseIdleConnections() }

func (m *monitor) violate(format string, args ...any) {
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
}

// poll reads what is new; rpc: the nodes are up to be asked.
func (m *monitor) poll(ctx context.Context, now time.Time, rpc bool) {
	m.tail()
	if rpc {
		for _, node := range slices.Sorted(maps.Keys(m.rpc)) {
			m.askNode(ctx, node)
		}
	}
	if ds := m.z.DoubleSignsSoFar(); len(ds) > len(m.doubleSigns) {
		for _, d := range ds[len(m.doubleSigns):] {
			m.violate("double sign: %s signed %s at height %d round %d for %s", d.Validator, d.Phase, d.Height, d.Round, strings.Join(d.BlockIDs, " and "))
		}
		m.doubleSigns = ds
	}
	m.checkFinal(now)
}

// tail feeds the events written since the last call.
func (m *monitor) tail() {
	f, err := os.Open(m.events)
	if err != nil {
		return // not written yet
	}
	defer f.Close()
	if _, err := f.Seek(m.off, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(f)
	if err != nil || len(data) == 0 {
		return
	}
	m.off += int64(len(data))
	data = append(m.part, data...)
	end := bytes.LastIndexByte(data, '\n') + 1
	m.part = slices.Clone(data[end:])
	if err := eventlog.Stream(bytes.NewReader(data[:end]), m.event); err != nil {
		m.violate("events.jsonl: %v", err)
	}
}

// event takes one event of the stream.
func (m *monitor) event(ev *eventlog.Event) {
	m.z.Add(ev)
	switch ev.Kind {
	case eventlog.KindNodeUp:
		if ev.RPC != "" {
			m.rpc[ev.Node] = ev.RPC
			if m.next[ev.Node] == 0 {
				m.next[ev.Node] = 1
			}
		}
	case eventlog.KindBlock:
		m.hash(ev.Height, ev.BlockID, "events.jsonl")
		if ev.Height > m.committed {
			m.committed = ev.Height
			if q := m.quiet; q != nil && ev.Height > q.height {
				d := ev.Time.Sub(q.at)
				if q.final {
					s := d.Seconds()
					m.final.ChainResumedS = &s
				}
				m.resumes = append(m.resumes, d)
				if !q.final {
					m.quiet = nil
				} else {
					q.height = 1 << 62 // measured; catch-up is checkFinal's
				}
			}
		}
	case eventlog.KindFault:
		notApplied := strings.HasPrefix(ev.Detail, "not applied")
		switch {
		case ev.State == eventlog.FaultStart || ev.State == eventlog.FaultInstant:
			m.started++
			if notApplied || ev.State == eventlog.FaultInstant {
				m.skipped[ev.Action] = append(m.skipped[ev.Action], ev.Detail)
				break
			}
			m.injected[ev.Action]++
			m.open++
			if m.quiet != nil && !m.quiet.final {
				m.unmeasured++
				m.quiet = nil
			}
		case ev.State == eventlog.FaultEnd:
			m.open = max(0, m.open-1)
		}
		applied := ev.State == eventlog.FaultStart && !notApplied
		if final := m.started >= m.scheduled; m.open == 0 && !applied && m.final == nil && (m.quiet == nil || final) {
			m.quiet = &quietPoint{at: ev.Time, height: m.committed, final: final}
			if final {
				m.final = &Final{At: ev.Time, Height: m.committed, BoundS: m.resumeBound.Seconds()}
			}
		}
	}
}

// hash records the hash source by reports for a height, and a fork if
// another source reported another one.
func (m *monitor) hash(h int64, hash, by string) {
	if hash == "" {
		return
	}
	hash = strings.ToLower(hash)
	s, ok := m.blocks[h]
	switch {
	case !ok:
		m.blocks[h] = seen{hash, by}
	case s.hash != hash:
		m.forks = append(m.forks, Fork{Height: h, A: s.by, HashA: s.hash, B: by, HashB: hash})
		m.violate("fork at height %d: %s committed %s, %s committed %s", h, s.by, s.hash, by, hash)
	default:
		m.checks++
	}
}

// The parts of CometBFT's /status and /blockchain answers read here.
type (
	status struct {
		Result struct {
			SyncInfo struct {
				LatestBlockHeight string `json:"latest_block_height"`
			} `json:"sync_info"`
		} `json:"result"`
		Error *rpcError `json:"error"`
	}
	blockchain struct {
		Result struct {
			BlockMetas []struct {
				BlockID struct {
					Hash string `json:"hash"`
				} `json:"block_id"`
				Header struct {
					Height string `json:"height"`
				} `json:"header"`
			} `json:"block_metas"`
		} `json:"result"`
		Error *rpcError `json:"error"`
	}
	rpcError struct {
		Message string `json:"message"`
		Data    string `json:"data"`
	}
)

// get asks node's RPC for path and decodes the answer into v.
func (m *monitor) get(ctx context.Context, node, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.rpc[node]+path, nil)
	if err != nil {
		return err
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(v)
	_, _ = io.Copy(io.Discard, resp.Body)
	return err
}

// askNode reads node's height, and the hashes of the blocks it committed
// since the last call (at most a few pages a poll). A node that is down
// is asked again at the next poll.
func (m *monitor) askNode(ctx context.Context, node string) {
	var st status
	if err := m.get(ctx, node, "/status", &st); err != nil {
		m.rpcErr[node] = err.Error()
		return
	}
	if st.Error != nil {
		m.rpcErr[node] = st.Error.Message + " " + st.Error.Data
		return
	}
	tip, err := strconv.ParseInt(st.Result.SyncInfo.LatestBlockHeight, 10, 64)
	if err != nil {
		m.rpcErr[node] = "status: latest_block_height " + strconv.Quote(st.Result.SyncInfo.LatestBlockHeight)
		return
	}
	delete(m.rpcErr, node)
	m.tip[node] = tip
	for page := 0; page < 5 && m.next[node] <= tip; page++ {
		from := m.next[node]
		var bc blockchain
		if err := m.get(ctx, node, fmt.Sprintf("/blockchain?minHeight=%d&maxHeight=%d", from, min(from+19, tip)), &bc); err != nil {
			m.rpcErr[node] = err.Error()
			return
		}
		if bc.Error != nil {
			m.rpcErr[node] = bc.Error.Message + " " + bc.Error.Data
			return
		}
		top := from - 1
		for _, bm := range bc.Result.BlockMetas {
			h, err := strconv.ParseInt(bm.Header.Height, 10, 64)
			if err != nil {
				continue
			}
			m.hash(h, bm.BlockID.Hash, node)
			top = max(top, h)
		}
		if top < from {
			return // pruned, or not there yet: asked again next time
		}
		m.next[node] = top + 1
	}
}

// behind lists the nodes not past height h, with what their RPC said.
func (m *monitor) behind(h int64) []string {
	var out []string
	for _, node := range slices.Sorted(maps.Keys(m.rpc)) {
		if m.tip[node] <= h {
			s := fmt.Sprintf("%s at %d", node, m.tip[node])
			if e := m.rpcErr[node]; e != "" {
				s += " (rpc: " + e + ")"
			}
			out = append(out, s)
		}
	}
	return out
}

// checkFinal judges the resumption after the last fault: every node must
// be past the height committed when it ended, within the bound.
func (m *monitor) checkFinal(now time.Time) {
	f := m.final
	if f == nil || f.AllNodesS != nil || f.NodesBehind != nil {
		return
	}
	behind := m.behind(f.Height)
	if len(behind) == 0 && len(m.rpc) > 0 {
		s := now.Sub(f.At).Seconds()
		f.AllNodesS = &s
		return
	}
	if now.Sub(f.At) > m.resumeBound {
		f.NodesBehind = behind
		m.violate("the chain did not resume within %v of the last fault's end (%s, height %d): %s",
			m.resumeBound, f.At.Format(time.TimeOnly), f.Height, strings.Join(behind, ", "))
	}
}

// endFinal judges the resumption once the run has ended: nodes still
// behind are a violation if the bound had passed, and otherwise said to
// be unjudged (the run ended first, or was stopped by another violation).
func (m *monitor) endFinal(now time.Time, stopped bool) {
	f := m.final
	if f == nil || f.AllNodesS != nil || f.NodesBehind != nil {
		return
	}
	f.NodesBehind = m.behind(f.Height)
	switch {
	case now.Sub(f.At) > m.resumeBound && !stopped:
		m.violate("the chain did not resume within %v of the last fault's end (%s, height %d): %s",
			m.resumeBound, f.At.Format(time.TimeOnly), f.Height, strings.Join(f.NodesBehind, ", "))
	default:
		f.Unjudged = fmt.Sprintf("the run ended %.1fs after the last fault, before the bound", now.Sub(f.At).Seconds())
	}
}

// sample reads this process's live heap and goroutines.
func (m *monitor) sample(now time.Time) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var live float64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = float64(s[0].Value.Uint64())
	}
	m.samples = append(m.samples, Sample{T: now.Sub(m.t0).Seconds(), HeapMB: live / (1 << 20), Goroutines: runtime.NumGoroutine(),
		Upstream: upstreamGoroutines()})
}

// statusLine is the soak's progress.
func (m *monitor) statusLine(now time.Time, total time.Duration) string {
	inj := 0
	for _, n := range m.injected {
		inj += n
	}
	var heap float64
	var gor int
	if n := len(m.samples); n > 0 {
		heap, gor = m.samples[n-1].HeapMB, m.samples[n-1].Goroutines
	}
	return fmt.Sprintf("valnet soak: %v/%v  height %d  faults %d (open %d)  double signs %d  forks %d  heap %.0f MB  goroutines %d",
		now.Sub(m.t0).Round(time.Second), total, m.committed, inj, m.open, len(m.doubleSigns), len(m.forks), heap, gor)
}
