package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
)

// fakeNode answers /status and /blockchain as CometBFT does, from a map
// of height -> hash it may change under the test (a failure knob: a
// forked node).
type fakeNode struct {
	mu     sync.Mutex
	hashes map[int64]string
	tip    int64
}

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/status":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":-1,"result":{"sync_info":{"latest_block_height":"%d"}}}`, f.tip)
	case "/blockchain":
		var lo, hi int64
		fmt.Sscan(r.URL.Query().Get("minHeight"), &lo)
		fmt.Sscan(r.URL.Query().Get("maxHeight"), &hi)
		if lo > f.tip {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":-1,"error":{"code":-32603,"message":"Internal error","data":"min height %d can't be greater than max height %d"}}`, lo, f.tip)
			return
		}
		var metas []string
		for h := min(hi, f.tip); h >= lo; h-- {
			metas = append(metas, fmt.Sprintf(`{"block_id":{"hash":"%s"},"header":{"height":"%d"}}`, strings.ToUpper(f.hashes[h]), h))
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":-1,"result":{"last_height":"%d","block_metas":[%s]}}`, f.tip, strings.Join(metas, ","))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeNode) commit(h int64, hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hashes == nil {
		f.hashes = map[int64]string{}
	}
	f.hashes[h], f.tip = hash, max(f.tip, h)
}

// events appends events to an events.jsonl, a last line optionally
// without its newline (a write the runner has not finished).
type events struct {
	t    *testing.T
	path string
}

func (e events) write(torn bool, evs ...eventlog.Event) (finish func()) {
	e.t.Helper()
	var b []byte
	for _, ev := range evs {
		line, _ := json.Marshal(ev)
		b = append(append(b, line...), '\n')
	}
	cut := len(b)
	if torn {
		cut -= len(b) - bytes.LastIndexByte(b[:len(b)-1], '\n') - 1 // the last line
		cut += (len(b) - cut) / 2                                   // half of it
	}
	e.append(b[:cut])
	return func() { e.append(b[cut:]) }
}

func (e events) append(b []byte) {
	f, err := os.OpenFile(e.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		e.t.Fatal(err)
	}
}

func TestMonitorInvariants(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	block := func(h int64, s float64, hash string) eventlog.Event {
		return eventlog.Event{Time: at(s), Kind: eventlog.KindBlock, Height: h, BlockID: hash, Node: "a"}
	}
	fault := func(state string, s float64) eventlog.Event {
		return eventlog.Event{Time: at(s), Kind: eventlog.KindFault, Action: action.NodeKill, Validator: "b", State: state}
	}
	sign := func(h int64, id string) eventlog.Event {
		return eventlog.Event{Time: at(float64(h)), Kind: eventlog.KindSign, Validator: "a", Node: "a", Phase: phase.Precommit, Height: h, BlockID: id, LatencyMS: 1}
	}
	for _, c := range []struct {
		name     string
		forkAt   int64 // node b commits another block at this height; 0: none
		double   bool  // validator a signs two blocks at height 3
		behindB  bool  // node b never gets past the last fault's height
		want     []string
		resumedS float64
	}{
		{name: "all hold", resumedS: 2},
		{name: "fork", forkAt: 4, want: []string{"fork at height 4: a committed h4, b committed f4"}, resumedS: 2},
		{name: "double sign", double: true, want: []string{"double sign: a signed precommit at height 3 round 0 for h3 and x3"}, resumedS: 2},
		{name: "node behind", behindB: true, want: []string{"the chain did not resume within 30s of the last fault's end (00:00:05, height 5): b at 5"}, resumedS: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ev := events{t, filepath.Join(dir, "events.jsonl")}
			a, b := &fakeNode{}, &fakeNode{}
			sa, sb := httptest.NewServer(a), httptest.NewServer(b)
			defer sa.Close()
			defer sb.Close()
			m := newMonitor(ev.path, 1, 30*time.Second)
			defer m.close()
			ctx := context.Background()
			m.poll(ctx, at(0), true) // no file yet
			ev.write(false, eventlog.Event{Time: at(0), Kind: eventlog.KindRunStart, Validators: []eventlog.ValidatorInfo{{Name: "a", Address: "AADDR", Power: 10}, {Name: "b", Address: "BADDR", Power: 10}}},
				eventlog.Event{Time: at(0), Kind: eventlog.KindNodeUp, Node: "a", RPC: sa.URL},
				eventlog.Event{Time: at(0), Kind: eventlog.KindNodeUp, Node: "b", RPC: sb.URL})
			commit := func(h int64, s float64) {
				hash := fmt.Sprintf("h%d", h)
				a.commit(h, hash)
				switch {
				case h == c.forkAt:
					b.commit(h, fmt.Sprintf("f%d", h))
				case c.behindB && h > 5:
				default:
					b.commit(h, hash)
				}
				evs := []eventlog.Event{sign(h, hash)}
				if c.double && h == 3 {
					evs = append(evs, sign(h, "x3"))
				}
				// Every other poll sees a torn last line, finished later.
				finish := ev.write(h%2 == 0, append(evs, block(h, s, hash))...)
				m.poll(ctx, at(s), true)
				finish()
				m.poll(ctx, at(s), true)
			}
			commit(1, 1)
			commit(2, 2)
			ev.write(false, fault(eventlog.FaultStart, 3))
			commit(3, 3)
			commit(4, 4)
			commit(5, 5)
			ev.write(false, fault(eventlog.FaultEnd, 5))
			m.poll(ctx, at(5), true)
			for h := int64(6); h <= 12; h++ {
				commit(h, float64(h)+1)
			}
			m.poll(ctx, at(40), true)
			m.endFinal(at(41), false)
			if strings.Join(m.violations, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(m.violations, "\n"), strings.Join(c.want, "\n"))
			}
			if m.final == nil || m.final.ChainResumedS == nil || *m.final.ChainResumedS != c.resumedS {
				t.Fatalf("final %+v, want resumed after %vs", m.final, c.resumedS)
			}
			if !c.behindB && m.final.AllNodesS == nil {
				t.Fatalf("every node caught up, yet final says %+v", m.final)
			}
			if m.checks == 0 || m.injected[action.NodeKill] != 1 {
				t.Fatalf("hashes compared %d, node-kill injected %d", m.checks, m.injected[action.NodeKill])
			}
		})
	}
}
