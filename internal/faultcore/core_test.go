package faultcore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// fakeEffects records what the core asks for as lines, and runs node jobs
// at once or, with queued, when run() is called (as the runner's node
// queue does, off the stepping goroutine). Failure knobs make a node's
// control calls fail.
type fakeEffects struct {
	now      *time.Time
	log      []string
	faults   map[string]*signers.Faults
	queued   bool
	jobs     []func()
	failDown bool
	noNodes  bool
	links    map[[2]string]network.Link
	cos      *fakeCosigners
	noFabric bool
}

func newFake(now *time.Time) *fakeEffects {
	return &fakeEffects{now: now, faults: map[string]*signers.Faults{}, links: map[[2]string]network.Link{}, cos: &fakeCosigners{}}
}

func (f *fakeEffects) add(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *fakeEffects) Emit(i int, p scenarios.FaultPlan, state, detail string) {
	f.add("event %s %s %s: %s", p.Action, p.Target, state, detail)
}

func (f *fakeEffects) SignerFaults(target string) *signers.Faults {
	if f.faults[target] == nil {
		f.faults[target] = signers.WithFaults(nil)
	}
	return f.faults[target]
}

func (f *fakeEffects) SignerOutage(target string, cut bool, d time.Duration) bool {
	f.add("outage %s %v %v", target, cut, d)
	return strings.HasPrefix(target, "ext")
}

func (f *fakeEffects) SignerRestart(target string, up bool, d time.Duration) error {
	f.add("restart-signer %s up=%v", target, up)
	return nil
}

func (f *fakeEffects) Block(pairs []links.Pair, blocked bool) error {
	if f.noFabric {
		return errors.New("no network fabric")
	}
	f.add("block %d pairs %v", len(pairs), blocked)
	return nil
}

func (f *fakeEffects) Isolate(target string, isolated bool) error {
	f.add("isolate %s %v", target, isolated)
	return nil
}

func (f *fakeEffects) Link(from, to string) network.Link { return f.links[[2]string{from, to}] }
func (f *fakeEffects) SetLink(from, to string, l network.Link) {
	f.links[[2]string{from, to}] = l
	f.add("link %s->%s %s", from, to, l)
}

func (f *fakeEffects) Controls(string) error {
	if f.noNodes {
		return errors.New("this backend cannot control nodes")
	}
	return nil
}

func (f *fakeEffects) NodeDo(target string, job func(NodeControl)) {
	run := func() { job(fakeNode{f: f, target: target}) }
	if f.queued {
		f.jobs = append(f.jobs, run)
		return
	}
	run()
}

// run runs the queued node jobs, in order (jobs may queue more).
func (f *fakeEffects) run() {
	for len(f.jobs) > 0 {
		j := f.jobs[0]
		f.jobs = f.jobs[1:]
		j()
	}
}

func (f *fakeEffects) Cosigner(target string) (Cosigners, int) {
	if f.cos == nil || !strings.Contains(target, ".cosigner-") {
		return nil, 0
	}
	return f.cos, int(target[len(target)-1] - '0')
}

type fakeNode struct {
	f      *fakeEffects
	target string
}

func (n fakeNode) Down(how NodeDown) error {
	if n.f.failDown {
		return errors.New("engine gone")
	}
	n.f.add("down %s %d", n.target, how)
	return nil
}

func (n fakeNode) Up(resume bool, done func(error)) {
	n.f.add("up %s resume=%v", n.target, resume)
	done(nil)
}

type fakeCosigners struct{ log []string }

func (c *fakeCosigners) SetDown(k int, down bool) error {
	c.log = append(c.log, fmt.Sprintf("down %d %v", k, down))
	return nil
}
func (c *fakeCosigners) SetSlow(k int, m latency.Model) error {
	c.log = append(c.log, fmt.Sprintf("slow %d %v", k, m != nil))
	return nil
}

// plan reads a scenario's faults.
func plan(t *testing.T, faults string) *scenarios.Plan {
	t.Helper()
	y := `name: core
run: {backend: process}
validators:
  - {name: a, signer: {via: tcp}}
  - {name: b, signer: {via: tcp}}
  - {name: c}
  - {name: d}
  - {name: t, signer: {type: threshold, cosigners: 3, links: {latency: 1ms}}}
faults:
` + faults
	p, err := scenarios.Parse("core.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one step of the core: at now (seconds after the begin) with
// consensus at height, then the node jobs queued by then run.
type step struct {
	at     time.Duration
	height int64
}

// TestCore runs each timeline against the fake with a clock of its own,
// no wall time: what the core asked for, in order.
func TestCore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults string
		knobs  func(*fakeEffects)
		steps  []step
		want   []string
	}{
		{"signer-delay from a height, for a duration", `
  - {action: signer-delay, target: a, at: {height: 3}, duration: 2s, latency: 100ms}`, nil,
			[]step{{0, 2}, {time.Second, 3}, {2 * time.Second, 3}, {3*time.Second + 1, 4}},
			[]string{"event signer-delay a start: adds fixed 100ms to proposal, prevote, precommit", "event signer-delay a end: delay removed"}},
		{"a drop at one height has no end", `
  - {action: signer-drop, target: a, at: {height: 3}}`, nil,
			[]step{{0, 3}, {time.Hour, 9}},
			[]string{"event signer-drop a start: drops proposal, prevote, precommit signatures at height 3"}},
		{"an external signer's outage is cut at the node", `
  - {action: signer-outage, target: a, at: {time: 1s}, duration: 1s}`, nil,
			[]step{{time.Second, 1}, {2 * time.Second, 1}},
			[]string{"outage a true 1s", "event signer-outage a start: remote signer disconnected; the node cannot reach it",
				"outage a false 1s", "event signer-outage a end: remote signer reconnecting"}},
		{"a signer restart without downtime ends at once", `
  - {action: signer-restart, target: a, at: {height: 2}}`, nil,
			[]step{{0, 2}},
			[]string{"event signer-restart a start: remote signer killed; restarting from its state file after 0s",
				"restart-signer a up=false", "restart-signer a up=true", "event signer-restart a end: remote signer started and redialing the node"}},
		{"node-start ends the kill's window; the kill's own end does nothing", `
  - {action: node-kill, target: c, at: {height: 2}, duration: 10s}
  - {action: node-start, target: c, at: {height: 4}}`, nil,
			[]step{{0, 2}, {time.Second, 4}, {11 * time.Second, 5}},
			[]string{"event node-kill c start: c down (node-kill)", "down c 0", "up c resume=false",
				"event node-kill c end: c started again from its home (node-start at height 4)"}},
		{"node-start of a node that is not down", `
  - {action: node-start, target: c, at: {height: 2}}`, nil,
			[]step{{0, 2}},
			[]string{"up c resume=false", "event node-start c instant: c started again from its home; it was not down"}},
		{"a pause ends with a resume after its duration", `
  - {action: node-pause, target: d, at: {time: 1s}, duration: 2s}`, nil,
			[]step{{time.Second, 1}, {3 * time.Second, 1}},
			[]string{"event node-pause d start: d paused (no progress, no answers)", "down d 2", "up d resume=true", "event node-pause d end: resumed"}},
		{"a failed stop ends its window at once and its way back does nothing", `
  - {action: node-stop, target: c, at: {height: 2}, duration: 1s}`, func(f *fakeEffects) { f.failDown = true },
			[]step{{0, 2}, {2 * time.Second, 2}},
			[]string{"event node-stop c start: c down (node-stop)", "event node-stop c end: not applied: node-stop failed: engine gone"}},
		{"queued node jobs run after the fault that queued them, in order", `
  - {action: node-kill, target: c, at: {height: 2}, duration: 1s}`, func(f *fakeEffects) { f.queued = true },
			[]step{{0, 2}, {time.Second, 2}},
			[]string{"event node-kill c start: c down (node-kill)", "down c 0", "up c resume=false", "event node-kill c end: started again from its home"}},
		{"a backend that cannot control nodes", `
  - {action: node-kill, target: c, at: {height: 2}}`, func(f *fakeEffects) { f.noNodes = true },
			[]step{{0, 2}},
			[]string{"event node-kill c instant: not applied: this backend cannot control nodes"}},
		{"node-restart without a duration reports when the node runs", `
  - {action: node-restart, target: c, at: {height: 2}}`, nil,
			[]step{{0, 2}},
			[]string{"event node-restart c start: c restarting from its home", "up c resume=false", "event node-restart c end: c running again"}},
		{"heal ends the open partition and isolation, in the order they began", `
  - {action: isolate, target: d, at: {height: 2}}
  - {action: partition, groups: [[a, b], [c, d, t]], at: {height: 3}}
  - {action: heal, at: {height: 5}}
  - {action: heal, at: {height: 6}}`, nil,
			[]step{{0, 2}, {0, 3}, {0, 5}, {0, 6}},
			[]string{"isolate d true", "event isolate d start: d cut off from every peer",
				"block 12 pairs true", "event partition  start: partition [a b] | [c d t]",
				"isolate d false", "event isolate d end: every link unblocked (heal at height 5)",
				"block 12 pairs false", "event partition  end: every link unblocked (heal at height 5)",
				"event heal  instant: every link unblocked; no partition or isolation was open"}},
		{"no fabric", `
  - {action: partition, groups: [[a, b], [c, d, t]], at: {height: 2}}`, func(f *fakeEffects) { f.noFabric = true },
			[]step{{0, 2}},
			[]string{"event partition  instant: not applied: no network fabric"}},
		{"network-latency sets the links and puts them back", `
  - {action: network-latency, target: a, at: {height: 2}, duration: 1s, latency: 50ms}`, nil,
			[]step{{0, 2}, {time.Second, 2}},
			nil}, // checked below: 8 links set, then restored
		{"a cosigner down for a while", `
  - {action: cosigner-down, target: t.cosigner-2, at: {height: 2}, duration: 1s}`, nil,
			[]step{{0, 2}, {time.Second, 2}},
			[]string{"event cosigner-down t.cosigner-2 start: cosigner 2 down: its connections closed, new ones hung up on",
				"event cosigner-down t.cosigner-2 end: cosigner 2 up again, its high-water mark read back from its file"}},
		{"a target that is no cosigner", `
  - {action: cosigner-down, target: t.cosigner-2, at: {height: 2}}`, func(f *fakeEffects) { f.cos = nil },
			[]step{{0, 2}},
			[]string{"event cosigner-down t.cosigner-2 instant: not applied: t.cosigner-2 is not a cosigner of a threshold signer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, tc.faults)
			var now time.Time
			fx := newFake(&now)
			if tc.knobs != nil {
				tc.knobs(fx)
			}
			core, err := New(p.Faults, []string{"a", "b", "c", "d", "t"}, 1, fx)
			if err != nil {
				t.Fatal(err)
			}
			begin := time.Unix(1000, 0)
			core.Begin(begin)
			for _, s := range tc.steps {
				now = begin.Add(s.at)
				core.Step(now, s.height)
				fx.run()
			}
			if strings.HasPrefix(tc.name, "network-latency") {
				var set, restored int
				for _, l := range fx.log {
					switch {
					case strings.HasPrefix(l, "link ") && strings.Contains(l, "50ms"):
						set++
					case strings.HasPrefix(l, "link "):
						restored++
					}
				}
				if set != 8 || restored != 8 || !slices.Contains(fx.log, "event network-latency a end: links restored") {
					t.Errorf("links set %d, restored %d:\n%s", set, restored, strings.Join(fx.log, "\n"))
				}
				return
			}
			var got []string
			for _, l := range fx.log {
				if !strings.HasPrefix(l, "link ") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// The core has a case for every action there is, and refuses one it does
// not know rather than do nothing.
func TestCoreKnowsEveryAction(t *testing.T) {
	for _, a := range action.All() {
		if !known[a] {
			t.Errorf("the core has no case for action %s", a)
		}
	}
	if len(known) != len(action.All()) {
		t.Errorf("the core knows %d actions, internal/action lists %d", len(known), len(action.All()))
	}
	var now time.Time
	_, err := New([]scenarios.FaultPlan{{Action: "signer-explode", Target: "a"}}, nil, 1, newFake(&now))
	if err == nil || !strings.Contains(err.Error(), `does not know action "signer-explode"`) {
		t.Errorf("New with an unknown action: %v", err)
	}
}

// A fault's id names its place and action: the sim and the runner seed a
// fault's random streams with it.
func TestID(t *testing.T) {
	if got := ID(3, scenarios.FaultPlan{Action: action.SignerDelay}); got != "faults[3]:signer-delay" {
		t.Errorf("ID = %q", got)
	}
}
