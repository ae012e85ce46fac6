package scenarios

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/signers/ledger"
)

// Checks on the resolved plans of the network, topology, fault, ledger
// and process backend testdata (run by TestGoodScenarios).
func init() {
	goodChecks["network"] = checkNetworkPlan
	goodChecks["peers"] = checkPeersPlan
	goodChecks["network-faults"] = checkNetworkFaults
	goodChecks["ledger"] = checkLedgerPlans
	goodChecks["process"] = checkProcessPlan
}

func fixed(d time.Duration) *LatencyPlan {
	return &LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: d}, Phases: phase.All()}
}

func checkNetworkPlan(t *testing.T, p *Plan) {
	def := LinkPlan{Latency: fixed(50 * time.Millisecond), Jitter: 5 * time.Millisecond, Bandwidth: 1_250_000}
	short := LinkPlan{Latency: fixed(80 * time.Millisecond), Bandwidth: 125_000}
	oneWay := LinkPlan{Latency: fixed(50 * time.Millisecond), Jitter: 5 * time.Millisecond, Bandwidth: 1_500_000}
	uniform := LinkPlan{Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Uniform, Min: 10 * time.Millisecond, Max: 30 * time.Millisecond}, Phases: phase.All()},
		Jitter: 5 * time.Millisecond, Bandwidth: 2048}
	want := NetworkPlan{
		Default: def,
		Zones:   map[string]string{"v-1": "N_Virginia", "v-2": "N_Virginia", "v-3": "Ireland", "far": "Tokyo"},
		Links: []LinkOverride{
			{From: "v-1", To: "v-3", Link: short}, {From: "v-3", To: "v-1", Link: short},
			{From: "v-2", To: "far", Link: oneWay},
			{From: "far", To: "v-4", Link: uniform}, {From: "v-4", To: "far", Link: uniform},
		},
		Topology: TopologyPlan{Kind: TopologyRing, K: 2},
	}
	if !reflect.DeepEqual(p.Network, want) {
		t.Errorf("network:\n got %s\nwant %s", fmtNetwork(p.Network), fmtNetwork(want))
	}
	if !p.NeedsFabric() {
		t.Errorf("a shaped network needs the fabric")
	}
	// Each directed override has a latency model of its own.
	l := p.Network.Links
	if l[0].Link.Latency == l[1].Link.Latency || l[2].Link.Latency == p.Network.Default.Latency {
		t.Errorf("links share latency models")
	}
}

// fmtNetwork shows a network plan with its pointers followed.
func fmtNetwork(n NetworkPlan) string {
	link := func(l LinkPlan) string {
		lat := "<nil>"
		if l.Latency != nil {
			lat = fmt.Sprintf("%+v", *l.Latency)
		}
		return fmt.Sprintf("{latency %s jitter %s bandwidth %g}", lat, l.Jitter, l.Bandwidth)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "default %s zones %v topology %+v links:", link(n.Default), n.Zones, n.Topology)
	for _, o := range n.Links {
		fmt.Fprintf(&b, "\n  %s->%s %s", o.From, o.To, link(o.Link))
	}
	return b.String()
}

func checkPeersPlan(t *testing.T, p *Plan) {
	want := TopologyPlan{Kind: TopologyExplicit, Peers: map[string][]string{"v-1": {"v-2", "w"}, "w": {"v-3"}}}
	if !reflect.DeepEqual(p.Network.Topology, want) {
		t.Errorf("topology %+v, want %+v", p.Network.Topology, want)
	}
	if p.NeedsFabric() {
		t.Errorf("a topology alone needs no fabric")
	}
}

func checkNetworkFaults(t *testing.T, p *Plan) {
	file := "testdata/network-faults.good.yaml"
	at := func(h int64) FaultAt { return FaultAt{Height: h} }
	pos := func(line int) Pos { return Pos{file, line, 5} }
	normal := &LatencyPlan{Spec: latency.Spec{Dist: latency.Normal, Mean: 100 * time.Millisecond, Stddev: 10 * time.Millisecond}, Phases: phase.All()}
	want := []FaultPlan{
		{Action: action.Partition, At: at(5), Duration: 15 * time.Second, Groups: [][]string{{"v-1", "v-2"}, {"v-3", "v-4"}}, Pos: pos(15)},
		{Action: action.Partition, At: FaultAt{Time: time.Minute}, Groups: [][]string{{"v-1"}, {"v-2"}, {"v-3", "remote"}}, Pos: pos(16)},
		{Action: action.Isolate, Target: "v-3", At: FaultAt{Time: 30 * time.Second}, Duration: 10 * time.Second, Pos: pos(17)},
		{Action: action.Heal, At: at(20), Pos: pos(18)},
		{Action: action.NetworkLatency, At: at(8), Duration: 10 * time.Second, Latency: fixed(200 * time.Millisecond),
			From: "v-1", To: "v-2", Link: &LinkPlan{Latency: fixed(200 * time.Millisecond)}, Pos: pos(19)},
		{Action: action.NetworkLatency, At: at(9), Latency: normal, From: "v-2", To: "v-1", OneWay: true,
			Link: &LinkPlan{Latency: normal, Jitter: 5 * time.Millisecond, Bandwidth: 125_000}, Pos: pos(20)},
		{Action: action.NetworkLatency, Target: "v-4", At: at(10), Duration: 5 * time.Second, Latency: fixed(300 * time.Millisecond),
			Link: &LinkPlan{Latency: fixed(300 * time.Millisecond)}, Pos: pos(21)},
		{Action: action.NetworkLatency, At: at(11), Latency: fixed(time.Second), Link: &LinkPlan{Latency: fixed(time.Second), Bandwidth: 100_000}, Pos: pos(22)},
		{Action: action.NodeKill, Target: "v-2", At: at(10), Duration: 20 * time.Second, Pos: pos(23)},
		{Action: action.NodeStop, Target: "v-2", At: at(12), Pos: pos(24)},
		{Action: action.NodeStart, Target: "v-2", At: at(20), Pos: pos(25)},
		{Action: action.NodePause, Target: "v-3", At: at(5), Duration: 5 * time.Second, Pos: pos(26)},
		{Action: action.NodeResume, Target: "v-3", At: at(12), Pos: pos(27)},
		{Action: action.NodeRestart, Target: "v-4", At: at(7), Pos: pos(28)},
		{Action: action.NodeRestart, Target: "v-4", At: FaultAt{Time: 2 * time.Minute}, Pos: pos(29)},
		{Action: action.SignerDelay, Target: "remote", At: at(3), Latency: fixed(time.Second), Phases: phase.All(), Pos: pos(30)},
		{Action: action.SignerDrop, Target: "remote", At: at(4), Phases: phase.All(), Pos: pos(31)},
		{Action: action.SignerError, Target: "remote", At: at(6), Phases: phase.All(), Pos: pos(32)},
		{Action: action.SignerOutage, Target: "remote", At: at(14), Duration: 5 * time.Second, Pos: pos(33)},
		{Action: action.SignerRestart, Target: "remote", At: at(16), Pos: pos(34)},
		{Action: action.CosignerDown, Target: "th.cosigner-2", At: at(5), Duration: 10 * time.Second, Pos: pos(35)},
		{Action: action.CosignerDown, Target: "th.cosigner-3", At: FaultAt{Time: 40 * time.Second}, Pos: pos(36)},
		{Action: action.CosignerSlow, Target: "th.cosigner-1", At: at(6), Latency: fixed(400 * time.Millisecond), Pos: pos(37)},
		{Action: action.CosignerSlow, Target: "th.cosigner-3", At: at(7), Duration: 5 * time.Second,
			Latency: &LatencyPlan{Spec: latency.Spec{Dist: latency.Uniform, Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}, Phases: phase.All()}, Pos: pos(38)},
		{Action: action.Isolate, Target: "th.cosigner-1", At: at(9), Duration: 5 * time.Second, Pos: pos(39)},
	}
	if len(p.Faults) != len(want) {
		t.Fatalf("got %d faults, want %d", len(p.Faults), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(p.Faults[i], want[i]) {
			t.Errorf("faults[%d]:\n got %+v\nwant %+v", i, p.Faults[i], want[i])
		}
	}
	if f := p.Faults[4]; f.Link.Latency == f.Latency {
		t.Errorf("a network-latency fault and its link share one latency model")
	}
	if !p.NeedsFabric() {
		t.Errorf("network faults need the fabric")
	}
	var actions []string
	for _, f := range p.Faults {
		if !slices.Contains(actions, f.Action) {
			actions = append(actions, f.Action)
		}
	}
	if len(actions) != len(faultActions) {
		t.Errorf("testdata covers %d actions, faultActions has %d", len(actions), len(faultActions))
	}
}

func checkLedgerPlans(t *testing.T, p *Plan) {
	model := &LedgerPlan{Connection: LedgerEmulator, ChunkSize: 250, HostStall: 51 * time.Millisecond, Wire: 3 * time.Millisecond, DeviceSign: 525 * time.Millisecond}
	slow := &LedgerPlan{Connection: LedgerEmulator, ChunkSize: 48, ConfirmDelay: 2 * time.Second, HostStall: 60 * time.Millisecond, Wire: 4 * time.Millisecond, DeviceSign: 600 * time.Millisecond}
	base := SignerPlan{Type: SignerLedger, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1}
	with := func(l *LedgerPlan, via string) SignerPlan {
		s := base
		s.Ledger, s.Via = l, via
		return s
	}
	want := map[string]SignerPlan{
		"model":        with(model, ViaDirect),
		"slow-model-1": with(slow, ViaTCP),
		"slow-model-2": with(slow, ViaTCP),
		"nano":         with(&LedgerPlan{Connection: LedgerHID, Serial: "0001", ChunkSize: 255}, ViaDirect),
		"first":        with(&LedgerPlan{Connection: LedgerHID, ChunkSize: 1}, ViaDirect),
	}
	for _, v := range p.Validators {
		if w := want[v.Name]; !reflect.DeepEqual(v.Signer, w) {
			t.Errorf("%s:\n got %+v %+v\nwant %+v %+v", v.Name, v.Signer, v.Signer.Ledger, w, w.Ledger)
		}
	}
	if len(p.Validators) != len(want) {
		t.Errorf("got %d validators, want %d", len(p.Validators), len(want))
	}
	if p.Validators[1].Signer.Ledger == p.Validators[2].Signer.Ledger {
		t.Errorf("expanded validators share one LedgerPlan")
	}
}

func checkProcessPlan(t *testing.T, p *Plan) {
	if p.Run.Backend != "process" || p.Run.HaltAfter != 10*time.Second || p.Node.Binary != filepath.Join("testdata", "bin", "cometbft") {
		t.Errorf("run %+v", p.Run)
	}
	top := filepath.Join("testdata", "bin", "cometbft") // the top-level node's, for those without their own
	want := map[string]string{"v-1": top, "v-2": top, "own": "/opt/cometbft-v1/bin/cometbft", "remote": "other/cometbft"}
	for _, v := range p.Validators {
		if v.Node.Binary != want[v.Name] {
			t.Errorf("%s: binary %q, want %q", v.Name, v.Node.Binary, want[v.Name])
		}
	}
}

// TestBandwidthUnits: bit units are SI and case-insensitive, byte units
// are SI or binary, and the result is in bytes per second.
func TestBandwidthUnits(t *testing.T) {
	for in, want := range map[string]float64{
		"10mbit": 1_250_000, "10Mbit": 1_250_000, "8bit": 1, "1kbit": 125, "1gbit": 125_000_000, "0.5mbit": 62_500,
		"100B": 100, "1KB": 1000, "1kB": 1000, "2MB": 2_000_000, "1GB": 1e9,
		"1KiB": 1024, "1MiB": 1 << 20, "1GiB": 1 << 30, "1.5 MB": 1_500_000, ".5KB": 500, "3.MB": 3e6,
	} {
		src := fmt.Sprintf("name: bw\nvalidators: [{name: a}, {name: b}]\nnetwork: {bandwidth: %q}\n", in)
		p, err := Parse("bw.yaml", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := p.Network.Default.Bandwidth; got != want {
			t.Errorf("%s: %g bytes/s, want %g", in, got, want)
		}
	}
}

// TestNetworkMessages covers the network errors that have no golden file
// of their own, by a part of their message.
func TestNetworkMessages(t *testing.T) {
	for _, c := range []struct{ network, want string }{
		{"{bandwidth: 10mbps}", `"mbps" is ambiguous (bits or bytes?); write 10mbit for bits per second or 10MB for bytes per second`},
		{"{bandwidth: 10kb}", `write 10kbit for bits per second or 10KB for bytes per second`},
		{"{bandwidth: 10}", "network.bandwidth: 10 has no unit"},
		{"{bandwidth: fast}", `"fast" is not a bandwidth`},
		{"{bandwidth: 0mbit}", "must be greater than 0 (remove the key for an unlimited link)"},
		{"{bandwidth: 10furlong}", `unknown bandwidth unit "furlong" (allowed: bit, kbit`},
		{"{topology: ring}", "ring needs its K, the number of validators each one dials: write topology: {ring: 2}"},
		{"{topology: star}", `unknown topology "star"`},
		{"{topology: 3}", "expected mesh, explicit, {ring: K} or {random: K}, got integer 3"},
		{"{topology: {}}", "needs ring or random and its K"},
		{"{topology: {ring: 1, random: 1}}", "network.topology.random: give one of ring and random"},
		{"{topology: {random: 0}}", "network.topology.random: must be at least 1, got 0"},
		{"{topology: explicit}", "explicit needs peers"},
		{"{topology: {ring: 1}, peers: {a: [b]}}", "peers only go with topology: explicit (or no topology); this topology is ring"},
		{"{topology: mesh, peers: {a: [b]}}", "this topology is mesh"},
		{"{latency: {dist: fixed, value: 1ms, phases: [prevote]}}", "network.latency.phases: a link's latency delays every byte it carries"},
		{"{links: [{from: a, to: a}]}", "network.links[0].to: from and to are both a: a link joins two validators"},
		{"{links: [{to: a}]}", "network.links[0].from: required"},
		{"{links: [{from: a, to: b, one_way: yes}]}", `network.links[0].one_way: expected true or false, got "yes"`},
		{"{zones: {us-east1: [a]}}", `unknown region "us-east1"; did you mean "us-east-1"?`},
		{"{zones: {us-east-1: [a], N_Virginia: [b]}}", "N_Virginia is region N_Virginia, already written as us-east-1 (line 3)"},
		{"{zones: {us-east-1: [a, a]}}", "a is listed twice in this zone"},
		{"{peers: {a: [a, b, b]}}", "network.peers.a[0]: a cannot dial itself"},
		{"{peers: {a: [b, b]}}", "network.peers.a[1]: b is listed twice"},
	} {
		src := "name: net\nvalidators: [{name: a}, {name: b}, {name: c}]\nnetwork: " + c.network + "\n"
		_, err := Parse("net.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("network %s:\n got %v\nwant ...%s...", c.network, err, c.want)
		}
	}
}

// TestRegionCodes ties regionCodes to network.CanonicalRegion: each code
// names a region of the matrix, and each region has exactly one code.
func TestRegionCodes(t *testing.T) {
	count := map[string]int{}
	for _, code := range regionCodes {
		r, ok := network.CanonicalRegion(code)
		if !ok {
			t.Errorf("network.CanonicalRegion does not know %s", code)
		}
		count[r]++
	}
	for _, r := range network.Regions() {
		if count[r] != 1 {
			t.Errorf("region %s has %d codes in regionCodes, want 1", r, count[r])
		}
		if c, ok := network.CanonicalRegion(strings.ToLower(r)); !ok || c != r {
			t.Errorf("CanonicalRegion(%s) = %q, %v", strings.ToLower(r), c, ok)
		}
	}
}

// TestLedgerDefaults keeps the scenario defaults equal to signers/ledger's.
func TestLedgerDefaults(t *testing.T) {
	if defaultLedgerChunk != ledger.DefaultChunkSize || maxLedgerChunk != ledger.MaxChunkSize {
		t.Errorf("chunk sizes: scenarios %d/%d, signers/ledger %d/%d", defaultLedgerChunk, maxLedgerChunk, ledger.DefaultChunkSize, ledger.MaxChunkSize)
	}
	got := ledger.EmulatorTiming{HostStall: defaultLedgerHostStall, Wire: defaultLedgerWire, DeviceSign: defaultLedgerDeviceSign}
	if got != ledger.NanoSPlus {
		t.Errorf("emulator timing: scenarios %+v, signers/ledger.NanoSPlus %+v", got, ledger.NanoSPlus)
	}
}

// TestPeerComponents checks the connectivity rule on small graphs.
func TestPeerComponents(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		dials map[string][]string
		want  string
	}{
		{map[string][]string{"a": {"b"}, "c": {"d"}}, "[[a b] [c d]]"},
		{map[string][]string{"a": {"b"}, "c": {"d"}, "d": {"b"}}, "[[a b c d]]"},
		{map[string][]string{"d": {"a"}}, "[[a d] [b] [c]]"},
		{nil, "[[a] [b] [c] [d]]"},
	} {
		if got := fmt.Sprint(peerComponents(names, c.dials)); got != c.want {
			t.Errorf("%v: %s, want %s", c.dials, got, c.want)
		}
	}
}

// A group is named once in network.zones, or carries zone: itself.
func TestZonesByGroup(t *testing.T) {
	plan, err := Load("testdata/zones-group.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	z := plan.Network.Zones
	if len(z) != 101 {
		t.Fatalf("%d validators zoned, want 101: %v", len(z), z)
	}
	for v, want := range map[string]string{"use-1": "N_Virginia", "use-40": "N_Virginia", "tok-30": "Tokyo", "eu-7": "Ireland", "solo": "S_Paulo"} {
		if z[v] != want {
			t.Errorf("%s in %q, want %q", v, z[v], want)
		}
	}
}
